// Happens-before in `nisa check` (docs/check.md): the orders of the graph (check_graph.h) that
// hold in every schedule, as vector clocks over a topological order of the static edges and
// the edges derived from semaphore counts (a wait on a count that cannot be reached without a
// signal comes after it), iterated until no edge is new.
#pragma once
#include <vector>

#include "interp/check/check_graph.h"

namespace nisa::interp::check_detail {

class Order {
public:
  // Throws Outside when the clocks would pass the memory limit (check_budget.h).
  Order(const CheckOptions& o, const Graph& g);

  // The fixpoint; false when the orders make a cycle (its nodes are those not in topo()).
  // `rounds` counts the rounds.
  bool solve(int& rounds);
  uint64_t sem_edges() const; // the edges derived from semaphore counts
  const std::vector<uint32_t>& topo() const { return topo_; }

  // Whether `node` comes after one of the places `a[0, na)` in every schedule.
  bool after(uint32_t node, const Anchor* a, uint32_t na) const {
    const uint32_t* v = &vc_[size_t(node) * S_];
    for (uint32_t i = 0; i < na; ++i)
      if (v[a[i].stream] >= a[i].pos) return true;
    return false;
  }
  // The last place of `stream` that comes before `node` in every schedule (0: none).
  uint32_t clock(uint32_t node, uint32_t stream) const { return vc_[size_t(node) * S_ + stream]; }
  // Whether a and b (nodes on streams) are ordered, either way.
  bool ordered(uint32_t a, uint32_t b) const;
  // The largest value (core, sem) can hold when `site` (issuing at `sa`) issues, in a
  // schedule where the node `x` (if any) has not completed.
  uint64_t max_count(const SemInfo& si, uint32_t site, const std::vector<Anchor>& sa,
                     const Anchor* x) const;

private:
  const Graph& g_;
  const uint32_t S_; // streams
  // per wait, per signalling stream (index into its SemInfo lists): the latest signal proved
  // to precede the wait (+1; 0 = none)
  std::vector<std::vector<uint32_t>> best_;
  std::vector<uint32_t> vc_; // [node * S_ + stream]
  std::vector<uint32_t> topo_;

  bool topo_and_clocks();
  bool derive_edges();
};

} // namespace nisa::interp::check_detail
