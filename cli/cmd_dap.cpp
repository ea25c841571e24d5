// nisa dap: a Debug Adapter Protocol server over stdio (docs/editors.md) on top of the
// debugger session of `nisa debug` (interp/debug/session.h). Every request that moves or
// inspects the machine runs the session's own command (break, watch, step, continue,
// reverse-step, reverse-continue, finish, print, x), so the adapter behaves as the command
// line debugger does; the session's text goes to the client as output events.
//
// Threads: every engine and DMA queue of every core, id = core * 32 + track + 1 (track: the
// engine 0..5, or 6 + queue). Frames: the next instruction of the thread and, for the engine
// of the next event, the macro / .for / include expansion chain (`where`). Scopes: registers
// of the engine, semaphores of the core, tensors. memoryReference: "hbm:ADDR",
// "sbuf:P:OFF", "psum:P:OFF" (readMemory); instructionPointerReference "ENGINE:PC"
// (disassemble).
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common.h"
#include "interp/debug/session.h"
#include "interp/sched/scheduler.h"

namespace nisa::cli {
namespace {
using nlohmann::json;
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
  std::unique_ptr<interp::debug::Session> session_;
  std::ostringstream text_;
  bool stop_on_entry_ = true;
  bool ended_ = false;
  bool finished_ = false;                            // the last stop was on the last event
  std::string last_stop_;                            // the session's text of the last stop
  std::map<std::string, std::vector<int>> line_bps_; // source path -> session ids
  std::vector<int> fn_bps_, data_bps_;

