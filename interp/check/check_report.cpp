// nisa check: the report (check_report.h).
#include "interp/check/check_report.h"

#include <sstream>

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
  p.suggestion = fixer_.fix(f ? fwd : back, p.fixes);
  const std::vector<Unordered>& other = f ? back : fwd;
  if (!other.empty()) p.suggestion += "; and the other way round: " + fixer_.fix(other, p.fixes);
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
