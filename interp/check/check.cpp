// The static synchronisation proof (interp/check/check.h, docs/check.md), in its parts: the
// graph they share (check_graph.h) and its names (check_names.h); the walk that builds it
// (check_unroll.h, with check_registers.h and check_extents.h); happens-before
// (check_order.h); the conflicts (check_conflicts.h) and deadlocks (check_deadlock.h) found
// with it; the report (check_report.h).
#include "interp/check/check.h"

#include <new>

#include "interp/check/check_budget.h"
#include "interp/check/check_conflicts.h"
#include "interp/check/check_deadlock.h"
#include "interp/check/check_report.h"
#include "interp/check/check_unroll.h"

namespace nisa::interp {

namespace {

using namespace check_detail;

void prove(const Module& mod, const CheckOptions& opt, Budget& budget, CheckResult& r) {
  Graph g;
  g.budget = &budget;
  budget.attach(g);
  const Names names(mod, opt, g);
  try {
    budget.phase("unrolling the streams");
    Unroller(mod, opt, names, g).run();
    Order order(opt, g);
    r.instructions = g.insts;
    r.nodes = g.nodes.size();
    r.streams = g.streams();
    const bool ok = order.solve(r.iterations);
    r.sem_edges = order.sem_edges();
    const Deadlocks deadlocks(mod, g, names, order);
    const Iterations iters(mod);
    const Reporter reporter(mod, opt, g, names, order, iters);
    const Conflicts conflicts(mod, opt, g, names, order, reporter, iters);
    if (!ok) {
      budget.phase("reporting a cycle of waits");
      deadlocks.cycle(r);
    } else {
      budget.phase("checking the sem_sets");
      conflicts.sets(r);
      budget.phase("checking the == waits");
      deadlocks.eq_waits(r);
      budget.phase("running one schedule to look for deadlocks");
      deadlocks.simulate(r);
      budget.phase("comparing the accesses");
      conflicts.races(r);
    }
  } catch (const OutsideLimit& e) {
    r.outside = e.what();
    r.limit = true;
  } catch (const Outside& e) {
    r.outside = e.what();
  }
  budget.attach_none();
}

} // namespace

CheckResult check_module(const Module& mod, const CheckOptions& opt) {
  CheckResult r;
  Budget budget(opt);
  try {
    prove(mod, opt, budget, r);
  } catch (const std::bad_alloc&) {
    // The graph is gone: its memory is back for the message.
    throw HostError(budget.out_of_memory());
  }
  finish(r, opt, opt.lnc * opt.ranks);
  return r;
}

} // namespace nisa::interp
