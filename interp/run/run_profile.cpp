// `nisa run --profile`: the profile of the run, its exact what-if makespans (docs/profile.md
// "What if"), and the critical path on the timeline.
#include <fmt/format.h>

#include "interp/dist/procs.h"
#include "interp/run/run.h"

namespace nisa::interp {

namespace {

// The makespan of the module re-run from its inputs with `unit` f times faster (on top of the
// run's own --cost-scale): the machine's options change for the re-run, so its decoded program
// is rebuilt, and both are put back after.
int64_t rerun_makespan(Machine& m, const SchedOptions& so, CostUnit unit, double f,
                       const std::function<void(Machine&)>& reload, const Runner& runner) {
  const CostScale saved = m.opt.cost_scale;
  m.opt.cost_scale[size_t(unit)] = saved[size_t(unit)] * f;
  m.program.reset();
  struct Restore {
    Machine& m;
    CostScale s;
    ~Restore() {
      m.opt.cost_scale = s;
      m.program.reset();
    }
  } restore{m, saved};
  reload(m);
  SchedOptions o = so;
  o.history = false, o.timeline = false, o.observer = nullptr;
  const RunResult r = runner ? runner(m, o) : run(m, o);
  return r.stats.makespan_ticks;
}

} // namespace

Profile profile_run(Machine& m, const SchedOptions& so, const RunResult& r, bool what_if,
                    const std::function<void(Machine&)>& reload, const Runner& runner) {
  Procs* mp = m.opt.procs;
  Profile p;
  if (!mp || mp->rank() == 0) p = analyse(m, r);
  // Every process takes part in the re-runs (their exchanges), also where the report is not
  // made; a unit that was never busy is skipped (its scale changes nothing, exactly).
  if (!what_if) return p;
  std::array<uint8_t, kNumCostUnits> busy{};
  if (!mp || mp->rank() == 0)
    for (const UnitTime& u : p.units)
      if (u.busy > 0)
        if (auto cu = find_cost_unit(u.unit)) busy[size_t(*cu)] = 1;
  if (mp) {
    Bytes b;
    b.put(busy);
    busy = Bytes{mp->allgather(b.b)[0]}.get<decltype(busy)>(); // rank 0's
  }
  for (const char* name : kProfileUnits) {
    const std::optional<CostUnit> cu = find_cost_unit(name);
    if (!cu) continue;
    WhatIf w;
    w.unit = name;
    w.scale = 2;
    w.makespan =
        busy[size_t(*cu)] ? rerun_makespan(m, so, *cu, 2, reload, runner) : r.stats.makespan_ticks;
    p.what_if.push_back(w);
  }
  return p;
}

void mark_critical_path(std::vector<TimelineEvent>& timeline, const Profile& p) {
  for (const PathSegment& s : p.path) {
    TimelineEvent e;
    e.kind = TimelineEvent::path;
    e.core = uint16_t(s.core_index);
    e.track = s.kind == "exec" ? 0 : s.kind == "dma" ? 1 : s.kind == "cc" ? 2 : 3;
    e.engine = Engine(s.engine_id);
    e.pc = uint32_t(s.pc);
    e.start = s.start;
    e.dur = s.end - s.start;
    timeline.push_back(e);
  }
}

} // namespace nisa::interp
