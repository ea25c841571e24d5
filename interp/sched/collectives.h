// Collectives on channels (docs/machine.md "Collectives"; the channels and the ranks' parties
// are interp/sched/cc_unit.h). A core records its trigger while it runs alone
// (record_trigger); between phases the triggers are matched in (time, core, engine) order, a
// complete party's transfer is timed on its channels, and when it completes (an event of the
// loop's own queue, before any core's later events) the data moves and every participant's
// signals apply.
#pragma once
#include <cstdint>
#include <vector>

#include "interp/sched/agents.h"
#include "interp/sched/cc_unit.h"
#include "interp/sched/exchange.h"
#include "interp/sched/state.h"

namespace nisa::interp::detail {

// While core c runs: engine e's collective P completed its trigger; the core records it and,
// between phases, it waits on its channel for the other ranks.
void record_trigger(SchedState& x, int c, int e, const PInst& P);

class Collectives {
public:
  Collectives(SchedState& x, Agents& agents, Exchange& ex) : x_(x), agents_(agents), ex_(ex) {}
  void reset(int cores) {
    cc_.reset(cores);
    last_node_.assign(size_t(cores) * kNumCcChannels, -1);
  }

  // Triggers not yet matched, in arrival order (Exchange::arrivals appends each phase's).
  std::vector<CcArrivalRec>& pending() { return pending_; }
  // Matches the pending triggers before `safe` in (time, core, engine) order (a transfer takes
  // its channels in the order the parties completed); whether it matched any.
  bool match(int64_t safe);
  // Transfers in flight complete in (time, key) order on the loop's own queue.
  bool transfer_pending() const { return !sync_.empty(); }
  int64_t next_transfer_at() const { return sync_.top().t; }
  // The next transfer completes: the data moves, then every participant's signals apply.
  void complete_next() { complete(sync_.pop()); }
  // Lowers the horizons of the cores that a waiting, pending or in-flight collective may reach
  // (t: the earliest event of the phase).
  void limit_horizons(int64_t t);

  const CcUnit& unit() const { return cc_; }
  int64_t makespan() const { return makespan_; }
  StepEvent peek() const; // the next transfer, for the debugger

private:
  void match(const CcArrivalRec& rec);
  void complete(const Event& sev);
  void complete_across_processes(const Event& sev, CcXfer& x, int ch);
  void signal_participants(const Event& sev, const CcXfer& x);

  SchedState& x_;
  Agents& agents_;
  Exchange& ex_;
  CcUnit cc_; // channels and the ranks' parties
  std::vector<CcArrival> party_;
  std::vector<CcArrivalRec> pending_;
  EventQueue sync_; // transfers completing (agent: the first participant's channel)
  int64_t makespan_ = 0;
  std::vector<int64_t> last_node_; // history: per (core, channel) the transfer that set free_at
};

} // namespace nisa::interp::detail
