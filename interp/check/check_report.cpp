// nisa check: the report (check_report.h).
#include "interp/check/check_report.h"

#include <algorithm>
#include <map>
#include <optional>
#include <sstream>

#include "interp/check/check_affine.h"
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

uint32_t Reporter::node_at(const Anchor& x) const {
  if (by_stream_.empty()) {
    by_stream_.resize(g_.streams());
    for (uint32_t n = 0; n < g_.nodes.size(); ++n)
      if (g_.nodes[n].stream != kNoStream) by_stream_[g_.nodes[n].stream].push_back(n);
  }
  const auto& v = by_stream_[x.stream];
  return x.pos >= 1 && x.pos <= v.size() ? v[x.pos - 1] : UINT32_MAX;
}

// The node whose issue a wait gates for an access at `b`: its instruction, the trigger of a
// transfer, the join of a rendezvous.
uint32_t Reporter::site_of(uint32_t b) const {
  const Node& bn = g_.nodes[b];
  if (bn.kind == NK::xfer)
    for (uint32_t p : g_.preds[b])
      if (g_.nodes[p].stream != bn.stream) return p; // the trigger
  return b;
}

namespace {

// What one instance needs: a wait on `sem` for `value` at `site`, after `from` completes.
struct Need {
  enum Kind { wait, other_core, no_signal } kind = no_signal;
  uint32_t from = 0, site = 0;
  uint16_t sem = 0;
  uint64_t value = 0;
};

} // namespace

