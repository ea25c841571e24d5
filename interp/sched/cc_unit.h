// The collective unit of every core (docs/machine.md "Collectives"): a collective instruction
// costs its engine a trigger, then waits on its channel for the same instruction of every rank
// of its replica group (same core index, same channel, same group). When the last one arrives
// the transfer starts as soon as the channel of every participant is free, moves over the
// ring (steps x latency + link bytes / channel bandwidth) and completes: the data moves
// atomically and every participant's signals apply. A rank's channels run in parallel; a
// permute cannot start before every rank triggered it, i.e. before the consumer of the
// destination buffer released it (the trigger's waits).
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "interp/sched/sched_internal.h"

namespace nisa::interp::detail {

// A transfer whose participants all arrived, in flight on a channel of each participant.
struct CcXfer {
  std::vector<CcArrival> who; // in replica-group order
  int chan = 0;
  int64_t begin = 0, end = 0;
  uint64_t link_bytes = 0;
  int64_t node = -1; // SchedOptions::history
};

class CcUnit {
public:
  void reset(int cores);

  // The ranks (ascending for collective_permute, else in the list's order) that meet at the
  // instruction `in` of `rank`; throws Fault for an undeclared group, a rank in no list or a
  // rank outside the run.
  static std::vector<int> members(const Module& mod, int ranks, int rank, const Inst& in);

  // Records an arrival; when it completes a party, returns true and fills `party` (the
  // arrivals in member order). members: the participating core indices.
  bool arrive(const CcArrival& a, int chan, int64_t group, const std::vector<int>& members,
              std::vector<CcArrival>& party);

  // The in-flight transfers of channel `chan`, keyed by the core of their first participant
  // (the event agent): FIFO, since a channel runs one transfer at a time.
  std::deque<CcXfer>& inflight(int core, int chan) { return inflight_[idx(core, chan)]; }
  const std::deque<CcXfer>& inflight(int core, int chan) const {
    return inflight_[idx(core, chan)];
  }
  int64_t& free_at(int core, int chan) { return free_[idx(core, chan)]; }

  // For deadlock reports: every collective still waiting for participants ("rank 1 core 0
  // cc[3] 'permute_implicit' on channel 1 waits for ranks 2, 3").
  struct Waiting {
    CcArrival who;
    int chan;
    std::vector<int> missing; // core indices that never arrived
  };
  std::vector<Waiting> waiting() const;
  bool idle() const; // no collective waiting or in flight

private:
  size_t idx(int core, int chan) const { return size_t(core) * kNumCcChannels + size_t(chan); }
  struct Party {
    std::vector<int> members;
    std::vector<CcArrival> arrived; // FIFO per member
    int chan = 0;
  };
  std::map<std::tuple<int, int, int64_t, std::vector<int>>, Party> parties_;
  std::vector<std::deque<CcXfer>> inflight_;
  std::vector<int64_t> free_;
};

} // namespace nisa::interp::detail
