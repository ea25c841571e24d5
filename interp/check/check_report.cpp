// nisa check: the report (check_report.h).
#include "interp/check/check_report.h"

#include <sstream>

#include "interp/check/check_budget.h"

namespace nisa::interp::check_detail {

std::string Reporter::region_text(const Region& x) const {
  std::string s;
  if (x.kind == MemKind::hbm) {
    s = fmt::format("hbm{} bytes [{:#x}, {:#x})",
                    o_.ranks > 1 ? fmt::format(" rank {}", x.unit) : "", x.b0, x.b1);
  } else {
    std::string who = g_.ncores > 1 ? " " + names_.core_name(x.unit) : "";
    s = fmt::format("{}{} partitions {}..{} bytes [{:#x}, {:#x})",
                    x.kind == MemKind::sbuf ? "sbuf" : "psum", who, x.p0, x.p1 - 1, x.b0, x.b1);
  }
  return s + tensors_in(m_, x);
}

std::string Reporter::suggest(uint32_t a, uint32_t b) const {
  // a: the earlier access's node (may be a join), b: the later one. The wait goes on the
  // instruction that issues b (its trigger for a transfer), on a signal of a.
  const size_t nsems = g_.nsems;
  std::vector<uint32_t> from;
  const Node& an = g_.nodes[a];
  if (an.kind == NK::join)
    for (uint32_t i = 0; i < an.nanc; ++i) {
      const Anchor& x = g_.anchors[an.anc0 + i];
      for (uint32_t n = 0; n < g_.nodes.size(); ++n)
        if (g_.budget->poll(), g_.nodes[n].stream == x.stream && g_.nodes[n].pos == x.pos)
          from.push_back(n);
    }
  else
    from.push_back(a);
  const Node& bn = g_.nodes[b];
  uint32_t site = b;
  std::string where = names_.loc_of(b);
  if (bn.kind == NK::xfer)
    for (uint32_t p : g_.preds[b])
      if (g_.nodes[p].stream != bn.stream) site = p; // the trigger
  if (bn.kind == NK::join) site = b;
  for (uint32_t f : from) {
    const Node& fn = g_.nodes[f];
    if (fn.core != bn.core || !fn.in) continue;
    if (fn.in->signals.empty()) continue;
    const Signal& s = fn.in->signals[0];
    const SemInfo& si = g_.sems[size_t(fn.core) * nsems + s.sem];
    std::vector<Anchor> sa;
    g_.site_anchors(site, sa);
    Anchor x{fn.stream, fn.pos};
    uint64_t mx = order_.max_count(si, site, sa, &x);
    return fmt::format("add @wait({} >= {}) to {} (the count {} cannot reach before {} "
                       "completes)",
                       m_.sems[s.sem].name, mx + 1, where, m_.sems[s.sem].name, names_.loc_of(f));
  }
  for (uint32_t f : from)
    if (g_.nodes[f].core != bn.core)
      return fmt::format("they run on different cores: order them with a core_barrier, a "
                         "send_recv or a collective between {} and {}",
                         names_.loc_of(f), where);
  return fmt::format("add a @signal(s) to {} and a @wait on it to {}", names_.loc_of(from[0]),
                     where);
}

void finish(CheckResult& r, const CheckOptions& o, int ncores) {
  std::ostringstream os;
  if (!r.outside.empty()) {
    r.status = CheckStatus::outside;
    r.exit_code = kExitCheckOutside;
    os << "outside what is proved: " << r.outside << "\n";
    r.report = os.str();
    return;
  }
  size_t shown = 0;
  for (const CheckPair& p : r.pairs) {
    if (shown++ >= o.max_reports) break;
    os << fmt::format("unordered: {} {} ({}) and {} {} ({}) on {}\n", p.a_loc,
                      p.a_write ? "writes" : "reads", p.a_who, p.b_loc,
                      p.b_write ? "writes" : "reads", p.b_who, p.region);
    os << "  to order them: " << p.suggestion << "\n";
  }
  if (r.pairs.size() > shown) os << fmt::format("... and {} more pairs\n", r.pairs.size() - shown);
  for (const std::string& d : r.deadlocks) os << "deadlock: " << d << "\n";
  const std::string stats = fmt::format(
      "{} instructions unrolled on {} core{}, {} nodes, {} streams, {} semaphore "
      "orders, {} rounds",
      r.instructions, ncores, ncores > 1 ? "s" : "", r.nodes, r.streams, r.sem_edges, r.iterations);
  if (!r.deadlocks.empty()) {
    r.status = CheckStatus::deadlock;
    r.exit_code = 2;
  } else if (!r.pairs.empty()) {
    r.status = CheckStatus::races;
    r.exit_code = 4;
  }
  if (r.status == CheckStatus::proved)
    os << "proved: every conflicting access is ordered and no schedule deadlocks (" << stats
       << ")\n";
  else
    os << fmt::format("not proved: {} unordered pair{}, {} deadlock report{} ({})\n",
                      r.pairs.size(), r.pairs.size() == 1 ? "" : "s", r.deadlocks.size(),
                      r.deadlocks.size() == 1 ? "" : "s", stats);
  r.report = os.str();
}

} // namespace nisa::interp::check_detail
