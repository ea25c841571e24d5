// Rendezvous of the cores of a rank (docs/machine.md "Scheduling"): core_barrier (per engine)
// and send_recv (per pipe). A core records its engine's arrival while it runs alone
// (record_rendezvous); between phases the arrivals are matched (Rendezvous::arrive) and the
// last arrival of a party releases it.
#pragma once
#include <cstdint>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "interp/sched/state.h"

namespace nisa::interp::detail {

// While core c runs: its engine e reaches a rendezvous (kind 0: core_barrier, key the engine;
// kind 1: send_recv, key the pipe) and waits for its party.
void record_rendezvous(SchedState& x, int c, int e, int kind, int64_t key);

class Rendezvous {
public:
  explicit Rendezvous(SchedState& x) : x_(x) {}
  // Between phases: an arrival recorded by record_rendezvous. The party's last arrival (in
  // any order: it releases at the latest arrival's time) starts every member's instruction.
  void arrive(int c, int e, int kind, int64_t key);

private:
  void release(int kind, const std::vector<std::pair<int, int>>& go, int64_t now);

  SchedState& x_;
  struct Party {
    std::vector<std::pair<int, int>> arrived; // (core index, engine)
  };
  std::map<std::tuple<int, int, int64_t>, Party> parties_; // (rank, kind/engine, key)
};

} // namespace nisa::interp::detail
