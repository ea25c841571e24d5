// The event loop (docs/machine.md "Host threads"). Every core has its own event queue. Cores
// meet only at rendezvous (core_barrier, send_recv) and collectives, whose effects land on a
// core no earlier than a known latency after the last participant arrived. The run goes in
// phases, as SystemC's delta cycles: update (the arrivals recorded so far are matched, and the
// completed rendezvous and collective transfers take effect, in a fixed order), notify (each
// core gets a horizon, a time before which nothing any other core does can reach it) and
// evaluate (the cores run their events before their horizons independently, on the host
// threads, in any order: the fast path, and record their arrivals). Each core's events follow
// (time, key) with keys drawn from per-agent counters, so the outcome is the same for every
// thread count. The slow path (timeline, observers, --check-uninit, the debugger) runs the
// same phases on one thread with one horizon for all cores (a lower horizon is always safe),
// the events of a phase merged in (time, key) order: observers see modelled-time order.
#include "interp/sched/loop.h"

#include <algorithm>
#include <new>

#include <fmt/format.h>

#include <fmt/format.h>

#include "interp/sched/sched_report.h"

namespace nisa::interp {

namespace detail {

namespace {

// A phase gives each core what is left of the budget (SchedOptions::max_steps); the last
// kBudgetWatch events before it runs out are watched (Agents::over_budget).
void set_allowance(CoreRt& C, uint64_t left) {
  C.allowance = left > UINT64_MAX - C.steps ? UINT64_MAX : C.steps + left;
  C.watch_from = C.allowance == UINT64_MAX    ? UINT64_MAX
                 : C.allowance > kBudgetWatch ? C.allowance - kBudgetWatch + 1
                                              : 1;
  C.check_from = std::min(C.watch_from, C.poll_at);
}

bool interrupt_set(const SchedOptions& o) {
  return o.interrupt && o.interrupt->load(std::memory_order_relaxed);
}

} // namespace

Sched::Sched(Machine& m, const SchedOptions& o)
    : x_(m, o), ex_(x_), agents_(x_), rdv_(x_), cc_(x_, agents_, ex_) {}

RunResult Sched::run() {
  const auto t0 = std::chrono::steady_clock::now();
  try {
    start(); // every engine issues its first instruction at time 0
    while (!x_.stopped) {
      // Between phases too (one process: under MPI only end_phase's exchange agrees on it).
      if (!ex_.multi() && interrupt_set(x_.o)) x_.cores[0].interrupted = true, end_phase();
      if (x_.stopped) break;
      if (!update()) break;       // rendezvous, collective matches, transfers due (false: stopped)
      if (!set_horizons()) break; // notify: no core has an event before its horizon: over
      evaluate();                 // every core runs its events before its horizon
      end_phase();                // a core that faulted or spent the budget stops the run
    }
    if (!x_.stopped) check_deadlock(); // no event left: finished, or deadlocked
  } catch (const Fault& f) {
    x_.fault(f.what()); // between phases: a rendezvous or a collective's data
  } catch (const std::bad_alloc&) {
    // What grows with the length of a run: the DMA transfers queued (an engine that issues
    // faster than its queue moves data, in a loop) and the events pending.
    uint64_t steps = 0, xfers = 0, events = 0;
    for (const CoreRt& C : x_.cores) {
      steps += C.steps, events += C.heap.size();
      for (const QueueRt& Q : C.queue) xfers += Q.q.size();
    }
    throw OutOfMemory(fmt::format("the run's state after {} events: {} DMA transfers queued and "
                                  "{} events pending (a loop that issues DMAs faster than its "
                                  "queues move them? --max-steps N stops it sooner)",
                                  steps, xfers, events),
                      xfers * sizeof(Xfer) + events * sizeof(Event));
  }
  finish_stats(t0);
  return std::move(x_.res);
}

void Sched::start() {
  x_.timeline_cap = x_.o.max_timeline_events ? x_.o.max_timeline_events : UINT64_MAX;
  setup();
  x_.res.stats.cores.assign(x_.m.cores.size(), CoreStats{});
  for (size_t c = 0; c < x_.cores.size(); ++c) {
    if (!x_.m.local_core(int(c))) continue;
    x_.tag = {0, c, 0};
    agents_.start(int(c));
  }
  end_phase();
}

void Sched::setup() {
  Machine& m = x_.m;
  if (!m.program) m.program = build_program(m);
  x_.program = m.program;
  x_.msgs = &x_.program->msgs;
  x_.waits = x_.program->waits.data();
  x_.sigs = x_.program->sigs.data();
  x_.pool = m.host_pool(x_.o.threads);
  x_.cores = std::vector<CoreRt>(m.cores.size());
  cc_.reset(int(x_.cores.size()));
  const uint64_t budget = x_.o.max_steps ? x_.o.max_steps : UINT64_MAX;
  for (size_t c = 0; c < x_.cores.size(); ++c) {
    CoreSlot& cs = m.cores[c];
    RankSlot& rs = m.ranks[cs.rank];
    if (x_.o.interrupt) x_.cores[c].poll_at = kInterruptPollEvents;
    set_allowance(x_.cores[c], budget);
    for (int e = 0; e < kNumEngines; ++e) {
      EngRt& E = x_.cores[c].eng[e];
      E.prog = x_.program->prog[e].data();
      E.len = static_cast<int64_t>(x_.program->prog[e].size());
      ExecCtx& cx = E.cx;
      cx.mod = m.mod;
      cx.lnc = m.opt.lnc;
      cx.ranks = m.opt.ranks;
      cx.tp = m.tp;
      cx.target = m.tp->target;
      cx.hbm = rs.hbm.data();
      cx.hbm_bytes = rs.hbm_bytes;
      cx.rank = cs.rank;
      cx.core_id = cs.core;
      cx.engine = static_cast<Engine>(e);
      cx.state = &cs.st;
      cx.regs = cs.st.regs[e];
      cx.stream_len = E.len;
      cx.pool = x_.pool;
    }
  }
}

// The earliest event of any running core (kNever: none).
int64_t Sched::earliest() {
  int64_t t = kNever;
  for (const CoreRt& C : x_.cores)
    if (!C.stopped && !C.heap.empty()) t = std::min(t, C.heap.top().t);
  return ex_.min(t);
}

// Update: matches arrivals and completes the transfers due until nothing changes; false when
// the run stopped.
bool Sched::update() {
  for (;;) {
    bool any = match_arrivals();
    if (x_.stopped) return false;
    while (transfer_due() && !x_.stopped) {
      complete_transfer();
      any = true;
    }
    if (x_.stopped) return false;
    if (!any) return true;
  }
}

// Every rendezvous arrival (their order does not matter: a party releases at its last
// arrival's time), and the collective triggers before the earliest event of any core.
bool Sched::match_arrivals() {
  const int64_t safe = earliest();
  bool any = false;
  ++x_.epoch;
  std::string fault; // a fault of this process's rendezvous, for every process
  try {
    for (size_t c = 0; c < x_.cores.size(); ++c) {
      CoreRt& C = x_.cores[c];
      x_.tag = {x_.epoch, c, 0};
      for (const RdvArrival& r : C.rdv) rdv_.arrive(int(c), r.eng, r.kind, r.key);
      any |= !C.rdv.empty();
      C.rdv.clear();
    }
  } catch (const Fault& f) {
    fault = x_.fault_text(x_.cur_core, x_.cur_eng, x_.cur_pc, f.what());
  }
  any = ex_.arrivals(any, fault, cc_.pending());
  if (!fault.empty()) {
    x_.stop(RunStatus::fault, kExitFault, std::move(fault));
    return true;
  }
  const bool matched = cc_.match(safe);
  return any || matched;
}

bool Sched::transfer_due() {
  return cc_.transfer_pending() && cc_.next_transfer_at() <= earliest();
}

void Sched::complete_transfer() {
  cc_.complete_next();
  end_phase(); // a fault of an engine the signals woke
}

// Notify: each core's horizon; false when no core has an event before its horizon.
bool Sched::set_horizons() {
  const int64_t t = earliest();
  for (CoreRt& C : x_.cores) C.horizon = kNever;
  for (CoreRt& C : x_.cores) // engines waiting at an incomplete rendezvous
    for (const EngRt& E : C.eng)
      if (E.st == St::rendezvous) bound_horizon(C, t, E.since, E.prog[E.pc].lat);
  cc_.limit_horizons(t);
  if (x_.slow()) { // one horizon for all: observers see the events in modelled-time order
    int64_t h = kNever;
    for (const CoreRt& C : x_.cores) h = std::min(h, C.horizon);
    h = ex_.min(h);
    for (CoreRt& C : x_.cores) C.horizon = h;
  }
  const uint64_t budget = x_.o.max_steps ? x_.o.max_steps : UINT64_MAX;
  uint64_t spent = 0;
  for (const CoreRt& C : x_.cores) spent += C.steps;
  spent = ex_.sum(spent);
  bool any = false;
  for (CoreRt& C : x_.cores) {
    set_allowance(C, budget > spent ? budget - spent : 0);
    any |= !C.stopped && !C.heap.empty() && C.heap.top().t < C.horizon;
  }
  return ex_.any(any);
}

void Sched::evaluate() {
  if (x_.slow())
    evaluate_merged();
  else
    evaluate_parallel();
}

// The fast path: every core with work runs its events before its horizon, the cores spread
// over the host threads.
void Sched::evaluate_parallel() {
  runnable_.clear();
  for (size_t c = 0; c < x_.cores.size(); ++c) {
    const CoreRt& C = x_.cores[c];
    if (!C.stopped && !C.heap.empty() && C.heap.top().t < C.horizon) runnable_.push_back(int(c));
  }
  auto run_core = [&](int i) { agents_.run_phase(runnable_[size_t(i)]); };
  if (x_.pool && runnable_.size() > 1)
    x_.pool->run(int(runnable_.size()), run_core);
  else
    for (size_t i = 0; i < runnable_.size(); ++i) run_core(int(i));
}

// The slow path: the events of the phase on one thread in (time, key) order. A core that
// faults or spends its allowance stops; the others run to the end of the phase, as on the fast
// path (the same answer whichever process runs which core).
void Sched::evaluate_merged() {
  fill_merged();
  ++x_.epoch;
  while (!merged_.empty() && !x_.stopped) {
    const Event& top = x_.cores[merged_.top().agent].heap.top();
    x_.tag = {x_.epoch, uint64_t(top.t), top.key};
    step_merged();
  }
}

void Sched::fill_merged() {
  merged_ = {};
  for (size_t c = 0; c < x_.cores.size(); ++c) push_merged(int(c));
}

void Sched::push_merged(int c) {
  const CoreRt& C = x_.cores[c];
  if (C.stopped || C.heap.empty() || C.heap.top().t >= C.horizon) return;
  const Event& top = C.heap.top();
  merged_.push(Event{top.t, top.key, uint32_t(c)});
}

int Sched::step_merged() {
  const int c = int(merged_.top().agent);
  merged_.pop();
  agents_.step(c, x_.cores[c].heap.pop());
  if (!x_.cores[c].stopped) push_merged(c);
  return c;
}

// After a phase: a core that faulted or spent the budget stops the run. The report is the
// earliest fault (time, key), else the budget's.
void Sched::end_phase() {
  const CoreRt* first = nullptr;
  bool budget = false, interrupted = false;
  for (const CoreRt& C : x_.cores) {
    if (C.faulted && (!first || first->stop_event > C.stop_event)) first = &C;
    budget |= C.over_budget;
    interrupted |= C.interrupted;
  }
  const Exchange::Stop s = ex_.stop({first != nullptr, first ? first->stop_event : Event{}, budget,
                                     first ? first->fault_text : std::string(), interrupted});
  if (s.fault) {
    x_.stop(RunStatus::fault, kExitFault, s.text);
  } else if (s.budget) {
    ex_.gather_state();
    BudgetWatch watched;
    uint64_t steps = 0;
    int64_t now = 0;
    for (const CoreRt& C : x_.cores) { // (under MPI every core's, gathered)
      for (const auto& [agent, pcs] : C.watched) watched[agent] = pcs;
      steps += C.steps;
      now = std::max(now, C.now);
    }
    x_.stop(RunStatus::budget, kExitBudget,
            budget_report(x_.m, x_.mod, x_.cores, watched, steps, now, x_.o.max_steps));
  } else if (s.interrupted) {
    uint64_t steps = 0;
    int64_t now = 0;
    for (const CoreRt& C : x_.cores)
      if (x_.m.local_core(int(&C - x_.cores.data()))) steps += C.steps, now = std::max(now, C.now);
    steps = ex_.sum(steps);
    now = ex_.max(now);
    x_.stop(RunStatus::interrupted, kExitInterrupted,
            fmt::format("interrupted: stopped at t = {:.1f} ns after {} events\n", ticks_to_ns(now),
                        steps));
  }
}

void Sched::check_deadlock() {
  ex_.gather_state();
  int64_t now = ex_.max(x_.now);
  for (const CoreRt& C : x_.cores) now = std::max(now, C.now);
  std::string r = deadlock_report(x_.m, x_.cores, cc_.unit(), now);
  if (r.empty()) return;
  x_.stop(RunStatus::deadlock, kExitDeadlock, std::move(r));
}

void Sched::finish_stats(std::chrono::steady_clock::time_point t0) {
  int64_t ms = cc_.makespan();
  uint64_t steps = 0;
  for (size_t c = 0; c < x_.cores.size(); ++c)
    if (x_.m.local_core(int(c)))
      ms = std::max(ms, x_.cores[c].makespan), steps += x_.cores[c].steps;
  x_.res.stats.makespan_ticks = ex_.max(ms);
  x_.res.steps = ex_.sum(steps);
  ex_.gather_stats();
  x_.res.stats.wall_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

StepEvent Sched::peek(bool transfer) const {
  if (transfer) return cc_.peek();
  StepEvent se;
  const int c = int(merged_.top().agent);
  const CoreRt& C = x_.cores[c];
  const Event& ev = C.heap.top();
  const int a = int(ev.agent % kAgentsPerCore);
  se.core = c;
  se.time = ev.t;
  if (a < kNumEngines) {
    se.engine = Engine(a);
    se.pc = C.eng[a].pc;
  } else {
    const Xfer& x = C.queue[a - kNumEngines].q.front();
    se.engine = Engine(x.eng);
    se.pc = x.pc;
    se.dma_queue = a - kNumEngines;
  }
  return se;
}

} // namespace detail

RunResult run(Machine& m, const SchedOptions& o) { return detail::Sched(m, o).run(); }

} // namespace nisa::interp
