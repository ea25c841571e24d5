// nisa check: happens-before (check_order.h).
#include "interp/check/check_order.h"

#include <algorithm>

#include <fmt/format.h>

#include "interp/check/check_budget.h"

namespace nisa::interp::check_detail {

Order::Order(const CheckOptions&, const Graph& g) : g_(g), S_(g.streams()) {
  // The clocks and the edge lists of a round, allocated at once: within the memory limit?
  const uint64_t N = g_.nodes.size();
  g_.budget->reserve(N * S_ * 4 + N * 64,
                     fmt::format("the vector clocks ({} nodes x {} streams x 4 bytes) and the "
                                 "edge lists",
                                 N, S_));
  best_.assign(g_.waits.size(), {});
  for (size_t i = 0; i < g_.waits.size(); ++i)
    best_[i].assign(g_.sem_of(g_.waits[i]).lists.size(), 0);
}

bool Order::solve(int& rounds) {
  for (;;) {
    g_.budget->round(++rounds);
    if (!topo_and_clocks()) return false;
    if (!derive_edges()) return true;
  }
}

uint64_t Order::sem_edges() const {
  uint64_t n = 0;
  for (const auto& b : best_)
    for (uint32_t v : b) n += v ? 1 : 0;
  return n;
}

bool Order::ordered(uint32_t a, uint32_t b) const {
  Anchor aa{g_.nodes[a].stream, g_.nodes[a].pos}, bb{g_.nodes[b].stream, g_.nodes[b].pos};
  return after(b, &aa, 1) || after(a, &bb, 1);
}

bool Order::topo_and_clocks() {
  const size_t N = g_.nodes.size();
  std::vector<std::vector<uint32_t>> extra(N);
  for (size_t i = 0; i < g_.waits.size(); ++i) {
    const SemInfo& si = g_.sem_of(g_.waits[i]);
    for (size_t k = 0; k < best_[i].size(); ++k)
      if (best_[i][k]) extra[g_.waits[i].site].push_back(si.lists[k].nodes[best_[i][k] - 1]);
  }
  std::vector<uint32_t> indeg(N, 0);
  std::vector<std::vector<uint32_t>> succ(N);
  for (size_t i = 0; i < N; ++i) {
    for (uint32_t p : g_.preds[i]) succ[p].push_back(uint32_t(i));
    for (uint32_t p : extra[i]) succ[p].push_back(uint32_t(i));
    indeg[i] = uint32_t(g_.preds[i].size() + extra[i].size());
  }
  topo_.clear();
  topo_.reserve(N);
  for (size_t i = 0; i < N; ++i)
    if (!indeg[i]) topo_.push_back(uint32_t(i));
  vc_.assign(N * S_, 0);
  for (size_t h = 0; h < topo_.size(); ++h) {
    g_.budget->poll();
    uint32_t n = topo_[h];
    uint32_t* v = &vc_[size_t(n) * S_];
    auto join = [&](uint32_t p) {
      const uint32_t* u = &vc_[size_t(p) * S_];
      for (uint32_t s = 0; s < S_; ++s) v[s] = std::max(v[s], u[s]);
    };
    for (uint32_t p : g_.preds[n]) join(p);
    for (uint32_t p : extra[n]) join(p);
    if (g_.nodes[n].stream != kNoStream) v[g_.nodes[n].stream] = g_.nodes[n].pos;
    for (uint32_t s : succ[n])
      if (--indeg[s] == 0) topo_.push_back(s);
  }
  return topo_.size() == N;
}

uint64_t Order::max_count(const SemInfo& si, uint32_t site, const std::vector<Anchor>& sa,
                          const Anchor* x) const {
  // per list: how many signals may have completed (not after the site, not after x)
  uint64_t best = 0;
  std::vector<size_t> cut(si.lists.size());
  for (size_t k = 0; k < si.lists.size(); ++k) {
    const SigList& l = si.lists[k];
    auto first_after = [&](auto pred) {
      size_t lo = 0, hi = l.nodes.size();
      while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (pred(l.nodes[mid]))
          hi = mid;
        else
          lo = mid + 1;
      }
      return lo;
    };
    size_t c = first_after([&](uint32_t n) { return after(n, sa.data(), uint32_t(sa.size())); });
    if (x) c = std::min(c, first_after([&](uint32_t n) { return after(n, x, 1); }));
    cut[k] = c;
  }
  const uint32_t* sv = &vc_[size_t(site) * S_];
  bool init_ok = true;
  for (const SetRec& L : si.sets)
    if (sv[g_.nodes[L.node].stream] >= g_.nodes[L.node].pos) init_ok = false;
  if (init_ok) {
    uint64_t v = si.init;
    for (size_t k = 0; k < si.lists.size(); ++k) v += si.lists[k].prefix[cut[k]];
    best = std::max(best, v);
  }
  for (const SetRec& L : si.sets) {
    if (after(L.node, sa.data(), uint32_t(sa.size()))) continue;
    if (x && after(L.node, x, 1)) continue;
    const uint32_t* lv = &vc_[size_t(L.node) * S_];
    uint64_t v = L.value;
    for (size_t k = 0; k < si.lists.size(); ++k) {
      const SigList& l = si.lists[k];
      size_t low =
          size_t(std::upper_bound(l.pos.begin(), l.pos.end(), lv[l.stream]) - l.pos.begin());
      if (cut[k] > low) v += l.prefix[cut[k]] - l.prefix[low];
    }
    best = std::max(best, v);
  }
  return best;
}

bool Order::derive_edges() {
  bool changed = false;
  std::vector<Anchor> sa;
  for (size_t i = 0; i < g_.waits.size(); ++i) {
    g_.budget->poll();
    const WaitRec& w = g_.waits[i];
    const SemInfo& si = g_.sem_of(w);
    if (si.lists.empty() || w.w.value == 0) continue;
    g_.site_anchors(w.site, sa);
    for (size_t k = 0; k < si.lists.size(); ++k) {
      const SigList& l = si.lists[k];
      // largest j (0-based) with max_count(without signal j) < value; monotone in j
      size_t lo = best_[i][k], hi = l.nodes.size(); // candidates j in [lo, hi)
      // find the first j in [lo, hi) whose count reaches the value
      size_t a = lo, b = hi;
      while (a < b) {
        g_.budget->poll();
        size_t mid = (a + b) / 2;
        Anchor x{l.stream, l.pos[mid]};
        if (max_count(si, w.site, sa, &x) >= w.w.value)
          b = mid;
        else
          a = mid + 1;
      }
      // signals [0, a) are each necessary: the latest is a - 1
      if (a > best_[i][k]) {
        best_[i][k] = uint32_t(a);
        changed = true;
      }
    }
  }
  return changed;
}

} // namespace nisa::interp::check_detail