std::string Reporter::fix(const std::vector<Unordered>& inst, std::vector<CheckFix>& fixes) const {
  const size_t nsems = g_.nsems;
  std::vector<Anchor> sa;
  auto need = [&](const Unordered& u) {
    Need r;
    std::vector<uint32_t> from;
    const Node& an = g_.nodes[u.a_node];
    if (an.kind == NK::join)
      for (uint32_t i = 0; i < an.nanc; ++i) from.push_back(node_at(g_.anchors[an.anc0 + i]));
    else
      from.push_back(u.a_node);
    r.site = site_of(u.b_node);
    const Node& bn = g_.nodes[r.site];
    r.from = from.empty() ? u.a_node : from[0];
    for (uint32_t f : from) {
      if (f == UINT32_MAX) continue;
      const Node& fn = g_.nodes[f];
      if (fn.core != bn.core || !fn.in || fn.in->signals.empty()) continue;
      const Signal& s = fn.in->signals[0];
      const SemInfo& si = g_.sems[size_t(fn.core) * nsems + s.sem];
      g_.site_anchors(r.site, sa);
      Anchor x{fn.stream, fn.pos};
      r.kind = Need::wait, r.from = f, r.sem = s.sem;
      r.value = order_.max_count(si, r.site, sa, &x) + 1;
      return r;
    }
    for (uint32_t f : from)
      if (f != UINT32_MAX && g_.nodes[f].core != bn.core) r.kind = Need::other_core, r.from = f;
    return r;
  };
  // An earlier line that signals nothing gets a semaphore of its own: the count a wait needs
  // is then how many of that line's instances its stream has completed, up to the one to wait
  // for (its stream must be the only one running the line on its core).
  std::map<uint32_t, std::vector<uint32_t>> line_counts; // stream -> count of the line at pos
  std::map<int32_t, uint32_t> stream_of_core;
  auto fresh = [&](Need& n, const Unordered& u) {
    const Node& fn = g_.nodes[u.a_node];
    if (fn.kind == NK::join || fn.stream == kNoStream || fn.core != g_.nodes[n.site].core)
      return false;
    if (stream_of_core.try_emplace(fn.core, fn.stream).first->second != fn.stream) return false;
    auto [it, made] = line_counts.try_emplace(fn.stream);
    if (made) {
      node_at({fn.stream, 1}); // builds by_stream_
      const auto lk = iters_.line_key(fn.eng, fn.pc);
      uint32_t c = 0;
      for (uint32_t x : by_stream_[fn.stream])
        it->second.push_back(c += iters_.line_key(g_.nodes[x].eng, g_.nodes[x].pc) == lk);
    }
    n.kind = Need::wait, n.from = u.a_node, n.value = it->second[fn.pos - 1];
    return true;
  };
  // Every instance's need; the wait goes on the later line, the largest count per site.
  std::map<uint32_t, uint64_t> at_site;                      // site -> count
  std::map<uint32_t, std::pair<uint32_t, uint32_t>> witness; // site -> (from, instance)
  Need first;
  bool one_sem = true, new_sem = false;
  for (size_t i = 0; i < inst.size(); ++i) {
    g_.budget->poll();
    Need n = need(inst[i]);
    if (i == 0) {
      new_sem = n.kind == Need::no_signal && fresh(n, inst[i]);
      first = n;
    } else if (new_sem && n.kind == Need::no_signal && !fresh(n, inst[i])) {
      n.kind = Need::no_signal, first.kind = Need::no_signal;
    }
    if (n.kind != Need::wait || first.kind != Need::wait) {
      if (n.kind == Need::other_core || first.kind == Need::other_core)
        return fmt::format("they run on different cores: order them with a core_barrier, a "
                           "send_recv or a collective between {} and {}",
                           names_.loc_of(inst[i].a_who), names_.loc_of(inst[i].b_who));
      return fmt::format("add a @signal(s) to {} and a @wait on it to {}",
                         names_.loc_of(inst[i].a_who), names_.loc_of(inst[i].b_who));
    }
    one_sem &= n.sem == first.sem;
    uint64_t& v = at_site[n.site];
    if (n.value >= v) v = n.value, witness[n.site] = {n.from, uint32_t(i)};
  }
  // a new semaphore's name: s_order, s_order2, ... (none the kernel has, one per report)
  std::string sem = new_sem ? "" : m_.sems[first.sem].name;
  while (new_sem && (sem.empty() || std::any_of(m_.sems.begin(), m_.sems.end(),
                                                [&](const SemDecl& d) { return d.name == sem; })))
    sem = ++new_sems_ == 1 ? "s_order" : "s_order" + std::to_string(new_sems_);
  const Node& s0 = g_.nodes[first.site];
  const std::string where = names_.loc_of(inst[0].b_who);
  auto iter = [&](uint32_t n) {
    const std::string t = iters_.text(g_.nodes[n].eng, g_.nodes[n].pc);
    return t.empty() ? std::string() : " at " + t;
  };
  // The count as an expression of the .for variables the later line can name.
  std::vector<std::string> names;
  for (const LoopVar& v : iters_.vars(s0.eng, s0.pc, true)) names.push_back(v.name);
  auto values = [&](uint32_t n, std::vector<int64_t>& x) {
    const std::vector<LoopVar> vs = iters_.vars(g_.nodes[n].eng, g_.nodes[n].pc, true);
    x.clear();
    if (vs.size() != names.size()) return false;
    for (size_t i = 0; i < vs.size(); ++i) {
      if (vs[i].name != names[i]) return false;
      x.push_back(vs[i].value);
    }
    return true;
  };
  std::vector<FitPoint> pts;
  bool same_vars = one_sem;
  for (const auto& [site, v] : at_site) {
    FitPoint p;
    same_vars &= values(site, p.x) && v <= uint64_t(INT64_MAX);
    p.v = int64_t(v);
    pts.push_back(std::move(p));
  }
  const std::optional<Affine> e = same_vars ? fit_affine(pts, names.size()) : std::nullopt;
  const uint32_t wi = witness.begin()->second.second;
  const uint32_t wsite = witness.begin()->first;
  const std::string wt = iters_.text(g_.nodes[wsite].eng, g_.nodes[wsite].pc);
  const std::string why = fmt::format(
      "{}the count {} cannot reach {} before {}{} completes", wt.empty() ? "" : "at " + wt + " ",
      sem, at_site.begin()->second, names_.loc_of(inst[wi].a_who), iter(inst[wi].a_who));
  if (!e) {
    std::string list;
    size_t shown = 0;
    for (const auto& [site, v] : at_site)
      if (shown++ < 4) list += fmt::format("{}{}{}", shown > 1 ? ", " : "", v, iter(site));
    return fmt::format("add @wait({} >= N) to {} with N per iteration: {}{} (not an affine "
                       "expression of the .for variables the line can name; {})",
                       sem, where, list, at_site.size() > 4 ? ", ..." : "", why);
  }
  // Valid in every iteration of the line, racy or not: never below 0, never above what the
  // signals not ordered after it can bring (that wait could never hold).
  bool clamp = false;
  std::string never;
  const auto lk = iters_.line_key(s0.eng, s0.pc);
  std::vector<int64_t> x;
  for (uint32_t n = 0; n < g_.nodes.size() && never.empty(); ++n) {
    const Node& nd = g_.nodes[n];
    if (nd.kind != NK::inst || nd.eng != s0.eng || iters_.line_key(nd.eng, nd.pc) != lk) continue;
    g_.budget->poll();
    if (!values(n, x)) continue;
    const int64_t want = e->at(x);
    clamp |= want < 0;
    if (want <= 0) continue;
    if (new_sem) continue; // its signals are the line's instances, all before the wait
    g_.site_anchors(n, sa);
    const uint64_t reach =
        order_.max_count(g_.sems[size_t(nd.core) * nsems + first.sem], n, sa, nullptr);
    if (uint64_t(want) > reach)
      never =
          fmt::format("{}{}: {} can reach only {} there", names_.loc_of(n), iter(n), sem, reach);
  }
  const std::string wait = fmt::format("{} >= {}", sem, affine_text(*e, names, clamp));
  if (!never.empty())
    return fmt::format("add @wait({}) to {} in the iterations that race ({}); not in every "
                       "iteration: {}",
                       wait, where, why, never);
  if (new_sem) {
    const std::string sig = names_.loc_of(inst[wi].a_who);
    fixes.push_back(CheckFix{where, wait, sig, sem});
    return fmt::format("declare `.sem {}` and add @signal({}) to {}; add @wait({}) to {} ({})", sem,
                       sem, sig, wait, where, why);
  }
  fixes.push_back(CheckFix{where, wait, "", ""});
  return fmt::format("add @wait({}) to {} ({})", wait, where, why);
}

