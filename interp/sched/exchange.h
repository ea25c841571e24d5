// The process exchange of the scheduler (docs/machine.md "MPI processes"): what its processes
// share when `mpirun -np P` splits the ranks over them (interp/dist/procs.h). Every call is
// collective (every process makes it at the same point of the run). In the one-process form
// (no Procs) every call is the identity or does nothing, so the event loop calls it
// unconditionally; `multi()` tells the collective transfers which algorithm to run.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "interp/dist/procs.h"
#include "interp/engines/collective.h"
#include "interp/sched/state.h"

namespace nisa::interp::detail {

class Exchange {
public:
  explicit Exchange(SchedState& x) : x_(x), procs_(x.m.opt.procs) {}
  bool multi() const { return procs_ != nullptr; }

  int64_t min(int64_t v) { return procs_ ? procs_->min(v) : v; }
  int64_t max(int64_t v) { return procs_ ? procs_->max(v) : v; }
  uint64_t sum(uint64_t v) { return procs_ ? procs_->sum(v) : v; }
  bool any(bool b) { return procs_ ? procs_->any(b) : b; }
  int owner(int rank) const { return procs_ ? procs_->owner(rank, x_.m.opt.ranks) : 0; }

  // What stops the run at the end of a phase: the earliest fault (time, key; ties: the lowest
  // core) of every process, else whether any spent the budget.
  struct Stop {
    bool fault = false;
    Event at{};
    bool budget = false;
    std::string text;         // the fault's report
    bool interrupted = false; // SchedOptions::interrupt seen by a core of any process
  };
  Stop stop(Stop mine);
  // Between phases: the collective triggers every core recorded this phase (CoreRt::cc) to
  // every process, appended to `pending` in core order; whether any process matched a
  // rendezvous (`any`); the first process's fault matching one (`fault`, the fault a single
  // process meets first).
  bool arrivals(bool any, std::string& fault, std::vector<CcArrivalRec>& pending);
  // A collective across processes (Collectives::complete_across_processes): each local side's
  // sizes and fault to every process; then each source to the processes whose destinations
  // need it (owner[i]: the process of participant i).
  void share_sizes(CcParty& p);
  void share_sources(CcParty& p, const std::vector<int>& owner);
  // At the end of a run that deadlocked or spent its budget: every core's engines, semaphores,
  // clock, steps and budget watch from its process, so that the report names every rank.
  void gather_state();
  // At the end of a run: every core's statistics from its process; the timeline to rank 0,
  // merged into one process's order (SchedState::tags).
  void gather_stats();
  void gather_history(); // gather_stats' part for SchedOptions::history

private:
  std::pair<int, int> cores_of(int p) const; // the cores [lo, hi) that process p simulates

  SchedState& x_;
  Procs* procs_; // nullptr: this process runs every core
};

} // namespace nisa::interp::detail
