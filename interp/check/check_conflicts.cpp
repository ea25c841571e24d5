// nisa check: the conflicts (check_conflicts.h).
#include "interp/check/check_conflicts.h"

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
  std::set<std::pair<uint32_t, uint32_t>> seen;
  std::set<std::string> seen_inst;
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
        if (!ord && (x.g.write || a.r.write)) {
          if (seen.insert({x.who, a.who}).second &&
              seen_inst
                  .insert(names_.loc_of(x.who) + names_.who_of(x.who) + "|" + names_.loc_of(a.who) +
                          names_.who_of(a.who))
                  .second) {
            // Report in source order: the earlier line is taken as the producer, the wait
            // suggested goes on the later one.
            uint32_t ua = x.who, ub = a.who, na = x.node, nb = n;
            bool wa = x.g.write, wb = a.r.write;
            if (names_.src_key(ub) < names_.src_key(ua))
              std::swap(ua, ub), std::swap(na, nb), std::swap(wa, wb);
            CheckPair p;
            p.a_loc = names_.loc_of(ua), p.b_loc = names_.loc_of(ub);
            p.a_who = names_.who_of(ua), p.b_who = names_.who_of(ub);
            p.a_write = wa, p.b_write = wb;
            p.region = reporter_.region_text(x.g.intersect(a.r));
            if (r.pairs.size() < o_.max_reports) p.suggestion = reporter_.suggest(na, nb);
            r.pairs.push_back(std::move(p));
          }
        }
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
}

} // namespace nisa::interp::check_detail