  void send(const json& j) {
    const std::string s = j.dump(-1, ' ', false, json::error_handler_t::replace);
    out_ << "Content-Length: " << s.size() << "\r\n\r\n" << s << std::flush;
  }
  void event(const std::string& name, json body = json::object()) {
    pending_.push_back(
        {{"seq", seq_++}, {"type", "event"}, {"event", name}, {"body", std::move(body)}});
  }
  // Runs a session command and returns what it printed (also sent as console output).
  std::string run(const std::string& line, bool echo = true) {
    if (!session_) throw std::runtime_error("not launched");
    text_.str("");
    text_.clear();
    session_->execute(line);
    std::string s = text_.str();
    if (echo && !s.empty()) event("output", {{"category", "console"}, {"output", s}});
    return s;
  }
  const interp::Machine& m() const { return session_->machine(); }
  // The prefix the session gives a core's agents ("rank 1 core 0 "; "" with one core).
  std::string who(int core) const {
    std::string w;
    if (m().opt.ranks > 1) w += fmt::format("rank {} ", m().cores[size_t(core)].rank);
    if (m().opt.lnc > 1) w += fmt::format("core {} ", m().cores[size_t(core)].core);
    return w;
  }
  static std::string track_name(int track) {
    return track < kNumEngines ? std::string(name_of(Engine(track)))
                               : fmt::format("q{}", track - kNumEngines);
  }
  int core_of(const std::string& prefix) const {
    for (int c = 0; c < m().num_cores(); ++c)
      if (who(c) == prefix) return c;
    return 0;
  }
  // What `info engines` says of each agent: label -> (engine, pc) of its next instruction
  // (a queue: the instruction whose transfer it runs).
  std::map<std::string, std::pair<int, int64_t>> agents() {
    std::map<std::string, std::pair<int, int64_t>> a;
    static const std::regex rx(
        R"(^  (.+?)\s+(?:running|waiting|rendezvous)\s+(?:transfer of )?(\w+)\[(\d+)\])");
    std::istringstream is(run("info engines", false));
    std::string line;
    while (std::getline(is, line)) {
      std::smatch mt;
      if (std::regex_search(line, mt, rx)) a[mt[1]] = {engine_index(mt[2]), std::stoll(mt[3])};
    }
    return a;
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
  json source(const std::string& f) const {
    std::error_code ec;
    return {{"name", fs::path(f).filename().string()},
            {"path", fs::weakly_canonical(f, ec).string()}};
  }
  static int id_of(const std::string& text) { // "Breakpoint 3 at ..." / "Watchpoint 4: ..."
    static const std::regex rx(R"((?:Breakpoint|Watchpoint|watchpoint|breakpoint) (\d+))");
    std::smatch mt;
    return std::regex_search(text, mt, rx) ? std::stoi(mt[1]) : -1;
  }
  static bool is_error(const std::string& text) { return text.rfind("error:", 0) == 0; }
  void delete_all(std::vector<int>& ids) {
    for (int id : ids) run(fmt::format("delete {}", id), false);
    ids.clear();
  }
  json set_bps(const std::vector<std::string>& specs, std::vector<int>& ids) {
    delete_all(ids);
    json out = json::array();
    for (const std::string& s : specs) {
      const std::string t = run(s, false);
      const int id = is_error(t) ? -1 : id_of(t);
      if (id >= 0) ids.push_back(id);
      json b = {{"verified", id >= 0}, {"message", t}};
      if (id >= 0) b["id"] = id;
      out.push_back(b);
    }
    return out;
  }

  // The thread of the next event: (core, track) from `where` and the stop line.
  int next_thread() {
    // The stop line of the next event: "[rank R ][core C ](qN: transfer of )?ENGINE[PC] at".
    static const std::regex stop(
        R"(((?:rank \d+ )?(?:core \d+ )?)(?:q(\d+): transfer of )?(\w+)\[\d+\](?: at|,))");
    std::smatch sm;
    if (!last_stop_.empty() && std::regex_search(last_stop_, sm, stop)) {
      const int core = core_of(sm[1]);
      const int track = sm[2].matched ? kNumEngines + std::stoi(sm[2]) : engine_index(sm[3]);
      return core * kTracksPerCore + track + 1;
    }
    const std::string w = run("where", false);
    static const std::regex rx(R"(#0  (\w+)\[(\d+)\])");
    static const std::regex q(R"(^q(\d+): a transfer)");
    std::smatch mt;
    int core = 0;
    int track = 4;
    if (std::regex_search(w, mt, q))
      track = 6 + std::stoi(mt[1]);
    else if (std::regex_search(w, mt, rx))
      track = engine_index(mt[1]);
    (void)core;
    return core * kTracksPerCore + track + 1;
  }
  static int engine_index(const std::string& name) {
    for (int e = 0; e < kNumEngines; ++e)
      if (name_of(Engine(e)) == name) return e;
    return 0;
  }
  void finish() {
    ended_ = true;
    finished_ = false;
    event("exited", {{"exitCode", session_->exit_code()}});
    event("terminated");
  }
  void report_stop(const std::string& text, const std::string& reason_default) {
    if (ended_) return;
    last_stop_ = text;
    const bool done = text.find("The kernel finished") != std::string::npos ||
                      text.find("The kernel is not running") != std::string::npos;
    std::string reason = reason_default, desc;
    bool hit = true;
    if (text.find("Stopped by the") != std::string::npos) {
      reason = "exception";
      desc = text.substr(text.find("Stopped by the"));
      desc = desc.substr(0, desc.find('\n'));
    } else if (text.find("atchpoint ") != std::string::npos) {
      reason = "data breakpoint";
    } else if (text.find("Breakpoint ") != std::string::npos) {
      reason = "breakpoint";
    } else {
      hit = !done;
    }
    if (!hit) { // ran to the end: the client ends the session
      finish();
      return;
    }
    // A stop on the last event: the end is reported by the next resume.
    finished_ = done;
    json b = {{"reason", reason}, {"threadId", next_thread()}, {"allThreadsStopped", true}};
    if (!desc.empty()) b["description"] = desc, b["text"] = text;
    event("stopped", b);
  }
  void resume(const std::string& cmd, const std::string& reason) {
    if (ended_) throw std::runtime_error("the kernel has finished");
    if (finished_) {
      finish();
      return;
    }
    report_stop(run(cmd), reason);
  }
  static std::pair<int, int> thread_parts(int id) {
    return {(id - 1) / kTracksPerCore, (id - 1) % kTracksPerCore};
  }
  // The next instruction of a thread (an engine's, or the one whose transfer a queue runs).
  std::optional<std::pair<int, int64_t>> thread_pc(int core, int track) {
    auto a = agents();
    auto it = a.find(who(core) + track_name(track));
    if (it == a.end()) return std::nullopt;
    return it->second;
  }
  json frame(int id, const std::string& name, const std::string& file, int line, int col,
             const std::string& ipref) {
    json f = {{"id", id}, {"name", name}, {"line", line}, {"column", col}};
    if (!file.empty()) f["source"] = source(file);
    if (!ipref.empty()) f["instructionPointerReference"] = ipref;
    return f;
  }

  json stack_trace(int thread) {
    auto [core, track] = thread_parts(thread);
    json frames = json::array();
    if (track >= kNumEngines) {
      frames.push_back(
          frame(thread * 100, fmt::format("q{} (DMA queue)", track - kNumEngines), "", 0, 0, ""));
      return {{"stackFrames", frames}, {"totalFrames", 1}};
    }
    if (next_thread() == thread) { // the expansion chain of the next event
      const std::string w = run("where", false);
      static const std::regex rx(R"(#(\d+)  (.*) at (.+):(\d+):(\d+))");
      std::istringstream is(w);
      std::string line;
      auto at = thread_pc(core, track);
      std::optional<int64_t> pc;
      if (at) pc = at->second;
      while (std::getline(is, line)) {
        std::smatch mt;
        if (!std::regex_match(line, mt, rx)) continue;
        const int depth = std::stoi(mt[1]);
        frames.push_back(
            frame(thread * 100 + depth, mt[2], mt[3], std::stoi(mt[4]), std::stoi(mt[5]),
                  depth == 0 && pc ? fmt::format("{}:{}", name_of(Engine(track)), *pc) : ""));
      }
    }
    if (frames.empty()) {
      auto at = thread_pc(core, track);
      if (!at) {
        frames.push_back(
            frame(thread * 100, who(core) + track_name(track) + " (idle or done)", "", 0, 0, ""));
      } else {
        const auto [e, pc] = *at;
        const auto& dbg = mod_->debug[size_t(e)];
        std::string file;
        int line = 0, col = 0;
        if (size_t(pc) < dbg.size() && dbg[size_t(pc)].file < mod_->files.size()) {
          file = mod_->files[dbg[size_t(pc)].file];
          line = int(dbg[size_t(pc)].line);
          col = int(dbg[size_t(pc)].col);
        }
        const std::string name = fmt::format(
            "{}{}[{}]", track >= kNumEngines ? track_name(track) + ": transfer of " : std::string(),
            name_of(Engine(e)), pc);
        frames.push_back(frame(thread * 100, name, file, line, col,
                               fmt::format("{}:{}", name_of(Engine(e)), pc)));
      }
    }
    return {{"stackFrames", frames}, {"totalFrames", frames.size()}};
  }

  json variables(int ref) {
    json vars = json::array();
    const int kind = ref / 100000, arg = ref % 100000;
    if (kind == 1) { // registers of engine arg % 32 on core arg / 32
      const int core = arg / kTracksPerCore, e = arg % kTracksPerCore;
      if (e < kNumEngines)
        for (int r = 0; r < 64; ++r)
          vars.push_back({{"name", fmt::format("r{}", r)},
                          {"value", std::to_string(m().cores[size_t(core)].st.regs[e][r])},
                          {"variablesReference", 0}});
    } else if (kind == 2) { // semaphores of core arg
      for (size_t s = 0; s < mod_->sems.size(); ++s)
        vars.push_back({{"name", mod_->sems[s].name},
                        {"value", std::to_string(m().cores[size_t(arg)].st.sems[s])},
                        {"variablesReference", 0}});
    } else if (kind == 3) { // tensors: declaration, expandable to their values
      for (size_t t = 0; t < mod_->tensors.size(); ++t) {
        const TensorDecl& d = mod_->tensors[t];
        std::string shape;
        for (int64_t x : d.shape) shape += fmt::format("{}{}", shape.empty() ? "" : ", ", x);
        vars.push_back({{"name", d.name},
                        {"value", fmt::format("{} {}[{}] {}", name_of(d.space), dtype_name(d.dtype),
                                              shape, name_of(d.role))},
                        {"variablesReference", 400000 + int(t)},
                        {"evaluateName", d.name}});
      }
    } else if (kind == 4) { // a tensor's values as `print` shows them, one row a line
      const TensorDecl& d = mod_->tensors.at(size_t(arg));
      std::string text = run("print " + d.name, false);
      std::istringstream is(text);
      std::string line;
      int n = 0;
      while (std::getline(is, line) && n < 1000)
        vars.push_back(
            {{"name", fmt::format("[{}]", n++)}, {"value", line}, {"variablesReference", 0}});
    }
    return {{"variables", vars}};
  }

  json disassemble(const json& a) {
    const std::string ref = a.at("memoryReference");
    const auto colon = ref.find(':');
    if (colon == std::string::npos) throw std::runtime_error("memoryReference: expected ENGINE:PC");
    const int e = engine_index(ref.substr(0, colon));
    const int64_t pc0 =
        std::stoll(ref.substr(colon + 1)) + a.value("offset", 0) + a.value("instructionOffset", 0);
    const int64_t n = a.at("instructionCount");
    const auto& st = mod_->streams[size_t(e)];
    json out = json::array();
    for (int64_t pc = pc0; pc < pc0 + n; ++pc) {
      json ins = {{"address", fmt::format("{}:{}", name_of(Engine(e)), pc)}};
      if (pc < 0 || size_t(pc) >= st.size()) {
        ins["instruction"] = "(none)";
        ins["presentationHint"] = "invalid";
      } else {
        ins["instruction"] = interp::describe_inst(*mod_, st[size_t(pc)]);
        const auto& dbg = mod_->debug[size_t(e)];
        if (size_t(pc) < dbg.size() && dbg[size_t(pc)].file < mod_->files.size()) {
          ins["location"] = source(mod_->files[dbg[size_t(pc)].file]);
          ins["line"] = dbg[size_t(pc)].line;
          ins["column"] = dbg[size_t(pc)].col;
        }
      }
      out.push_back(ins);
    }
    return {{"instructions", out}};
  }

  json read_memory(const json& a) {
    const std::string ref = a.at("memoryReference");
    const int64_t off = a.value("offset", 0), count = a.at("count");
    // The session's `x` parses and bounds-checks the address; its offset is the last field.
    const auto colon = ref.rfind(':');
    const std::string base = ref.substr(0, colon + 1);
    const int64_t addr = std::stoll(ref.substr(colon + 1), nullptr, 0) + off;
    const std::string text = run(fmt::format("x/{} {}{:#x}", count, base, addr), false);
    if (is_error(text)) throw std::runtime_error(text.substr(0, text.find('\n')));
    std::string bytes;
    std::istringstream is(text);
    std::string line;
    while (std::getline(is, line)) {
      const auto p = line.find(": ");
      if (p == std::string::npos) continue;
      std::istringstream hs(line.substr(p + 1));
      std::string h;
      while (hs >> h) bytes += char(std::stoi(h, nullptr, 16));
    }
    static const char* k64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string b64;
    for (size_t i = 0; i < bytes.size(); i += 3) {
      uint32_t v = uint8_t(bytes[i]) << 16;
      if (i + 1 < bytes.size()) v |= uint8_t(bytes[i + 1]) << 8;
      if (i + 2 < bytes.size()) v |= uint8_t(bytes[i + 2]);
      b64 += k64[(v >> 18) & 63];
      b64 += k64[(v >> 12) & 63];
      b64 += i + 1 < bytes.size() ? k64[(v >> 6) & 63] : '=';
      b64 += i + 2 < bytes.size() ? k64[v & 63] : '=';
    }
    return {{"address", fmt::format("{}{:#x}", base, addr)}, {"data", b64}};
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
      throw std::runtime_error("bad launch arguments (see stderr)");
    interp::RunConfig cfg;
    if (!margs.apply("dap", vm, cfg)) throw std::runtime_error("bad launch arguments (see stderr)");
    mod_ = margs.load_kernel("dap", kernel, cfg);
    if (!mod_) throw std::runtime_error("the kernel did not load (diagnostics on stderr)");
    session_ = std::make_unique<interp::debug::Session>(*mod_, cfg, text_);
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
    if (cmd == "setBreakpoints") {
      const std::string path = a.at("source").value("path", "");
      std::vector<std::string> specs;
      for (const auto& b : a.value("breakpoints", json::array())) {
        std::string s = fmt::format("break {}:{}", file_for(path), b.at("line").get<int>());
        if (b.contains("condition")) s += " if " + b["condition"].get<std::string>();
        specs.push_back(s);
      }
      json bps = set_bps(specs, line_bps_[path]);
      for (auto& b : bps) b["source"] = {{"path", path}};
      return {{"breakpoints", bps}};
    }
    if (cmd == "setFunctionBreakpoints") {
      std::vector<std::string> specs;
      for (const auto& b : a.value("breakpoints", json::array()))
        specs.push_back("break " + b.at("name").get<std::string>());
      return {{"breakpoints", set_bps(specs, fn_bps_)}};
    }
    if (cmd == "dataBreakpointInfo") {
      const std::string name = a.value("name", "");
      return {{"dataId", name},
              {"description", name},
              {"accessTypes", {"write", "read"}},
              {"canPersist", true}};
    }
    if (cmd == "setDataBreakpoints") {
      std::vector<std::string> specs;
      for (const auto& b : a.value("breakpoints", json::array()))
        specs.push_back((b.value("accessType", "write") == "read" ? "rwatch " : "watch ") +
                        b.at("dataId").get<std::string>());
      return {{"breakpoints", set_bps(specs, data_bps_)}};
    }
    if (cmd == "configurationDone") {
      if (stop_on_entry_)
        event("stopped",
              {{"reason", "entry"}, {"threadId", next_thread()}, {"allThreadsStopped", true}});
      else
        report_stop(run("continue"), "breakpoint");
      return json::object();
    }
    if (cmd == "threads") {
      json ts = json::array();
      for (int c = 0; session_ && c < m().num_cores(); ++c) {
        for (int t = 0; t < kNumEngines + kNumDmaQueues; ++t)
          ts.push_back({{"id", c * kTracksPerCore + t + 1}, {"name", who(c) + track_name(t)}});
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
    if (cmd == "variables") return variables(a.at("variablesReference"));
    auto engine_of = [&](const json& args) -> std::string {
      if (!args.contains("threadId")) return "";
      auto [core, track] = thread_parts(args["threadId"]);
      (void)core;
      return track < kNumEngines ? std::string(name_of(Engine(track)))
                                 : fmt::format("q{}", track - kNumEngines);
    };
    if (cmd == "continue") {
      resume("continue", "breakpoint");
      return {{"allThreadsContinued", true}};
    }
    if (cmd == "next" || cmd == "stepIn") {
      resume("step " + engine_of(a), "step");
      return json::object();
    }
    if (cmd == "stepOut") {
      resume("finish", "step");
      return json::object();
    }
    if (cmd == "stepBack") {
      ended_ = finished_ = false;
      report_stop(run("reverse-step"), "step");
      return json::object();
    }
    if (cmd == "reverseContinue") {
      ended_ = finished_ = false;
      report_stop(run("reverse-continue"), "breakpoint");
      return json::object();
    }
    if (cmd == "pause") return json::object(); // every request runs to its stop
    if (cmd == "evaluate") {                   // the debug console: any session command
      const std::string t = run(a.at("expression").get<std::string>(), false);
      return {{"result", t}, {"variablesReference", 0}};
    }
    if (cmd == "disassemble") return disassemble(a);
    if (cmd == "readMemory") return read_memory(a);
    if (cmd == "disconnect" || cmd == "terminate") {
      event("terminated");
      return json::object();
    }
    throw std::runtime_error("unsupported request '" + cmd + "'");
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
