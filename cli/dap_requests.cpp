// nisa dap: the adapter's request table and its breakpoints (dap.h); the requests that inspect
// the machine are the Inspector's (dap_inspect.cpp), the ones that move it dap_run.cpp's.
#include <filesystem>

#include <fmt/format.h>

#include "cli/dap.h"
#include "isa/error.h"

namespace nisa::cli::dap {
namespace fs = std::filesystem;

std::string track_name(int track) {
  return track < kNumEngines ? std::string(name_of(Engine(track)))
                             : fmt::format("q{}", track - kNumEngines);
}
// The thread of an event: its DMA queue, else its engine (a collective's: cc).
int thread_of(const interp::StepEvent& ev) {
  const bool dma = ev.dma_queue >= 0 && ev.dma_queue < kNumDmaQueues;
  return thread_id(ev.core, dma ? kNumEngines + ev.dma_queue : int(ev.engine));
}

Adapter::Adapter(Channel& ch, const std::atomic<bool>& interrupt,
                 const std::atomic<bool>& terminated)
    : ch_(ch), interrupt_(interrupt), terminated_(terminated) {}
Adapter::~Adapter() = default;

void Adapter::handle(const Request& r) {
  current_ = &r;
  responded_ = false;
  json body = json::object();
  bool ok = true;
  std::string error;
  try {
    body = dispatch(r.command, r.arguments);
  } catch (const std::bad_alloc&) {
    ok = false;
    error = fmt::format("out of memory while answering '{}'", r.command);
  } catch (const std::exception& e) {
    ok = false;
    error = e.what();
  } catch (...) {
    ok = false;
    error = "unknown error";
  }
  if (!responded_)
    ch_.respond(r, ok, std::move(body), error);
  else if (!ok)
    console(fmt::format("error: {}\n", error)); // after the answer: on the console
  for (json& e : pending_) ch_.send(std::move(e));
  pending_.clear();
  current_ = nullptr;
}

void Adapter::respond_now(json body) {
  ch_.respond(*current_, true, std::move(body));
  responded_ = true;
}

void Adapter::event(const std::string& name, json body) {
  pending_.push_back({{"type", "event"}, {"event", name}, {"body", std::move(body)}});
}
void Adapter::console(const std::string& s) {
  if (!s.empty()) event("output", {{"category", "console"}, {"output", s}});
}
dbg::Model& Adapter::model() { return inspect_.model(); }

json Adapter::dispatch(const std::string& cmd, const json& a) {
  if (cmd == "initialize") {
    event("initialized");
    return {{"supportsConfigurationDoneRequest", true}, {"supportsFunctionBreakpoints", true},
            {"supportsDataBreakpoints", true},          {"supportsStepBack", true},
            {"supportsDisassembleRequest", true},       {"supportsReadMemoryRequest", true},
            {"supportsEvaluateForHovers", false},       {"supportsConditionalBreakpoints", true},
            {"supportsRestartRequest", false},          {"supportTerminateDebuggee", true},
            {"supportsTerminateRequest", true}};
  }
  if (cmd == "launch") {
    launch(a);
    return json::object();
  }
  if (cmd == "setBreakpoints") return set_breakpoints(a);
  if (cmd == "setFunctionBreakpoints") return set_function_breakpoints(a);
  if (cmd == "dataBreakpointInfo") {
    const std::string name = str_arg(a, "name", "");
    return {{"dataId", name},
            {"description", name},
            {"accessTypes", {"write", "read"}},
            {"canPersist", true}};
  }
  if (cmd == "setDataBreakpoints") return set_data_breakpoints(a);
  if (cmd == "configurationDone") {
    configuration_done();
    return json::object();
  }
  if (cmd == "threads") return inspect_.threads();
  if (cmd == "stackTrace") return inspect_.stack_trace(a);
  if (cmd == "scopes") return inspect_.scopes(a);
  if (cmd == "variables") return inspect_.variables(a);
  if (cmd == "continue") {
    resume([this] { return model().resume(); }, "breakpoint");
    return {{"allThreadsContinued", true}};
  }
  if (cmd == "next" || cmd == "stepIn") { // one event of the thread's engine or queue
    const int agent = a.contains("threadId") ? inspect_.thread_arg(a, "threadId").second : -1;
    resume([this, agent] { return model().step(agent, 1); }, "step");
    return json::object();
  }
  if (cmd == "stepOut") {
    resume([this] { return model().finish(); }, "step");
    return json::object();
  }
  if (cmd == "stepBack" || cmd == "reverseContinue") {
    model();
    if (terminated_) throw InputError("the session was terminated");
    ended_ = finished_ = false;
    respond_now(json::object());
    moved();
    if (cmd == "stepBack")
      move([this] { return model().reverse_step(1); }, "step");
    else
      move([this] { return model().reverse_continue(); }, "breakpoint");
    return json::object();
  }
  if (cmd == "pause") return json::object(); // not running (a run's pause is the server's)
  if (cmd == "evaluate") return evaluate(a);
  if (cmd == "disassemble") return inspect_.disassemble(a);
  if (cmd == "readMemory") return inspect_.read_memory(a);
  if (cmd == "disconnect" || cmd == "terminate") {
    event("terminated");
    return json::object();
  }
  throw InputError("unsupported request '" + cmd + "'");
}

std::string Adapter::file_for(const std::string& path) const {
  std::error_code ec;
  const fs::path want = fs::weakly_canonical(path, ec);
  for (const std::string& f : mod_->files)
    if (fs::weakly_canonical(f, ec) == want) return f;
  for (const std::string& f : mod_->files)
    if (fs::path(f).filename() == fs::path(path).filename()) return f;
  return path;
}

// Replaces the breakpoints of `ids` by those the adders make (each returns the model's
// breakpoint or throws its error, which makes the breakpoint unverified).
json Adapter::set_bps(const std::vector<std::function<dbg::BreakpointInfo()>>& adders,
                      std::vector<int>& ids) {
  for (int id : ids) try {
      model().delete_breakpoint(id);
    } catch (const dbg::Error&) { // deleted from the debug console
    }
  ids.clear();
  json out = json::array();
  for (const auto& add : adders) {
    try {
      const dbg::BreakpointInfo b = add();
      ids.push_back(b.id);
      out.push_back(
          {{"verified", true}, {"message", session_->printer().breakpoint_text(b)}, {"id", b.id}});
    } catch (const InputError& e) {
      out.push_back({{"verified", false}, {"message", fmt::format("error: {}\n", e.what())}});
    }
  }
  return out;
}

json Adapter::set_breakpoints(const json& a) {
  model();
  auto src = a.find("source");
  if (src == a.end() || !src->is_object()) throw InputError("'source' is missing");
  const std::string path = str_arg(*src, "path", "");
  const std::string file = file_for(path);
  const int f = model().file_index(file);
  std::vector<std::function<dbg::BreakpointInfo()>> adders;
  for (const auto& b : array_arg(a, "breakpoints", kMaxBreakpoints)) {
    if (!b.is_object()) throw InputError("'breakpoints' holds a non-object");
    const int64_t line = int_arg(b, "line", 1, INT32_MAX);
    const std::string cond = str_arg(b, "condition", "");
    adders.push_back([this, f, file, line, cond] {
      if (f < 0) throw dbg::Error(fmt::format("break: no source file '{}'", file));
      return model().add_line_breakpoint(f, line, cond);
    });
  }
  json bps = set_bps(adders, line_bps_[path]);
  for (auto& b : bps) b["source"] = {{"path", path}};
  return {{"breakpoints", bps}};
}

json Adapter::set_function_breakpoints(const json& a) {
  model();
  std::vector<std::function<dbg::BreakpointInfo()>> adders;
  for (const auto& b : array_arg(a, "breakpoints", kMaxBreakpoints)) {
    if (!b.is_object()) throw InputError("'breakpoints' holds a non-object");
    adders.push_back([this, name = str_arg(b, "name")] { return model().add_breakpoint(name); });
  }
  return {{"breakpoints", set_bps(adders, fn_bps_)}};
}

json Adapter::set_data_breakpoints(const json& a) {
  model();
  std::vector<std::function<dbg::BreakpointInfo()>> adders;
  for (const auto& b : array_arg(a, "breakpoints", kMaxBreakpoints)) {
    if (!b.is_object()) throw InputError("'breakpoints' holds a non-object");
    adders.push_back(
        [this, id = str_arg(b, "dataId"), read = str_arg(b, "accessType", "write") == "read"] {
          return model().add_watchpoint(id, read);
        });
  }
  return {{"breakpoints", set_bps(adders, data_bps_)}};
}

} // namespace nisa::cli::dap
