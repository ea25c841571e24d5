// nisa dap: a Debug Adapter Protocol server over stdio (docs/editors.md) on top of the
// debugger's model (interp/debug/model.h), the one behind `nisa debug`. Every request that
// moves or inspects the machine calls the model (breakpoints, watchpoints, step, continue,
// reverse-step, reverse-continue, finish, frames, registers, semaphores, values, memory) and
// builds its JSON from the structs it returns; the console's text of each stop (the same
// formatting `nisa debug` prints) goes to the client as output events.
//
// Threads: every engine and DMA queue of every core, id = core * 32 + track + 1 (track: the
// engine 0..5, or 6 + queue). Frames: the next instruction of the thread with its macro /
// .for / include expansion chain; a queue's frame is the instruction whose transfer it runs.
// Scopes: registers of the engine, semaphores of the core, tensors. memoryReference:
// "hbm:ADDR", "sbuf:P:OFF", "psum:P:OFF" (readMemory); instructionPointerReference
// "ENGINE:PC" (disassemble).
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common.h"
#include "interp/debug/session.h"

namespace nisa::cli {
namespace {
using nlohmann::json;
namespace dbg = interp::debug;
namespace fs = std::filesystem;

constexpr int kTracksPerCore = 32; // 6 engines + 16 queues, rounded up

std::optional<json> read_message(std::istream& in) {
  std::string line;
  size_t len = 0;
  bool have = false;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) {
      if (have) break;
      continue;
    }
    if (line.rfind("Content-Length:", 0) == 0) {
      len = std::stoul(line.substr(15));
      have = true;
    }
  }
  if (!have) return std::nullopt;
  std::string body(len, '\0');
  in.read(body.data(), std::streamsize(len));
  if (size_t(in.gcount()) != len) return std::nullopt;
  return json::parse(body);
}

std::string base64(const std::vector<uint8_t>& bytes) {
  static const char* k64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string b64;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t v = uint32_t(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= uint32_t(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) v |= uint32_t(bytes[i + 2]);
    b64 += k64[(v >> 18) & 63];
    b64 += k64[(v >> 12) & 63];
    b64 += i + 1 < bytes.size() ? k64[(v >> 6) & 63] : '=';
    b64 += i + 2 < bytes.size() ? k64[v & 63] : '=';
  }
  return b64;
}

std::string track_name(int track) {
  return track < kNumEngines ? std::string(name_of(Engine(track)))
                             : fmt::format("q{}", track - kNumEngines);
}
std::pair<int, int> thread_parts(int id) {
  return {(id - 1) / kTracksPerCore, (id - 1) % kTracksPerCore};
}
int thread_id(int core, int track) { return core * kTracksPerCore + track + 1; }
// The thread of an event: its DMA queue, else its engine (a collective's: cc).
int thread_of(const interp::StepEvent& ev) {
  const bool dma = ev.dma_queue >= 0 && ev.dma_queue < kNumDmaQueues;
  return thread_id(ev.core, dma ? kNumEngines + ev.dma_queue : int(ev.engine));
}
json source(const std::string& f) {
  std::error_code ec;
  return {{"name", fs::path(f).filename().string()},
          {"path", fs::weakly_canonical(f, ec).string()}};
}
json frame(int id, const std::string& name, const std::optional<dbg::SourceLoc>& loc,
           const std::string& ipref) {
  json f = {
      {"id", id}, {"name", name}, {"line", loc ? loc->line : 0}, {"column", loc ? loc->col : 0}};
  if (loc) f["source"] = source(loc->file);
  if (!ipref.empty()) f["instructionPointerReference"] = ipref;
  return f;
}
json variables(const dbg::Model& model, const Module& mod, int ref) {
  json vars = json::array();
  auto var = [&](const std::string& name, const std::string& value) {
    vars.push_back({{"name", name}, {"value", value}, {"variablesReference", 0}});
  };
  const int kind = ref / 100000, arg = ref % 100000;
  if (kind == 1) { // registers of engine arg % 32 on core arg / 32
    const int core = arg / kTracksPerCore, e = arg % kTracksPerCore;
    if (e < kNumEngines) {
      const auto regs = model.registers(core, Engine(e));
      for (int r = 0; r < kNumRegs; ++r)
        var(fmt::format("r{}", r), std::to_string(regs[size_t(r)]));
    }
  } else if (kind == 2) { // semaphores of core arg
    for (const dbg::SemValue& s : model.semaphores(arg)) var(s.name, std::to_string(s.value));
  } else if (kind == 3) { // tensors: declaration, expandable to their values
    for (size_t t = 0; t < mod.tensors.size(); ++t) {
      const TensorDecl& d = mod.tensors[t];
      std::string shape;
      for (int64_t x : d.shape) shape += fmt::format("{}{}", shape.empty() ? "" : ", ", x);
      vars.push_back({{"name", d.name},
                      {"value", fmt::format("{} {}[{}] {}", name_of(d.space), dtype_name(d.dtype),
                                            shape, name_of(d.role))},
                      {"variablesReference", 400000 + int(t)},
                      {"evaluateName", d.name}});
    }
  } else if (kind == 4) { // a tensor's values as `print` shows them, one row (first index) each
    const TensorDecl& d = mod.tensors.at(size_t(arg));
    const dbg::SliceValues v = model.read(d.name);
    const size_t rows = d.shape.size() > 1 ? size_t(d.shape[0]) : 1;
    const size_t cols = rows ? v.size() / rows : 0;
    constexpr size_t kMaxRows = 1000, kMaxCols = 64;
    for (size_t r = 0; r < std::min(rows, kMaxRows); ++r) {
      std::string row;
      for (size_t c = 0; c < std::min(cols, kMaxCols); ++c)
        row += (c ? ", " : "") + v.text(r * cols + c);
      if (cols > kMaxCols) row += fmt::format(", ... ({} more)", cols - kMaxCols);
      var(d.shape.size() <= 1        ? std::string("[:]")
          : d.space != MemSpace::hbm ? fmt::format("p{}", r)
                                     : fmt::format("[{}]", r),
          row);
    }
  }
  return {{"variables", vars}};
}

