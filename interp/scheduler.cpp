#include "interp/scheduler.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <queue>
#include <sstream>

#include <fmt/format.h>

#include "interp/cc_unit.h"
#include "interp/cost.h"
#include "interp/mem_operands.h"
#include "interp/sched_internal.h"
#include "interp/sched_report.h"
#include "isa/print.h"

namespace nisa::interp {

struct SchedulerImpl {
  virtual ~SchedulerImpl() = default;
  virtual void begin() = 0;
  virtual bool step() = 0;
  virtual std::optional<StepEvent> peek() const = 0;
  virtual int64_t now() const = 0;
  virtual bool finished() const = 0;
  virtual const RunResult& result() const = 0;
  virtual std::vector<AgentState> agents() const = 0;
};

namespace {

using namespace detail;

// A rendezvous of several cores (barrier, send_recv pipe, collective).
struct Party {
  std::vector<std::pair<int, int>> arrived; // (core index, engine)
};

class Sched final : public SchedulerImpl {
public:
  Sched(Machine& m, const SchedOptions& o) : m_(m), o_(o), mod_(*m.mod) {}

  RunResult run() {
    auto t0 = std::chrono::steady_clock::now();
    try {
      start();
      if (slow())
        loop<true>();
      else
        loop<false>();
      if (!stopped_) check_deadlock();
    } catch (const Fault& f) {
      fault(f.what());
    }
    finished_ = true;
    finish_stats(t0);
    return std::move(res_);
  }

