// The conflicts `nisa check` finds (docs/check.md): every two accesses of different engines,
// queues or cores to overlapping bytes, one a write, that happens-before (check_order.h) does
// not order, and every sem_set unordered with a signal, a sem_set or a wait of its semaphore.
#pragma once
#include "interp/check/check_names.h"
#include "interp/check/check_order.h"
#include "interp/check/check_report.h"

namespace nisa::interp::check_detail {

class Conflicts {
public:
  Conflicts(const Module& m, const CheckOptions& o, const Graph& g, const Names& names,
            const Order& order, const Reporter& reporter, const Iterations& iters)
      : m_(m), o_(o), g_(g), names_(names), order_(order), reporter_(reporter), iters_(iters) {}

  // Each adds its unordered pairs to r.pairs.
  void sets(CheckResult& r) const;
  void races(CheckResult& r) const;

private:
  const Module& m_;
  const CheckOptions& o_;
  const Graph& g_;
  const Names& names_;
  const Order& order_;
  const Reporter& reporter_;
  const Iterations& iters_;
};

} // namespace nisa::interp::check_detail