json disassemble(const dbg::Model& model, const json& a) {
  const std::string ref = a.at("memoryReference");
  const auto colon = ref.find(':');
  const int e = colon == std::string::npos ? -1 : dbg::agent_index(ref.substr(0, colon));
  if (e < 0 || e >= kNumEngines) throw InputError("memoryReference: expected ENGINE:PC");
  const int64_t pc0 =
      std::stoll(ref.substr(colon + 1)) + a.value("offset", 0) + a.value("instructionOffset", 0);
  const int64_t n = a.at("instructionCount");
  const auto& st = model.module().streams[size_t(e)];
  json out = json::array();
  for (int64_t pc = pc0; pc < pc0 + n; ++pc) {
    json ins = {{"address", fmt::format("{}:{}", name_of(Engine(e)), pc)}};
    if (pc < 0 || size_t(pc) >= st.size()) {
      ins["instruction"] = "(none)";
      ins["presentationHint"] = "invalid";
    } else {
      ins["instruction"] = interp::describe_inst(model.module(), st[size_t(pc)]);
      if (auto loc = model.location(Engine(e), pc); loc && loc->file != "?") {
        ins["location"] = source(loc->file);
        ins["line"] = loc->line;
        ins["column"] = loc->col;
      }
    }
    out.push_back(ins);
  }
  return {{"instructions", out}};
}

json read_memory(const dbg::Model& model, const json& a) {
  try {
    dbg::MemRef ref = dbg::parse_memref(a.at("memoryReference").get<std::string>());
    const int64_t off = a.value("offset", 0), count = a.at("count");
    if (count < 0 || count > (int64_t(1) << 24)) throw dbg::Error("readMemory: count out of range");
    if (off < 0 && uint64_t(-off) > ref.offset) throw dbg::Error("readMemory: negative address");
    ref.offset += uint64_t(off);
    const std::vector<uint8_t> bytes = model.read_memory(ref, uint64_t(count));
    json body = {{"address", ref.text()}, {"data", base64(bytes)}};
    if (int64_t(bytes.size()) < count) body["unreadableBytes"] = count - int64_t(bytes.size());
    return body;
  } catch (const dbg::Error& e) {
    throw InputError(fmt::format("error: {}", e.what()));
  }
}

