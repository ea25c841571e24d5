// The static synchronisation proof (interp/check/check.h, docs/check.md), in its parts: the
// graph they share (check_graph.h) and its names (check_names.h); the walk that builds it
// (check_unroll.h, with check_registers.h and check_extents.h); happens-before
// (check_order.h); the conflicts (check_conflicts.h) and deadlocks (check_deadlock.h) found
// with it; the report (check_report.h).
#include "interp/check/check.h"

#include "interp/check/check_conflicts.h"
#include "interp/check/check_deadlock.h"
#include "interp/check/check_report.h"
#include "interp/check/check_unroll.h"

namespace nisa::interp {

CheckResult check_module(const Module& mod, const CheckOptions& opt) {
  using namespace check_detail;
  CheckResult r;
  Graph g;
  const Names names(mod, opt, g);
  try {
    Unroller(mod, opt, names, g).run();
    Order order(opt, g);
    r.instructions = g.insts;
    r.nodes = g.nodes.size();
    r.streams = g.streams();
    const bool ok = order.solve(r.iterations);
    r.sem_edges = order.sem_edges();
    const Deadlocks deadlocks(mod, g, names, order);
    const Reporter reporter(mod, opt, g, names, order);
    const Conflicts conflicts(mod, opt, g, names, order, reporter);
    if (!ok) {
      deadlocks.cycle(r);
    } else {
      conflicts.sets(r);
      deadlocks.eq_waits(r);
      deadlocks.simulate(r);
      conflicts.races(r);
    }
  } catch (const Outside& e) {
    r.outside = e.what();
  }
  finish(r, opt, g.ncores);
  return r;
}

} // namespace nisa::interp
