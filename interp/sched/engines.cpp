// Engine agents: issue, complete, signal, wake (interp/sched/agents.h).
#include <algorithm>

#include "interp/sched/agents.h"
#include "interp/sched/collectives.h"
#include "interp/sched/rendezvous.h"
#include "isa/op_index.h"

namespace nisa::interp::detail {

void Agents::start(int c) {
  CoreRt& C = x_.cores[c];
  try {
    for (int e = 0; e < kNumEngines && !C.stopped; ++e)
      if (x_.slow())
        try_issue<true>(c, e);
      else
        try_issue<false>(c, e);
  } catch (const Fault& f) {
    x_.core_fault(c, Event{0, 0, uint32_t(c * kAgentsPerCore + C.cur_eng)}, f.what());
  }
}

void Agents::run_phase(int c) {
  CoreRt& C = x_.cores[size_t(c)];
  Event ev{};
  try {
    while (!C.stopped && !C.heap.empty() && C.heap.top().t < C.horizon) {
      ev = C.heap.pop();
      process<false>(c, ev);
    }
  } catch (const Fault& f) {
    x_.core_fault(c, ev, f.what());
  }
}

void Agents::step(int c, const Event& ev) {
  try {
    process<true>(c, ev);
  } catch (const Fault& f) {
    x_.core_fault(c, ev, f.what());
  }
  x_.now = std::max(x_.now, ev.t);
}

template <bool kSlow> inline void Agents::process(int c, const Event& ev) {
  CoreRt& C = x_.cores[c];
  if (++C.steps >= C.check_from && checkpoint(c, ev)) return; // one compare per event
  C.now = ev.t;
  int a = int(ev.agent % kAgentsPerCore);
  if (a < kNumEngines)
    complete<kSlow>(c, a);
  else
    dma_done<kSlow>(c, a - kNumEngines);
}

// From check_from on: every kInterruptPollEvents events a look at SchedOptions::interrupt (set:
// the event is put back unprocessed and the core stops; the run stops at the end of the phase),
// and from watch_from on the budget's watch.
bool Agents::checkpoint(int c, const Event& ev) {
  CoreRt& C = x_.cores[c];
  if (C.steps >= C.poll_at) {
    C.poll_at = C.steps + kInterruptPollEvents;
    C.check_from = std::min(C.watch_from, C.poll_at);
    if (x_.o.interrupt->load(std::memory_order_relaxed)) {
      --C.steps;
      C.heap.push(ev);
      C.stopped = C.interrupted = true;
      C.stop_event = ev;
      return true;
    }
  }
  return C.steps >= C.watch_from && over_budget(c, ev);
}

// The budget (SchedOptions::max_steps): a phase gives each core what is left of it (the loop's
// set_allowance); a core that spends it stops, and so does the run at the end of the phase.
// The last kBudgetWatch events before a core's allowance runs out are noted per agent and pc,
// so that the report (sched_report.cpp) shows the loop each engine is in. Until then the only
// cost is process()'s compare. Called for every event from watch_from on; true when the
// allowance is spent (the event is put back unprocessed and the core stops).
bool Agents::over_budget(int c, const Event& ev) {
  CoreRt& C = x_.cores[c];
  if (C.steps > C.allowance) {
    --C.steps;
    C.heap.push(ev);
    C.stopped = C.over_budget = true;
    C.stop_event = ev;
    return true;
  }
  int a = int(ev.agent % kAgentsPerCore);
  int64_t pc = a < kNumEngines ? C.eng[a].pc : int64_t(C.queue[a - kNumEngines].q.front().pc);
  ++C.watched[ev.agent][pc];
  return false;
}

inline bool Agents::waits_hold(const std::vector<uint32_t>& sems, const PInst& P) const {
  for (const Wait *w = x_.waits + P.wait0, *end = w + P.nwaits; w != end; ++w) {
    uint32_t v = sems[w->sem];
    if (w->cmp == WaitCmp::ge ? v < w->value : v != w->value) return false;
  }
  return true;
}

template <bool kSlow> inline void Agents::try_issue(int c, int e) {
  CoreRt& C = x_.cores[c];
  EngRt& E = C.eng[e];
  if (E.pc >= E.len) {
    E.st = St::done;
    return;
  }
  const PInst& P = E.prog[E.pc];
  C.cur_eng = e, C.cur_pc = E.pc;
  if (P.kind == Kind::bad) throw Fault((*x_.msgs)[P.bad]); // before its waits: they may be bad
  int64_t ready = 0; // history: since when the instruction was its stream's head
  if constexpr (kSlow) ready = E.st == St::blocked ? E.since : C.now;
  if (!waits_hold(E.cx.state->sems, P)) {
    if (E.st != St::blocked) {
      E.st = St::blocked;
      E.since = C.now;
      C.blocked |= 1u << e;
    }
    return;
  }
  if constexpr (kSlow) {
    E.issued = C.now;
    if (x_.o.observer) x_.o.observer->issue(c, Engine(e), E.pc);
  }
  if (E.st == St::blocked) {
    x_.res.stats.cores[c].eng[e].wait_ticks += C.now - E.since;
    if constexpr (kSlow) x_.record(TimelineEvent::wait, c, e, e, E.since, C.now - E.since, 0);
  }
  switch (P.kind) {
  case Kind::barrier: return record_rendezvous(x_, c, e, 0, e);
  case Kind::sendrecv: return record_rendezvous(x_, c, e, 1, P.in->ops[op::send_recv::pipe].i);
  default: break;
  }
  E.st = St::running;
  int64_t lat = x_.jitter(c, e, P.lat);
  EngineStats& es = x_.res.stats.cores[c].eng[e];
  ++es.insts;
  es.busy_ticks += lat;
  es.cycles += P.cycles;
  if constexpr (kSlow) {
    x_.record(TimelineEvent::inst, c, e, e, C.now, lat, 0);
    if (x_.o.history) {
      HistNode n;
      n.start = C.now;
      n.end = n.data_end = C.now + lat;
      n.ready = ready;
      n.pred = C.cur_node; // the event being processed: its completion let this issue now
      n.pred_at = C.now;
      n.pc = uint32_t(E.pc);
      n.core = c;
      n.engine = uint8_t(e);
      E.node = x_.add_node(c, n);
    }
  }
  x_.push(c, C.now + lat, e);
}

template <bool kSlow> inline void Agents::complete(int c, int e) {
  CoreRt& C = x_.cores[c];
  EngRt& E = C.eng[e];
  const PInst& P = E.prog[E.pc];
  C.cur_eng = e, C.cur_pc = E.pc;
  C.makespan = std::max(C.makespan, C.now);
  E.cx.next_pc = E.pc + 1;
  ExecEvent ev;
  if constexpr (kSlow) {
    C.cur_node = E.node;
    if (x_.o.observer) {
      ev = ExecEvent{c, Engine(e), E.pc, -1, E.issued, C.now, P.kind == Kind::plain};
      x_.o.observer->exec(ev, E.cx, *P.in);
    }
  }
  if (P.kind == Kind::plain) {
    exec<kSlow>(E.cx, P);
  } else if (P.kind == Kind::dma) {
    enqueue(c, e, P);
  } else if (P.kind == Kind::cc) {
    record_trigger(x_, c, e, P);
  }
  E.pc = E.cx.next_pc;
  E.st = St::idle;
  if (P.kind != Kind::dma && P.kind != Kind::cc) signal(c, P);
  if constexpr (kSlow) {
    if (x_.o.observer) x_.o.observer->done(ev);
  }
  if (!C.stopped) try_issue<kSlow>(c, e);
}

void Agents::signal(int c, const PInst& P) {
  if (!P.nsigs && !P.sets_sems) return;
  auto& sems = x_.m.cores[c].st.sems;
  const Signal *s0 = x_.sigs + P.sig0, *end = s0 + P.nsigs;
  for (const Signal* s = s0; s != end; ++s) sems[s->sem] += s->delta;
  if (ExecObserver* obs = x_.o.observer) {
    for (const Signal* s = s0; s != end; ++s) obs->sem(c, s->sem, sems[s->sem], false);
    if (P.sets_sems) {
      uint16_t k = uint16_t(P.in->ops[op::sem_set::sem].i);
      if (k < sems.size()) obs->sem(c, k, sems[k], true);
    }
  }
  if (x_.o.timeline) { // semaphore counter tracks
    for (const Signal* s = s0; s != end; ++s) x_.record_sem(c, s->sem);
    if (P.sets_sems) x_.record_sem(c, uint16_t(P.in->ops[op::sem_set::sem].i));
  }
  wake(c);
}

inline void Agents::wake(int c) {
  CoreRt& C = x_.cores[c];
  uint32_t mask = C.blocked;
  while (mask && !C.stopped) {
    int e = __builtin_ctz(mask);
    mask &= mask - 1;
    EngRt& E = C.eng[e];
    if (waits_hold(E.cx.state->sems, E.prog[E.pc])) {
      C.blocked &= ~(1u << e);
      if (x_.slow())
        try_issue<true>(c, e);
      else
        try_issue<false>(c, e);
    }
  }
}

} // namespace nisa::interp::detail
