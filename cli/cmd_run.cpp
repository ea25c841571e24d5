// nisa run KERNEL.(nasm|nbin) --in NAME=FILE.npy... --out NAME=FILE.npy... [options]
#include <atomic>
#include <boost/program_options.hpp>
#include <csignal>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/common.h"
#include "interp/dist/procs.h"
#include "interp/run/run.h"

namespace nisa::cli {

namespace {
// Ctrl-C (SIGINT) stops the run at its next check (exit code 130, the report says where); a
// second one ends the process at once (SA_RESETHAND). Not under mpirun, which ends its job.
std::atomic<bool> g_interrupted{false};
void on_sigint(int) { g_interrupted.store(true, std::memory_order_relaxed); }
void catch_sigint(interp::RunConfig& cfg) {
  if (interp::procs()) return;
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sa.sa_flags = SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGINT, &sa, nullptr) == 0) cfg.sched.interrupt = &g_interrupted;
}
} // namespace

int cmd_run(int argc, char** argv) {
  std::string kernel, stats_json, timeline, trace, trace_engines, timeline_limit, trace_limit;
  std::string profile_json;
  double trace_from = -1, trace_to = -1;
  std::vector<std::string> outs;
  MachineArgs margs;
  po::options_description opts(
      "usage: nisa run KERNEL.(nasm|nbin) [-D NAME=VALUE]... --in NAME=FILE.npy... "
      "--out NAME=FILE.npy... [options]\n\n"
      "Runs a kernel on the modelled machine (docs/machine.md). Exit codes: 0 ok, 1 usage or "
      "input error, 2 deadlock, 3 fault, 4 races found (--check-races), 5 --max-steps spent (an "
      "endless loop?), 130 interrupted (Ctrl-C).\n\nUnder `mpirun -np P` the --ranks are spread "
      "over the P processes (same "
      "results; docs/machine.md \"MPI processes\").\n\noptions");
  opts.add_options()("help,h", "show this help");
  margs.add_to(opts);
  opts.add_options()("out", po::value(&outs)->composing(),
                     "NAME=FILE.npy: save an hbm tensor after the run")(
      "copy-inputs", "read the --in files into memory instead of mapping their pages (by "
                     "default a file must not be rewritten while it runs)")(
      "stats", "print per-engine and per-queue statistics")(
      "stats-json", po::value(&stats_json)->value_name("FILE"),
      "write the statistics as JSON (schema in docs/machine.md), also after a deadlock or fault")(
      "timeline", po::value(&timeline),
      "write a Chrome trace (Perfetto) JSON file (with --profile: the critical path as a track)")(
      "profile", "print the profile after the run: the critical path, the time per unit and "
                 "source line, stalls, hints and what-if makespans (docs/profile.md)")(
      "profile-json", po::value(&profile_json)->value_name("FILE"),
      "write the profile as JSON (schema nisa-profile/1, docs/profile.md)")(
      "profile-no-what-if", "profile without the what-if re-runs (one run instead of up to 8)")(
      "no-check", "do not run the bounded static check (nisa check) before the run; by default "
                  "it prints a warning per unordered pair it finds (docs/check.md)")(
      "timeline-limit", po::value(&timeline_limit)->value_name("N"),
      ("timeline: keep the first N events; 0: no limit (default " +
       std::to_string(interp::kDefaultMaxTimelineEvents) + ")")
          .c_str())("check-races",
                    "report accesses of different engines to the same bytes that no semaphore, "
                    "barrier or program order orders (exit code 4; docs/debugger.md)")(
      "trace", po::value(&trace),
      "write one line per executed instruction to FILE (docs/trace-format.md)")(
      "trace-from", po::value(&trace_from), "trace: first modelled time kept (ns)")(
      "trace-to", po::value(&trace_to), "trace: last modelled time kept (ns)")(
      "trace-engines", po::value(&trace_engines),
      "trace: only these engines/queues (e.g. dve,sp,q0,dma)")(
      "trace-limit", po::value(&trace_limit)->value_name("BYTES"),
      ("trace: stop writing records at BYTES (after the header); 0: no limit (default " +
       std::to_string(interp::kDefaultTraceMaxBytes) + ")")
          .c_str());
  po::variables_map vm;
  if (auto rc = parse_args("run", argc, argv, opts, kernel, "no kernel given", vm)) return *rc;

  interp::RunConfig cfg;
  if (!margs.apply("run", vm, cfg)) return 1;
  cfg.stats = vm.count("stats") > 0;
  cfg.copy_inputs = vm.count("copy-inputs") > 0;
  cfg.timeline_path = timeline;
  cfg.stats_json_path = stats_json;
  cfg.check_races = vm.count("check-races") > 0;
  cfg.static_check = vm.count("no-check") == 0;
  cfg.keep_machine = true; // the process ends after the run
  cfg.trace_path = trace;
  cfg.profile = vm.count("profile") > 0;
  cfg.profile_json_path = profile_json;
  cfg.profile_what_if = vm.count("profile-no-what-if") == 0;
  if (!cfg.profile_what_if && !cfg.profile && profile_json.empty()) {
    std::cerr << "nisa run: --profile-no-what-if applies to a profile: add --profile or "
                 "--profile-json FILE\n";
    return 1;
  }
  if (vm.count("timeline-limit")) {
    auto n = parse_count("run", "--timeline-limit", timeline_limit);
    if (!n) return 1;
    cfg.sched.max_timeline_events = *n;
  }
  if (vm.count("trace-limit")) {
    auto n = parse_count("run", "--trace-limit", trace_limit);
    if (!n) return 1;
    cfg.trace_max_bytes = *n;
  }
  // The window: finite times from 0, the end not before the start (an empty trace).
  if (vm.count("trace-from")) {
    if (!check_ns("run", "--trace-from", trace_from)) return 1;
    cfg.trace_filter.from = int64_t(trace_from * interp::kTickMHz / 1000.0);
  }
  if (vm.count("trace-to")) {
    if (!check_ns("run", "--trace-to", trace_to)) return 1;
    cfg.trace_filter.to = int64_t(trace_to * interp::kTickMHz / 1000.0 + 0.5);
  }
  if (vm.count("trace-from") && vm.count("trace-to") && trace_to < trace_from) {
    std::cerr << "nisa run: --trace-to " << trace_to << " is before --trace-from " << trace_from
              << ": the trace would be empty\n";
    return 1;
  }
  const bool trace_option = vm.count("trace-from") || vm.count("trace-to") ||
                            vm.count("trace-engines") || vm.count("trace-limit");
  if (trace_option && trace.empty()) {
    std::cerr << "nisa run: --trace-from, --trace-to, --trace-engines and --trace-limit apply "
                 "to a trace: add --trace FILE\n";
    return 1;
  }
  if (vm.count("timeline-limit") && timeline.empty()) {
    std::cerr << "nisa run: --timeline-limit applies to a timeline: add --timeline FILE\n";
    return 1;
  }
  if (vm.count("trace-engines")) {
    try {
      cfg.trace_filter.engines = interp::parse_trace_engines(trace_engines);
      if (cfg.trace_filter.engines == 0)
        throw InputError("--trace-engines '" + trace_engines.substr(0, 40) +
                         "' names no engine or queue (pe, act, dve, pool, sp, cc, q0..q15, dma)");
    } catch (const std::exception& e) {
      std::cerr << "nisa run: " << e.what() << "\n";
      return 1;
    }
  }
  for (const auto& s : outs) {
    interp::IoSpec io;
    if (!split_binding("run", s, "--out", io)) return 1;
    cfg.outputs.push_back(io);
  }
  std::vector<std::pair<std::string, std::string>> files;
  if (!trace.empty()) files.emplace_back("--trace", trace);
  if (!timeline.empty()) files.emplace_back("--timeline", timeline);
  if (!stats_json.empty()) files.emplace_back("--stats-json", stats_json);
  if (!profile_json.empty()) files.emplace_back("--profile-json", profile_json);
  if (!check_output_paths("run", kernel, files, cfg)) return 1;
  auto mod = margs.load_kernel("run", kernel, vm, cfg);
  if (!mod) return 1;
  catch_sigint(cfg);
  const int rc = interp::run_module(*mod, cfg, std::cout, std::cerr);
  // The process ends here: leave the module's ~10^4 instruction records to the OS instead of
  // freeing them one by one (~2 ms for depthwise_conv1d), as nisa asm does.
  static const Module* kept = new Module(std::move(*mod));
  (void)kept;
  return rc;
}

} // namespace nisa::cli
