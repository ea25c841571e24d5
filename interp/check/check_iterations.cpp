// nisa check: instructions in the order of the source (check_iterations.h).
#include "interp/check/check_iterations.h"

#include <algorithm>
#include <charconv>

namespace nisa::interp::check_detail {

const DebugLoc* Iterations::loc(Engine e, int32_t pc) const {
  const auto& d = m_.debug[size_t(e)];
  return pc >= 0 && size_t(pc) < d.size() ? &d[size_t(pc)] : nullptr;
}

// Outermost first: the place where each expansion was requested, with the frame's index (frames
// are created in expansion order, so of two iterations of one .for the earlier has the smaller
// index, whatever the step's sign), then the instruction's own place.
void Iterations::chain(Engine e, int32_t pc, std::vector<Step>& out) const {
  out.clear();
  const DebugLoc* l = loc(e, pc);
  if (!l) return;
  out.push_back({l->file, l->line, l->col, 0});
  for (int32_t f = l->frame; f >= 0 && size_t(f) < m_.frames.size();
       f = m_.frames[size_t(f)].parent) {
    const ExpansionFrame& fr = m_.frames[size_t(f)];
    out.push_back({fr.file, fr.line, fr.col, uint32_t(f)});
    if (out.size() > 4096) break; // frames form a tree; a corrupt file must not loop
  }
  std::reverse(out.begin(), out.end());
}

int Iterations::compare(Engine e1, int32_t pc1, Engine e2, int32_t pc2) const {
  std::vector<Step> a, b;
  chain(e1, pc1, a);
  chain(e2, pc2, b);
  if (a.empty() || b.empty()) return 0;
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
  return a.size() == b.size() ? 0 : a.size() < b.size() ? -1 : 1;
}

std::vector<LoopVar> Iterations::vars(Engine e, int32_t pc, bool visible) const {
  std::vector<LoopVar> out;
  const DebugLoc* l = loc(e, pc);
  if (!l) return out;
  size_t steps = 0;
  for (int32_t f = l->frame; f >= 0 && size_t(f) < m_.frames.size() && ++steps < 4096;
       f = m_.frames[size_t(f)].parent) {
    const ExpansionFrame& fr = m_.frames[size_t(f)];
    if (fr.kind == ExpansionFrame::Macro && visible) break;
    if (fr.kind != ExpansionFrame::ForIter) continue;
    const size_t eq = fr.what.find('=');
    if (eq == std::string::npos) continue;
    LoopVar v{fr.what.substr(0, eq), 0};
    const char* s = fr.what.data() + eq + 1;
    const char* end = fr.what.data() + fr.what.size();
    if (std::from_chars(s, end, v.value).ec != std::errc()) continue;
    // an inner loop's variable hides an outer one of the same name
    if (std::none_of(out.begin(), out.end(), [&](const LoopVar& o) { return o.name == v.name; }))
      out.push_back(v);
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::string Iterations::text(Engine e, int32_t pc) const {
  std::string s;
  for (const LoopVar& v : vars(e, pc, false))
    s += (s.empty() ? "" : ", ") + v.name + "=" + std::to_string(v.value);
  return s;
}

std::pair<uint32_t, uint32_t> Iterations::line_key(Engine e, int32_t pc) const {
  const DebugLoc* l = loc(e, pc);
  if (!l) return {UINT32_MAX, uint32_t(size_t(e) << 24 | uint32_t(pc & 0xffffff))};
  return {l->file, l->line};
}

} // namespace nisa::interp::check_detail
