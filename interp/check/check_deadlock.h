// The deadlocks `nisa check` finds (docs/check.md): a cycle of necessary orders, a wait for
// == that signals not ordered after it can overtake, and the streams stuck in a schedule that
// runs every node as soon as it can (with counts that only grow, one schedule that completes
// shows that every schedule completes).
#pragma once
#include "interp/check/check_names.h"
#include "interp/check/check_order.h"

namespace nisa::interp::check_detail {

class Deadlocks {
public:
  Deadlocks(const Module& m, const Graph& g, const Names& names, const Order& order)
      : m_(m), g_(g), names_(names), order_(order) {}

  // Each adds a line to r.deadlocks per stuck stream, join or wait.
  void cycle(CheckResult& r) const; // when Order::solve found a cycle: its streams
  void eq_waits(CheckResult& r) const;
  void simulate(CheckResult& r) const;

private:
  const Module& m_;
  const Graph& g_;
  const Names& names_;
  const Order& order_;
};

} // namespace nisa::interp::check_detail
