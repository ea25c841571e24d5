#include "interp/observe/stats_report.h"

#include <fmt/format.h>

#include "interp/core/machine.h"
#include "interp/core/target.h"

namespace nisa::interp {

uint64_t Stats::total_insts() const {
  uint64_t n = 0;
  for (const CoreStats& c : cores)
    for (const EngineStats& e : c.eng) n += e.insts;
  return n;
}

namespace {
std::string core_label(const Machine& m, size_t i) {
  const CoreSlot& c = m.cores[i];
  return fmt::format("rank {} core {}", c.rank, c.core);
}
} // namespace

void print_stats(std::ostream& os, const Machine& m, const Stats& s) {
  os << fmt::format("target {}  ranks {}  lnc {}  (1 tick = 1/{} MHz; times in ns)\n", m.tp->name,
                    m.opt.ranks, m.opt.lnc, kTickMHz);
  if (!is_identity(m.opt.cost_scale))
    os << "cost scale (what-if, durations divided by): " << cost_scale_text(m.opt.cost_scale)
       << "\n";
  for (size_t i = 0; i < s.cores.size(); ++i) {
    const CoreStats& c = s.cores[i];
    os << fmt::format("{}:\n  {:<6}{:>10}{:>14}{:>14}{:>16}{:>8}\n", core_label(m, i), "engine",
                      "insts", "busy ns", "cycles", "sem-wait ns", "MHz");
    for (int e = 0; e < kNumEngines; ++e) {
      const EngineStats& es = c.eng[e];
      if (!es.insts && !es.wait_ticks) continue;
      os << fmt::format("  {:<6}{:>10}{:>14.1f}{:>14}{:>16.1f}{:>8}\n", name_of(Engine(e)),
                        es.insts, ticks_to_ns(es.busy_ticks), es.cycles, ticks_to_ns(es.wait_ticks),
                        m.tp->clock_mhz[e]);
    }
    bool any = false;
    for (int q = 0; q < kNumDmaQueues; ++q) {
      const QueueStats& qs = c.queue[q];
      if (!qs.transfers) continue;
      if (!any)
        os << fmt::format("  {:<6}{:>10}{:>14}{:>14}\n", "queue", "transfers", "bytes", "busy ns");
      any = true;
      os << fmt::format("  q{:<5}{:>10}{:>14}{:>14.1f}\n", q, qs.transfers, qs.bytes,
                        ticks_to_ns(qs.busy_ticks));
    }
    any = false;
    for (int ch = 0; ch < kNumCcChannels; ++ch) {
      const ChanStats& cs = c.chan[ch];
      if (!cs.transfers) continue;
      if (!any)
        os << fmt::format("  {:<6}{:>10}{:>14}{:>14}\n", "cc ch", "transfers", "link bytes",
                          "busy ns");
      any = true;
      os << fmt::format("  ch{:<4}{:>10}{:>14}{:>14.1f}\n", ch, cs.transfers, cs.bytes,
                        ticks_to_ns(cs.busy_ticks));
    }
  }
  os << fmt::format("instructions {}  makespan {:.1f} ns  host wall time {:.3f} ms\n",
                    s.total_insts(), ticks_to_ns(s.makespan_ticks), s.wall_seconds * 1e3);
}

} // namespace nisa::interp
