// The model's queries: engines and queues, frames, semaphores, registers, values, names.
#include <algorithm>

#include <fmt/format.h>

#include "interp/debug/internal.h"

namespace nisa::interp::debug {

std::string_view name_of(Stop::Reason r) {
  switch (r) {
  case Stop::Reason::step: return "step";
  case Stop::Reason::breakpoint: return "breakpoint";
  case Stop::Reason::watchpoint: return "watchpoint";
  case Stop::Reason::race: return "race";
  case Stop::Reason::finished: return "finished";
  case Stop::Reason::deadlock: return "deadlock";
  case Stop::Reason::fault: return "fault";
  case Stop::Reason::budget: return "budget";
  case Stop::Reason::not_running: return "not running";
  case Stop::Reason::interrupted: return "interrupted";
  }
  return "?";
}

int agent_index(const std::string& s) {
  for (int e = 0; e < kNumEngines; ++e)
    if (name_of(Engine(e)) == s) return e;
  // q0..q15; longer digit strings are no queue either (and must not overflow).
  if (s.size() > 1 && s.size() <= 3 && s[0] == 'q' &&
      s.find_first_not_of("0123456789", 1) == std::string::npos) {
    int q = std::stoi(s.substr(1));
    if (q < kNumDmaQueues) return kNumEngines + q;
  }
  return -1;
}

std::string Frame::title() const {
  switch (kind) {
  case instruction: return name;
  case macro: return "in expansion of macro " + name;
  case for_iteration: return "in .for iteration " + name;
  case include: return "in file included " + name;
  }
  return name;
}

void check_line_has_instructions(const Module& mod, int file, int64_t line) {
  // A line no instruction comes from (past the end, an `.endfor`, a comment) would run to the
  // end silently: say so, and name the next line that has instructions.
  size_t count = 0;
  int64_t next_line = -1, last_line = -1;
  for (int e = 0; e < kNumEngines; ++e)
    for (size_t pc = 0; pc < mod.streams[e].size(); ++pc) {
      const DebugLoc* d = debug_loc(mod, Engine(e), int64_t(pc));
      if (loc_matches(mod, d, file, line)) ++count;
      if (!d || int(d->file) != file) continue;
      last_line = std::max<int64_t>(last_line, d->line);
      if (int64_t(d->line) > line && (next_line < 0 || int64_t(d->line) < next_line))
        next_line = d->line;
    }
  if (!count)
    throw Error(
        next_line >= 0
            ? fmt::format("until: no instruction comes from line {} of {}; the next line with "
                          "instructions is {}",
                          line, basename_of(mod.files[size_t(file)]), next_line)
            : fmt::format("until: no instruction comes from line {} of {} (its last "
                          "instruction is on line {})",
                          line, basename_of(mod.files[size_t(file)]), last_line));
}

bool Agent::idle() const { return state.queue >= 0 && state.queued.empty(); }

namespace {

std::optional<SourceLoc> source_loc(const Module& mod_, Engine e, int64_t pc) {
  const DebugLoc* d = debug_loc(mod_, e, pc);
  if (!d) return std::nullopt;
  return SourceLoc{d->file < mod_.files.size() ? mod_.files[d->file] : std::string("?"), d->line,
                   d->col};
}

std::vector<Frame> frames_of(const Module& mod_, Engine e, int64_t pc) {
  std::vector<Frame> out;
  out.push_back(
      Frame{Frame::instruction, fmt::format("{}[{}]", name_of(e), pc), source_loc(mod_, e, pc)});
  const DebugLoc* d = debug_loc(mod_, e, pc);
  if (!d) return out;
  for (int32_t f = d->frame; f >= 0 && size_t(f) < mod_.frames.size(); f = mod_.frames[f].parent) {
    const ExpansionFrame& fr = mod_.frames[size_t(f)];
    Frame::Kind k = fr.kind == ExpansionFrame::Macro     ? Frame::macro
                    : fr.kind == ExpansionFrame::ForIter ? Frame::for_iteration
                                                         : Frame::include;
    out.push_back(
        Frame{k, fr.what,
              SourceLoc{fr.file < mod_.files.size() ? mod_.files[fr.file] : std::string("?"),
                        fr.line, fr.col}});
  }
  return out;
}

std::vector<Agent> agents_of(const Module& mod_, const Machine& m, const Scheduler& sched) {
  std::vector<Agent> out;
  for (const AgentState& a : sched.agents()) {
    Agent g;
    g.state = a;
    const auto& stream = mod_.streams[int(a.engine)];
    g.has_instructions = !stream.empty();
    if (a.queue >= 0) {
      if (!a.queued.empty())
        g.loc = source_loc(mod_, a.queued.front().first, a.queued.front().second);
    } else if (a.state != AgentState::done) {
      g.loc = source_loc(mod_, a.engine, a.pc);
      const CoreSlot& cs = m.cores[size_t(a.core)];
      if (a.state == AgentState::waiting)
        for (const Wait& w : stream[size_t(a.pc)].waits) {
          uint32_t v = w.sem < cs.st.sems.size() ? cs.st.sems[w.sem] : 0;
          bool ok = w.cmp == WaitCmp::ge ? v >= w.value : v == w.value;
          if (!ok)
            g.unmet.push_back(UnmetWait{w.sem < mod_.sems.size() ? mod_.sems[w.sem].name : "?",
                                        w.cmp, w.value, v});
        }
    }
    out.push_back(std::move(g));
  }
  return out;
}

std::vector<SemValue> semaphores_of(const Module& mod, const Machine& m, int core) {
  std::vector<SemValue> out;
  const CoreState& st = m.cores.at(size_t(core)).st;
  for (size_t s = 0; s < mod.sems.size(); ++s) out.push_back({mod.sems[s].name, st.sems[s]});
  return out;
}

std::array<int32_t, kNumRegs> registers_of(const Machine& m, int core, Engine e) {
  std::array<int32_t, kNumRegs> r{};
  const CoreState& st = m.cores.at(size_t(core)).st;
  for (int k = 0; k < kNumRegs; ++k) r[size_t(k)] = st.regs[int(e)][k];
  return r;
}

int file_index_of(const Module& mod, const std::string& name) {
  int file = -1;
  for (size_t i = 0; i < mod.files.size(); ++i)
    if (mod.files[i] == name || basename_of(mod.files[i]) == name) file = int(i);
  return file;
}

} // namespace

std::optional<SourceLoc> Model::location(Engine e, int64_t pc) const {
  return source_loc(mod_, e, pc);
}
std::vector<Frame> Model::frames(Engine e, int64_t pc) const { return frames_of(mod_, e, pc); }
std::vector<Agent> Model::agents() const { return agents_of(mod_, *m_, *sched_); }
std::vector<SemValue> Model::semaphores(int core) const { return semaphores_of(mod_, *m_, core); }
std::array<int32_t, kNumRegs> Model::registers(int core, Engine e) const {
  return registers_of(*m_, core, e);
}
int Model::file_index(const std::string& name) const { return file_index_of(mod_, name); }

SliceValues Model::read(const Slice& s, int core) const {
  return SliceValues{s, core, read_slice(*m_, s, core)};
}

std::vector<uint8_t> Model::element(const Slice& s, int core, uint64_t k) const {
  return read_element(*m_, s, core, k);
}

SliceValues Model::read(const std::string& slice) const {
  return read(parse_slice(mod_, slice), cur_core_);
}

int64_t Model::value_of(const std::string& term) const {
  StepEvent probe;
  probe.core = cur_core_;
  if (auto nx = sched_->peek()) probe.engine = nx->engine;
  return eval_term(mod_, *m_, term, probe);
}

} // namespace nisa::interp::debug