class Adapter {
public:
  explicit Adapter(std::ostream& out) : out_(out) {}
  int serve(std::istream& in) {
    while (auto msg = read_message(in)) {
      if ((*msg)["type"] != "request") continue;
      const std::string cmd = (*msg)["command"];
      json body = json::object();
      bool ok = true;
      std::string error;
      try {
        body = handle(cmd, msg->value("arguments", json::object()));
      } catch (const std::exception& e) {
        ok = false;
        error = e.what();
      }
      json resp = {{"seq", seq_++}, {"type", "response"}, {"request_seq", (*msg)["seq"]},
                   {"success", ok}, {"command", cmd},     {"body", body}};
      if (!ok) resp["message"] = error;
      send(resp);
      for (auto& e : pending_) send(e);
      pending_.clear();
      if (cmd == "disconnect") return 0;
    }
    return 0;
  }

private:
  std::ostream& out_;
  int seq_ = 1;
  std::vector<json> pending_; // events sent after the response
  std::optional<Module> mod_;
  std::unique_ptr<dbg::Session> session_;
  std::ostringstream text_; // the console of `evaluate`
  bool stop_on_entry_ = true;
  bool ended_ = false;
  bool finished_ = false;                            // the last stop was on the last event
  std::map<std::string, std::vector<int>> line_bps_; // source path -> breakpoint ids
  std::vector<int> fn_bps_, data_bps_;

  void send(const json& j) {
    const std::string s = j.dump(-1, ' ', false, json::error_handler_t::replace);
    out_ << "Content-Length: " << s.size() << "\r\n\r\n" << s << std::flush;
  }
  void event(const std::string& name, json body = json::object()) {
    pending_.push_back(
        {{"seq", seq_++}, {"type", "event"}, {"event", name}, {"body", std::move(body)}});
  }
  void console(const std::string& s) {
    if (!s.empty()) event("output", {{"category", "console"}, {"output", s}});
  }
  dbg::Model& model() {
    if (!session_) throw InputError("not launched");
    return session_->model();
  }
  const interp::Machine& m() { return model().machine(); }
  // The prefix the console gives a core's agents ("rank 1 core 0 "; "" with one core).
  std::string who(int core) {
    std::string w;
    if (m().opt.ranks > 1) w += fmt::format("rank {} ", m().cores[size_t(core)].rank);
    if (m().opt.lnc > 1) w += fmt::format("core {} ", m().cores[size_t(core)].core);
    return w;
  }
  // The thread a stop is shown on: the next event's; after the end a blocked engine (a
  // deadlock) or the last event's.
  int stop_thread(const dbg::Stop& s) {
    if (s.next) return thread_of(*s.next);
    for (const dbg::Agent& g : model().agents())
      if (g.state.queue < 0 && (g.state.state == interp::AgentState::waiting ||
                                g.state.state == interp::AgentState::rendezvous))
        return thread_id(g.state.core, int(g.state.engine));
    if (const auto& last = model().last_event()) return thread_of(*last);
    return thread_id(0, int(Engine::sp));
  }
  // The engine or queue of a thread, if the scheduler lists it.
  std::optional<dbg::Agent> agent(int core, int track) {
    for (dbg::Agent& g : model().agents())
      if (g.state.core == core &&
          (track < kNumEngines ? g.state.queue < 0 && int(g.state.engine) == track
                               : g.state.queue == track - kNumEngines))
        return g;
    return std::nullopt;
  }

