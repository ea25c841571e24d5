// Stepping for the debugger (interp/sched/scheduler.h Scheduler): the event loop's steps
// (interp/sched/loop.cpp) one event at a time, on the slow path.
#include <chrono>

#include "interp/sched/loop.h"
#include "interp/sched/scheduler.h"

namespace nisa::interp {

using namespace detail;

// Issues every engine's first instruction (time 0) so that peek() shows the first event.
Scheduler::Scheduler(Machine& m, const SchedOptions& o) : s_(std::make_unique<Sched>(m, o)) {
  const auto t0 = std::chrono::steady_clock::now();
  try {
    s_->start();
    settle();
  } catch (const Fault& f) {
    s_->state().fault(f.what());
  }
  finished_ = s_->state().stopped || !has_next_;
  s_->finish_stats(t0);
}

Scheduler::~Scheduler() = default;

bool Scheduler::step() {
  if (finished_) return false;
  const auto t0 = std::chrono::steady_clock::now();
  SchedState& x = s_->state();
  try {
    if (has_next_) {
      if (next_sync_) {
        s_->complete_transfer();
      } else {
        const int c = s_->step_merged();
        if (x.cores[c].stopped) s_->end_phase(); // a fault or the budget: report it now
      }
    }
    if (!x.stopped) settle();
  } catch (const Fault& f) {
    x.fault(f.what());
  }
  finished_ = x.stopped || !has_next_;
  s_->finish_stats(t0);
  return !finished_;
}

// The loop's update and notify, stopping before each event of a phase and each transfer due.
void Scheduler::settle() {
  SchedState& x = s_->state();
  for (;;) {
    if (x.any_stopped()) s_->end_phase();
    if (x.stopped) {
      has_next_ = false;
      return;
    }
    if (s_->phase_pending()) {
      has_next_ = true, next_sync_ = false;
      return;
    }
    const bool any = s_->match_arrivals();
    if (x.stopped) continue;
    if (s_->transfer_due()) {
      has_next_ = next_sync_ = true;
      return;
    }
    if (any) continue;
    if (!s_->set_horizons()) {
      has_next_ = false;
      s_->check_deadlock();
      return;
    }
    s_->fill_merged();
  }
}

std::optional<StepEvent> Scheduler::peek() const {
  if (finished_ || !has_next_) return std::nullopt;
  return s_->peek(next_sync_);
}

int64_t Scheduler::now() const { return s_->state().now; }
bool Scheduler::finished() const { return finished_; }
const RunResult& Scheduler::result() const { return s_->state().res; }

bool Scheduler::engine_done(int core, Engine e) const {
  const EngRt& E = s_->state().cores[size_t(core)].eng[int(e)];
  return E.pc >= E.len || E.st == St::done;
}

std::vector<AgentState> Scheduler::agents() const {
  const std::vector<CoreRt>& cores = s_->state().cores;
  std::vector<AgentState> out;
  for (size_t c = 0; c < cores.size(); ++c)
    for (int e = 0; e < kNumEngines; ++e) {
      const EngRt& E = cores[c].eng[e];
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
  for (size_t c = 0; c < cores.size(); ++c)
    for (int q = 0; q < kNumDmaQueues; ++q) {
      const QueueRt& Q = cores[c].queue[q];
      if (Q.q.empty() && Q.last_end == 0) continue;
      AgentState a;
      a.core = int(c);
      a.queue = q;
      a.state = Q.q.empty() ? AgentState::idle : AgentState::running;
      if (!Q.q.empty()) a.engine = Engine(Q.q.front().eng), a.pc = Q.q.front().pc;
      for (const Xfer& xf : Q.q) {
        a.queued.emplace_back(Engine(xf.eng), int64_t(xf.pc));
        a.spans.emplace_back(xf.begin, xf.end);
      }
      out.push_back(std::move(a));
    }
  return out;
}

std::string_view name_of(AgentState::State s) {
  static constexpr std::string_view names[] = {"idle", "running", "waiting", "rendezvous", "done"};
  return names[s];
}

} // namespace nisa::interp
