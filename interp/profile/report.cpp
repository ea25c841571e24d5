// The profile as text (`nisa run --profile`) and as JSON (--profile-json, schema nisa-profile/1,
// docs/profile.md).
#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "interp/core/target.h"
#include "interp/profile/profile.h"

namespace nisa::interp {

namespace {

double ns(int64_t t) { return ticks_to_ns(t); }
double pct(int64_t part, int64_t whole) {
  return whole > 0 ? 100.0 * double(part) / double(whole) : 0;
}

} // namespace

std::string where(const SourceLine& s) { return fmt::format("{}:{}", s.file, s.line); }

std::string profile_report(const Profile& p, size_t top) {
  std::string r = fmt::format("profile: makespan {:.1f} ns ({} ticks), status {}, {} events\n",
                              ns(p.makespan), p.makespan, p.status, p.nodes);
  if (!p.complete)
    return r + "  the history was capped (--max-steps or a smaller kernel shows the path): no "
               "critical path\n";
  r += fmt::format("critical path: {} segments\n", p.path.size());
  r += "  unit   critical ns    %  (latency ns)    busy ns\n";
  for (const UnitTime& u : p.units)
    if (u.critical || u.busy)
      r += fmt::format("  {:<5} {:>12.1f} {:>5.1f} {:>13.1f} {:>10.1f}\n", u.unit, ns(u.critical),
                       pct(u.critical, p.makespan), ns(u.latency), ns(u.busy));
  r += fmt::format("top {} lines by critical time:\n", std::min(top, p.lines.size()));
  r += "  critical ns     %     busy ns  line\n";
  for (size_t i = 0; i < p.lines.size() && i < top; ++i) {
    const LineTime& l = p.lines[i];
    r += fmt::format("  {:>11.1f} {:>5.1f} {:>11.1f}  {}  {}\n", ns(l.critical),
                     pct(l.critical, p.makespan), ns(l.busy), where(l.src), l.text);
  }
  if (p.inner_lines.size() != p.lines.size() ||
      !std::equal(p.lines.begin(), p.lines.end(), p.inner_lines.begin(),
                  [](const LineTime& a, const LineTime& b) { return a.src == b.src; })) {
    r += fmt::format("top {} instruction lines (inside macros) by critical time:\n",
                     std::min(top, p.inner_lines.size()));
    for (size_t i = 0; i < p.inner_lines.size() && i < top; ++i) {
      const LineTime& l = p.inner_lines[i];
      r += fmt::format("  {:>11.1f} {:>5.1f} {:>11.1f}  {}  {}\n", ns(l.critical),
                       pct(l.critical, p.makespan), ns(l.busy), where(l.src), l.text);
    }
  }
  if (!p.stalls.empty()) {
    r += "stalls (engine, semaphore: time waiting; lines that signal it):\n";
    for (size_t i = 0; i < p.stalls.size() && i < top; ++i) {
      const Stall& s = p.stalls[i];
      std::string by;
      for (size_t k = 0; k < s.signalled_by.size() && k < 3; ++k)
        by += (k ? ", " : "") + where(s.signalled_by[k]);
      if (s.signalled_by.size() > 3) by += fmt::format(" (+{})", s.signalled_by.size() - 3);
      r += fmt::format("  {:<5} {:<16} {:>11.1f} ns  {} times; {}\n", s.engine, s.sem, ns(s.ticks),
                       s.count, by);
    }
  }
  if (!p.hints.empty()) {
    r += "hints:\n";
    for (const Hint& h : p.hints) r += fmt::format("  [{}] {}\n", h.kind, h.message);
  }
  if (!p.what_if.empty()) {
    r += "what if (each unit 2x faster, re-simulated):\n";
    const WhatIf* best = nullptr;
    for (const WhatIf& w : p.what_if) {
      r += fmt::format("  {:<5} {:>12.1f} ns  {:+.1f}%\n", w.unit, ns(w.makespan),
                       -pct(p.makespan - w.makespan, p.makespan));
      if (!best || w.makespan < best->makespan) best = &w;
    }
    if (best && best->makespan < p.makespan)
      r += fmt::format("  a faster {} helps most: {:.1f} -> {:.1f} ns\n", best->unit,
                       ns(p.makespan), ns(best->makespan));
  }
  return r;
}

std::string profile_json(const Profile& p) {
  using nlohmann::ordered_json;
  ordered_json d;
  d["schema"] = "nisa-profile/1";
  d["status"] = p.status;
  d["complete"] = p.complete;
  d["events"] = p.nodes;
  d["makespan_ns"] = ns(p.makespan);
  d["makespan_ticks"] = p.makespan;
  ordered_json path = ordered_json::array();
  for (const PathSegment& s : p.path)
    path.push_back({{"start_ns", ns(s.start)},
                    {"end_ns", ns(s.end)},
                    {"start_ticks", s.start},
                    {"end_ticks", s.end},
                    {"kind", s.kind},
                    {"unit", s.unit},
                    {"rank", s.rank},
                    {"core", s.core},
                    {"engine", s.engine},
                    {"queue", s.queue},
                    {"pc", s.pc},
                    {"file", s.src.file},
                    {"line", s.src.line},
                    {"inner_file", s.inner.file},
                    {"inner_line", s.inner.line},
                    {"source", s.chain}});
  d["critical_path"] = std::move(path);
  ordered_json units = ordered_json::array();
  for (const UnitTime& u : p.units)
    units.push_back({{"unit", u.unit},
                     {"critical_ns", ns(u.critical)},
                     {"busy_ns", ns(u.busy)},
                     {"latency_ns", ns(u.latency)},
                     {"critical_ticks", u.critical},
                     {"busy_ticks", u.busy},
                     {"latency_ticks", u.latency}});
  d["by_unit"] = std::move(units);
  auto line_list = [](const std::vector<LineTime>& v) {
    ordered_json lines = ordered_json::array();
    for (const LineTime& l : v)
      lines.push_back({{"file", l.src.file},
                       {"line", l.src.line},
                       {"critical_ns", ns(l.critical)},
                       {"busy_ns", ns(l.busy)},
                       {"critical_ticks", l.critical},
                       {"busy_ticks", l.busy},
                       {"text", l.text}});
    return lines;
  };
  d["lines"] = line_list(p.lines);
  d["inner_lines"] = line_list(p.inner_lines);
  ordered_json stalls = ordered_json::array();
  for (const Stall& s : p.stalls) {
    ordered_json by = ordered_json::array();
    for (const SourceLine& l : s.signalled_by) by.push_back({{"file", l.file}, {"line", l.line}});
    stalls.push_back({{"engine", s.engine},
                      {"semaphore", s.sem},
                      {"stalled_ns", ns(s.ticks)},
                      {"count", s.count},
                      {"signalled_by", std::move(by)}});
  }
  d["stalls"] = std::move(stalls);
  ordered_json hints = ordered_json::array();
  for (const Hint& h : p.hints)
    hints.push_back({{"kind", h.kind},
                     {"message", h.message},
                     {"file", h.src.file},
                     {"line", h.src.line},
                     {"ns", ns(h.ticks)}});
  d["hints"] = std::move(hints);
  ordered_json wi = ordered_json::array();
  for (const WhatIf& w : p.what_if)
    wi.push_back({{"unit", w.unit},
                  {"scale", w.scale},
                  {"makespan_ns", ns(w.makespan)},
                  {"makespan_ticks", w.makespan}});
  d["what_if"] = std::move(wi);
  return d.dump(1, ' ', false, ordered_json::error_handler_t::replace) + "\n";
}

} // namespace nisa::interp