CheckPair Reporter::pair(const std::vector<Unordered>& fwd, const std::vector<Unordered>& back,
                         const uint64_t counts[2], bool with_fix) const {
  const bool f = counts[0] >= counts[1];
  const Unordered& w = f ? fwd.front() : back.front();
  CheckPair p;
  p.a_loc = names_.loc_of(w.a_who), p.b_loc = names_.loc_of(w.b_who);
  p.a_who = names_.who_of(w.a_who), p.b_who = names_.who_of(w.b_who);
  p.a_iter = iters_.text(g_.nodes[w.a_who].eng, g_.nodes[w.a_who].pc);
  p.b_iter = iters_.text(g_.nodes[w.b_who].eng, g_.nodes[w.b_who].pc);
  p.a_write = w.a_write, p.b_write = w.b_write;
  p.region = region_text(w.region);
  p.instances = counts[0] + counts[1];
  if (!with_fix) return p;
  p.suggestion = fix(f ? fwd : back, p.fixes);
  const std::vector<Unordered>& other = f ? back : fwd;
  if (!other.empty()) p.suggestion += "; and the other way round: " + fix(other, p.fixes);
  return p;
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
    auto who = [](const std::string& w, const std::string& it) {
      return it.empty() ? w : w + ", " + it;
    };
    os << fmt::format(
        "unordered: {} {} ({}) and {} {} ({}) on {}{}\n", p.a_loc, p.a_write ? "writes" : "reads",
        who(p.a_who, p.a_iter), p.b_loc, p.b_write ? "writes" : "reads", who(p.b_who, p.b_iter),
        p.region,
        p.instances > 1 ? fmt::format("; {} unordered instances of these lines", p.instances) : "");
    if (!p.suggestion.empty()) os << "  to order them: " << p.suggestion << "\n";
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
