// nisa check: the suggested wait (check_fix.h).
#include "interp/check/check_fix.h"

#include <algorithm>
#include <fmt/format.h>
#include <optional>

#include "interp/check/check_budget.h"

namespace nisa::interp::check_detail {

uint32_t Fixer::node_at(const Anchor& x) {
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
uint32_t Fixer::site_of(uint32_t b) const {
  const Node& bn = g_.nodes[b];
  if (bn.kind == NK::xfer)
    for (uint32_t p : g_.preds[b])
      if (g_.nodes[p].stream != bn.stream) return p; // the trigger
  return b;
}

std::string Fixer::at(uint32_t n) const {
  const std::string t = iters_.text(g_.nodes[n].eng, g_.nodes[n].pc);
  return t.empty() ? std::string() : " at " + t;
}

// The smallest count of a semaphore the earlier access signals that the later one's site cannot
// see before the earlier access completes.
Fixer::Need Fixer::need(const Unordered& u) {
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
  std::vector<Anchor> sa;
  for (uint32_t f : from) {
    if (f == UINT32_MAX) continue;
    const Node& fn = g_.nodes[f];
    if (fn.core != bn.core || !fn.in || fn.in->signals.empty()) continue;
    const Signal& s = fn.in->signals[0];
    const SemInfo& si = g_.sems[size_t(fn.core) * g_.nsems + s.sem];
    g_.site_anchors(r.site, sa);
    Anchor x{fn.stream, fn.pos};
    r.kind = Need::wait, r.from = f, r.sem = s.sem;
    r.value = order_.max_count(si, r.site, sa, &x) + 1;
    return r;
  }
  for (uint32_t f : from)
    if (f != UINT32_MAX && g_.nodes[f].core != bn.core) r.kind = Need::other_core, r.from = f;
  return r;
}

// An earlier line that signals nothing gets a semaphore of its own: the count a wait needs is
// how many of that line's instances its stream has completed up to the one to wait for (that
// stream must be the only one running the line on its core).
bool Fixer::needs_new_sem(Need& n, const Unordered& u) {
  const Node& fn = g_.nodes[u.a_node];
  if (fn.kind == NK::join || fn.stream == kNoStream || fn.core != g_.nodes[n.site].core)
    return false;
  if (stream_of_core_.try_emplace(fn.core, fn.stream).first->second != fn.stream) return false;
  auto [it, made] = line_counts_.try_emplace(fn.stream);
  if (made) {
    node_at({fn.stream, 1}); // builds by_stream_
    const auto lk = iters_.line_key(fn.eng, fn.pc);
    uint32_t c = 0;
    for (uint32_t x : by_stream_[fn.stream])
      it->second.push_back(c += iters_.line_key(g_.nodes[x].eng, g_.nodes[x].pc) == lk);
  }
  n.kind = Need::wait, n.from = u.a_node, n.value = it->second[fn.pos - 1];
  return true;
}

Fixer::Needs Fixer::collect(const std::vector<Unordered>& inst) {
  Needs r;
  line_counts_.clear(), stream_of_core_.clear();
  for (size_t i = 0; i < inst.size(); ++i) {
    g_.budget->poll();
    Need n = need(inst[i]);
    if (i == 0)
      r.new_sem = n.kind == Need::no_signal && needs_new_sem(n, inst[i]);
    else if (r.new_sem && n.kind == Need::no_signal && !needs_new_sem(n, inst[i]))
      r.first.kind = Need::no_signal;
    if (i == 0) r.first = n;
    if (n.kind != Need::wait || r.first.kind != Need::wait) {
      const bool cores = n.kind == Need::other_core || r.first.kind == Need::other_core;
      r.refusal = cores ? fmt::format("they run on different cores: order them with a "
                                      "core_barrier, a send_recv or a collective between {} and {}",
                                      names_.loc_of(inst[i].a_who), names_.loc_of(inst[i].b_who))
                        : fmt::format("add a @signal(s) to {} and a @wait on it to {}",
                                      names_.loc_of(inst[i].a_who), names_.loc_of(inst[i].b_who));
      return r;
    }
    r.one_sem &= n.sem == r.first.sem;
    uint64_t& v = r.at_site[n.site];
    if (n.value >= v) v = n.value, r.witness[n.site] = uint32_t(i);
  }
  return r;
}

// s_order, s_order2, ...: a name the kernel does not have, one per report.
std::string Fixer::new_sem_name() {
  std::string s;
  while (s.empty() ||
         std::any_of(m_.sems.begin(), m_.sems.end(), [&](const SemDecl& d) { return d.name == s; }))
    s = ++new_sems_ == 1 ? "s_order" : "s_order" + std::to_string(new_sems_);
  return s;
}

bool Fixer::values(uint32_t n, const std::vector<std::string>& names,
                   std::vector<int64_t>& x) const {
  const std::vector<LoopVar> vs = iters_.vars(g_.nodes[n].eng, g_.nodes[n].pc, true);
  x.clear();
  if (vs.size() != names.size()) return false;
  for (size_t i = 0; i < vs.size(); ++i) {
    if (vs[i].name != names[i]) return false;
    x.push_back(vs[i].value);
  }
  return true;
}

// Valid in every iteration of the line, racy or not: never below 0, never above what the
// signals not ordered after it can bring (that wait could never hold).
std::string Fixer::never_holds(const Affine& e, const Needs& nd,
                               const std::vector<std::string>& names, const std::string& sem,
                               bool& clamp) const {
  const Node& s0 = g_.nodes[nd.first.site];
  const auto lk = iters_.line_key(s0.eng, s0.pc);
  std::vector<int64_t> x;
  std::vector<Anchor> sa;
  for (uint32_t n = 0; n < g_.nodes.size(); ++n) {
    const Node& nn = g_.nodes[n];
    if (nn.kind != NK::inst || nn.eng != s0.eng || iters_.line_key(nn.eng, nn.pc) != lk) continue;
    g_.budget->poll();
    if (!values(n, names, x)) continue;
    const int64_t want = e.at(x);
    clamp |= want < 0;
    if (want <= 0 || nd.new_sem) continue; // a new one: its signals all come before the wait
    g_.site_anchors(n, sa);
    const uint64_t reach =
        order_.max_count(g_.sems[size_t(nn.core) * g_.nsems + nd.first.sem], n, sa, nullptr);
    if (uint64_t(want) > reach)
      return fmt::format("{}{}: {} can reach only {} there", names_.loc_of(n), at(n), sem, reach);
  }
  return {};
}

std::string Fixer::fix(const std::vector<Unordered>& inst, std::vector<CheckFix>& fixes) {
  const Needs nd = collect(inst);
  if (!nd.refusal.empty()) return nd.refusal;
  const std::string sem = nd.new_sem ? new_sem_name() : m_.sems[nd.first.sem].name;
  const Node& s0 = g_.nodes[nd.first.site];
  const std::string where = names_.loc_of(inst[0].b_who);
  // The count as an expression of the .for variables the later line can name.
  std::vector<std::string> names;
  for (const LoopVar& v : iters_.vars(s0.eng, s0.pc, true)) names.push_back(v.name);
  std::vector<FitPoint> pts;
  bool fits = nd.one_sem;
  for (const auto& [site, v] : nd.at_site) {
    FitPoint p;
    fits &= values(site, names, p.x) && v <= uint64_t(INT64_MAX);
    p.v = int64_t(v);
    pts.push_back(std::move(p));
  }
  const std::optional<Affine> e = fits ? fit_affine(pts, names.size()) : std::nullopt;
  const auto [wsite, wi] = *nd.witness.begin();
  const std::string wt = iters_.text(g_.nodes[wsite].eng, g_.nodes[wsite].pc);
  const std::string why = fmt::format(
      "{}the count {} cannot reach {} before {}{} completes", wt.empty() ? "" : "at " + wt + " ",
      sem, nd.at_site.begin()->second, names_.loc_of(inst[wi].a_who), at(inst[wi].a_who));
  if (!e) {
    std::string list;
    size_t shown = 0;
    for (const auto& [site, v] : nd.at_site)
      if (shown++ < 4) list += fmt::format("{}{}{}", shown > 1 ? ", " : "", v, at(site));
    return fmt::format("add @wait({} >= N) to {} with N per iteration: {}{} (not an affine "
                       "expression of the .for variables the line can name; {})",
                       sem, where, list, nd.at_site.size() > 4 ? ", ..." : "", why);
  }
  bool clamp = false;
  const std::string never = never_holds(*e, nd, names, sem, clamp);
  const std::string wait = fmt::format("{} >= {}", sem, affine_text(*e, names, clamp));
  if (!never.empty())
    return fmt::format("add @wait({}) to {} in the iterations that race ({}); not in every "
                       "iteration: {}",
                       wait, where, why, never);
  if (nd.new_sem) {
    const std::string sig = names_.loc_of(inst[wi].a_who);
    fixes.push_back(CheckFix{where, wait, sig, sem});
    return fmt::format("declare `.sem {}` and add @signal({}) to {}; add @wait({}) to {} ({})", sem,
                       sem, sig, wait, where, why);
  }
  fixes.push_back(CheckFix{where, wait, "", ""});
  return fmt::format("add @wait({}) to {} ({})", wait, where, why);
}

} // namespace nisa::interp::check_detail
