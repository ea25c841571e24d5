// nisa dap: the requests that inspect the stopped machine (dap.h's Inspector): threads, stack
// frames, scopes, variables, disassembly and memory. Every id, count and range the client
// sends is checked before it is used: thread and frame ids against the machine's cores and
// tracks, variablesReference against the table of references handed out since the run last
// moved, instruction and byte counts against the limits of dap.h.
#include <filesystem>

#include <fmt/format.h>

#include "cli/dap.h"
#include "isa/error.h"

namespace nisa::cli::dap {
namespace fs = std::filesystem;

dbg::Model& Inspector::model() {
  if (!session_) throw InputError("not launched (send a launch request first)");
  return session_->model();
}
namespace {
json source(const std::string& f) {
  std::error_code ec;
  return {{"name", fs::path(f).filename().string()},
          {"path", fs::weakly_canonical(f, ec).string()}};
}
json frame(int64_t id, const std::string& name, const std::optional<dbg::SourceLoc>& loc,
           const std::string& ipref) {
  json f = {
      {"id", id}, {"name", name}, {"line", loc ? loc->line : 0}, {"column", loc ? loc->col : 0}};
  if (loc) f["source"] = source(loc->file);
  if (!ipref.empty()) f["instructionPointerReference"] = ipref;
  return f;
}
} // namespace

const interp::Machine& Inspector::m() { return model().machine(); }
int Inspector::num_cores() { return session_ ? m().num_cores() : 0; }

// The prefix the console gives a core's agents ("rank 1 core 0 "; "" with one core).
std::string Inspector::who(int core) {
  std::string w;
  if (m().opt.ranks > 1) w += fmt::format("rank {} ", m().cores[size_t(core)].rank);
  if (m().opt.lnc > 1) w += fmt::format("core {} ", m().cores[size_t(core)].core);
  return w;
}

// The thread a stop is shown on: the next event's; after the end a blocked engine (a
// deadlock) or the last event's.
int Inspector::stop_thread(const dbg::Stop& s) {
  if (s.next) return thread_of(*s.next);
  for (const dbg::Agent& g : model().agents())
    if (g.state.queue < 0 && (g.state.state == interp::AgentState::waiting ||
                              g.state.state == interp::AgentState::rendezvous))
      return thread_id(g.state.core, int(g.state.engine));
  if (const auto& last = model().last_event()) return thread_of(*last);
  return thread_id(0, int(Engine::sp));
}

// The engine or queue of a thread, if the scheduler lists it.
std::optional<dbg::Agent> Inspector::agent(int core, int track) {
  for (dbg::Agent& g : model().agents())
    if (g.state.core == core &&
        (track < kNumEngines ? g.state.queue < 0 && int(g.state.engine) == track
                             : g.state.queue == track - kNumEngines))
      return g;
  return std::nullopt;
}

std::pair<int, int> Inspector::thread_arg(const json& a, const char* name) {
  model();
  const int64_t id = int_arg(a, name, 1, int64_t(num_cores()) * kTracksPerCore);
  const int core = int((id - 1) / kTracksPerCore), track = int((id - 1) % kTracksPerCore);
  if (track >= kNumEngines + kNumDmaQueues)
    throw InputError(fmt::format("'{}' = {} is no thread (see the threads request)", name, id));
  return {core, track};
}

int Inspector::ref_of(const VarRef& r) {
  auto [it, fresh] = ref_ids_.emplace(r.key(), int(refs_.size()) + 1);
  if (fresh) refs_.push_back(r);
  return it->second;
}

json Inspector::threads() {
  json ts = json::array();
  for (int c = 0; c < num_cores(); ++c) {
    for (int t = 0; t < kNumEngines + kNumDmaQueues; ++t)
      ts.push_back({{"id", thread_id(c, t)}, {"name", who(c) + track_name(t)}});
  }
  return {{"threads", ts}};
}

// The thread's next instruction (a queue: the one whose transfer it runs) and the macro /
// .for / include expansions around it, innermost first.
json Inspector::stack_trace(const json& a) {
  const auto [core, track] = thread_arg(a, "threadId");
  const int thread = thread_id(core, track);
  json frames = json::array();
  auto g = agent(core, track);
  if (!g || g->idle() || g->state.state == interp::AgentState::done) {
    frames.push_back(frame(int64_t(thread) * 100, who(core) + track_name(track) + " (idle or done)",
                           std::nullopt, ""));
    return {{"stackFrames", frames}, {"totalFrames", 1}};
  }
  const bool queue = track >= kNumEngines;
  const auto [e, pc] = queue ? g->state.queued.front() : std::pair{g->state.engine, g->state.pc};
  const std::vector<dbg::Frame> fs = model().frames(e, pc);
  for (size_t k = 0; k < fs.size() && k < 100; ++k)
    frames.push_back(frame(int64_t(thread) * 100 + int64_t(k),
                           k == 0 && queue
                               ? fmt::format("{}: transfer of {}", track_name(track), fs[k].title())
                               : fs[k].title(),
                           fs[k].loc, k == 0 ? fmt::format("{}:{}", name_of(e), pc) : ""));
  return {{"stackFrames", frames}, {"totalFrames", frames.size()}};
}

json Inspector::scopes(const json& a) {
  model();
  const int64_t fid =
      int_arg(a, "frameId", 100, (int64_t(num_cores()) * kTracksPerCore + 1) * 100 - 1);
  json id = {{"threadId", fid / 100}};
  const auto [core, track] = thread_arg(id, "threadId");
  json sc = json::array();
  if (track < kNumEngines)
    sc.push_back({{"name", "Registers"},
                  {"variablesReference", ref_of({VarRef::registers, core, track, 0})},
                  {"expensive", false}});
  sc.push_back({{"name", "Semaphores"},
                {"variablesReference", ref_of({VarRef::semaphores, core, 0, 0})},
                {"expensive", false}});
  sc.push_back({{"name", "Tensors"},
                {"variablesReference", ref_of({VarRef::tensors, 0, 0, 0})},
                {"expensive", false}});
  return {{"scopes", sc}};
}

json Inspector::variables(const json& a) {
  model();
  const int64_t ref = int_arg(a, "variablesReference", INT64_MIN, INT64_MAX);
  if (ref < 1 || ref > int64_t(refs_.size()))
    throw InputError(fmt::format("variablesReference {} was not handed out (the references of "
                                 "scopes and variables are valid until the run moves)",
                                 ref));
  const VarRef r = refs_[size_t(ref - 1)];
  json vars = json::array();
  auto var = [&](const std::string& name, const std::string& value) {
    vars.push_back({{"name", name}, {"value", value}, {"variablesReference", 0}});
  };
  switch (r.kind) {
  case VarRef::registers: {
    const auto regs = model().registers(r.core, Engine(r.engine));
    for (int k = 0; k < kNumRegs; ++k) var(fmt::format("r{}", k), std::to_string(regs[size_t(k)]));
    break;
  }
  case VarRef::semaphores:
    for (const dbg::SemValue& s : model().semaphores(r.core)) var(s.name, std::to_string(s.value));
    break;
  case VarRef::tensors: // the declarations, expandable to their values
    for (size_t t = 0; t < model().module().tensors.size(); ++t) {
      const TensorDecl& d = model().module().tensors[t];
      std::string shape;
      for (int64_t x : d.shape) shape += fmt::format("{}{}", shape.empty() ? "" : ", ", x);
      vars.push_back({{"name", d.name},
                      {"value", fmt::format("{} {}[{}] {}", name_of(d.space), dtype_name(d.dtype),
                                            shape, name_of(d.role))},
                      {"variablesReference", ref_of({VarRef::tensor_rows, 0, 0, t})},
                      {"evaluateName", d.name}});
    }
    break;
  case VarRef::tensor_rows: return tensor_rows(r.tensor);
  }
  return {{"variables", vars}};
}

// A tensor's values as `print` shows them, one variable per first index: the first 64 values
// of each of the first 1000 rows, and only those are read from the machine.
json Inspector::tensor_rows(size_t t) {
  const TensorDecl& d = model().module().tensors.at(t);
  const dbg::Slice s = dbg::parse_slice(model().module(), d.name);
  const int core = model().current_core();
  const uint64_t total = s.elems();
  const uint64_t rows = d.shape.size() > 1 ? uint64_t(d.shape[0]) : 1;
  const uint64_t cols = rows ? total / rows : 0;
  constexpr uint64_t kMaxRows = 1000, kMaxCols = 64;
  json vars = json::array();
  for (uint64_t r = 0; r < std::min(rows, kMaxRows); ++r) {
    std::string row;
    for (uint64_t c = 0; c < std::min(cols, kMaxCols); ++c) {
      const std::vector<uint8_t> v = model().element(s, core, r * cols + c);
      const dbg::SliceValues one{dbg::Slice{s.tensor, {{0, 1}}}, core, v};
      row += (c ? ", " : "") + one.text(0);
    }
    if (cols > kMaxCols) row += fmt::format(", ... ({} more)", cols - kMaxCols);
    vars.push_back({{"name", d.shape.size() <= 1        ? std::string("[:]")
                             : d.space != MemSpace::hbm ? fmt::format("p{}", r)
                                                        : fmt::format("[{}]", r)},
                    {"value", row},
                    {"variablesReference", 0}});
  }
  return {{"variables", vars}};
}

json Inspector::disassemble(const json& a) {
  const std::string ref = str_arg(a, "memoryReference");
  const auto colon = ref.find(':');
  const int e = colon == std::string::npos ? -1 : dbg::agent_index(ref.substr(0, colon));
  const std::string pcs = colon == std::string::npos ? "" : ref.substr(colon + 1);
  if (e < 0 || e >= kNumEngines || pcs.empty() || pcs.size() > 12 ||
      pcs.find_first_not_of("0123456789") != std::string::npos)
    throw InputError(fmt::format("memoryReference '{}': expected ENGINE:PC (e.g. dve:3)", ref));
  constexpr int64_t kFar = int64_t(1) << 40;
  const int64_t pc0 = std::stoll(pcs) + int_arg(a, "offset", -kFar, kFar, 0) +
                      int_arg(a, "instructionOffset", -kFar, kFar, 0);
  const int64_t n = int_arg(a, "instructionCount", 0, kMaxInstructionCount);
  const auto& st = model().module().streams[size_t(e)];
  json out = json::array();
  for (int64_t pc = pc0; pc < pc0 + n; ++pc) {
    json ins = {{"address", fmt::format("{}:{}", name_of(Engine(e)), pc)}};
    if (pc < 0 || size_t(pc) >= st.size()) {
      ins["instruction"] = "(none)";
      ins["presentationHint"] = "invalid";
    } else {
      ins["instruction"] = interp::describe_inst(model().module(), st[size_t(pc)]);
      if (auto loc = model().location(Engine(e), pc); loc && loc->file != "?") {
        ins["location"] = source(loc->file);
        ins["line"] = loc->line;
        ins["column"] = loc->col;
      }
    }
    out.push_back(ins);
  }
  return {{"instructions", out}};
}

json Inspector::read_memory(const json& a) {
  dbg::Model& md = model();
  dbg::MemRef ref = dbg::parse_memref(str_arg(a, "memoryReference"));
  constexpr int64_t kFar = int64_t(1) << 48;
  const int64_t off = int_arg(a, "offset", -kFar, kFar, 0);
  const int64_t count = int_arg(a, "count", 0, kMaxReadMemory);
  if (off < 0 && uint64_t(-off) > ref.offset) throw InputError("readMemory: negative address");
  ref.offset += uint64_t(off);
  const std::vector<uint8_t> bytes = md.read_memory(ref, uint64_t(count));
  json body = {{"address", ref.text()}, {"data", base64(bytes)}};
  if (int64_t(bytes.size()) < count) body["unreadableBytes"] = count - int64_t(bytes.size());
  return body;
}

} // namespace nisa::cli::dap
