// The static synchronisation proof (interp/check/check.h, docs/check.md): deadlock simulation, the
// sem_set / == checks, the race pass and the report (the walk: check_unroll.h; happens-before:
// check_order.cpp; the Checker class: check_internal.h).
#include "interp/check/check.h"

#include "interp/check/check_internal.h"
#include "isa/exec_kind.h"

namespace nisa::interp {
namespace check_detail {

// ---- checks ------------------------------------------------------------------------------------

void Checker::simulate(CheckResult& r) {
  // One schedule: every node as soon as its predecessors are done and its waits hold. With
  // counts that only grow (checked: every sem_set is ordered with the signals and waits of its
  // semaphore, every == wait cannot be overtaken), a schedule that completes shows that every
  // schedule completes (docs/check.md).
  const size_t N = g_.nodes.size();
  const size_t nsems = m_.sems.size();
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

void Checker::check_sets(CheckResult& r) {
  const size_t nsems = m_.sems.size();
  auto ordered = [&](uint32_t a, uint32_t b) {
    Anchor aa{g_.nodes[a].stream, g_.nodes[a].pos}, bb{g_.nodes[b].stream, g_.nodes[b].pos};
    return after(b, &aa, 1) || after(a, &bb, 1);
  };
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
          if (!ordered(L.node, n)) {
            report(n, "a signal unordered with");
            goto next_set;
          }
      for (const SetRec& L2 : si.sets)
        if (L2.node != L.node && !ordered(L.node, L2.node)) {
          report(L2.node, "another sem_set unordered with");
          goto next_set;
        }
      for (const WaitRec& w : g_.waits)
        if (size_t(w.core) * nsems + w.w.sem == key) {
          std::vector<Anchor> sa;
          g_.site_anchors(w.site, sa);
          Anchor la{g_.nodes[L.node].stream, g_.nodes[L.node].pos};
          if (!after(L.node, sa.data(), uint32_t(sa.size())) && !after(w.site, &la, 1)) {
            report(w.inst, "a wait unordered with");
            goto next_set;
          }
        }
    next_set:;
    }
  }
}

void Checker::check_eq_waits(CheckResult& r) {
  const size_t nsems = m_.sems.size();
  std::vector<Anchor> sa;
  for (const WaitRec& w : g_.waits) {
    if (w.w.cmp != WaitCmp::eq) continue;
    const SemInfo& si = g_.sems[size_t(w.core) * nsems + w.w.sem];
    g_.site_anchors(w.site, sa);
    uint64_t mx = max_count(si, w.site, sa, nullptr);
    if (mx > w.w.value)
      r.deadlocks.push_back(fmt::format(
          "{}: {} waits for {} == {}, but signals not ordered after it can bring the count to "
          "{}: in some schedule it passes {} and the wait never holds",
          names_.loc_of(w.inst), names_.who_of(w.inst), m_.sems[w.w.sem].name, w.w.value, mx,
          w.w.value));
  }
}

std::string Checker::region_text(const Region& g) const {
  std::string s;
  if (g.kind == MemKind::hbm) {
    s = fmt::format("hbm{} bytes [{:#x}, {:#x})",
                    o_.ranks > 1 ? fmt::format(" rank {}", g.unit) : "", g.b0, g.b1);
  } else {
    std::string who = g_.ncores > 1 ? " " + names_.core_name(g.unit) : "";
    s = fmt::format("{}{} partitions {}..{} bytes [{:#x}, {:#x})",
                    g.kind == MemKind::sbuf ? "sbuf" : "psum", who, g.p0, g.p1 - 1, g.b0, g.b1);
  }
  return s + tensors_in(m_, g);
}

std::string Checker::suggest(uint32_t a, uint32_t b) const {
  // a: the earlier access's node (may be a join), b: the later one. The wait goes on the
  // instruction that issues b (its trigger for a transfer), on a signal of a.
  const size_t nsems = m_.sems.size();
  std::vector<uint32_t> from;
  const Node& an = g_.nodes[a];
  if (an.kind == NK::join)
    for (uint32_t i = 0; i < an.nanc; ++i) {
      const Anchor& x = g_.anchors[an.anc0 + i];
      for (uint32_t n = 0; n < g_.nodes.size(); ++n)
        if (g_.nodes[n].stream == x.stream && g_.nodes[n].pos == x.pos) from.push_back(n);
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
    uint64_t mx = max_count(si, site, sa, &x);
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

void Checker::races(CheckResult& r) {
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
    if (xn.stream != kNoStream && xn.nanc == 0) return vc_[size_t(node) * S_ + xn.stream] >= xn.pos;
    g_.site_anchors(x.node, origin);
    return after(node, origin.data(), uint32_t(origin.size()));
  };
  for (uint32_t n : topo_) {
    const Node& nd = g_.nodes[n];
    for (uint32_t ai = nd.acc0; ai < nd.acc0 + nd.nacc; ++ai) {
      const Acc& a = g_.accs[ai];
      Mem& m = mems[{int(a.r.kind), int(a.r.unit)}];
      uint64_t start = a.r.b0 > m.longest ? a.r.b0 - m.longest : 0;
      auto visit = [&](Rec& x) -> bool { // true: x is superseded by this access
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
            p.region = region_text(x.g.intersect(a.r));
            if (r.pairs.size() < o_.max_reports) p.suggestion = suggest(na, nb);
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

CheckResult Checker::run() {
  CheckResult r;
  try {
    build();
    r.instructions = g_.insts;
    r.nodes = g_.nodes.size();
    r.streams = S_;
    bool ok = true;
    for (;;) {
      ++r.iterations;
      ok = topo_and_clocks();
      if (!ok) break;
      if (!derive_edges()) break;
    }
    for (const auto& b : best_)
      for (uint32_t v : b) r.sem_edges += v ? 1 : 0;
    if (!ok) {
      // a cycle of necessary orders: none of its nodes can ever run
      std::vector<uint8_t> in(g_.nodes.size(), 0);
      for (uint32_t n : topo_) in[n] = 1;
      std::set<uint32_t> streams;
      for (uint32_t n = 0; n < g_.nodes.size(); ++n)
        if (!in[n] && g_.nodes[n].stream != kNoStream && streams.insert(g_.nodes[n].stream).second)
          r.deadlocks.push_back(fmt::format("{}: {} can never issue (a cycle of waits: each "
                                            "needs a signal that comes only after it)",
                                            names_.loc_of(n), g_.stream_name[g_.nodes[n].stream]));
    } else {
      check_sets(r);
      check_eq_waits(r);
      simulate(r);
      races(r);
    }
  } catch (const Outside& e) {
    r.outside = e.what();
  }
  std::ostringstream os;
  if (!r.outside.empty()) {
    r.status = CheckStatus::outside;
    r.exit_code = kExitCheckOutside;
    os << "outside what is proved: " << r.outside << "\n";
    r.report = os.str();
    return r;
  }
  size_t shown = 0;
  for (const CheckPair& p : r.pairs) {
    if (shown++ >= o_.max_reports) break;
    os << fmt::format("unordered: {} {} ({}) and {} {} ({}) on {}\n", p.a_loc,
                      p.a_write ? "writes" : "reads", p.a_who, p.b_loc,
                      p.b_write ? "writes" : "reads", p.b_who, p.region);
    os << "  to order them: " << p.suggestion << "\n";
  }
  if (r.pairs.size() > shown) os << fmt::format("... and {} more pairs\n", r.pairs.size() - shown);
  for (const std::string& d : r.deadlocks) os << "deadlock: " << d << "\n";
  const std::string stats =
      fmt::format("{} instructions unrolled on {} core{}, {} nodes, {} streams, {} semaphore "
                  "orders, {} rounds",
                  r.instructions, g_.ncores, g_.ncores > 1 ? "s" : "", r.nodes, r.streams,
                  r.sem_edges, r.iterations);
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
  return r;
}

} // namespace check_detail

CheckResult check_module(const Module& mod, const CheckOptions& opt) {
  check_detail::Checker c(mod, opt);
  return c.run();
}

} // namespace nisa::interp
