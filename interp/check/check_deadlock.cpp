// nisa check: the deadlocks (check_deadlock.h).
#include "interp/check/check_deadlock.h"

#include <algorithm>
#include <set>

#include "interp/check/check_budget.h"
#include "isa/exec_kind.h"

namespace nisa::interp::check_detail {

void Deadlocks::cycle(CheckResult& r) const {
  // a cycle of necessary orders: none of its nodes can ever run
  std::vector<uint8_t> in(g_.nodes.size(), 0);
  for (uint32_t n : order_.topo()) in[n] = 1;
  std::set<uint32_t> streams;
  for (uint32_t n = 0; n < g_.nodes.size(); ++n)
    if (!in[n] && g_.nodes[n].stream != kNoStream && streams.insert(g_.nodes[n].stream).second)
      r.deadlocks.push_back(fmt::format("{}: {} can never issue (a cycle of waits: each "
                                        "needs a signal that comes only after it)",
                                        names_.loc_of(n), g_.stream_name[g_.nodes[n].stream]));
}

void Deadlocks::eq_waits(CheckResult& r) const {
  const size_t nsems = g_.nsems;
  std::vector<Anchor> sa;
  for (const WaitRec& w : g_.waits) {
    g_.budget->poll();
    if (w.w.cmp != WaitCmp::eq) continue;
    const SemInfo& si = g_.sems[size_t(w.core) * nsems + w.w.sem];
    g_.site_anchors(w.site, sa);
    uint64_t mx = order_.max_count(si, w.site, sa, nullptr);
    if (mx > w.w.value)
      r.deadlocks.push_back(fmt::format(
          "{}: {} waits for {} == {}, but signals not ordered after it can bring the count to "
          "{}: in some schedule it passes {} and the wait never holds",
          names_.loc_of(w.inst), names_.who_of(w.inst), m_.sems[w.w.sem].name, w.w.value, mx,
          w.w.value));
  }
}

void Deadlocks::simulate(CheckResult& r) const {
  // One schedule: every node as soon as its predecessors are done and its waits hold. With
  // counts that only grow (checked: every sem_set is ordered with the signals and waits of its
  // semaphore, every == wait cannot be overtaken), a schedule that completes shows that every
  // schedule completes (docs/check.md).
  const size_t N = g_.nodes.size();
  const size_t nsems = g_.nsems;
  std::vector<std::vector<uint32_t>> succ(N), site_waits(N);
  std::vector<uint32_t> left(N);
  for (size_t i = 0; i < N; ++i) {
    for (uint32_t p : g_.preds[i]) succ[p].push_back(uint32_t(i));
    left[i] = uint32_t(g_.preds[i].size()) + (g_.nodes[i].incomplete ? 1 : 0);
  }
  for (size_t i = 0; i < g_.waits.size(); ++i) site_waits[g_.waits[i].site].push_back(uint32_t(i));
  std::vector<uint64_t> val(size_t(g_.ncores) * nsems);
  for (int c = 0; c < g_.ncores; ++c)
    for (size_t s = 0; s < nsems; ++s) val[size_t(c) * nsems + s] = m_.sems[s].init;
  std::vector<std::vector<uint32_t>> blocked(val.size());
  std::vector<uint8_t> done(N, 0);
  std::vector<uint32_t> q;
  for (size_t i = 0; i < N; ++i)
    if (!left[i]) q.push_back(uint32_t(i));
  auto holds = [&](uint32_t n, uint32_t* bad) {
    for (uint32_t wi : site_waits[n]) {
      const WaitRec& w = g_.waits[wi];
      uint64_t v = val[size_t(w.core) * nsems + w.w.sem];
      if (w.w.cmp == WaitCmp::ge ? v < w.w.value : v != w.w.value) {
        if (bad) *bad = wi;
        return false;
      }
    }
    return true;
  };
  while (!q.empty()) {
    g_.budget->poll();
    uint32_t n = q.back();
    q.pop_back();
    if (done[n]) continue;
    uint32_t bad = 0;
    if (!holds(n, &bad)) {
      const WaitRec& w = g_.waits[bad];
      blocked[size_t(w.core) * nsems + w.w.sem].push_back(n);
      continue;
    }
    done[n] = 1;
    const Node& x = g_.nodes[n];
    auto changed = [&](size_t key) {
      for (uint32_t b : blocked[key]) q.push_back(b);
      blocked[key].clear();
    };
    if (x.in && x.set) {
      size_t key = size_t(x.core) * nsems + size_t(x.in->ops[op::sem_set::sem].i);
      val[key] = uint32_t(x.in->ops[op::sem_set::value].i);
      changed(key);
    }
    if (x.in && x.sigs && x.kind != NK::join &&
        !(x.kind == NK::inst && (is_async_dma(*x.in) || exec_kind(*x.in) == ExecKind::collective)))
      for (const Signal& s : x.in->signals) {
        size_t key = size_t(x.core) * nsems + s.sem;
        val[key] += s.delta;
        changed(key);
      }
    for (uint32_t s : succ[n])
      if (--left[s] == 0) q.push_back(s);
  }
  // Report the first stuck node of every stream (and incomplete joins).
  std::set<uint32_t> seen_stream;
  for (uint32_t n = 0; n < N; ++n) {
    if (done[n]) continue;
    const Node& x = g_.nodes[n];
    if (x.kind == NK::join) {
      if (!x.incomplete) continue;
      r.deadlocks.push_back(fmt::format(
          "{}: '{}' on {} {} waits for {}, which never reach{} the matching one", names_.loc_of(n),
          desc(x.in->op).mnemonic, names_.core_name(x.core), name_of(x.eng), x.missing,
          x.missing.find(',') == std::string::npos ? "es" : ""));
      continue;
    }
    if (x.stream == kNoStream || seen_stream.count(x.stream)) continue;
    seen_stream.insert(x.stream);
    // only the first undone node of a stream whose predecessors are done is interesting
    bool preds_done = true;
    for (uint32_t p : g_.preds[n]) preds_done &= done[p] || g_.nodes[p].kind == NK::join;
    if (!preds_done) continue;
    std::string why;
    for (uint32_t wi : site_waits[n]) {
      const WaitRec& w = g_.waits[wi];
      uint64_t v = val[size_t(w.core) * nsems + w.w.sem];
      if (w.w.cmp == WaitCmp::ge ? v < w.w.value : v != w.w.value) {
        why =
            fmt::format("waits for {} {} {}, but the count reaches only {} once every other "
                        "engine is stuck",
                        m_.sems[w.w.sem].name, w.w.cmp == WaitCmp::ge ? ">=" : "==", w.w.value, v);
        break;
      }
    }
    if (why.empty()) continue;
    r.deadlocks.push_back(
        fmt::format("{}: {} {}", names_.loc_of(n), g_.stream_name[x.stream], why));
  }
  if (r.deadlocks.empty() && std::count(done.begin(), done.end(), 0) > 0)
    r.deadlocks.push_back("some instructions never complete");
}

} // namespace nisa::interp::check_detail
