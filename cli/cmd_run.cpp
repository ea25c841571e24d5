// nisa run KERNEL.(nasm|nbin) --in NAME=FILE.npy... --out NAME=FILE.npy... [options]
#include <boost/program_options.hpp>
#include <iostream>
#include <string>
#include <vector>

#include "asm/asm.h"
#include "cli/commands.h"
#include "interp/run.h"
#include "isa/object.h"

namespace po = boost::program_options;

namespace nisa::cli {
namespace {

using interp::IoSpec;

bool split_binding(const std::string& s, const char* opt, IoSpec& out) {
  size_t eq = s.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == s.size()) {
    std::cerr << "nisa run: " << opt << " '" << s << "': expected NAME=FILE.npy\n";
    return false;
  }
  out = {s.substr(0, eq), s.substr(eq + 1)};
  return true;
}

bool ends_with(const std::string& s, const std::string& suf) {
  return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
}

} // namespace

int cmd_run(int argc, char** argv) {
  std::string kernel, target, schedule = "fixed", timeline, trace, trace_engines;
  double trace_from = -1, trace_to = -1;
  std::vector<std::string> defines, includes, ins, outs;
  int lnc = 1, ranks = 1;
  uint64_t seed = 0;
  po::options_description opts(
      "usage: nisa run KERNEL.(nasm|nbin) [-D NAME=VALUE]... --in NAME=FILE.npy... "
      "--out NAME=FILE.npy... [options]\n\n"
      "Runs a kernel on the modelled machine (docs/machine.md). Exit codes: 0 ok, 1 usage or "
      "input error, 2 deadlock, 3 fault, 4 races found (--check-races).\n\noptions");
  opts.add_options()("help,h", "show this help")("define,D", po::value(&defines)->composing(),
                                                 "NAME=VALUE: set a .param (.nasm only)")(
      "include,I", po::value(&includes)->composing(), "include directory (.nasm only)")(
      "in", po::value(&ins)->composing(), "NAME=FILE.npy: bind an input tensor")(
      "out", po::value(&outs)->composing(), "NAME=FILE.npy: save an hbm tensor after the run")(
      "target", po::value(&target), "trn1 | trn2 | trn3 (default: the kernel's .target)")(
      "lnc", po::value(&lnc)->default_value(1), "cores per logical core: 1 or 2")(
      "ranks", po::value(&ranks)->default_value(1),
      "SPMD ranks, each with its own HBM")("stats", "print per-engine and per-queue statistics")(
      "timeline", po::value(&timeline), "write a Chrome trace (Perfetto) JSON file")(
      "schedule", po::value(&schedule)->default_value("fixed"),
      "fixed | random: random orders ties and stretches latencies by --seed (exposes missing "
      "waits)")("seed", po::value(&seed)->default_value(0), "seed of --schedule random")(
      "check-uninit", "fault on reads of memory never written")(
      "check-races", "report accesses of different engines to the same bytes that no semaphore, "
                     "barrier or program order orders (exit code 4; docs/debugger.md)")(
      "trace", po::value(&trace),
      "write one line per executed instruction to FILE "
      "(docs/trace-format.md)")("trace-from", po::value(&trace_from),
                                "trace: first modelled time kept (ns)")(
      "trace-to", po::value(&trace_to),
      "trace: last modelled time kept (ns)")("trace-engines", po::value(&trace_engines),
                                             "trace: only these engines/queues "
                                             "(e.g. dve,sp,q0,dma)");
  po::options_description hidden;
  hidden.add_options()("kernel", po::value(&kernel));
  po::options_description all;
  all.add(opts).add(hidden);
  po::positional_options_description pos;
  pos.add("kernel", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "nisa run: " << e.what() << "\n";
    return 1;
  }
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return 0;
  }
  if (kernel.empty()) {
    std::cerr << "nisa run: no kernel given (nisa run --help)\n";
    return 1;
  }

  interp::RunConfig cfg;
  cfg.machine.lnc = lnc;
  cfg.machine.ranks = ranks;
  cfg.machine.check_uninit = vm.count("check-uninit") > 0;
  cfg.stats = vm.count("stats") > 0;
  cfg.timeline_path = timeline;
  cfg.check_races = vm.count("check-races") > 0;
  cfg.trace_path = trace;
  if (trace_from >= 0) cfg.trace_filter.from = int64_t(trace_from * interp::kTickMHz / 1000.0);
  if (trace_to >= 0) cfg.trace_filter.to = int64_t(trace_to * interp::kTickMHz / 1000.0 + 0.5);
  if (!trace_engines.empty()) {
    try {
      cfg.trace_filter.engines = interp::parse_trace_engines(trace_engines);
    } catch (const std::exception& e) {
      std::cerr << "nisa run: " << e.what() << "\n";
      return 1;
    }
  }
  if (!target.empty()) {
    const interp::TargetParams* tp = interp::find_target(target);
    if (!tp) {
      std::cerr << "nisa run: unknown --target '" << target << "' (trn1, trn2 or trn3)\n";
      return 1;
    }
    cfg.machine.target = tp->target;
    cfg.target_given = true;
  }
  if (schedule == "random")
    cfg.sched.mode = interp::ScheduleMode::random;
  else if (schedule != "fixed") {
    std::cerr << "nisa run: unknown --schedule '" << schedule << "' (fixed or random)\n";
    return 1;
  }
  cfg.sched.seed = seed;
  for (const auto& s : ins) {
    IoSpec io;
    if (!split_binding(s, "--in", io)) return 1;
    cfg.inputs.push_back(io);
  }
  for (const auto& s : outs) {
    IoSpec io;
    if (!split_binding(s, "--out", io)) return 1;
    cfg.outputs.push_back(io);
  }

  Module mod;
  if (ends_with(kernel, ".nbin")) {
    if (!defines.empty()) {
      std::cerr << "nisa run: -D applies to .nasm kernels only (" << kernel << " is assembled)\n";
      return 1;
    }
    auto r = load_object(kernel);
    if (!r) {
      std::cerr << "nisa run: " << r.error().str() << "\n";
      return 1;
    }
    mod = std::move(*r);
  } else {
    nasm::AsmOptions ao;
    for (const auto& d : defines) {
      size_t eq = d.find('=');
      if (eq == std::string::npos || eq == 0) {
        std::cerr << "nisa run: -D '" << d << "': expected NAME=VALUE\n";
        return 1;
      }
      ao.defines.emplace_back(d.substr(0, eq), d.substr(eq + 1));
    }
    ao.include_dirs = includes;
    if (cfg.target_given) ao.target = cfg.machine.target;
    nasm::AsmResult r = nasm::assemble_file(kernel, ao);
    if (!r.ok()) {
      std::cerr << r.diagnostics_text();
      return 1;
    }
    mod = std::move(*r.module);
  }
  return interp::run_module(mod, cfg, std::cout, std::cerr);
}

} // namespace nisa::cli
