// nisa check: the conflicts (check_conflicts.h).
#include "interp/check/check_conflicts.h"

#include <algorithm>
#include <map>
#include <set>

#include "interp/check/check_budget.h"

namespace nisa::interp::check_detail {

void Conflicts::sets(CheckResult& r) const {
  const size_t nsems = g_.nsems;
  for (size_t key = 0; key < g_.sems.size(); ++key) {
    const SemInfo& si = g_.sems[key];
    for (const SetRec& L : si.sets) {
      auto report = [&](uint32_t other, const char* what) {
        CheckPair p;
        p.a_loc = names_.loc_of(L.node), p.b_loc = names_.loc_of(other);
        p.a_who = names_.who_of(L.node), p.b_who = names_.who_of(other);
        p.a_write = p.b_write = true;
        p.region = fmt::format("semaphore {} ({} of the sem_set)", m_.sems[key % nsems].name, what);
        p.suggestion = "order the sem_set before or after it (the count it sees would depend on "
                       "the schedule)";
        r.pairs.push_back(p);
      };
      for (const SigList& l : si.lists)
        for (uint32_t n : l.nodes)
          if (g_.budget->poll(), !order_.ordered(L.node, n)) {
            report(n, "a signal unordered with");
            goto next_set;
          }
      for (const SetRec& L2 : si.sets)
        if (L2.node != L.node && !order_.ordered(L.node, L2.node)) {
          report(L2.node, "another sem_set unordered with");
          goto next_set;
        }
      for (const WaitRec& w : g_.waits)
        if (g_.budget->poll(), size_t(w.core) * nsems + w.w.sem == key) {
          std::vector<Anchor> sa;
          g_.site_anchors(w.site, sa);
          Anchor la{g_.nodes[L.node].stream, g_.nodes[L.node].pos};
          if (!order_.after(L.node, sa.data(), uint32_t(sa.size())) &&
              !order_.after(w.site, &la, 1)) {
            report(w.inst, "a wait unordered with");
            goto next_set;
          }
        }
    next_set:;
    }
  }
}

void Conflicts::races(CheckResult& r) const {
  struct Rec {
    Region g;
    uint32_t node; // where the access happens (for clocks)
    uint32_t who;  // the instruction (for reports)
  };
  // Records by start offset, and the longest one, so that the records overlapping [b0, b1)
  // are keyed in [b0 - longest, b1); records longer than kLong (hulls of dynamic accesses)
  // are kept apart so that they do not widen every search.
  static constexpr uint64_t kLong = uint64_t(1) << 16;
  struct Mem {
    std::multimap<uint64_t, Rec> recs;
    uint64_t longest = 0;
    std::vector<Rec> long_recs;
  };
  std::map<std::pair<int, int>, Mem> mems;
  // One report per pair of source lines (docs/check.md "Reports"): its instances in each
  // direction (dir 0: the line with the smaller key intended first), capped per direction.
  using LineKey = std::pair<uint32_t, uint32_t>;
  struct Lines {
    std::vector<Unordered> dir[2];
    uint64_t counts[2] = {0, 0};
  };
  static constexpr size_t kMaxInstances = 4096;
  std::map<std::pair<LineKey, LineKey>, size_t> line_pairs;
  std::vector<Lines> lines;
  std::set<std::pair<uint32_t, uint32_t>> seen; // (a who, b who)
  auto add = [&](uint32_t wx, uint32_t nx, bool w1, uint32_t wa, uint32_t na, bool w2,
                 const Region& both) {
    const Node &x = g_.nodes[wx], &y = g_.nodes[wa];
    // the order the kernel intends; the order of the walk when the source has none
    Unordered u{wx, wa, nx, na, w1, w2, both};
    if (iters_.compare(x.eng, x.pc, y.eng, y.pc) > 0) u = Unordered{wa, wx, na, nx, w2, w1, both};
    if (!seen.insert({u.a_who, u.b_who}).second) return;
    const Node &ua = g_.nodes[u.a_who], &ub = g_.nodes[u.b_who];
    const LineKey la = iters_.line_key(ua.eng, ua.pc), lb = iters_.line_key(ub.eng, ub.pc);
    const int dir = la <= lb ? 0 : 1;
    const std::pair<LineKey, LineKey> key =
        dir == 0 ? std::make_pair(la, lb) : std::make_pair(lb, la);
    auto [it, fresh] = line_pairs.try_emplace(key, lines.size());
    if (fresh) lines.emplace_back();
    Lines& l = lines[it->second];
    if (l.dir[dir].size() < kMaxInstances) l.dir[dir].push_back(std::move(u));
    ++l.counts[dir];
  };
  std::vector<Anchor> origin;
  auto ordered_before = [&](const Rec& x, uint32_t node) {
    const Node& xn = g_.nodes[x.node];
    if (xn.stream != kNoStream && xn.nanc == 0) return order_.clock(node, xn.stream) >= xn.pos;
    g_.site_anchors(x.node, origin);
    return order_.after(node, origin.data(), uint32_t(origin.size()));
  };
  for (uint32_t n : order_.topo()) {
    g_.budget->poll();
    const Node& nd = g_.nodes[n];
    for (uint32_t ai = nd.acc0; ai < nd.acc0 + nd.nacc; ++ai) {
      const Acc& a = g_.accs[ai];
      Mem& m = mems[{int(a.r.kind), int(a.r.unit)}];
      uint64_t start = a.r.b0 > m.longest ? a.r.b0 - m.longest : 0;
      auto visit = [&](Rec& x) -> bool { // true: x is superseded by this access
        g_.budget->poll();
        if (!x.g.overlaps(a.r) || x.node == n) return false;
        const bool ord = ordered_before(x, n);
        if (!ord && (x.g.write || a.r.write))
          add(x.who, x.node, x.g.write, a.who, n, a.r.write, x.g.intersect(a.r));
        // Superseded: an ordered earlier access wholly covered by this write (or a read by
        // a read) can go: any later access unordered with it is unordered with this one.
        return ord && a.r.covers(x.g) && (a.r.write || !x.g.write);
      };
      for (auto it = m.recs.lower_bound(start); it != m.recs.end() && it->first < a.r.b1;)
        it = visit(it->second) ? m.recs.erase(it) : std::next(it);
      for (size_t i = 0; i < m.long_recs.size();)
        if (visit(m.long_recs[i])) {
          m.long_recs[i] = m.long_recs.back();
          m.long_recs.pop_back();
        } else {
          ++i;
        }
      if (a.r.b1 - a.r.b0 > kLong) {
        m.long_recs.push_back(Rec{a.r, n, a.who});
      } else {
        m.recs.emplace(a.r.b0, Rec{a.r, n, a.who});
        m.longest = std::max(m.longest, a.r.b1 - a.r.b0);
      }
    }
  }
  for (const Lines& l : lines) {
    const bool fix = r.pairs.size() < o_.max_reports; // the reports printed get their fix
    r.pairs.push_back(reporter_.pair(l.dir[0], l.dir[1], l.counts, fix));
  }
}

} // namespace nisa::interp::check_detail