  // ---- single stepping (the debugger) ---------------------------------------------------------
  // Issues every engine's first instruction (time 0) so that peek() shows the first event.
  void begin() override {
    auto t0 = std::chrono::steady_clock::now();
    try {
      start();
      if (heap_.empty() && !stopped_) check_deadlock();
    } catch (const Fault& f) {
      fault(f.what());
    }
    finished_ = stopped_ || heap_.empty();
    finish_stats(t0);
  }
  bool step() override {
    if (finished_) return false;
    auto t0 = std::chrono::steady_clock::now();
    try {
      if (!started_) start();
      if (!heap_.empty() && !stopped_) process<true>(heap_.pop());
      if (heap_.empty() && !stopped_) check_deadlock();
    } catch (const Fault& f) {
      fault(f.what());
    }
    finished_ = stopped_ || heap_.empty();
    finish_stats(t0);
    return !finished_;
  }
  std::optional<StepEvent> peek() const override {
    if (finished_ || heap_.empty()) return std::nullopt;
    const Event& ev = heap_.top();
    int c = int(ev.agent / kAgentsPerCore), a = int(ev.agent % kAgentsPerCore);
    StepEvent se;
    se.core = c;
    se.time = ev.t;
    if (a < kNumEngines) {
      se.engine = Engine(a);
      se.pc = cores_[c].eng[a].pc;
    } else if (a < kNumEngines + kNumDmaQueues) {
      const Xfer& x = cores_[c].queue[a - kNumEngines].q.front();
      se.engine = Engine(x.eng);
      se.pc = x.pc;
      se.dma_queue = a - kNumEngines;
    } else { // a collective transfer completing on a channel (reported like a transfer)
      int ch = a - kNumEngines - kNumDmaQueues;
      const CcXfer& x = cc_.inflight(c, ch).front();
      se.engine = Engine(x.who[0].eng);
      se.pc = x.who[0].pc;
      se.dma_queue = kNumDmaQueues + ch;
      se.cc_channel = ch;
    }
    return se;
  }
  int64_t now() const override { return now_; }
  bool finished() const override { return finished_; }
  std::vector<AgentState> agents() const override {
    std::vector<AgentState> out;
    for (size_t c = 0; c < cores_.size(); ++c)
      for (int e = 0; e < kNumEngines; ++e) {
        const EngRt& E = cores_[c].eng[e];
        AgentState a;
        a.core = int(c);
        a.engine = Engine(e);
        a.pc = E.pc;
        a.since = E.since;
        a.state = E.pc >= E.len || E.st == St::done ? AgentState::done
                  : E.st == St::running             ? AgentState::running
                  : E.st == St::blocked             ? AgentState::waiting
                  : E.st == St::rendezvous          ? AgentState::rendezvous
                                                    : AgentState::idle;
        out.push_back(std::move(a));
      }
    for (size_t c = 0; c < cores_.size(); ++c)
      for (int q = 0; q < kNumDmaQueues; ++q) {
        const QueueRt& Q = cores_[c].queue[q];
        if (Q.q.empty() && Q.last_end == 0) continue;
        AgentState a;
        a.core = int(c);
        a.queue = q;
        a.state = Q.q.empty() ? AgentState::idle : AgentState::running;
        if (!Q.q.empty()) a.engine = Engine(Q.q.front().eng), a.pc = Q.q.front().pc;
        for (const Xfer& x : Q.q) {
          a.queued.emplace_back(Engine(x.eng), int64_t(x.pc));
          a.spans.emplace_back(x.begin, x.end);
        }
        out.push_back(std::move(a));
      }
    return out;
  }
  const RunResult& result() const override { return res_; }

private:
  void start() {
    started_ = true;
    check_at_ = !o_.max_steps                 ? UINT64_MAX
                : o_.max_steps > kBudgetWatch ? o_.max_steps - kBudgetWatch + 1
                                              : 1;
    timeline_cap_ = o_.max_timeline_events ? o_.max_timeline_events : UINT64_MAX;
    predecode();
    setup();
    res_.stats.cores.assign(m_.cores.size(), CoreStats{});
    for (size_t c = 0; c < cores_.size(); ++c)
      for (int e = 0; e < kNumEngines; ++e)
        if (slow())
          try_issue<true>(int(c), e);
        else
          try_issue<false>(int(c), e);
  }
  void finish_stats(std::chrono::steady_clock::time_point t0) {
    res_.stats.makespan_ticks = makespan_;
    res_.steps = steps_;
    res_.stats.wall_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  Machine& m_;
  SchedOptions o_;
  const Module& mod_;
  std::shared_ptr<const Program> program_;
  const std::vector<std::string>* msgs_ = nullptr;
  const Wait* waits_ = nullptr;
  const Signal* sigs_ = nullptr;
  std::vector<CoreRt> cores_;
  EventQueue heap_;
  uint64_t seq_ = 0;
  int64_t now_ = 0, makespan_ = 0;
  bool stopped_ = false, started_ = false, finished_ = false;
  RunResult res_;
  bool slow() const { return o_.timeline || m_.opt.check_uninit || o_.observer; }
  // Fault context: which instruction is executing.
  int cur_core_ = -1, cur_eng_ = 0;
  int64_t cur_pc_ = 0;
  std::map<std::tuple<int, int, int64_t>, Party> parties_; // (rank, kind/engine, key)
  uint64_t timeline_cap_ = UINT64_MAX;

  // ---- the budget (SchedOptions::max_steps) ---------------------------------------------------
  // The last kBudgetWatch events before the budget runs out are noted per agent and pc, so that
  // the report (sched_report.cpp) shows the loop each engine is in. Until then the only cost is
  // process()'s compare.
  uint64_t steps_ = 0, check_at_ = UINT64_MAX;
  BudgetWatch watched_;

  // Called for every event from check_at_ on; true when the budget is spent (the event is put
  // back unprocessed and the run stops).
  bool over_budget(const Event& ev) {
    if (steps_ > o_.max_steps) {
      --steps_;
      heap_.push(ev);
      stopped_ = true;
      res_.status = RunStatus::budget;
      res_.exit_code = kExitBudget;
      res_.report = budget_report(m_, mod_, cores_, watched_, steps_, now_, o_.max_steps);
      return true;
    }
    check_at_ = steps_ + 1;
    int c = int(ev.agent / kAgentsPerCore), a = int(ev.agent % kAgentsPerCore);
    int64_t pc = a < kNumEngines ? cores_[c].eng[a].pc
                 : a < kNumEngines + kNumDmaQueues
                     ? int64_t(cores_[c].queue[a - kNumEngines].q.front().pc)
                     : -1; // a collective channel: counted, no pc
    ++watched_[ev.agent][pc];
    return false;
  }

  CcUnit cc_; // collectives: channels and the ranks' rendezvous
  std::vector<CcArrival> cc_party_;

  // ---- set-up ---------------------------------------------------------------------------------
  void predecode() {
    if (!m_.program) m_.program = build_program(m_);
    program_ = m_.program;
    msgs_ = &program_->msgs;
    waits_ = program_->waits.data();
    sigs_ = program_->sigs.data();
  }

  void setup() {
    cores_.resize(m_.cores.size());
    cc_.reset(int(cores_.size()));
    for (size_t c = 0; c < cores_.size(); ++c) {
      CoreSlot& cs = m_.cores[c];
      RankSlot& rs = m_.ranks[cs.rank];
      for (int e = 0; e < kNumEngines; ++e) {
        EngRt& E = cores_[c].eng[e];
        E.prog = program_->prog[e].data();
        E.len = static_cast<int64_t>(program_->prog[e].size());
        ExecCtx& cx = E.cx;
        cx.machine = &m_;
        cx.tp = m_.tp;
        cx.target = m_.tp->target;
        cx.hbm = rs.hbm.data();
        cx.hbm_bytes = rs.hbm_bytes;
        cx.rank = cs.rank;
        cx.core_id = cs.core;
        cx.engine = static_cast<Engine>(e);
        cx.state = &cs.st;
        cx.regs = cs.st.regs[e];
        cx.stream_len = E.len;
      }
    }
  }

  // ---- event queue ----------------------------------------------------------------------------
  void push(int64_t t, uint32_t agent) {
    uint64_t s = seq_++;
    uint64_t key = o_.mode == ScheduleMode::fixed
                       ? (uint64_t(agent) << 40) | s
                       : mix(o_.seed ^ mix(s * 0x100000001b3ull + agent));
    heap_.push(Event{t, key, agent});
  }
  int64_t jitter(int64_t lat) {
    if (o_.mode == ScheduleMode::fixed) return lat;
    return lat + static_cast<int64_t>(mix(o_.seed * 31 + seq_++) % uint64_t(lat + 1));
  }

  template <bool kSlow> void loop() {
    while (!heap_.empty() && !stopped_) process<kSlow>(heap_.pop());
  }
  template <bool kSlow> void process(const Event& ev) {
    if (++steps_ >= check_at_ && over_budget(ev)) return; // one compare per event
    now_ = ev.t;
    int c = int(ev.agent / kAgentsPerCore), a = int(ev.agent % kAgentsPerCore);
    if (a < kNumEngines)
      complete<kSlow>(c, a);
    else if (a < kNumEngines + kNumDmaQueues)
      dma_done<kSlow>(c, a - kNumEngines);
    else
      cc_done<kSlow>(c, a - kNumEngines - kNumDmaQueues);
  }

  // ---- engines --------------------------------------------------------------------------------
  bool waits_hold(const std::vector<uint32_t>& sems, const PInst& P) const {
    for (const Wait *w = waits_ + P.wait0, *end = w + P.nwaits; w != end; ++w) {
      uint32_t v = sems[w->sem];
      if (w->cmp == WaitCmp::ge ? v < w->value : v != w->value) return false;
    }
    return true;
  }
  template <bool kSlow> void try_issue(int c, int e) {
    CoreRt& C = cores_[c];
    EngRt& E = C.eng[e];
    if (E.pc >= E.len) {
      E.st = St::done;
      return;
    }
    const PInst& P = E.prog[E.pc];
    cur_core_ = c, cur_eng_ = e, cur_pc_ = E.pc;
    if (P.kind == Kind::bad) throw Fault((*msgs_)[P.bad]); // before its waits: they may be bad
    if (!waits_hold(E.cx.state->sems, P)) {
      if (E.st != St::blocked) {
        E.st = St::blocked;
        E.since = now_;
        C.blocked |= 1u << e;
      }
      return;
    }
    if constexpr (kSlow) {
      E.issued = now_;
      if (o_.observer) o_.observer->issue(c, Engine(e), E.pc);
    }
    if (E.st == St::blocked) {
      res_.stats.cores[c].eng[e].wait_ticks += now_ - E.since;
      if constexpr (kSlow) record(TimelineEvent::wait, c, e, e, E.since, now_ - E.since, 0);
    }
    switch (P.kind) {
    case Kind::barrier: return arrive(c, e, 0, e);
    case Kind::sendrecv: return arrive(c, e, 1, P.in->ops[2].i);
    default: break;
    }
    E.st = St::running;
    int64_t lat = jitter(P.lat);
    EngineStats& es = res_.stats.cores[c].eng[e];
    ++es.insts;
    es.busy_ticks += lat;
    es.cycles += P.cycles;
    if constexpr (kSlow) record(TimelineEvent::inst, c, e, e, now_, lat, 0);
    push(now_ + lat, uint32_t(c * kAgentsPerCore + e));
  }

  template <bool kSlow> void complete(int c, int e) {
    CoreRt& C = cores_[c];
    EngRt& E = C.eng[e];
    const PInst& P = E.prog[E.pc];
    cur_core_ = c, cur_eng_ = e, cur_pc_ = E.pc;
    makespan_ = std::max(makespan_, now_);
    E.cx.next_pc = E.pc + 1;
    ExecEvent ev;
    if constexpr (kSlow) {
      if (o_.observer) {
        ev = ExecEvent{c, Engine(e), E.pc, -1, E.issued, now_, P.kind == Kind::plain};
        o_.observer->exec(ev, E.cx, *P.in);
      }
    }
    if (P.kind == Kind::plain) {
      exec<kSlow>(E.cx, P);
    } else if (P.kind == Kind::dma) {
      enqueue(c, e, P);
    } else if (P.kind == Kind::cc) {
      cc_trigger(c, e, P);
    }
    E.pc = E.cx.next_pc;
    E.st = St::idle;
    if (P.kind != Kind::dma && P.kind != Kind::cc) signal(c, P);
    if constexpr (kSlow) {
      if (o_.observer) o_.observer->done(ev);
    }
    if (!stopped_) try_issue<kSlow>(c, e);
  }

  template <bool kSlow> void exec(ExecCtx& cx, const PInst& P) {
    if constexpr (kSlow) {
      if (m_.opt.check_uninit) check_reads(cx, *P.in);
    }
    P.fn(cx, *P.in);
    if constexpr (kSlow) {
      if (m_.opt.check_uninit) mark_writes(cx, *P.in);
    }
  }

  void signal(int c, const PInst& P) {
    if (!P.nsigs && !P.sets_sems) return;
    auto& sems = m_.cores[c].st.sems;
    const Signal *s0 = sigs_ + P.sig0, *end = s0 + P.nsigs;
    for (const Signal* s = s0; s != end; ++s) sems[s->sem] += s->delta;
    if (o_.observer) {
      for (const Signal* s = s0; s != end; ++s) o_.observer->sem(c, s->sem, sems[s->sem], false);
      if (P.sets_sems) {
        uint16_t k = uint16_t(P.in->ops[0].i);
        if (k < sems.size()) o_.observer->sem(c, k, sems[k], true);
      }
    }
    if (o_.timeline) { // semaphore counter tracks
      for (const Signal* s = s0; s != end; ++s) record_sem(c, s->sem);
      if (P.sets_sems) record_sem(c, uint16_t(P.in->ops[0].i));
    }
    wake(c);
  }

  void wake(int c) {
    CoreRt& C = cores_[c];
    uint32_t mask = C.blocked;
    while (mask && !stopped_) {
      int e = __builtin_ctz(mask);
      mask &= mask - 1;
      EngRt& E = C.eng[e];
      if (waits_hold(E.cx.state->sems, E.prog[E.pc])) {
        C.blocked &= ~(1u << e);
        if (slow())
          try_issue<true>(c, e);
        else
          try_issue<false>(c, e);
      }
    }
  }

  // ---- DMA queues -----------------------------------------------------------------------------
  void enqueue(int c, int e, const PInst& P) {
    CoreRt& C = cores_[c];
    QueueRt& Q = C.queue[P.queue];
    Xfer x;
    x.pi = &P;
    x.eng = uint8_t(e);
    x.pc = uint32_t(C.eng[e].pc);
    std::memcpy(x.regs, C.eng[e].cx.regs, sizeof x.regs);
    if (o_.observer) o_.observer->enqueue(c, Engine(e), x.pc, P.queue);
    DmaTime t = dma_transfer(*m_.tp, P.bytes, P.rows);
    int64_t t0 = std::max(now_, Q.data_free);
    int64_t begin = std::max(t0, C.link_free);
    C.link_free = begin + t.link_ticks;
    int64_t data_end = begin + jitter(t.data_ticks);
    Q.data_free = data_end;
    x.begin = begin;
    x.end = std::max(Q.last_end, data_end + t.latency_ticks);
    Q.last_end = x.end;
    QueueStats& qs = res_.stats.cores[c].queue[P.queue];
    ++qs.transfers;
    qs.bytes += P.bytes;
    qs.busy_ticks += x.end - begin;
    push(x.end, uint32_t(c * kAgentsPerCore + kNumEngines + P.queue));
    Q.q.push_back(x);
  }

  template <bool kSlow> void dma_done(int c, int q) {
    QueueRt& Q = cores_[c].queue[q];
    Xfer x = Q.q.front();
    Q.q.pop_front();
    cur_core_ = c, cur_eng_ = x.eng, cur_pc_ = x.pc;
    makespan_ = std::max(makespan_, now_);
    ExecCtx cx = cores_[c].eng[x.eng].cx;
    cx.regs = x.regs;
    ExecEvent ev;
    if constexpr (kSlow) {
      if (o_.observer) {
        ev = ExecEvent{c, Engine(x.eng), int64_t(x.pc), q, x.begin, x.end, true};
        o_.observer->exec(ev, cx, *x.pi->in);
      }
    }
    exec<kSlow>(cx, *x.pi);
    if constexpr (kSlow)
      record(TimelineEvent::dma, c, kTrackQueue0 + q, x.eng, x.begin, x.end - x.begin, x.pi->bytes,
             x.pc);
    signal(c, *x.pi);
    if constexpr (kSlow) {
      if (o_.observer) o_.observer->done(ev);
    }
  }

  // ---- collectives (interp/cc_unit.h) --------------------------------------------------------
  // The trigger completed: the collective waits on its channel for the other ranks.
  void cc_trigger(int c, int e, const PInst& P) {
    CcArrival a;
    a.core = c;
    a.eng = uint8_t(e);
    a.pc = uint32_t(cores_[c].eng[e].pc);
    a.pi = &P;
    a.at = now_;
    std::memcpy(a.regs, cores_[c].eng[e].cx.regs, sizeof a.regs);
    const int ch = P.queue;
    if (o_.observer) o_.observer->enqueue(c, Engine(e), a.pc, kNumDmaQueues + ch);
    const CoreSlot& cs = m_.cores[c];
    std::vector<int> members = CcUnit::members(mod_, m_.opt.ranks, cs.rank, *P.in);
    for (int& r : members) r = r * m_.opt.lnc + cs.core;
    if (!cc_.arrive(a, ch, P.in->ops[2].i, members, cc_party_)) return;
    // Every rank triggered it: start when the channel of every participant is free.
    int64_t begin = now_;
    for (const CcArrival& x : cc_party_) begin = std::max(begin, cc_.free_at(x.core, ch));
    CcRing ring = cc_ring_cost(P.in->op, P.bytes, cc_party_.size());
    int64_t end = begin + jitter(cc_transfer_ticks(*m_.tp, ring.steps, ring.link_bytes));
    for (const CcArrival& x : cc_party_) {
      cc_.free_at(x.core, ch) = end;
      ChanStats& st = res_.stats.cores[x.core].chan[ch];
      ++st.transfers;
      st.bytes += ring.link_bytes;
      st.busy_ticks += end - begin;
    }
    int c0 = cc_party_[0].core;
    cc_.inflight(c0, ch).push_back(CcXfer{cc_party_, ch, begin, end, ring.link_bytes});
    push(end, uint32_t(c0 * kAgentsPerCore + kNumEngines + kNumDmaQueues + ch));
  }

  // The transfer completes: the data moves, then every participant's signals apply.
  template <bool kSlow> void cc_done(int c, int ch) {
    CcXfer x = std::move(cc_.inflight(c, ch).front());
    cc_.inflight(c, ch).pop_front();
    makespan_ = std::max(makespan_, now_);
    const size_t n = x.who.size();
    cur_core_ = x.who[0].core, cur_eng_ = x.who[0].eng, cur_pc_ = x.who[0].pc;
    std::vector<ExecCtx> cxs(n);
    std::vector<ExecCtx*> cxp(n);
    std::vector<const Inst*> ins(n);
    std::vector<ExecEvent> evs;
    for (size_t i = 0; i < n; ++i) {
      CcArrival& w = x.who[i];
      cxs[i] = cores_[w.core].eng[w.eng].cx;
      cxs[i].regs = w.regs; // the registers at the trigger
      cxp[i] = &cxs[i];
      ins[i] = w.pi->in;
      if constexpr (kSlow)
        evs.push_back(ExecEvent{w.core, Engine(w.eng), int64_t(w.pc), kNumDmaQueues + ch, x.begin,
                                x.end, true});
    }
    if constexpr (kSlow) {
      if (o_.observer) o_.observer->collective(evs, cxp, ins);
      if (m_.opt.check_uninit)
        for (size_t i = 0; i < n; ++i) check_reads(*cxp[i], *ins[i]);
    }
    run_collective(cxp, ins);
    if constexpr (kSlow) {
      if (m_.opt.check_uninit)
        for (size_t i = 0; i < n; ++i) mark_writes(*cxp[i], *ins[i]);
      for (const CcArrival& w : x.who)
        record(TimelineEvent::cc, w.core, kTrackChan0 + ch, w.eng, x.begin, x.end - x.begin,
               x.link_bytes, w.pc);
    }
    for (const CcArrival& w : x.who) signal(w.core, *w.pi);
    if constexpr (kSlow) {
      if (o_.observer)
        for (const ExecEvent& ev : evs) o_.observer->done(ev);
    }
  }

  // ---- rendezvous: core_barrier (per engine), send_recv (per pipe) ---------------------------
  void arrive(int c, int e, int kind, int64_t key) {
    CoreRt& C = cores_[c];
    EngRt& E = C.eng[e];
    E.st = St::rendezvous;
    E.since = now_;
    const CoreSlot& cs = m_.cores[c];
    Party& party = parties_[{cs.rank, kind * 64 + (kind == 0 ? e : 0), key}];
    party.arrived.emplace_back(c, e);
    std::vector<int> members;
    for (int k = 0; k < m_.opt.lnc; ++k) members.push_back(cs.rank * m_.opt.lnc + k);
    for (int mc : members) {
      bool found = false;
      for (auto& [pc_, pe_] : party.arrived) found |= pc_ == mc;
      if (!found) return; // still waiting for someone
    }
    std::vector<std::pair<int, int>> go;
    for (int mc : members)
      for (auto it = party.arrived.begin(); it != party.arrived.end(); ++it)
        if (it->first == mc) {
          go.push_back(*it);
          party.arrived.erase(it);
          break;
        }
    release(kind, go);
  }

  void release(int kind, const std::vector<std::pair<int, int>>& go) {
    int64_t extra = 0;
    if (kind == 1) {
      auto [c0, e0] = go[0];
      auto [c1, e1] = go[1];
      EngRt& A = cores_[c0].eng[e0];
      EngRt& B = cores_[c1].eng[e1];
      const PInst& P = A.prog[A.pc];
      const Inst& Q = *B.prog[B.pc].in;
      if (m_.opt.check_uninit) { // both sources read before either destination is written
        check_reads(A.cx, *P.in);
        check_reads(B.cx, Q);
      }
      exchange_send_recv(A.cx, *P.in, B.cx, Q);
      if (m_.opt.check_uninit) {
        mark_writes(A.cx, *P.in);
        mark_writes(B.cx, Q);
      }
      DmaTime t = dma_transfer(*m_.tp, P.bytes, P.rows);
      extra = t.data_ticks + t.latency_ticks;
    }
    if (o_.observer) o_.observer->rendezvous(go);
    for (auto [c, e] : go) {
      EngRt& E = cores_[c].eng[e];
      const PInst& P = E.prog[E.pc];
      EngineStats& es = res_.stats.cores[c].eng[e];
      es.wait_ticks += now_ - E.since;
      ++es.insts;
      es.busy_ticks += P.lat + extra;
      es.cycles += P.cycles;
      if (o_.timeline) {
        if (now_ > E.since) record(TimelineEvent::wait, c, e, e, E.since, now_ - E.since, 0);
        record(TimelineEvent::inst, c, e, e, now_, P.lat + extra, 0);
      }
      E.st = St::running;
      E.issued = now_;
      push(now_ + P.lat + extra, uint32_t(c * kAgentsPerCore + e));
    }
  }

  // ---- --check-uninit -------------------------------------------------------------------------
  template <class F> void for_each_ap(ExecCtx& cx, const Inst& in, bool reads, F&& f) {
    const bool skip = oob_skip_of(in);
    for_each_mem_operand(in, [&](const OperandDesc& od, const Operand& o, bool is_write) {
      if (is_write == reads) return;
      if (reads && o.ap.dyn == DynKind::vec) { // the index tile is read too (one per row)
        const VecIndex& vi = o.ap.vidx;
        for (uint32_t p = 0; p < o.ap.part_count && vi.part_start + p < kNumPartitions; ++p)
          f("vector index",
            cx.state->sbuf + (vi.part_start + p) * cx.state->sbuf_part_bytes + vi.offset,
            dtype_bytes(vi.dtype));
      }
      View v = cx.view(o.ap, reads ? Access::read : Access::write, skip);
      uint32_t w = dtype_bytes(v.dtype);
      for (uint32_t p = 0; p < v.parts; ++p) {
        if (!v.row_skip.empty() && v.row_skip[p]) continue;
        for (uint64_t j = 0; j < v.free_elems; ++j) f(od.name, v.at(p, j), w);
      }
    });
  }
  void check_reads(ExecCtx& cx, const Inst& in) {
    for_each_ap(cx, in, true, [&](std::string_view name, const uint8_t* p, uint32_t w) {
      uint8_t* s = m_.shadow_of(p);
      if (!s) return;
      for (uint32_t b = 0; b < w; ++b)
        if (!s[b])
          throw Fault(fmt::format("operand '{}' reads memory never written (uninitialised)", name));
    });
  }
  void mark_writes(ExecCtx& cx, const Inst& in) {
    for_each_ap(cx, in, false, [&](std::string_view, const uint8_t* p, uint32_t w) {
      if (uint8_t* s = m_.shadow_of(p)) std::memset(s, 1, w);
    });
  }

  // ---- observers ------------------------------------------------------------------------------
  void record(TimelineEvent::Kind k, int c, int track, int e, int64_t start, int64_t dur,
              uint64_t bytes, int64_t pc = -1) {
    if (!o_.timeline) return;
    if (res_.timeline.size() >= timeline_cap_) {
      ++res_.timeline_dropped;
      return;
    }
    TimelineEvent ev;
    ev.kind = k;
    ev.core = uint16_t(c);
    ev.track = uint8_t(track);
    ev.engine = static_cast<Engine>(e);
    ev.pc = uint32_t(pc >= 0 ? pc : cores_[c].eng[e].pc);
    ev.start = start;
    ev.dur = dur;
    ev.bytes = bytes;
    res_.timeline.push_back(ev);
  }

  void record_sem(int c, uint16_t sem) {
    if (res_.timeline.size() >= timeline_cap_) {
      ++res_.timeline_dropped;
      return;
    }
    TimelineEvent ev;
    ev.kind = TimelineEvent::sem;
    ev.core = uint16_t(c);
    ev.track = 0;
    ev.pc = sem;
    ev.start = now_;
    ev.bytes = m_.cores[c].st.sems[sem];
    res_.timeline.push_back(ev);
  }

  void fault(const std::string& why) {
    stopped_ = true;
    res_.status = RunStatus::fault;
    res_.exit_code = kExitFault;
    std::string text;
    if (cur_core_ >= 0) {
      const Inst& in = mod_.streams[cur_eng_][cur_pc_];
      text = fmt::format("{}: fault: {}\n  at {}: {}\n", source_of(mod_, Engine(cur_eng_), cur_pc_),
                         why, where(m_, cur_core_, cur_eng_, cur_pc_), describe_inst(mod_, in));
    } else {
      text = fmt::format("fault: {}\n", why);
    }
    res_.report = text;
  }

  void check_deadlock() {
    std::string r = deadlock_report(m_, cores_, cc_, now_);
    if (r.empty()) return;
    stopped_ = true;
    res_.status = RunStatus::deadlock;
    res_.exit_code = kExitDeadlock;
    res_.report = std::move(r);
  }
};

} // namespace

// The assembler's own syntax (isa/print.h): reports can be pasted back into a kernel.
std::string describe_inst(const Module& m, const Inst& in) {
  return print_inst(in, PrintContext{&m});
}

std::string source_of(const Module& m, Engine e, int64_t pc) {
  const auto& dbg = m.debug[static_cast<int>(e)];
  if (pc < 0 || size_t(pc) >= dbg.size()) return fmt::format("{}:{}[{}]", m.kernel, name_of(e), pc);
  const DebugLoc& d = dbg[pc];
  auto file = [&](uint32_t f) { return f < m.files.size() ? m.files[f] : std::string("?"); };
  std::string s = fmt::format("{}:{}:{}", file(d.file), d.line, d.col);
  for (int32_t f = d.frame; f >= 0 && size_t(f) < m.frames.size(); f = m.frames[f].parent) {
    const ExpansionFrame& fr = m.frames[f];
    const char* what = fr.kind == ExpansionFrame::Macro     ? "in expansion of macro"
                       : fr.kind == ExpansionFrame::ForIter ? "in iteration"
                                                            : "included from";
    s += fmt::format(" ({} {} at {}:{}:{})", what, fr.what, file(fr.file), fr.line, fr.col);
  }
  return s;
}

RunResult run(Machine& m, const SchedOptions& o) { return Sched(m, o).run(); }

Scheduler::Scheduler(Machine& m, const SchedOptions& o) : impl_(std::make_unique<Sched>(m, o)) {
  impl_->begin();
}
Scheduler::~Scheduler() = default;
bool Scheduler::step() { return impl_->step(); }
std::optional<StepEvent> Scheduler::peek() const { return impl_->peek(); }
int64_t Scheduler::now() const { return impl_->now(); }
bool Scheduler::finished() const { return impl_->finished(); }
const RunResult& Scheduler::result() const { return impl_->result(); }
std::vector<AgentState> Scheduler::agents() const { return impl_->agents(); }

std::string_view name_of(AgentState::State s) {
  static constexpr std::string_view names[] = {"idle", "running", "waiting", "rendezvous", "done"};
  return names[s];
}

} // namespace nisa::interp
