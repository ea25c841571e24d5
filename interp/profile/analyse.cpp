// The critical path and the time per unit and per source line (docs/profile.md).
#include "interp/profile/analyse.h"

#include <algorithm>
#include <fstream>
#include <map>

#include "isa/describe.h"

namespace nisa::interp {

namespace detail {

std::string ProfileInput::unit(const HistNode& n) const {
  if (n.kind == HistKind::dma) return "dma";
  if (n.kind == HistKind::cc) return "cc";
  return std::string(name_of(Engine(n.engine)));
}

SourceLine ProfileInput::line(const HistNode& n) const {
  const auto& dbg = mod.debug[n.engine];
  if (n.pc >= dbg.size()) return {mod.kernel, 0};
  const DebugLoc& d = dbg[n.pc];
  uint32_t file = d.file, line = d.line;
  // The user-level line: the instruction's own line when it is in the kernel's file (a macro
  // of the kernel's own, a .for body), else the first call site out of the library in the
  // kernel's file (a macro of an included file, such as kernels_asm/lib).
  for (int32_t f = d.frame; file != 0 && f >= 0 && size_t(f) < mod.frames.size();
       f = mod.frames[size_t(f)].parent)
    file = mod.frames[size_t(f)].file, line = mod.frames[size_t(f)].line;
  if (file != 0) file = d.file, line = d.line; // never reached the kernel's file
  return {file < mod.files.size() ? mod.files[file] : mod.kernel, line};
}

SourceLine ProfileInput::inner_line(const HistNode& n) const {
  const auto& dbg = mod.debug[n.engine];
  if (n.pc >= dbg.size()) return {mod.kernel, 0};
  const DebugLoc& d = dbg[n.pc];
  return {d.file < mod.files.size() ? mod.files[d.file] : mod.kernel, d.line};
}

std::string ProfileInput::chain(const HistNode& n) const {
  return source_of(mod, Engine(n.engine), n.pc);
}

std::string ProfileInput::sem_name(uint16_t s) const {
  return s < mod.sems.size() ? mod.sems[s].name : "s" + std::to_string(s);
}

namespace {} // namespace

std::vector<PathSegment> critical_path(ProfileInput& in) {
  const History& h = in.h;
  // The last event: the latest completion (the first recorded of equal ones).
  int64_t last = -1, end = -1;
  for (int64_t id : in.ids) {
    const HistNode& n = h.at(id);
    if (n.end <= in.makespan && n.end > end) last = id, end = n.end;
  }
  std::vector<PathSegment> segs;
  auto emit = [&](const char* kind, int64_t s, int64_t e, const HistNode& n) {
    if (e <= s) return;
    PathSegment p;
    p.start = s, p.end = e, p.kind = kind;
    p.unit = in.unit(n);
    p.rank = in.m.cores[size_t(n.core)].rank;
    p.core = in.m.cores[size_t(n.core)].core;
    p.engine = std::string(name_of(Engine(n.engine)));
    p.queue = n.kind == HistKind::exec ? -1 : n.queue;
    p.pc = n.pc;
    p.src = in.line(n);
    p.inner = in.inner_line(n);
    p.chain = in.chain(n);
    p.core_index = n.core;
    p.engine_id = n.engine;
    segs.push_back(std::move(p));
  };
  static const char* const kKind[] = {"exec", "dma", "cc"};
  int64_t t = in.makespan;
  if (last >= 0 && end < t) emit("latency", end, t, h.at(last)); // nothing recorded after it
  t = std::min(t, end);
  // Each step moves to the node whose release set this one's start (or end), so it ends.
  for (int64_t id = last; id >= 0;) {
    const HistNode& n = h.at(id);
    if (n.end_pred >= 0 && t == n.end && h.valid(n.end_pred)) { // in-order completion
      id = n.end_pred;
      continue;
    }
    in.on_path.insert(id);
    const int64_t s = std::min(n.start, t);
    if (n.kind == HistKind::dma && t > std::max(n.data_end, s)) {
      emit("latency", std::max(n.data_end, s), t, n); // the transfer's fixed latency
      t = std::max(n.data_end, s);
    }
    emit(kKind[int(n.kind)], s, t, n);
    t = s;
    if (!h.valid(n.pred)) {
      emit("latency", 0, t, n);
      break;
    }
    if (n.pred_at < t) emit("latency", std::max<int64_t>(0, n.pred_at), t, n);
    t = std::min(t, std::max<int64_t>(0, n.pred_at));
    id = n.pred;
  }
  std::reverse(segs.begin(), segs.end());
  // One segment for consecutive ones of the same instruction and kind.
  std::vector<PathSegment> out;
  for (PathSegment& p : segs) {
    if (!out.empty()) {
      PathSegment& b = out.back();
      if (b.end == p.start && b.kind == p.kind && b.rank == p.rank && b.core == p.core &&
          b.engine == p.engine && b.queue == p.queue && b.pc == p.pc) {
        b.end = p.end;
        continue;
      }
    }
    out.push_back(std::move(p));
  }
  return out;
}

namespace {

// The text of each line of each source file named (empty when unreadable).
std::string line_text(std::map<std::string, std::vector<std::string>>& files, const SourceLine& s) {
  auto it = files.find(s.file);
  if (it == files.end()) {
    std::vector<std::string> lines;
    std::ifstream f(s.file);
    for (std::string l; lines.size() < 10'000'000 && std::getline(f, l);) lines.push_back(l);
    it = files.emplace(s.file, std::move(lines)).first;
  }
  if (s.line == 0 || s.line > it->second.size()) return {};
  std::string t = it->second[s.line - 1];
  const size_t b = t.find_first_not_of(" \t");
  return b == std::string::npos ? std::string() : t.substr(b);
}

} // namespace

} // namespace detail

Profile analyse(const Machine& m, const RunResult& r) {
  Profile p;
  p.makespan = r.stats.makespan_ticks;
  p.status = r.status == RunStatus::ok         ? "ok"
             : r.status == RunStatus::deadlock ? "deadlock"
             : r.status == RunStatus::fault    ? "fault"
             : r.status == RunStatus::budget   ? "budget"
                                               : "interrupted";
  const History& h = r.history;
  p.complete = h.dropped == 0;
  detail::ProfileInput in{m, *m.mod, h, p.makespan, {}, {}};
  for (size_t l = 0; l < h.lists.size(); ++l)
    for (size_t k = 0; k < h.lists[l].size(); ++k) in.ids.push_back(hist_id(int(l), k));
  p.nodes = in.ids.size();
  if (!p.complete) return p; // a capped history has no exact path
  p.path = detail::critical_path(in);

  std::map<std::string, UnitTime> units;
  for (const char* u : kProfileUnits) units[u].unit = u;
  std::map<SourceLine, LineTime> lines, inner;
  for (const PathSegment& s : p.path) {
    UnitTime& u = units[s.unit];
    u.critical += s.end - s.start;
    if (s.kind == "latency") u.latency += s.end - s.start;
    for (auto [map, src] : {std::pair{&lines, s.src}, std::pair{&inner, s.inner}}) {
      LineTime& l = (*map)[src];
      l.src = src;
      l.critical += s.end - s.start;
    }
  }
  for (int64_t id : in.ids) {
    const HistNode& n = h.at(id);
    const int64_t busy = std::min(n.end, p.makespan) - std::min(n.start, p.makespan);
    units[in.unit(n)].busy += busy;
    for (auto [map, src] : {std::pair{&lines, in.line(n)}, std::pair{&inner, in.inner_line(n)}}) {
      LineTime& l = (*map)[src];
      l.src = src;
      l.busy += busy;
    }
  }
  for (const char* u : kProfileUnits) p.units.push_back(units[u]);
  std::map<std::string, std::vector<std::string>> files;
  auto sorted = [&](std::map<SourceLine, LineTime>& m) {
    std::vector<LineTime> v;
    for (auto& [src, l] : m) {
      l.text = detail::line_text(files, src);
      v.push_back(std::move(l));
    }
    std::stable_sort(v.begin(), v.end(), [](const LineTime& a, const LineTime& b) {
      return a.critical != b.critical ? a.critical > b.critical : a.busy > b.busy;
    });
    return v;
  };
  p.lines = sorted(lines);
  p.inner_lines = sorted(inner);
  p.stalls = detail::stalls(in);
  p.hints = detail::hints(in);
  return p;
}

} // namespace nisa::interp