  std::string file_for(const std::string& path) const {
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
  json set_bps(const std::vector<std::function<dbg::BreakpointInfo()>>& adders,
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
        out.push_back({{"verified", true},
                       {"message", session_->printer().breakpoint_text(b)},
                       {"id", b.id}});
      } catch (const dbg::Error& e) {
        out.push_back({{"verified", false}, {"message", fmt::format("error: {}\n", e.what())}});
      }
    }
    return out;
  }

  void finish() {
    ended_ = true;
    finished_ = false;
    event("exited", {{"exitCode", model().exit_code()}});
    event("terminated");
  }
  void report_stop(const dbg::Stop& s, const std::string& reason_default) {
    if (ended_) return;
    using R = dbg::Stop::Reason;
    const std::string text = session_->printer().stop_text(s);
    console(text);
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
    } else if (done) { // ran to the end: the client ends the session
      finish();
      return;
    }
    // A stop on the last event: the end is reported by the next resume.
    finished_ = done;
    json b = {{"reason", reason}, {"threadId", stop_thread(s)}, {"allThreadsStopped", true}};
    if (!desc.empty()) b["description"] = desc, b["text"] = text;
    event("stopped", b);
  }
  // Runs a command of the model that moves the run and reports where it stopped; an error
  // (finish outside an expansion, reverse-step at the start) leaves the run where it is.
  void move(const std::function<dbg::Stop()>& f, const std::string& reason) {
    try {
      report_stop(f(), reason);
    } catch (const dbg::Error& e) {
      console(fmt::format("error: {}\n", e.what()));
      dbg::Stop here = model().last_stop();
      event("stopped",
            {{"reason", reason}, {"threadId", stop_thread(here)}, {"allThreadsStopped", true}});
    }
  }
  void resume(const std::function<dbg::Stop()>& f, const std::string& reason) {
    if (ended_) throw InputError("the kernel has finished");
    if (finished_) {
      finish();
      return;
    }
    move(f, reason);
  }

  // The thread's next instruction (a queue: the one whose transfer it runs) and the macro /
  // .for / include expansions around it, innermost first.
  json stack_trace(int thread) {
    auto [core, track] = thread_parts(thread);
    json frames = json::array();
    auto g = agent(core, track);
    if (!g || g->idle() || g->state.state == interp::AgentState::done) {
      frames.push_back(
          frame(thread * 100, who(core) + track_name(track) + " (idle or done)", std::nullopt, ""));
      return {{"stackFrames", frames}, {"totalFrames", 1}};
    }
    const bool queue = track >= kNumEngines;
    const auto [e, pc] = queue ? g->state.queued.front() : std::pair{g->state.engine, g->state.pc};
    const std::vector<dbg::Frame> fs = model().frames(e, pc);
    for (size_t k = 0; k < fs.size(); ++k)
      frames.push_back(frame(
          thread * 100 + int(k),
          k == 0 && queue ? fmt::format("{}: transfer of {}", track_name(track), fs[k].title())
                          : fs[k].title(),
          fs[k].loc, k == 0 ? fmt::format("{}:{}", name_of(e), pc) : ""));
    return {{"stackFrames", frames}, {"totalFrames", frames.size()}};
  }

  void launch(const json& a) {
    std::vector<std::string> words = {"dap", a.at("program").get<std::string>()};
    for (const auto& w : a.value("args", json::array())) words.push_back(w.get<std::string>());
    stop_on_entry_ = a.value("stopOnEntry", true);
    std::vector<char*> argv;
    for (auto& w : words) argv.push_back(w.data());
    MachineArgs margs;
    po::options_description opts("nisa dap launch arguments");
    margs.add_to(opts);
    po::variables_map vm;
    std::string kernel;
    // Errors of the arguments go to stderr as `nisa debug` prints them, and fail the request.
    if (auto rc = parse_args("dap", int(argv.size()), argv.data(), opts, kernel, "no program", vm))
      throw InputError("bad launch arguments (see stderr)");
    interp::RunConfig cfg;
    if (!margs.apply("dap", vm, cfg)) throw InputError("bad launch arguments (see stderr)");
    mod_ = margs.load_kernel("dap", kernel, cfg);
    if (!mod_) throw InputError("the kernel did not load (diagnostics on stderr)");
    session_ = std::make_unique<dbg::Session>(*mod_, cfg, text_);
  }

  json set_breakpoints(const json& a) {
    const std::string path = a.at("source").value("path", "");
    const std::string file = file_for(path);
    const int f = model().file_index(file);
    std::vector<std::function<dbg::BreakpointInfo()>> adders;
    for (const auto& b : a.value("breakpoints", json::array())) {
      const int64_t line = b.at("line").get<int64_t>();
      const std::string cond = b.value("condition", "");
      adders.push_back([this, f, file, line, cond] {
        if (f < 0) throw dbg::Error(fmt::format("break: no source file '{}'", file));
        return model().add_line_breakpoint(f, line, cond);
      });
    }
    json bps = set_bps(adders, line_bps_[path]);
    for (auto& b : bps) b["source"] = {{"path", path}};
    return {{"breakpoints", bps}};
  }

  json handle(const std::string& cmd, const json& a) {
    if (cmd == "initialize") {
      event("initialized");
      return {{"supportsConfigurationDoneRequest", true}, {"supportsFunctionBreakpoints", true},
              {"supportsDataBreakpoints", true},          {"supportsStepBack", true},
              {"supportsDisassembleRequest", true},       {"supportsReadMemoryRequest", true},
              {"supportsEvaluateForHovers", false},       {"supportsConditionalBreakpoints", true},
              {"supportsRestartRequest", false}};
    }
    if (cmd == "launch") {
      launch(a);
      return json::object();
    }
    if (cmd == "setBreakpoints") return set_breakpoints(a);
    if (cmd == "setFunctionBreakpoints") {
      std::vector<std::function<dbg::BreakpointInfo()>> adders;
      for (const auto& b : a.value("breakpoints", json::array()))
        adders.push_back([this, name = b.at("name").get<std::string>()] {
          return model().add_breakpoint(name);
        });
      return {{"breakpoints", set_bps(adders, fn_bps_)}};
    }
    if (cmd == "dataBreakpointInfo") {
      const std::string name = a.value("name", "");
      return {{"dataId", name},
              {"description", name},
              {"accessTypes", {"write", "read"}},
              {"canPersist", true}};
    }
    if (cmd == "setDataBreakpoints") {
      std::vector<std::function<dbg::BreakpointInfo()>> adders;
      for (const auto& b : a.value("breakpoints", json::array()))
        adders.push_back([this, id = b.at("dataId").get<std::string>(),
                          read = b.value("accessType", "write") == "read"] {
          return model().add_watchpoint(id, read);
        });
      return {{"breakpoints", set_bps(adders, data_bps_)}};
    }
    if (cmd == "configurationDone") {
      if (stop_on_entry_)
        event("stopped", {{"reason", "entry"},
                          {"threadId", stop_thread(model().last_stop())},
                          {"allThreadsStopped", true}});
      else
        move([this] { return model().resume(); }, "breakpoint");
      return json::object();
    }
    if (cmd == "threads") {
      json ts = json::array();
      for (int c = 0; session_ && c < m().num_cores(); ++c) {
        for (int t = 0; t < kNumEngines + kNumDmaQueues; ++t)
          ts.push_back({{"id", thread_id(c, t)}, {"name", who(c) + track_name(t)}});
      }
      return {{"threads", ts}};
    }
    if (cmd == "stackTrace") return stack_trace(a.at("threadId"));
    if (cmd == "scopes") {
      const int thread = a.at("frameId").get<int>() / 100;
      auto [core, track] = thread_parts(thread);
      json sc = json::array();
      if (track < kNumEngines)
        sc.push_back({{"name", "Registers"},
                      {"variablesReference", 100000 + core * kTracksPerCore + track},
                      {"expensive", false}});
      sc.push_back(
          {{"name", "Semaphores"}, {"variablesReference", 200000 + core}, {"expensive", false}});
      sc.push_back({{"name", "Tensors"}, {"variablesReference", 300000}, {"expensive", false}});
      return {{"scopes", sc}};
    }
    if (cmd == "variables") return variables(model(), *mod_, a.at("variablesReference"));
    if (cmd == "continue") {
      resume([this] { return model().resume(); }, "breakpoint");
      return {{"allThreadsContinued", true}};
    }
    if (cmd == "next" || cmd == "stepIn") { // one event of the thread's engine or queue
      const int agent = a.contains("threadId") ? thread_parts(a["threadId"]).second : -1;
      resume([this, agent] { return model().step(agent, 1); }, "step");
      return json::object();
    }
    if (cmd == "stepOut") {
      resume([this] { return model().finish(); }, "step");
      return json::object();
    }
    if (cmd == "stepBack") {
      ended_ = finished_ = false;
      move([this] { return model().reverse_step(1); }, "step");
      return json::object();
    }
    if (cmd == "reverseContinue") {
      ended_ = finished_ = false;
      move([this] { return model().reverse_continue(); }, "breakpoint");
      return json::object();
    }
    if (cmd == "pause") return json::object(); // every request runs to its stop
    if (cmd == "evaluate") {                   // the debug console: any debugger command
      model();
      text_.str("");
      text_.clear();
      session_->execute(a.at("expression").get<std::string>());
      return {{"result", text_.str()}, {"variablesReference", 0}};
    }
    if (cmd == "disassemble") return disassemble(model(), a);
    if (cmd == "readMemory") return read_memory(model(), a);
    if (cmd == "disconnect" || cmd == "terminate") {
      event("terminated");
      return json::object();
    }
    throw InputError("unsupported request '" + cmd + "'");
  }
};

} // namespace

int cmd_dap(int argc, char** argv) {
  if (argc > 1) {
    const std::string a = argv[1];
    if (a == "--help" || a == "-h") {
      std::cout << "usage: nisa dap\n\nA Debug Adapter Protocol server on stdin/stdout over the "
                   "debugger of `nisa debug` (docs/editors.md). The launch request takes "
                   "\"program\" (the kernel), \"args\" (the options of nisa debug: -D, --in, "
                   "--lnc, --ranks, ...) and \"stopOnEntry\".\n";
      return 0;
    }
    std::fprintf(stderr, "nisa dap: unexpected argument '%s' (the adapter takes none)\n", argv[1]);
    return 1;
  }
  Adapter ad(std::cout);
  try {
    return ad.serve(std::cin);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nisa dap: %s\n", e.what());
    return 1;
  }
}

} // namespace nisa::cli
