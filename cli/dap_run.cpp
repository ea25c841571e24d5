// nisa dap: launch, the requests that move the run, and how stops and the end of the run are
// reported (dap.h). A launch that fails leaves the session before it as it was. A moving
// request answers first and then runs (on the server's worker thread: dap_server.cpp), so a
// pause / terminate / disconnect raised meanwhile stops it after its current event; the end of
// a run is always followed by `exited` and `terminated`, whichever request (or console
// command) ran into it.
#include <fmt/format.h>

#include "cli/common.h"
#include "cli/dap.h"
#include "isa/error.h"

namespace nisa::cli::dap {

void Adapter::launch(const json& a) {
  std::string program = str_arg(a, "program");
  std::vector<std::string> args;
  for (const auto& w : array_arg(a, "args", 4096)) {
    if (!w.is_string()) throw InputError("'args' holds a non-string");
    args.push_back(w.get<std::string>());
  }
  const bool stop_on_entry = bool_arg(a, "stopOnEntry", true);
  if (launch_filter) launch_filter(program, args);
  std::vector<std::string> words = {"dap", program};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  MachineArgs margs;
  po::options_description opts("nisa dap launch arguments");
  margs.add_to(opts);
  po::variables_map vm;
  std::string kernel;
  // Errors of the arguments go to stderr as `nisa debug` prints them, and fail the request.
  if (parse_args("dap", int(argv.size()), argv.data(), opts, kernel, "no program", vm))
    throw InputError("bad launch arguments (see stderr)");
  interp::RunConfig cfg;
  if (!margs.apply("dap", vm, cfg)) throw InputError("bad launch arguments (see stderr)");
  // The new module and session are built beside the old ones, which stay in use (and intact)
  // until both exist: a kernel that does not load or a machine that cannot be built fails the
  // request and changes nothing.
  std::optional<Module> loaded = margs.load_module("dap", kernel, cfg);
  if (!loaded) throw InputError("the kernel did not load (diagnostics on stderr)");
  if (auto why = apply_declared(vm, *loaded, cfg)) throw InputError(*why); // .ranks / .lnc
  auto mod = std::make_unique<Module>(std::move(*loaded));
  auto session = std::make_unique<dbg::Session>(*mod, cfg, text_);
  session->model().set_interrupt(&interrupt_);
  session_ = std::move(session); // the old session first: it refers to the old module
  mod_ = std::move(mod);
  stop_on_entry_ = stop_on_entry;
  ended_ = finished_ = false;
  line_bps_.clear();
  fn_bps_.clear();
  data_bps_.clear();
  moved();
}

void Adapter::configuration_done() {
  model();
  if (stop_on_entry_) {
    event("stopped", {{"reason", "entry"},
                      {"threadId", inspect_.stop_thread(model().last_stop())},
                      {"allThreadsStopped", true}});
    return;
  }
  if (terminated_ || ended_) return;
  respond_now(json::object());
  moved();
  move([this] { return model().resume(); }, "breakpoint");
}

void Adapter::moved() { inspect_.forget(); }

void Adapter::finish() {
  ended_ = true;
  finished_ = false;
  if (terminated_) return;
  event("exited", {{"exitCode", model().exit_code()}});
  event("terminated");
}

void Adapter::report_stop(const dbg::Stop& s, const std::string& reason_default, bool show) {
  if (ended_ || terminated_) return;
  using R = dbg::Stop::Reason;
  const std::string text = session_->printer().stop_text(s);
  if (show) console(text);
  const bool failed = s.end && s.end->status != interp::RunStatus::ok;
  const bool done = s.reason == R::not_running || (s.end && !failed);
  std::string reason = reason_default, desc;
  if (failed && s.reason != R::not_running) {
    reason = "exception";
    desc = session_->printer().end_line(*s.end);
  } else if (!s.watches.empty()) {
    reason = "data breakpoint";
  } else if (s.breakpoint) {
    reason = "breakpoint";
  } else if (s.reason == R::interrupted) {
    reason = "pause";
  } else if (done) { // ran to the end: the client ends the session
    finish();
    return;
  }
  // A stop on the last event: the end is reported by the next resume.
  finished_ = done;
  json b = {{"reason", reason}, {"threadId", inspect_.stop_thread(s)}, {"allThreadsStopped", true}};
  if (!desc.empty()) b["description"] = desc, b["text"] = text;
  event("stopped", b);
}

// Runs a command of the model that moves the run and reports where it stopped; an error
// (finish outside an expansion, reverse-step at the start; out of memory) leaves the run where
// it is, and the client, told it is running, gets the stop there.
void Adapter::move(const std::function<dbg::Stop()>& f, const std::string& reason) {
  try {
    report_stop(f(), reason);
  } catch (const std::exception& e) {
    console(fmt::format("error: {}\n", e.what()));
    if (terminated_) return;
    const dbg::Stop here = model().last_stop();
    event("stopped", {{"reason", reason},
                      {"threadId", inspect_.stop_thread(here)},
                      {"allThreadsStopped", true}});
  }
}

void Adapter::resume(const std::function<dbg::Stop()>& f, const std::string& reason) {
  model();
  if (terminated_) throw InputError("the session was terminated");
  if (ended_) throw InputError("the kernel has finished");
  respond_now(json::object()); // answered before it runs: pause can stop it
  moved();
  if (finished_) {
    finish();
    return;
  }
  move(f, reason);
}

// The debug console: any debugger command. A command that moves the run reports its stop as
// the moving requests do (without repeating the console text): `stopped`, or `exited` and
// `terminated` at the end of the run.
json Adapter::evaluate(const json& a) {
  dbg::Model& md = model();
  const std::string expr = str_arg(a, "expression");
  if (evaluate_filter) evaluate_filter(expr);
  text_.str("");
  text_.clear();
  const uint64_t stops = md.stops();
  session_->execute(expr);
  json body = {{"result", text_.str()}, {"variablesReference", 0}};
  text_.str("");
  if (md.stops() != stops) {
    moved();
    const dbg::Stop& s = md.last_stop();
    if (ended_ && !md.ended()) ended_ = finished_ = false; // run / restart after the end
    if (!ended_) report_stop(s, "step", false);
  }
  return body;
}

} // namespace nisa::cli::dap
