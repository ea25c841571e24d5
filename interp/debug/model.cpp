// The model's running: start and replay, one event at a time, and the commands that move
// (run, continue, step, next, finish, until, restart, reverse-step, reverse-continue).
#include <algorithm>

#include <fmt/format.h>

#include "interp/debug/internal.h"

namespace nisa::interp::debug {

Model::Model(const Module& mod, const RunConfig& cfg) : mod_(mod), cfg_(cfg) {
  MachineOptions mo = cfg_.machine;
  if (!cfg_.target_given) mo.target = mod.target;
  m_ = std::make_unique<Machine>(mod, mo, InputFill::caller_writes); // start() resets it
  bps_ = std::make_unique<Breakpoints>(mod_, *m_);
  start();
  last_stop_.next = sched_->peek();
  last_stop_.end = end();
}

Model::~Model() = default;

void Model::start() {
  sched_.reset();
  reset_with_inputs(*m_, cfg_.inputs);
  races_ = std::make_unique<RaceChecker>(*m_);
  trace_ = std::make_unique<TraceRecorder>(*m_, TraceFilter{}, nullptr, true, 0, kKeptRecords);
  bool active = watcher_ && watcher_->active;
  watcher_ = std::make_unique<Watcher>(*m_);
  watcher_->active = active;
  observers_.list = {races_.get(), trace_.get(), watcher_.get()};
  SchedOptions so = cfg_.sched;
  so.observer = &observers_;
  steps_ = 0;
  races_seen_ = 0;
  last_.reset();
  cur_core_ = 0;
  sched_ = std::make_unique<Scheduler>(*m_, so);
  bps_->snapshot();
}

bool Model::do_step() {
  for (const RegEdit& e : edits_)
    if (e.step == steps_) m_->cores[size_t(e.core)].st.regs[e.engine][e.reg] = e.value;
  std::optional<StepEvent> ev = sched_->peek();
  bool more = sched_->step();
  ++steps_;
  last_ = ev;
  if (ev) cur_core_ = ev->core;
  return more;
}

bool Model::replay_to(int64_t target) {
  std::erase_if(edits_, [&](const RegEdit& e) { return e.step > target; });
  start();
  check_next_ = false;
  bool done = true;
  while (steps_ < target && !sched_->finished()) {
    if (interrupted()) {
      done = false;
      break;
    }
    do_step();
  }
  for (const RegEdit& e : edits_) // made while stopped at the target: part of its state
    if (e.step == steps_) m_->cores[size_t(e.core)].st.regs[e.engine][e.reg] = e.value;
  bps_->snapshot();
  races_seen_ = races_->races().size();
  return done;
}

int Model::exit_code() const {
  const int run = sched_->finished() ? sched_->result().exit_code : kExitOk;
  return run == kExitOk && stopped_at_race_ ? kExitRace : run;
}
bool Model::ended() const { return sched_->finished(); }
int64_t Model::now() const { return sched_->now(); }
std::optional<StepEvent> Model::next_event() const { return sched_->peek(); }

std::optional<RunEnd> Model::end() const {
  if (!sched_->finished()) return std::nullopt;
  const RunResult& r = sched_->result();
  return RunEnd{r.status, r.report, sched_->now(), steps_, r.exit_code};
}

const DebugLoc* Model::loc_of(Engine e, int64_t pc) const { return debug_loc(mod_, e, pc); }

Stop Model::stopped(Stop s) {
  s.steps = steps_;
  s.next = sched_->peek();
  if (s.next) cur_core_ = s.next->core;
  s.end = end();
  if (s.end && s.reason != Stop::Reason::not_running &&
      (s.reason == Stop::Reason::step || s.end->status != RunStatus::ok))
    s.reason = s.end->status == RunStatus::ok         ? Stop::Reason::finished
               : s.end->status == RunStatus::deadlock ? Stop::Reason::deadlock
               : s.end->status == RunStatus::fault    ? Stop::Reason::fault
                                                      : Stop::Reason::budget;
  if (!s.races.empty()) stopped_at_race_ = true;
  last_stop_ = s;
  ++stops_;
  return s;
}

Stop Model::not_running() {
  Stop s;
  // It ended before its first event (a deadlock or fault at t = 0): the end is the stop.
  if (steps_ > 0) s.reason = Stop::Reason::not_running;
  return stopped(std::move(s));
}

// Runs events until `stop_after` says so (after each event), a breakpoint or watchpoint hits
// (before / after an event), a race is found (check-races on), or the run ends.
template <class F> Stop Model::resume_until(F&& stop_after) {
  if (sched_->finished()) return not_running();
  watcher_->active = bps_->any_watch();
  // The event at the stop was checked for breakpoints only when the stop came before it (a
  // breakpoint or a step); after a watchpoint or race stop (after an event) it still must be.
  bool first = !check_next_;
  check_next_ = false;
  Stop s;
  while (true) {
    std::optional<StepEvent> ev = sched_->peek();
    if (!ev) return stopped(std::move(s));
    if (!first) {
      if ((s.breakpoint = bps_->check(*ev))) {
        hit_steps_.push_back(steps_);
        s.reason = Stop::Reason::breakpoint;
        return stopped(std::move(s));
      }
    }
    first = false;
    do_step();
    bool stop = false;
    if (watcher_->active) {
      s.watches = bps_->check_watches(watcher_->regions, last_ ? &*last_ : nullptr);
      if (!s.watches.empty()) {
        hit_steps_.push_back(steps_);
        s.reason = Stop::Reason::watchpoint;
        stop = true;
      }
    }
    if (races_->races().size() > races_seen_) {
      for (size_t i = races_seen_; i < races_->races().size(); ++i)
        if (check_races_) s.races.push_back(i);
      races_seen_ = races_->races().size();
      if (check_races_) {
        hit_steps_.push_back(steps_);
        if (!stop) s.reason = Stop::Reason::race;
        stop = true;
      }
    }
    if (sched_->finished()) return stopped(std::move(s));
    if (stop) check_next_ = true; // stopped after the event: the next one is unchecked
    if (stop || stop_after(*ev)) return stopped(std::move(s));
    if (interrupted()) {
      s.reason = Stop::Reason::interrupted;
      return stopped(std::move(s));
    }
  }
}

Stop Model::run() {
  edits_.clear();
  replay_to(0);
  hit_steps_.clear();
  Stop s;
  if (!sched_->finished()) { // else a deadlock or fault at t = 0
    // A breakpoint on the very first event counts: check it before resuming.
    if (auto ev = sched_->peek(); ev && (s.breakpoint = bps_->check(*ev))) {
      hit_steps_.push_back(steps_);
      s.reason = Stop::Reason::breakpoint;
    } else {
      s = resume_until([](const StepEvent&) { return false; });
    }
  }
  s.origin = Stop::Origin::run;
  return stopped(std::move(s));
}

Stop Model::resume() {
  return resume_until([](const StepEvent&) { return false; });
}

Stop Model::step(int agent, int64_t n) {
  if (n < 1) throw Error("step: the count must be at least 1");
  int64_t seen = 0;
  std::optional<StepEvent> done;
  const bool engine = agent >= 0 && agent < kNumEngines;
  Stop s = resume_until([&](const StepEvent& ev) {
    bool mine = agent < 0 || (engine ? ev.dma_queue < 0 && int(ev.engine) == agent
                                     : ev.dma_queue == agent - kNumEngines);
    if (mine && ++seen >= n) return true;
    // `step ENGINE N` stops when that engine has no instruction left, before N.
    return engine && mine && (done = last_engine_done(ev)).has_value();
  });
  return with_engine_done(std::move(s), done);
}

std::optional<StepEvent> Model::last_engine_done(const StepEvent& ev) const {
  if (ev.dma_queue >= 0 || !sched_->engine_done(ev.core, ev.engine)) return std::nullopt;
  return ev;
}

Stop Model::with_engine_done(Stop s, const std::optional<StepEvent>& done) {
  if (done && s.reason == Stop::Reason::step) {
    s.engine_done = done;
    last_stop_.engine_done = done;
  }
  return s;
}

Stop Model::next() {
  if (sched_->finished()) return not_running();
  StepEvent ev0 = *sched_->peek();
  if (ev0.dma_queue >= 0) return step();
  const DebugLoc* d0 = loc_of(ev0.engine, ev0.pc);
  int32_t f0 = d0 ? d0->frame : -1;
  uint32_t line0 = d0 ? d0->line : 0;
  // Stop before the engine's next instruction that is on another line of the same expansion
  // level, or outside it; deeper expansions (macros, .for iterations) are stepped over. After
  // the engine's last instruction, stop there (the other engines go on with the next command).
  std::optional<StepEvent> done;
  Stop s = resume_until([&](const StepEvent& ev) {
    if (ev.dma_queue < 0 && ev.engine == ev0.engine && ev.core == ev0.core &&
        (done = last_engine_done(ev)))
      return true;
    auto nx = sched_->peek();
    if (!nx || nx->dma_queue >= 0 || nx->engine != ev0.engine || nx->core != ev0.core) return false;
    const DebugLoc* d = loc_of(nx->engine, nx->pc);
    if (!d) return true;
    if (d->frame == f0) return d->line != line0;
    for (int32_t f = d->frame; f >= 0; f = mod_.frames[size_t(f)].parent)
      if (f == f0) return false; // deeper
    return f0 >= 0;              // outside the current expansion (or nested, at top level)
  });
  return with_engine_done(std::move(s), done);
}

Stop Model::finish() {
  if (sched_->finished()) return not_running();
  StepEvent ev0 = *sched_->peek();
  const DebugLoc* d0 = loc_of(ev0.engine, ev0.pc);
  if (!d0 || d0->frame < 0)
    throw Error("finish: the stop is not inside a macro expansion or .for iteration");
  int32_t f0 = d0->frame;
  std::optional<StepEvent> done;
  Stop s = resume_until([&](const StepEvent& ev) {
    if (ev.dma_queue < 0 && ev.engine == ev0.engine && ev.core == ev0.core &&
        (done = last_engine_done(ev)))
      return true; // the expansion was the end of the engine's stream
    auto nx = sched_->peek();
    if (!nx || nx->dma_queue >= 0 || nx->engine != ev0.engine || nx->core != ev0.core) return false;
    const DebugLoc* d = loc_of(nx->engine, nx->pc);
    if (!d) return true;
    for (int32_t f = d->frame; f >= 0; f = mod_.frames[size_t(f)].parent)
      if (f == f0) return false;
    return true;
  });
  return with_engine_done(std::move(s), done);
}

Stop Model::until(int file, int64_t line) {
  check_line_has_instructions(mod_, file, line);
  return resume_until([&](const StepEvent&) {
    auto nx = sched_->peek();
    return nx && nx->dma_queue < 0 && loc_matches(mod_, loc_of(nx->engine, nx->pc), file, line);
  });
}

Stop Model::restart() {
  edits_.clear();
  replay_to(0);
  hit_steps_.clear();
  Stop s;
  s.origin = Stop::Origin::restart;
  return stopped(std::move(s));
}

Stop Model::reverse_step(int64_t n) {
  if (n < 1) throw Error("reverse-step: the count must be at least 1");
  if (steps_ == 0) throw Error("reverse-step: already at the start of the run");
  int64_t target = std::max<int64_t>(0, steps_ - n);
  const bool done = replay_to(target);
  std::erase_if(hit_steps_, [&](int64_t s) { return s > target; });
  Stop s;
  s.origin = Stop::Origin::replay;
  if (!done) s.reason = Stop::Reason::interrupted;
  return stopped(std::move(s));
}

Stop Model::reverse_continue() {
  int64_t target = 0;
  for (int64_t s : hit_steps_)
    if (s < steps_) target = std::max(target, s);
  const bool done = replay_to(target);
  std::erase_if(hit_steps_, [&](int64_t s) { return s > target; });
  Stop s;
  s.origin = Stop::Origin::reverse;
  if (!done) s.reason = Stop::Reason::interrupted;
  return stopped(std::move(s));
}

void Model::set_register(Engine e, int reg, int32_t value) {
  m_->cores[size_t(cur_core_)].st.regs[int(e)][reg] = value;
  edits_.push_back(RegEdit{steps_, cur_core_, int(e), reg, value});
}

// ---- breakpoints ---------------------------------------------------------------------------

BreakpointInfo Model::add_breakpoint(const std::string& spec, const std::string& cond,
                                     bool temporary) {
  return bps_->add(spec, cond, temporary);
}
BreakpointInfo Model::add_line_breakpoint(int file, int64_t line, const std::string& cond,
                                          bool temporary) {
  return bps_->add_line(file, line, cond, temporary);
}
BreakpointInfo Model::add_watchpoint(const std::string& slice, bool read) {
  return bps_->add_watch(slice, read, cur_core_);
}
void Model::delete_breakpoint(int id) { bps_->remove(id); }
void Model::delete_breakpoints() { bps_->clear(); }
void Model::enable_breakpoint(int id, bool on) { bps_->enable(id, on); }
void Model::enable_breakpoints(bool on) { bps_->enable_all(on); }
std::vector<BreakpointInfo> Model::breakpoints() const { return bps_->list(); }

} // namespace nisa::interp::debug
