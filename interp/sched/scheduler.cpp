#include "interp/sched/scheduler.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <queue>
#include <sstream>

#include <fmt/format.h>

#include "interp/core/cost.h"
#include "interp/core/host_pool.h"
#include "interp/dist/procs.h"
#include "interp/sched/cc_unit.h"
#include "interp/sched/sched_internal.h"
#include "interp/sched/sched_report.h"
#include "interp/sched/uninit.h"

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

// A rendezvous of several cores (barrier, send_recv pipe).
struct Party {
  std::vector<std::pair<int, int>> arrived; // (core index, engine)
};

constexpr int64_t kNever = INT64_MAX;

// How a run proceeds (docs/machine.md "Host threads"). Every core has its own event queue.
// Cores meet only at rendezvous (core_barrier, send_recv) and collectives, whose effects land
// on a core no earlier than a known latency after the last participant arrived. The run goes
// in phases: at the start of one, each core gets a horizon, a time before which nothing any
// other core does can reach it; the cores then run their events before their horizons
// independently (on the host threads, in any order: the fast path) and record their arrivals;
// at the end of the phase the arrivals are matched and the completed rendezvous and
// collective transfers take effect, in a fixed order. Each core's events follow (time, key)
// with keys drawn from per-agent counters, so the outcome is the same for every thread count.
// The slow path (timeline, observers, --check-uninit, the debugger) runs the same phases on
// one thread with one horizon for all cores (a lower horizon is always safe), the events of a
// phase merged in (time, key) order: observers see modelled-time order.
class Sched final : public SchedulerImpl {
public:
  Sched(Machine& m, const SchedOptions& o) : m_(m), o_(o), mod_(*m.mod), procs_(m.opt.procs) {}

