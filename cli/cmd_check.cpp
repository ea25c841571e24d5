// nisa check KERNEL.(nasm|nbin) [-D NAME=VALUE]... [--lnc N] [--ranks R] [--target T]
//            [--max-seconds S] [--max-memory MIB] [--max-rounds N]
#include <boost/program_options.hpp>
#include <charconv>
#include <chrono>
#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/common.h"
#include "interp/check/check.h"
#include "interp/core/machine.h"

namespace nisa::cli {
namespace {

// The limits of the proof (docs/check.md "Limits"): false after printing the error.
bool apply_limits(const po::variables_map& vm, interp::CheckOptions& co) {
  if (vm.count("max-memory")) {
    auto mib = parse_count("check", "--max-memory", vm["max-memory"].as<std::string>());
    if (!mib) return false;
    if (*mib == 0 || *mib > (uint64_t(1) << 40)) {
      std::cerr << "nisa check: --max-memory " << *mib << ": expected MiB in 1.."
                << (uint64_t(1) << 40) << "\n";
      return false;
    }
    co.max_memory = *mib << 20;
  }
  if (vm.count("max-seconds")) {
    const std::string& t = vm["max-seconds"].as<std::string>();
    double s = -1;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), s);
    if (t.empty() || ec != std::errc() || end != t.data() + t.size() || !std::isfinite(s) ||
        s < 0) {
      std::cerr << "nisa check: --max-seconds '" << t.substr(0, 40)
                << "': expected seconds such as 60 or 0.5 (0: no limit)\n";
      return false;
    }
    co.max_seconds = s;
  }
  if (vm.count("max-rounds")) {
    auto n = parse_count("check", "--max-rounds", vm["max-rounds"].as<std::string>());
    if (!n) return false;
    if (*n < 1 || *n > 1'000'000) {
      std::cerr << "nisa check: --max-rounds " << *n << ": expected 1..1000000\n";
      return false;
    }
    co.max_rounds = int(*n);
  }
  return true;
}

} // namespace

int cmd_check(int argc, char** argv) {
  std::string kernel;
  MachineArgs margs;
  const std::string memory_help =
      "stop (exit 6) when the check has added MIB mebibytes to the process's memory; also sets "
      "the node limit (" +
      std::to_string(interp::kCheckNodeBytes) + " bytes a node; default " +
      std::to_string(interp::default_check_memory(interp::memory_in_use()) >> 20) +
      ": 4096, or half of what ulimit -v leaves)";
  const std::string ranks_help = "SPMD ranks (1.." + std::to_string(interp::kMaxRanks) +
                                 "; default: the kernel's .ranks, else 1)";
  po::options_description opts(
      "usage: nisa check KERNEL.(nasm|nbin) [-D NAME=VALUE]... [--lnc N] [--ranks R]\n\n"
      "Proves without running the data path that every two accesses of different engines, DMA "
      "queues or cores to overlapping bytes (one a write) are ordered in every schedule, and "
      "that no schedule deadlocks (docs/check.md). Exit codes: 0 proved, 1 usage or assembly "
      "error, 2 a schedule deadlocks, 4 unordered pairs, 6 outside what is proved (control "
      "flow that depends on data, a limit reached).\n\noptions");
  opts.add_options()("help,h", "show this help")("define,D", po::value(&margs.defines)->composing(),
                                                 "NAME=VALUE: set a .param (.nasm only)")(
      "include,I", po::value(&margs.includes)->composing(),
      "include directory (.nasm only; then, installed, <prefix>/share/nisa/kernels_asm)")(
      "target", po::value(&margs.target), "trn1 | trn2 | trn3 (default: the kernel's .target)")(
      "lnc", po::value(&margs.lnc)->default_value(1),
      "cores per logical core: 1 or 2 (default: the kernel's .lnc, else 1)")(
      "ranks", po::value(&margs.ranks)->default_value(1), ranks_help.c_str())(
      "max-reports", po::value<size_t>()->default_value(40), "unordered pairs printed")(
      "max-seconds", po::value<std::string>()->value_name("S"),
      "stop (exit 6) after S seconds of host time (default 60; 0: no limit)")(
      "max-memory", po::value<std::string>()->value_name("MIB"), memory_help.c_str())(
      "max-rounds", po::value<std::string>()->value_name("N"),
      "stop (exit 6) when the orders derived from semaphore counts still change after N rounds "
      "(default 100)")("stats", "print the size of the proof and its host time");
  po::variables_map vm;
  if (auto rc = parse_args("check", argc, argv, opts, kernel, "no kernel given", vm)) return *rc;
  // --lnc and --ranks: the same bounds and words as `nisa run` (MachineArgs::apply).
  interp::RunConfig cfg;
  if (!margs.apply("check", vm, cfg)) return 1;
  interp::CheckOptions co;
  if (!apply_limits(vm, co)) return 1;
  auto mod = margs.load_kernel("check", kernel, vm, cfg);
  if (!mod) return 1;
  co.lnc = cfg.machine.lnc; // the options, else the kernel's .lnc / .ranks, else 1
  co.ranks = cfg.machine.ranks;
  co.target = cfg.target_given ? cfg.machine.target : mod->target;
  co.max_reports = vm["max-reports"].as<size_t>();
  if (co.lnc == 2 && co.target == Target::trn1) {
    std::cerr << "nisa check: --lnc 2 is not available on trn1 (gen2)\n";
    return 1;
  }
  auto t0 = std::chrono::steady_clock::now();
  interp::CheckResult r = interp::check_module(*mod, co);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << r.report;
  if (vm.count("stats"))
    std::cout << "check: " << r.instructions << " instructions, " << r.nodes << " nodes, "
              << r.streams << " streams, " << r.sem_edges << " semaphore orders, " << r.iterations
              << " rounds, " << secs << " s\n";
  return r.exit_code;
}

} // namespace nisa::cli
