// The event loop of the scheduler (docs/machine.md "Host threads") and its parts: the state
// (state.h), the cores' agents (agents.h: engines, DMA queues), rendezvous, collectives and
// the process exchange. run() takes a whole run; the debugger's Scheduler
// (interp/sched/stepping.cpp) takes the same steps one event at a time. Not a public interface.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

#include "interp/sched/agents.h"
#include "interp/sched/collectives.h"
#include "interp/sched/exchange.h"
#include "interp/sched/rendezvous.h"
#include "interp/sched/state.h"

namespace nisa::interp::detail {

class Sched {
public:
  Sched(Machine& m, const SchedOptions& o);
  RunResult run(); // the event loop

  // The steps of the loop, for stepping.
  void start();
  bool match_arrivals(); // the rendezvous and collective triggers so far; whether any matched
  bool transfer_due();   // a collective transfer completes before every core's next event
  void complete_transfer();
  bool set_horizons(); // false: no core has an event before its horizon (the run is over)
  void fill_merged();  // the slow path: the events of the phase in (time, key) order
  bool phase_pending() const { return !merged_.empty(); }
  int step_merged(); // processes the phase's next event; returns its core
  void end_phase();
  void check_deadlock();
  void finish_stats(std::chrono::steady_clock::time_point t0);
  // The next event: the next collective transfer (transfer), else the phase's next event.
  StepEvent peek(bool transfer) const;
  SchedState& state() { return x_; }
  const SchedState& state() const { return x_; }

private:
  void setup();
  bool update();
  void evaluate();
  void evaluate_parallel();
  void evaluate_merged();
  void push_merged(int c);
  int64_t earliest();

  SchedState x_;
  Exchange ex_;
  Agents agents_;
  Rendezvous rdv_;
  Collectives cc_;
  std::vector<int> runnable_; // the fast path: the cores with events before their horizons
  // The slow path: the cores whose next event is before their horizon, by that event.
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> merged_;
};

} // namespace nisa::interp::detail