  RunResult run() {
    auto t0 = std::chrono::steady_clock::now();
    try {
      start();
      while (!stopped_ && next_phase()) {
        if (slow())
          run_phase_merged();
        else
          run_phase_parallel();
        end_phase();
      }
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
      settle_step();
    } catch (const Fault& f) {
      fault(f.what());
    }
    finished_ = stopped_ || !has_next_;
    finish_stats(t0);
  }
  bool step() override {
    if (finished_) return false;
    auto t0 = std::chrono::steady_clock::now();
    try {
      if (has_next_) {
        if (next_sync_) {
          process_sync(sync_.pop());
        } else {
          Event top = merged_.top();
          merged_.pop();
          CoreRt& C = cores_[top.agent];
          Event ev = C.heap.pop();
          step_core(int(top.agent), ev);
          if (C.stopped) end_phase(); // a fault or the budget: report it now
          if (!stopped_) push_merged(int(top.agent));
        }
      }
      if (!stopped_) settle_step();
    } catch (const Fault& f) {
      fault(f.what());
    }
    finished_ = stopped_ || !has_next_;
    finish_stats(t0);
    return !finished_;
  }
  std::optional<StepEvent> peek() const override {
    if (finished_ || !has_next_) return std::nullopt;
    StepEvent se;
    if (next_sync_) {
      const Event& ev = sync_.top();
      int c = int(ev.agent / kAgentsPerCore),
          ch = int(ev.agent % kAgentsPerCore) - kNumEngines - kNumDmaQueues;
      const CcXfer& x = cc_.inflight(c, ch).front();
      se.core = c;
      se.time = ev.t;
      se.engine = Engine(x.who[0].eng);
      se.pc = x.who[0].pc;
      se.dma_queue = kNumDmaQueues + ch;
      se.cc_channel = ch;
      return se;
    }
    const int c = int(merged_.top().agent);
    const Event& ev = cores_[c].heap.top();
    const int a = int(ev.agent % kAgentsPerCore);
    se.core = c;
    se.time = ev.t;
    if (a < kNumEngines) {
      se.engine = Engine(a);
      se.pc = cores_[c].eng[a].pc;
    } else {
      const Xfer& x = cores_[c].queue[a - kNumEngines].q.front();
      se.engine = Engine(x.eng);
      se.pc = x.pc;
      se.dma_queue = a - kNumEngines;
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
    timeline_cap_ = o_.max_timeline_events ? o_.max_timeline_events : UINT64_MAX;
    predecode();
    setup();
    res_.stats.cores.assign(m_.cores.size(), CoreStats{});
    for (size_t c = 0; c < cores_.size(); ++c) {
      CoreRt& C = cores_[c];
      if (!m_.local_core(int(c))) continue;
      cur_tag_ = {0, c, 0};
      try {
        for (int e = 0; e < kNumEngines && !C.stopped; ++e)
          if (slow())
            try_issue<true>(int(c), e);
          else
            try_issue<false>(int(c), e);
      } catch (const Fault& f) {
        core_fault(int(c), Event{0, 0, uint32_t(c * kAgentsPerCore + C.cur_eng)}, f.what());
      }
    }
    if (mpi() || any_stopped()) end_phase();
  }
  void finish_stats(std::chrono::steady_clock::time_point t0) {
    int64_t ms = makespan_sync_;
    uint64_t steps = 0;
    for (size_t c = 0; c < cores_.size(); ++c)
      if (m_.local_core(int(c))) ms = std::max(ms, cores_[c].makespan), steps += cores_[c].steps;
    if (mpi()) {
      ms = procs_->max(ms);
      steps = procs_->sum(steps);
      gather_stats();
    }
    res_.stats.makespan_ticks = ms;
    res_.steps = steps;
    res_.stats.wall_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  Machine& m_;
  SchedOptions o_;
  const Module& mod_;
  Procs* procs_ = nullptr; // MPI processes (interp/dist/procs.h); nullptr: this process runs all
  bool mpi() const { return procs_ != nullptr; }
  // --timeline under MPI: where each recorded event falls in one process's order (the unit of
  // work: a phase's event (epoch, time, key), a rendezvous stage's core, a collective's
  // participant), so that rank 0 merges the processes' timelines into that order.
  std::array<uint64_t, 3> cur_tag_{};
  uint64_t epoch_ = 0;
  std::vector<std::array<uint64_t, 3>> tags_;
  std::shared_ptr<const Program> program_;
  const std::vector<std::string>* msgs_ = nullptr;
  const Wait* waits_ = nullptr;
  const Signal* sigs_ = nullptr;
  HostPool* pool_ = nullptr; // the machine's (Machine::host_pool), shared with its resets
  std::vector<CoreRt> cores_;
  EventQueue sync_; // collective transfers completing (agent: the first participant's channel)
  int64_t now_ = 0, makespan_sync_ = 0;
  bool stopped_ = false, started_ = false, finished_ = false;
  RunResult res_;
  bool slow() const { return o_.timeline || m_.opt.check_uninit || o_.observer; }
  // Fault context of the work done between phases (rendezvous, collective transfers).
  int cur_core_ = -1, cur_eng_ = 0;
  int64_t cur_pc_ = 0;
  std::map<std::tuple<int, int, int64_t>, Party> parties_; // (rank, kind/engine, key)
  uint64_t timeline_cap_ = UINT64_MAX;
  CcUnit cc_; // collectives: channels and the ranks' rendezvous
  std::vector<CcArrival> cc_party_;
  std::vector<CcArrivalRec> cc_pending_; // triggers not yet matched (arrival order)
  // Stepping: the cores whose next event is before their horizon, by that event.
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> merged_;
  bool has_next_ = false, next_sync_ = false;

  // ---- set-up ---------------------------------------------------------------------------------
  void predecode() {
    if (!m_.program) m_.program = build_program(m_);
    program_ = m_.program;
    msgs_ = &program_->msgs;
    waits_ = program_->waits.data();
    sigs_ = program_->sigs.data();
  }

  void setup() {
    pool_ = m_.host_pool(o_.threads);
    cores_ = std::vector<CoreRt>(m_.cores.size());
    cc_.reset(int(cores_.size()));
    const uint64_t budget = o_.max_steps ? o_.max_steps : UINT64_MAX;
    for (size_t c = 0; c < cores_.size(); ++c) {
      CoreSlot& cs = m_.cores[c];
      RankSlot& rs = m_.ranks[cs.rank];
      set_allowance(cores_[c], budget);
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
        cx.pool = pool_;
      }
    }
  }

  // ---- the budget (SchedOptions::max_steps) ---------------------------------------------------
  // A phase gives each core what is left of the budget; a core that spends it stops, and so
  // does the run at the end of the phase. The last kBudgetWatch events before a core's
  // allowance runs out are noted per agent and pc, so that the report (sched_report.cpp) shows
  // the loop each engine is in. Until then the only cost is process()'s compare.
  void set_allowance(CoreRt& C, uint64_t left) {
    C.allowance = left > UINT64_MAX - C.steps ? UINT64_MAX : C.steps + left;
    C.watch_from = C.allowance == UINT64_MAX    ? UINT64_MAX
                   : C.allowance > kBudgetWatch ? C.allowance - kBudgetWatch + 1
                                                : 1;
  }
  // Called for every event from watch_from on; true when the allowance is spent (the event is
  // put back unprocessed and the core stops).
  bool over_budget(int c, const Event& ev) {
    CoreRt& C = cores_[c];
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

  // ---- phases ---------------------------------------------------------------------------------
  // The earliest event of any running core (kNever: none).
  int64_t earliest() const {
    int64_t t = kNever;
    for (const CoreRt& C : cores_)
      if (!C.stopped && !C.heap.empty()) t = std::min(t, C.heap.top().t);
    return procs_ ? procs_->min(t) : t;
  }
  bool any_stopped() const {
    for (const CoreRt& C : cores_)
      if (C.stopped) return true;
    return false;
  }

  // Matches the arrivals recorded so far: every rendezvous arrival (their order does not
  // matter: a party releases at its last arrival's time), and the collective triggers before
  // `safe` in (time, core, engine) order (a transfer takes its channels in the order the
  // parties completed). Returns whether anything was matched.
  bool match_arrivals(int64_t safe) {
    bool any = false;
    ++epoch_;
    std::string rdv_fault; // MPI: a fault of this process's rendezvous, for every process
    try {
      for (size_t c = 0; c < cores_.size(); ++c) {
        CoreRt& C = cores_[c];
        cur_tag_ = {epoch_, c, 0};
        for (const RdvArrival& r : C.rdv) arrive(int(c), r.eng, r.kind, r.key);
        any |= !C.rdv.empty();
        C.rdv.clear();
        if (!mpi()) {
          for (CcArrivalRec& rec : C.cc) cc_pending_.push_back(std::move(rec));
          C.cc.clear();
        }
      }
    } catch (const Fault& f) {
      if (!mpi()) throw;
      rdv_fault = fault_text(cur_core_, cur_eng_, cur_pc_, f.what());
    }
    if (mpi()) {
      any = exchange_arrivals(any, rdv_fault);
      if (stopped_) return true;
    }
    if (cc_pending_.empty()) return any;
    std::stable_sort(cc_pending_.begin(), cc_pending_.end(),
                     [](const CcArrivalRec& x, const CcArrivalRec& y) {
                       return x.a.at != y.a.at       ? x.a.at < y.a.at
                              : x.a.core != y.a.core ? x.a.core < y.a.core
                                                     : x.a.eng < y.a.eng;
                     });
    size_t n = 0;
    while (n < cc_pending_.size() && cc_pending_[n].a.at < safe && !stopped_) {
      cc_match(cc_pending_[n]);
      ++n;
    }
    cc_pending_.erase(cc_pending_.begin(), cc_pending_.begin() + long(n));
    return any || n > 0;
  }

  // The work between phases; then each core's horizon. False when no core has an event
  // before its horizon (the run is over: finished or deadlocked).
  bool next_phase() {
    for (;;) {
      const int64_t t = earliest();
      bool any = match_arrivals(t);
      if (stopped_) return false;
      // Transfers completing no later than every core's next event: before those events.
      while (!sync_.empty() && sync_.top().t <= earliest() && !stopped_) {
        process_sync(sync_.pop());
        any = true;
      }
      if (stopped_) return false;
      if (!any) break;
    }
    return set_horizons();
  }

  bool set_horizons() {
    const int64_t t = earliest();
    for (CoreRt& C : cores_) C.horizon = kNever;
    auto bound = [&](int c, int64_t at, int64_t lat) {
      int64_t h = std::max(at, t);
      h = h > kNever - lat ? kNever : h + lat;
      cores_[c].horizon = std::min(cores_[c].horizon, h);
    };
    for (size_t c = 0; c < cores_.size(); ++c) // engines waiting at an incomplete rendezvous
      for (int e = 0; e < kNumEngines; ++e) {
        const EngRt& E = cores_[c].eng[e];
        if (E.st == St::rendezvous) bound(int(c), E.since, E.prog[E.pc].lat);
      }
    for (const CcUnit::Waiting& w : cc_.waiting()) bound(w.who.core, w.who.at, w.who.min_cost);
    for (const CcArrivalRec& r : cc_pending_) bound(r.a.core, r.a.at, r.a.min_cost);
    for_each_inflight([&](const CcXfer& x) {
      for (const CcArrival& w : x.who)
        cores_[w.core].horizon = std::min(cores_[w.core].horizon, x.end);
    });
    if (slow()) { // one horizon for all: observers see the events in modelled-time order
      int64_t h = kNever;
      for (const CoreRt& C : cores_) h = std::min(h, C.horizon);
      if (mpi()) h = procs_->min(h);
      for (CoreRt& C : cores_) C.horizon = h;
    }
    const uint64_t budget = o_.max_steps ? o_.max_steps : UINT64_MAX;
    uint64_t spent = 0;
    for (const CoreRt& C : cores_) spent += C.steps;
    if (mpi()) spent = procs_->sum(spent);
    bool any = false;
    for (CoreRt& C : cores_) {
      set_allowance(C, budget > spent ? budget - spent : 0);
      any |= !C.stopped && !C.heap.empty() && C.heap.top().t < C.horizon;
    }
    return mpi() ? procs_->any(any) : any;
  }
  template <class F> void for_each_inflight(F&& f) const {
    for (size_t c = 0; c < cores_.size(); ++c)
      for (int ch = 0; ch < kNumCcChannels; ++ch)
        for (const CcXfer& x : cc_.inflight(int(c), ch)) f(x);
  }

  // The fast path: every core with work runs its events before its horizon, the cores spread
  // over the host threads.
  void run_phase_parallel() {
    runnable_.clear();
    for (size_t c = 0; c < cores_.size(); ++c) {
      const CoreRt& C = cores_[c];
      if (!C.stopped && !C.heap.empty() && C.heap.top().t < C.horizon) runnable_.push_back(int(c));
    }
    auto run_core = [&](int i) {
      const int c = runnable_[size_t(i)];
      CoreRt& C = cores_[size_t(c)];
      Event ev{};
      try {
        while (!C.stopped && !C.heap.empty() && C.heap.top().t < C.horizon) {
          ev = C.heap.pop();
          process<false>(c, ev);
        }
      } catch (const Fault& f) {
        core_fault(c, ev, f.what());
      }
    };
    if (pool_ && runnable_.size() > 1)
      pool_->run(int(runnable_.size()), run_core);
    else
      for (size_t i = 0; i < runnable_.size(); ++i) run_core(int(i));
  }
  std::vector<int> runnable_;

  // The slow path: the events of the phase on one thread in (time, key) order.
  // A core that faults or spends its allowance stops; the others run to the end of the phase,
  // as on the fast path (the same answer whichever process runs which core).
  void run_phase_merged() {
    fill_merged();
    ++epoch_;
    while (!merged_.empty() && !stopped_) {
      const int c = int(merged_.top().agent);
      const Event& top = cores_[c].heap.top();
      cur_tag_ = {epoch_, uint64_t(top.t), top.key};
      merged_.pop();
      step_core(c, cores_[c].heap.pop());
      if (!cores_[c].stopped) push_merged(c);
    }
  }
  void fill_merged() {
    merged_ = {};
    for (size_t c = 0; c < cores_.size(); ++c) push_merged(int(c));
  }
  void push_merged(int c) {
    const CoreRt& C = cores_[c];
    if (C.stopped || C.heap.empty() || C.heap.top().t >= C.horizon) return;
    const Event& top = C.heap.top();
    merged_.push(Event{top.t, top.key, uint32_t(c)});
  }
  void step_core(int c, const Event& ev) {
    try {
      process<true>(c, ev);
    } catch (const Fault& f) {
      core_fault(c, ev, f.what());
    }
    now_ = std::max(now_, ev.t);
  }
  // The debugger: makes has_next_ / next_sync_ name what step() does next, running the work
  // between phases when the phase is over.
  void settle_step() {
    for (;;) {
      if (any_stopped()) end_phase();
      if (stopped_) {
        has_next_ = false;
        return;
      }
      if (!merged_.empty()) {
        has_next_ = true, next_sync_ = false;
        return;
      }
      const int64_t t = earliest();
      bool any = match_arrivals(t);
      if (stopped_) continue;
      if (!sync_.empty() && sync_.top().t <= earliest()) {
        has_next_ = next_sync_ = true;
        return;
      }
      if (any) continue;
      if (!set_horizons()) {
        has_next_ = false;
        check_deadlock();
        return;
      }
      fill_merged();
    }
  }

  // After a phase: a core that faulted or spent the budget stops the run. The report is the
  // earliest fault (time, key), else the budget's.
  void end_phase() {
    const CoreRt* first = nullptr;
    bool budget = false;
    for (const CoreRt& C : cores_) {
      if (C.faulted && (!first || first->stop_event > C.stop_event)) first = &C;
      budget |= C.over_budget;
    }
    std::string text = first ? first->fault_text : std::string();
    bool fault = first != nullptr;
    if (mpi()) { // the earliest fault of every process's earliest (ties: the lowest core)
      Bytes mine;
      mine.put(uint8_t(fault));
      mine.put(first ? first->stop_event : Event{});
      mine.put(uint8_t(budget));
      mine.put_str(text);
      fault = budget = false;
      Event best{};
      for (auto& b : procs_->allgather(mine.b)) {
        Bytes in{std::move(b)};
        const bool f = in.get<uint8_t>() != 0;
        const Event ev = in.get<Event>();
        budget |= in.get<uint8_t>() != 0;
        std::string t = in.get_str();
        if (f && (!fault || best > ev)) fault = true, best = ev, text = std::move(t);
      }
      if (!fault && budget) gather_state();
    }
    if (fault) {
      stopped_ = true;
      res_.status = RunStatus::fault;
      res_.exit_code = kExitFault;
      res_.report = text;
    } else if (budget) {
      stopped_ = true;
      res_.status = RunStatus::budget;
      res_.exit_code = kExitBudget;
      BudgetWatch watched;
      uint64_t steps = 0;
      int64_t now = 0;
      for (const CoreRt& C : cores_) { // (under MPI every core's, gathered)
        for (const auto& [agent, pcs] : C.watched) watched[agent] = pcs;
        steps += C.steps;
        now = std::max(now, C.now);
      }
      res_.report = budget_report(m_, mod_, cores_, watched, steps, now, o_.max_steps);
    }
  }

  // ---- event queue ----------------------------------------------------------------------------
  // Keys: fixed order by agent (then FIFO per agent), or a pseudo-random order from the seed,
  // the agent and the agent's own count, never from what other agents did.
  Event make_event(int c, int64_t t, int a) {
    const uint32_t agent = uint32_t(c * kAgentsPerCore + a);
    const uint64_t s = cores_[c].aseq[a]++;
    uint64_t key = o_.mode == ScheduleMode::fixed
                       ? (uint64_t(agent) << 40) | s
                       : mix(o_.seed ^ mix(s * 0x100000001b3ull + agent));
    return Event{t, key, agent};
  }
  void push(int c, int64_t t, int a) { cores_[c].heap.push(make_event(c, t, a)); }
  int64_t jitter(int c, int a, int64_t lat) {
    if (o_.mode == ScheduleMode::fixed) return lat;
    const uint64_t agent = uint64_t(c) * kAgentsPerCore + uint64_t(a);
    const uint64_t s = cores_[c].jseq[a]++;
    return lat + static_cast<int64_t>(mix(o_.seed * 31 + mix(agent + 1) + s) % uint64_t(lat + 1));
  }

  template <bool kSlow> void process(int c, const Event& ev) {
    CoreRt& C = cores_[c];
    if (++C.steps >= C.watch_from && over_budget(c, ev)) return; // one compare per event
    C.now = ev.t;
    int a = int(ev.agent % kAgentsPerCore);
    if (a < kNumEngines)
      complete<kSlow>(c, a);
    else
      dma_done<kSlow>(c, a - kNumEngines);
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
    C.cur_eng = e, C.cur_pc = E.pc;
    if (P.kind == Kind::bad) throw Fault((*msgs_)[P.bad]); // before its waits: they may be bad
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
      if (o_.observer) o_.observer->issue(c, Engine(e), E.pc);
    }
    if (E.st == St::blocked) {
      res_.stats.cores[c].eng[e].wait_ticks += C.now - E.since;
      if constexpr (kSlow) record(TimelineEvent::wait, c, e, e, E.since, C.now - E.since, 0);
    }
    switch (P.kind) {
    case Kind::barrier: return record_arrival(c, e, 0, e);
    case Kind::sendrecv: return record_arrival(c, e, 1, P.in->ops[2].i);
    default: break;
    }
    E.st = St::running;
    int64_t lat = jitter(c, e, P.lat);
    EngineStats& es = res_.stats.cores[c].eng[e];
    ++es.insts;
    es.busy_ticks += lat;
    es.cycles += P.cycles;
    if constexpr (kSlow) record(TimelineEvent::inst, c, e, e, C.now, lat, 0);
    push(c, C.now + lat, e);
  }

  template <bool kSlow> void complete(int c, int e) {
    CoreRt& C = cores_[c];
    EngRt& E = C.eng[e];
    const PInst& P = E.prog[E.pc];
    C.cur_eng = e, C.cur_pc = E.pc;
    C.makespan = std::max(C.makespan, C.now);
    E.cx.next_pc = E.pc + 1;
    ExecEvent ev;
    if constexpr (kSlow) {
      if (o_.observer) {
        ev = ExecEvent{c, Engine(e), E.pc, -1, E.issued, C.now, P.kind == Kind::plain};
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
    if (!C.stopped) try_issue<kSlow>(c, e);
  }

  template <bool kSlow> void exec(ExecCtx& cx, const PInst& P) {
    if constexpr (kSlow) {
      if (m_.opt.check_uninit) check_reads(m_, cx, *P.in);
    }
    P.fn(cx, *P.in);
    if constexpr (kSlow) {
      if (m_.opt.check_uninit) mark_writes(m_, cx, *P.in);
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
    while (mask && !C.stopped) {
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
    int64_t t0 = std::max(C.now, Q.data_free);
    int64_t begin = std::max(t0, C.link_free);
    C.link_free = begin + t.link_ticks;
    int64_t data_end = begin + jitter(c, kNumEngines + P.queue, t.data_ticks);
    Q.data_free = data_end;
    x.begin = begin;
    x.end = std::max(Q.last_end, data_end + t.latency_ticks);
    Q.last_end = x.end;
    QueueStats& qs = res_.stats.cores[c].queue[P.queue];
    ++qs.transfers;
    qs.bytes += P.bytes;
    qs.busy_ticks += x.end - begin;
    push(c, x.end, kNumEngines + P.queue);
    Q.q.push_back(x);
  }

  template <bool kSlow> void dma_done(int c, int q) {
    CoreRt& C = cores_[c];
    QueueRt& Q = C.queue[q];
    Xfer x = Q.q.front();
    Q.q.pop_front();
    C.cur_eng = x.eng, C.cur_pc = x.pc;
    C.makespan = std::max(C.makespan, C.now);
    ExecCtx cx = C.eng[x.eng].cx;
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

  // ---- collectives (interp/sched/cc_unit.h)
  // -------------------------------------------------------- The trigger completed: the core
  // records it; between phases it waits on its channel for the other ranks (cc_match).
  void cc_trigger(int c, int e, const PInst& P) {
    CoreRt& C = cores_[c];
    CcArrivalRec rec;
    CcArrival& a = rec.a;
    a.core = c;
    a.eng = uint8_t(e);
    a.pc = uint32_t(C.eng[e].pc);
    a.pi = &P;
    a.at = C.now;
    std::memcpy(a.regs, C.eng[e].cx.regs, sizeof a.regs);
    if (o_.observer) o_.observer->enqueue(c, Engine(e), a.pc, kNumDmaQueues + P.queue);
    const CoreSlot& cs = m_.cores[c];
    rec.members = CcUnit::members(mod_, m_.opt.ranks, cs.rank, *P.in);
    CcRing ring = cc_ring_cost(P.in->op, P.bytes, rec.members.size());
    a.min_cost = std::max<int64_t>(1, cc_transfer_ticks(*m_.tp, ring.steps, ring.link_bytes));
    for (int& r : rec.members) r = r * m_.opt.lnc + cs.core;
    // Nothing another core does can reach this one before the transfer could end.
    C.horizon = std::min(C.horizon, a.at + a.min_cost);
    C.cc.push_back(std::move(rec));
  }

  void cc_match(const CcArrivalRec& rec) {
    const CcArrival& a = rec.a;
    const PInst& P = *a.pi;
    const int ch = P.queue;
    cur_core_ = a.core, cur_eng_ = a.eng, cur_pc_ = a.pc;
    if (!cc_.arrive(a, ch, P.in->ops[2].i, rec.members, cc_party_)) return;
    // Every rank triggered it: start when the channel of every participant is free.
    int64_t begin = a.at;
    for (const CcArrival& x : cc_party_) begin = std::max(begin, cc_.free_at(x.core, ch));
    CcRing ring = cc_ring_cost(P.in->op, P.bytes, cc_party_.size());
    const int c0 = cc_party_[0].core, agent = kNumEngines + kNumDmaQueues + ch;
    int64_t ticks = std::max<int64_t>(1, cc_transfer_ticks(*m_.tp, ring.steps, ring.link_bytes));
    int64_t end = begin + jitter(c0, agent, ticks);
    // Never before a participant's horizon let it run (its own cost bound, docs/machine.md).
    for (const CcArrival& x : cc_party_) end = std::max(end, a.at + x.min_cost);
    for (const CcArrival& x : cc_party_) {
      cc_.free_at(x.core, ch) = end;
      ChanStats& st = res_.stats.cores[x.core].chan[ch];
      ++st.transfers;
      st.bytes += ring.link_bytes;
      st.busy_ticks += end - begin;
    }
    cc_.inflight(c0, ch).push_back(CcXfer{cc_party_, ch, begin, end, ring.link_bytes});
    sync_.push(make_event(c0, end, agent));
  }

  // The transfer completes: the data moves, then every participant's signals apply.
  void process_sync(const Event& sev) {
    const int c = int(sev.agent / kAgentsPerCore);
    const int ch = int(sev.agent % kAgentsPerCore) - kNumEngines - kNumDmaQueues;
    CcXfer x = std::move(cc_.inflight(c, ch).front());
    cc_.inflight(c, ch).pop_front();
    makespan_sync_ = std::max(makespan_sync_, sev.t);
    now_ = std::max(now_, sev.t);
    const size_t n = x.who.size();
    cur_core_ = x.who[0].core, cur_eng_ = x.who[0].eng, cur_pc_ = x.who[0].pc;
    ++epoch_;
    if (mpi()) return collective_mpi(sev, x, ch);
    std::vector<ExecCtx> cxs(n);
    std::vector<ExecCtx*> cxp(n);
    std::vector<const Inst*> ins(n);
    std::vector<ExecEvent> evs;
    for (size_t i = 0; i < n; ++i) {
      CcArrival& w = x.who[i];
      cores_[w.core].now = sev.t;
      cxs[i] = cores_[w.core].eng[w.eng].cx;
      cxs[i].regs = w.regs; // the registers at the trigger
      cxp[i] = &cxs[i];
      ins[i] = w.pi->in;
      if (slow())
        evs.push_back(ExecEvent{w.core, Engine(w.eng), int64_t(w.pc), kNumDmaQueues + ch, x.begin,
                                x.end, true});
    }
    if (slow()) {
      if (o_.observer) o_.observer->collective(evs, cxp, ins);
      if (m_.opt.check_uninit)
        for (size_t i = 0; i < n; ++i) check_reads(m_, *cxp[i], *ins[i]);
    }
    run_collective(cxp, ins);
    if (slow()) {
      if (m_.opt.check_uninit)
        for (size_t i = 0; i < n; ++i) mark_writes(m_, *cxp[i], *ins[i]);
      for (const CcArrival& w : x.who)
        record(TimelineEvent::cc, w.core, kTrackChan0 + ch, w.eng, x.begin, x.end - x.begin,
               x.link_bytes, w.pc);
    }
    signal_participants(sev, x);
    if (slow()) {
      if (o_.observer)
        for (const ExecEvent& ev : evs) o_.observer->done(ev);
    }
  }
  // Every participant's signals (of this process's participants under MPI). A fault of an
  // engine they wake is that core's, as if it had happened in the core's own run.
  void signal_participants(const Event& sev, const CcXfer& x) {
    for (size_t i = 0; i < x.who.size(); ++i) {
      const CcArrival& w = x.who[i];
      if (!m_.local_core(w.core)) continue;
      CoreRt& C = cores_[w.core];
      C.makespan = std::max(C.makespan, sev.t);
      cur_tag_ = {epoch_, 1, i};
      try {
        signal(w.core, *w.pi);
      } catch (const Fault& f) {
        core_fault(w.core, Event{C.now, 0, uint32_t(w.core * kAgentsPerCore + C.cur_eng)},
                   f.what());
      }
    }
    if (mpi() || any_stopped()) end_phase();
  }

  // ---- MPI processes (docs/machine.md "MPI processes") ----------------------------------------
  // A collective whose participants live in several processes: each prepares its own, the
  // sizes and faults go to all (who run the same checks), the sources go to the processes
  // whose destinations need them, and each writes its own destinations.
  void collective_mpi(const Event& sev, CcXfer& x, int ch) {
    const size_t n = x.who.size();
    CcParty p;
    p.mod = &mod_;
    p.side.resize(n);
    p.local.resize(n);
    std::vector<int> owner(n);
    Bytes mine;
    for (size_t i = 0; i < n; ++i) {
      CcArrival& w = x.who[i];
      p.in.push_back(w.pi->in);
      p.side[i].rank = m_.cores[w.core].rank;
      p.local[i] = m_.local_core(w.core);
      owner[i] = procs_->owner(p.side[i].rank, m_.opt.ranks);
      cores_[w.core].now = sev.t;
      if (!p.local[i]) continue;
      ExecCtx cx = cores_[w.core].eng[w.eng].cx;
      cx.regs = w.regs; // the registers at the trigger
      CcSide& sd = p.side[i];
      cc_prepare(cx, *w.pi->in, sd);
      mine.put(uint64_t(i));
      mine.put_str(sd.fault);
      mine.put(sd.src_dtype);
      mine.put(sd.src_elems);
      mine.put(sd.dst_elems);
      mine.put(sd.src_rows);
      mine.put(sd.src_cols);
    }
    for (auto& b : procs_->allgather(mine.b)) {
      Bytes in{std::move(b)};
      while (!in.done()) {
        const size_t i = size_t(in.get<uint64_t>());
        if (i >= n) throw std::runtime_error("MPI: a bad collective record");
        CcSide& sd = p.side[i];
        sd.fault = in.get_str();
        sd.src_dtype = in.get<DType>();
        sd.src_elems = in.get<uint64_t>();
        sd.dst_elems = in.get<uint64_t>();
        sd.src_rows = in.get<uint32_t>();
        sd.src_cols = in.get<uint64_t>();
      }
    }
    cc_check(p); // the same Fault in every process
    // Each source to every other process whose destinations need it, in one global order.
    const int me = procs_->rank();
    for (int q = 0; q < procs_->size(); ++q) {
      std::vector<bool> writes(n);
      for (size_t i = 0; i < n; ++i) writes[i] = owner[i] == q;
      const std::vector<bool> needs = cc_sources_needed(p, writes);
      for (size_t i = 0; i < n; ++i) {
        if (!needs[i] || owner[i] == q) continue;
        CcSide& sd = p.side[i];
        if (owner[i] == me) {
          procs_->send(q, sd.src.data(), sd.src.size(), 1);
        } else if (q == me) {
          sd.src.resize(size_t(sd.src_elems) * dtype_bytes(sd.src_dtype));
          procs_->recv(owner[i], sd.src.data(), sd.src.size(), 1);
        }
      }
    }
    cc_apply(p);
    if (o_.timeline)
      for (size_t i = 0; i < n; ++i) {
        const CcArrival& w = x.who[i];
        cur_tag_ = {epoch_, 0, i};
        if (p.local[i])
          record(TimelineEvent::cc, w.core, kTrackChan0 + ch, w.eng, x.begin, x.end - x.begin,
                 x.link_bytes, w.pc);
      }
    signal_participants(sev, x);
  }

  // Between phases: this process's collective triggers to every process (the matching that
  // follows is the same everywhere), and whether any process matched a rendezvous or faulted
  // doing so (the first process's fault is the one a single process meets first).
  bool exchange_arrivals(bool any, const std::string& rdv_fault) {
    Bytes mine;
    mine.put(uint8_t(any));
    mine.put_str(rdv_fault);
    for (size_t c = 0; c < cores_.size(); ++c)
      for (const CcArrivalRec& r : cores_[c].cc) {
        mine.put(int32_t(r.a.core));
        mine.put(r.a.eng);
        mine.put(r.a.pc);
        mine.put(r.a.at);
        mine.put(r.a.min_cost);
        for (int32_t v : r.a.regs) mine.put(v);
        mine.put(uint32_t(r.members.size()));
        for (int k : r.members) mine.put(int32_t(k));
      }
    for (CoreRt& C : cores_) C.cc.clear();
    any = false;
    std::string fault;
    for (auto& b : procs_->allgather(mine.b)) {
      Bytes in{std::move(b)};
      any |= in.get<uint8_t>() != 0;
      std::string f = in.get_str();
      if (fault.empty()) fault = std::move(f);
      while (!in.done()) {
        CcArrivalRec r;
        r.a.core = in.get<int32_t>();
        r.a.eng = in.get<uint8_t>();
        r.a.pc = in.get<uint32_t>();
        r.a.at = in.get<int64_t>();
        r.a.min_cost = in.get<int64_t>();
        for (int32_t& v : r.a.regs) v = in.get<int32_t>();
        if (r.a.core < 0 || size_t(r.a.core) >= cores_.size() || r.a.eng >= kNumEngines ||
            r.a.pc >= program_->prog[r.a.eng].size())
          throw std::runtime_error("MPI: a bad collective arrival record");
        r.a.pi = &program_->prog[r.a.eng][r.a.pc];
        r.members.resize(in.get<uint32_t>());
        for (int& k : r.members) k = in.get<int32_t>();
        cc_pending_.push_back(std::move(r));
      }
    }
    if (!fault.empty()) {
      stopped_ = true;
      res_.status = RunStatus::fault;
      res_.exit_code = kExitFault;
      res_.report = std::move(fault);
    }
    return any;
  }

  // The cores [lo, hi) that process p simulates.
  std::pair<int, int> cores_of(int p) const {
    return {Procs::lo(p, procs_->size(), m_.opt.ranks) * m_.opt.lnc,
            Procs::lo(p + 1, procs_->size(), m_.opt.ranks) * m_.opt.lnc};
  }

  // At the end of a run that deadlocked or spent its budget: every core's engines,
  // semaphores, clock, steps and budget watch, so that the report names every rank.
  void gather_state() {
    Bytes mine;
    for (size_t c = 0; c < cores_.size(); ++c) {
      if (!m_.local_core(int(c))) continue;
      const CoreRt& C = cores_[c];
      for (const EngRt& E : C.eng) {
        mine.put(E.pc);
        mine.put(E.st);
        mine.put(E.since);
      }
      for (uint32_t v : m_.cores[c].st.sems) mine.put(v);
      mine.put(C.now);
      mine.put(C.steps);
      mine.put(uint64_t(C.watched.size()));
      for (const auto& [agent, pcs] : C.watched) {
        mine.put(agent);
        mine.put(uint64_t(pcs.size()));
        for (auto [pc, k] : pcs) mine.put(pc), mine.put(k);
      }
    }
    std::vector<std::vector<uint8_t>> all = procs_->allgather(mine.b);
    for (int p = 0; p < procs_->size(); ++p) {
      if (p == procs_->rank()) continue;
      Bytes in{std::move(all[size_t(p)])};
      const auto [lo, hi] = cores_of(p);
      for (int c = lo; c < hi; ++c) {
        CoreRt& C = cores_[size_t(c)];
        for (EngRt& E : C.eng) {
          E.pc = in.get<int64_t>();
          E.st = in.get<St>();
          E.since = in.get<int64_t>();
        }
        for (uint32_t& v : m_.cores[size_t(c)].st.sems) v = in.get<uint32_t>();
        C.now = in.get<int64_t>();
        C.steps = in.get<uint64_t>();
        C.watched.clear();
        for (uint64_t k = in.get<uint64_t>(); k > 0; --k) {
          auto& pcs = C.watched[in.get<uint32_t>()];
          for (uint64_t j = in.get<uint64_t>(); j > 0; --j) {
            const int64_t pc = in.get<int64_t>();
            pcs[pc] = in.get<uint64_t>();
          }
        }
      }
    }
  }

  // The statistics of every core from the process that ran it; the timeline to rank 0, merged
  // into one process's order (the tags).
  void gather_stats() {
    Bytes mine;
    for (size_t c = 0; c < cores_.size(); ++c)
      if (m_.local_core(int(c))) mine.put(res_.stats.cores[c]);
    std::vector<std::vector<uint8_t>> all = procs_->allgather(mine.b);
    for (int p = 0; p < procs_->size(); ++p) {
      Bytes in{std::move(all[size_t(p)])};
      const auto [lo, hi] = cores_of(p);
      for (int c = lo; c < hi; ++c) res_.stats.cores[size_t(c)] = in.get<CoreStats>();
    }
    if (!o_.timeline) return;
    const uint64_t dropped = procs_->sum(res_.timeline_dropped);
    const int me = procs_->rank();
    if (me != 0) {
      uint64_t k = res_.timeline.size();
      procs_->send(0, reinterpret_cast<const uint8_t*>(&k), sizeof k, 2);
      procs_->send(0, reinterpret_cast<const uint8_t*>(res_.timeline.data()),
                   k * sizeof(TimelineEvent), 2);
      procs_->send(0, reinterpret_cast<const uint8_t*>(tags_.data()), k * sizeof tags_[0], 2);
      res_.timeline.clear();
      res_.timeline_dropped = dropped;
      return;
    }
    struct Tagged {
      std::array<uint64_t, 3> tag;
      TimelineEvent ev;
    };
    std::vector<Tagged> merged;
    auto take = [&](const std::vector<TimelineEvent>& ev,
                    const std::vector<std::array<uint64_t, 3>>& tg) {
      for (size_t i = 0; i < ev.size(); ++i) merged.push_back({tg[i], ev[i]});
    };
    take(res_.timeline, tags_);
    for (int p = 1; p < procs_->size(); ++p) {
      uint64_t k = 0;
      procs_->recv(p, reinterpret_cast<uint8_t*>(&k), sizeof k, 2);
      std::vector<TimelineEvent> ev(k);
      std::vector<std::array<uint64_t, 3>> tg(k);
      procs_->recv(p, reinterpret_cast<uint8_t*>(ev.data()), k * sizeof(TimelineEvent), 2);
      procs_->recv(p, reinterpret_cast<uint8_t*>(tg.data()), k * sizeof tg[0], 2);
      take(ev, tg);
    }
    std::stable_sort(merged.begin(), merged.end(),
                     [](const Tagged& a, const Tagged& b) { return a.tag < b.tag; });
    res_.timeline.clear();
    uint64_t extra = 0;
    for (const Tagged& t : merged)
      if (res_.timeline.size() < timeline_cap_)
        res_.timeline.push_back(t.ev);
      else
        ++extra;
    res_.timeline_dropped = dropped + extra;
  }

  // ---- rendezvous: core_barrier (per engine), send_recv (per pipe) ---------------------------
  void record_arrival(int c, int e, int kind, int64_t key) {
    CoreRt& C = cores_[c];
    EngRt& E = C.eng[e];
    E.st = St::rendezvous;
    E.since = C.now;
    C.rdv.push_back(RdvArrival{uint8_t(e), uint8_t(kind), key});
    // The release lands no earlier than the instruction's latency after this arrival.
    const int64_t lat = E.prog[E.pc].lat;
    C.horizon = std::min(C.horizon, C.now > kNever - lat ? kNever : C.now + lat);
  }

  void arrive(int c, int e, int kind, int64_t key) {
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
    // The last arrival (its engine's `since`) releases the party: matched in any order.
    int64_t at = 0;
    for (auto [gc, ge] : go) at = std::max(at, cores_[gc].eng[ge].since);
    release(kind, go, at);
  }

  void release(int kind, const std::vector<std::pair<int, int>>& go, int64_t now) {
    int64_t extra = 0;
    if (kind == 1) {
      auto [c0, e0] = go[0];
      auto [c1, e1] = go[1];
      EngRt& A = cores_[c0].eng[e0];
      EngRt& B = cores_[c1].eng[e1];
      const PInst& P = A.prog[A.pc];
      const Inst& Q = *B.prog[B.pc].in;
      cur_core_ = c0, cur_eng_ = e0, cur_pc_ = A.pc;
      if (m_.opt.check_uninit) { // both sources read before either destination is written
        check_reads(m_, A.cx, *P.in);
        check_reads(m_, B.cx, Q);
      }
      exchange_send_recv(A.cx, *P.in, B.cx, Q);
      if (m_.opt.check_uninit) {
        mark_writes(m_, A.cx, *P.in);
        mark_writes(m_, B.cx, Q);
      }
      DmaTime t = dma_transfer(*m_.tp, P.bytes, P.rows);
      extra = t.data_ticks + t.latency_ticks;
    }
    if (o_.observer) o_.observer->rendezvous(go);
    for (auto [c, e] : go) {
      CoreRt& C = cores_[c];
      EngRt& E = C.eng[e];
      const PInst& P = E.prog[E.pc];
      EngineStats& es = res_.stats.cores[c].eng[e];
      es.wait_ticks += now - E.since;
      ++es.insts;
      es.busy_ticks += P.lat + extra;
      es.cycles += P.cycles;
      if (o_.timeline) {
        if (now > E.since) record(TimelineEvent::wait, c, e, e, E.since, now - E.since, 0);
        record(TimelineEvent::inst, c, e, e, now, P.lat + extra, 0);
      }
      E.st = St::running;
      E.issued = now;
      push(c, now + P.lat + extra, e);
    }
  }

  // ---- observers ------------------------------------------------------------------------------
  void record(TimelineEvent::Kind k, int c, int track, int e, int64_t start, int64_t dur,
              uint64_t bytes, int64_t pc = -1) {
    if (!o_.timeline) return;
    if (res_.timeline.size() >= timeline_cap_) {
      ++res_.timeline_dropped;
      return;
    }
    if (mpi()) tags_.push_back(cur_tag_);
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
    if (mpi()) tags_.push_back(cur_tag_);
    TimelineEvent ev;
    ev.kind = TimelineEvent::sem;
    ev.core = uint16_t(c);
    ev.track = 0;
    ev.pc = sem;
    ev.start = cores_[c].now;
    ev.bytes = m_.cores[c].st.sems[sem];
    res_.timeline.push_back(ev);
  }

  std::string fault_text(int c, int e, int64_t pc, const std::string& why) const {
    if (c < 0) return fmt::format("fault: {}\n", why);
    const Inst& in = mod_.streams[e][pc];
    return fmt::format("{}: fault: {}\n  at {}: {}\n", source_of(mod_, Engine(e), pc), why,
                       where(m_, c, e, pc), describe_inst(mod_, in));
  }
  // A fault while core c ran: it stops; the run stops at the end of the phase.
  void core_fault(int c, const Event& ev, const std::string& why) {
    CoreRt& C = cores_[c];
    if (C.faulted) return;
    C.stopped = C.faulted = true;
    C.stop_event = ev;
    C.fault_text = fault_text(c, C.cur_eng, C.cur_pc, why);
  }
  // A fault between phases (a rendezvous or a collective's data): the run stops at once.
  void fault(const std::string& why) {
    stopped_ = true;
    res_.status = RunStatus::fault;
    res_.exit_code = kExitFault;
    res_.report = fault_text(cur_core_, cur_eng_, cur_pc_, why);
  }

  void check_deadlock() {
    int64_t now = now_;
    if (mpi()) {
      gather_state();
      now = procs_->max(now);
    }
    for (const CoreRt& C : cores_) now = std::max(now, C.now);
    std::string r = deadlock_report(m_, cores_, cc_, now);
    if (r.empty()) return;
    stopped_ = true;
    res_.status = RunStatus::deadlock;
    res_.exit_code = kExitDeadlock;
    res_.report = std::move(r);
  }
};

} // namespace

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
