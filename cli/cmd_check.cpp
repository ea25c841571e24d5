// nisa check KERNEL.(nasm|nbin) [-D NAME=VALUE]... [--lnc N] [--ranks R] [--target T]
#include <boost/program_options.hpp>
#include <chrono>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/common.h"
#include "interp/check/check.h"

namespace nisa::cli {

int cmd_check(int argc, char** argv) {
  std::string kernel;
  MachineArgs margs;
  po::options_description opts(
      "usage: nisa check KERNEL.(nasm|nbin) [-D NAME=VALUE]... [--lnc N] [--ranks R]\n\n"
      "Proves without running the data path that every two accesses of different engines, DMA "
      "queues or cores to overlapping bytes (one a write) are ordered in every schedule, and "
      "that no schedule deadlocks (docs/check.md). Exit codes: 0 proved, 1 usage or assembly "
      "error, 2 a schedule deadlocks, 4 unordered pairs, 6 outside what is proved (control "
      "flow that depends on data, too large).\n\noptions");
  opts.add_options()("help,h", "show this help")("define,D", po::value(&margs.defines)->composing(),
                                                 "NAME=VALUE: set a .param (.nasm only)")(
      "include,I", po::value(&margs.includes)->composing(), "include directory (.nasm only)")(
      "target", po::value(&margs.target), "trn1 | trn2 | trn3 (default: the kernel's .target)")(
      "lnc", po::value(&margs.lnc)->default_value(1), "cores per logical core: 1 or 2")(
      "ranks", po::value(&margs.ranks)->default_value(1), "SPMD ranks")(
      "max-reports", po::value<size_t>()->default_value(40),
      "unordered pairs printed")("stats", "print the size of the proof and its host time");
  po::variables_map vm;
  if (auto rc = parse_args("check", argc, argv, opts, kernel, "no kernel given", vm)) return *rc;
  if (margs.lnc != 1 && margs.lnc != 2) {
    std::cerr << "nisa check: --lnc must be 1 or 2\n";
    return 1;
  }
  if (margs.ranks < 1 || margs.ranks > 1024) {
    std::cerr << "nisa check: --ranks must be in 1..1024\n";
    return 1;
  }
  interp::RunConfig cfg;
  if (!margs.apply("check", vm, cfg)) return 1;
  auto mod = margs.load_kernel("check", kernel, cfg);
  if (!mod) return 1;
  interp::CheckOptions co;
  co.lnc = margs.lnc;
  co.ranks = margs.ranks;
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
