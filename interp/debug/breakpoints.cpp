// Breakpoints, watchpoints and their conditions.
#include <algorithm>

#include <fmt/format.h>

#include "interp/debug/internal.h"

namespace nisa::interp::debug {

int64_t eval_term(const Module& mod, const Machine& m, const std::string& t, const StepEvent& ev) {
  if (is_number(t)) return to_int(t, "condition: number");
  if (t == "$time") return int64_t(ticks_to_ns(ev.time));
  if (t == "$core") return ev.core;
  if (t == "$pc") return ev.pc;
  size_t dot = t.find('.');
  std::string eng = dot == std::string::npos ? std::string(name_of(ev.engine)) : t.substr(0, dot);
  std::string reg = dot == std::string::npos ? t : t.substr(dot + 1);
  int e = agent_index(eng);
  if (e >= 0 && e < kNumEngines)
    if (int r = reg_index(reg, "register index"); r >= 0)
      return m.cores[size_t(ev.core)].st.regs[e][r];
  for (size_t s = 0; s < mod.sems.size(); ++s)
    if (mod.sems[s].name == t) return m.cores[size_t(ev.core)].st.sems[s];
  throw Error(fmt::format("condition: unknown term '{}' (a number, ENGINE.rN, rN, a semaphore, "
                          "$time, $core or $pc)",
                          t));
}

bool eval_cond(const Module& mod, const Machine& m, const std::string& cond, const StepEvent& ev) {
  static const char* ops[] = {"==", "!=", "<=", ">=", "<", ">"};
  for (const char* op : ops) {
    size_t k = cond.find(op);
    if (k == std::string::npos) continue;
    int64_t a = eval_term(mod, m, trim(cond.substr(0, k)), ev);
    int64_t b = eval_term(mod, m, trim(cond.substr(k + std::string(op).size())), ev);
    std::string o = op;
    return o == "=="   ? a == b
           : o == "!=" ? a != b
           : o == "<=" ? a <= b
           : o == ">=" ? a >= b
           : o == "<"  ? a < b
                       : a > b;
  }
  throw Error(fmt::format("condition '{}': expected LHS OP RHS (OP: == != < <= > >=)", cond));
}

std::optional<BreakpointHit> Breakpoints::check(const StepEvent& ev) {
  if (ev.dma_queue >= 0) return std::nullopt;
  for (size_t i = 0; i < bps_.size(); ++i) {
    Entry& b = bps_[i];
    if (!b.info.enabled) continue;
    bool hit = b.info.kind == BreakpointInfo::line
                   ? loc_matches(mod_, debug_loc(mod_, ev.engine, ev.pc), b.file, b.line)
               : b.info.kind == BreakpointInfo::inst
                   ? std::find(b.insts.begin(), b.insts.end(), std::pair{ev.engine, ev.pc}) !=
                         b.insts.end()
                   : false;
    if (!hit) continue;
    BreakpointHit h{b.info.id, b.info.temporary, b.info.what, ""};
    if (!b.cond.empty()) {
      try {
        if (!eval_cond(mod_, m_, b.cond, ev)) continue;
      } catch (const Error& e) {
        h.cond_error = e.what();
      }
    }
    ++b.info.hits;
    if (b.info.temporary) bps_.erase(bps_.begin() + long(i));
    return h;
  }
  return std::nullopt;
}

std::vector<WatchHit> Breakpoints::check_watches(const std::vector<Region>& regions,
                                                 const StepEvent* by) {
  std::vector<WatchHit> hits;
  for (Entry& b : bps_) {
    bool write = b.info.kind == BreakpointInfo::watch;
    if (!b.info.enabled || (!write && b.info.kind != BreakpointInfo::rwatch)) continue;
    bool hit = false;
    for (const Region& r : regions)
      if (r.write == write)
        for (const Region& w : b.regions) hit |= r.overlaps(w);
    if (!hit) continue;
    ++b.info.hits;
    WatchHit h;
    h.id = b.info.id;
    h.read = !write;
    h.what = b.info.what;
    h.by = by ? *by : StepEvent{};
    h.tensor = b.slice->tensor;
    h.elements = b.slice->elems();
    if (write) {
      std::vector<uint8_t> now = read_slice(m_, *b.slice, b.core);
      size_t w = size_t(dtype_bytes(h.tensor->dtype)), k = 0;
      for_each_index(*b.slice, [&](const std::vector<int64_t>& idx) {
        auto old = b.snapshot.begin() + long(k * w), cur = now.begin() + long(k * w);
        ++k;
        if (std::equal(cur, cur + long(w), old)) return;
        if (h.changed++ < 8)
          h.changes.push_back({idx, std::vector<uint8_t>(old, old + long(w)),
                               std::vector<uint8_t>(cur, cur + long(w))});
      });
      b.snapshot = std::move(now);
    }
    hits.push_back(std::move(h));
  }
  return hits;
}

void Breakpoints::snapshot() {
  for (Entry& b : bps_)
    if (b.slice) b.snapshot = read_slice(m_, *b.slice, b.core);
}

bool Breakpoints::any_watch() const {
  return std::any_of(bps_.begin(), bps_.end(), [](const Entry& b) {
    return b.info.enabled &&
           (b.info.kind == BreakpointInfo::watch || b.info.kind == BreakpointInfo::rwatch);
  });
}

BreakpointInfo Breakpoints::push(Entry b) {
  if (!b.cond.empty()) {
    b.info.what += " if " + b.cond;
    StepEvent probe;
    probe.engine = b.engine;
    eval_cond(mod_, m_, b.cond, probe); // reject a bad condition now
  }
  b.info.id = next_id_++;
  bps_.push_back(std::move(b));
  return bps_.back().info;
}

BreakpointInfo Breakpoints::add_line(int file, int64_t line, const std::string& cond,
                                     bool temporary) {
  if (file < 0 || size_t(file) >= mod_.files.size()) throw Error("break: no such source file");
  Entry b;
  b.info.temporary = temporary;
  b.info.kind = BreakpointInfo::line;
  b.cond = cond;
  b.file = file;
  b.line = line;
  size_t count = 0;
  for (int e = 0; e < kNumEngines; ++e)
    for (size_t pc = 0; pc < mod_.streams[e].size(); ++pc)
      count += loc_matches(mod_, debug_loc(mod_, Engine(e), int64_t(pc)), file, line);
  if (!count)
    throw Error(fmt::format("break: no instruction comes from line {} of {}", line,
                            mod_.files[size_t(file)]));
  b.info.what = fmt::format("{}:{}", basename_of(mod_.files[size_t(file)]), line);
  b.info.instructions = count;
  return push(std::move(b));
}

BreakpointInfo Breakpoints::add(const std::string& spec, const std::string& cond, bool temporary) {
  if (spec.empty()) throw Error("break: expected FILE:LINE, LINE, LABEL or ENGINE:INDEX");
  size_t colon = spec.rfind(':');
  int eng = colon == std::string::npos ? -1 : agent_index(spec.substr(0, colon));
  if (eng >= 0 && eng < kNumEngines) {
    Entry b;
    b.info.temporary = temporary;
    b.cond = cond;
    b.info.kind = BreakpointInfo::inst;
    b.engine = Engine(eng);
    b.line = to_int(spec.substr(colon + 1), "break: instruction index", 0);
    if (b.line < 0 || size_t(b.line) >= mod_.streams[eng].size())
      throw Error(fmt::format("break: {} has {} instructions", name_of(b.engine),
                              mod_.streams[eng].size()));
    b.insts.emplace_back(b.engine, b.line);
    const DebugLoc* d = debug_loc(mod_, b.engine, b.line);
    b.info.what =
        fmt::format("{}[{}]{}", name_of(b.engine), b.line,
                    d ? fmt::format(" at {}:{}", basename_of(mod_.files[d->file]), d->line) : "");
    b.info.instructions = 1;
    return push(std::move(b));
  }
  if (colon != std::string::npos || is_number(spec)) {
    int file = 0;
    if (colon != std::string::npos) {
      std::string fname = spec.substr(0, colon);
      file = -1;
      for (size_t i = 0; i < mod_.files.size(); ++i)
        if (mod_.files[i] == fname || basename_of(mod_.files[i]) == fname) file = int(i);
      if (file < 0) throw Error(fmt::format("break: no source file '{}'", fname));
    }
    int64_t line =
        to_int(colon == std::string::npos ? spec : spec.substr(colon + 1), "break: line");
    return add_line(file, line, cond, temporary);
  }
  // A label may exist in several streams (the same macro expanded for several engines).
  Entry b;
  b.info.temporary = temporary;
  b.cond = cond;
  std::string at;
  for (int e = 0; e < kNumEngines; ++e)
    for (const Label& l : mod_.labels[e])
      if (l.name == spec) {
        b.info.kind = BreakpointInfo::inst;
        if (b.insts.empty()) b.engine = Engine(e);
        b.insts.emplace_back(Engine(e), int64_t(l.index));
        at += fmt::format("{}{}[{}]", at.empty() ? "" : ", ", name_of(Engine(e)), l.index);
      }
  if (b.insts.empty())
    throw Error(fmt::format("break: '{}' is not a line, FILE:LINE, label or ENGINE:INDEX", spec));
  b.info.what = fmt::format("{} ({})", spec, at);
  b.info.instructions = b.insts.size();
  return push(std::move(b));
}

BreakpointInfo Breakpoints::add_watch(const std::string& slice, bool read, int core) {
  Entry b;
  b.info.kind = read ? BreakpointInfo::rwatch : BreakpointInfo::watch;
  b.slice = parse_slice(mod_, slice);
  b.core = core;
  b.regions = slice_regions(m_, *b.slice, b.core);
  b.snapshot = read_slice(m_, *b.slice, b.core);
  b.info.what = trim(slice);
  b.info.bytes = b.snapshot.size();
  return push(std::move(b));
}

Breakpoints::Entry& Breakpoints::find(int id, const char* what) {
  auto it = std::find_if(bps_.begin(), bps_.end(), [&](const Entry& b) { return b.info.id == id; });
  if (it == bps_.end()) throw Error(fmt::format("{}no breakpoint {}", what, id));
  return *it;
}

void Breakpoints::remove(int id) {
  Entry& b = find(id, "delete: ");
  bps_.erase(bps_.begin() + (&b - bps_.data()));
}

void Breakpoints::enable(int id, bool on) { find(id, "").info.enabled = on; }
void Breakpoints::enable_all(bool on) {
  for (Entry& b : bps_) b.info.enabled = on;
}

std::vector<BreakpointInfo> Breakpoints::list() const {
  std::vector<BreakpointInfo> v;
  for (const Entry& b : bps_) v.push_back(b.info);
  return v;
}

} // namespace nisa::interp::debug
