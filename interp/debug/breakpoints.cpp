#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "interp/core/target.h"
#include "interp/debug/internal.h"
#include "interp/run/npy.h"

namespace nisa::interp::debug {

int64_t Session::eval_term(const std::string& t, const StepEvent& ev) {
  if (is_number(t)) return to_int(t, "condition: number");
  if (t == "$time") return int64_t(ticks_to_ns(ev.time));
  if (t == "$core") return ev.core;
  if (t == "$pc") return ev.pc;
  size_t dot = t.find('.');
  std::string eng = dot == std::string::npos ? std::string(name_of(ev.engine)) : t.substr(0, dot);
  std::string reg = dot == std::string::npos ? t : t.substr(dot + 1);
  int e = parse_engine(eng);
  if (e >= 0 && e < kNumEngines)
    if (int r = reg_index(reg, "register index"); r >= 0)
      return m_->cores[size_t(ev.core)].st.regs[e][r];
  for (size_t s = 0; s < mod_.sems.size(); ++s)
    if (mod_.sems[s].name == t) return m_->cores[size_t(ev.core)].st.sems[s];
  throw Error(fmt::format("condition: unknown term '{}' (a number, ENGINE.rN, rN, a semaphore, "
                          "$time, $core or $pc)",
                          t));
}

bool Session::eval_cond(const std::string& cond, const StepEvent& ev) {
  static const char* ops[] = {"==", "!=", "<=", ">=", "<", ">"};
  for (const char* op : ops) {
    size_t k = cond.find(op);
    if (k == std::string::npos) continue;
    int64_t a = eval_term(trim(cond.substr(0, k)), ev);
    int64_t b = eval_term(trim(cond.substr(k + std::string(op).size())), ev);
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

bool Session::check_breakpoint(const StepEvent& ev) {
  if (ev.dma_queue >= 0) return false;
  for (size_t i = 0; i < bps_.size(); ++i) {
    Breakpoint& b = bps_[i];
    if (!b.enabled) continue;
    bool hit = b.kind == Breakpoint::line
                   ? loc_matches(mod_, loc_of(ev.engine, ev.pc), b.file, b.line_or_pc)
               : b.kind == Breakpoint::inst
                   ? std::find(b.insts.begin(), b.insts.end(), std::pair{ev.engine, ev.pc}) !=
                         b.insts.end()
                   : false;
    if (!hit) continue;
    if (!b.cond.empty()) {
      try {
        if (!eval_cond(b.cond, ev)) continue;
      } catch (const Error& e) {
        out_ << "error in the condition of breakpoint " << b.id << ": " << e.what() << "\n";
      }
    }
    ++b.hits;
    out_ << fmt::format("{} {}, {}\n", b.temporary ? "Temporary breakpoint" : "Breakpoint", b.id,
                        b.what);
    if (b.temporary) bps_.erase(bps_.begin() + long(i));
    return true;
  }
  return false;
}

bool Session::check_watchpoints() {
  bool stop = false;
  for (Breakpoint& b : bps_) {
    if (!b.enabled || (b.kind != Breakpoint::watch && b.kind != Breakpoint::rwatch)) continue;
    bool hit = false;
    for (const Region& r : watcher_->regions)
      if (r.write == (b.kind == Breakpoint::watch))
        for (const Region& w : b.regions) hit |= r.overlaps(w);
    if (!hit) continue;
    ++b.hits;
    stop = true;
    std::string by = last_ ? who_of(*m_, last_->core) +
                                 (last_->dma_queue >= 0
                                      ? fmt::format("q{} (transfer of {}[{}])", last_->dma_queue,
                                                    name_of(last_->engine), last_->pc)
                                      : fmt::format("{}[{}]", name_of(last_->engine), last_->pc))
                           : std::string("?");
    out_ << fmt::format("{} {}: {} {} by {}\n",
                        b.kind == Breakpoint::watch ? "Watchpoint" : "Read watchpoint", b.id,
                        b.what, b.kind == Breakpoint::watch ? "written" : "read", by);
    if (b.kind != Breakpoint::watch) continue;
    std::vector<uint8_t> now = read_slice(*b.slice, b.core);
    const TensorDecl& t = *b.slice->tensor;
    size_t w = size_t(dtype_bytes(t.dtype));
    std::vector<std::vector<int64_t>> idxs;
    for_each_index(*b.slice, [&](const std::vector<int64_t>& i) { idxs.push_back(i); });
    size_t changed = 0, shown = 0;
    char f = info(t.dtype).is_float ? 'f' : 'd';
    for (size_t k = 0; k < idxs.size(); ++k) {
      if (std::equal(now.begin() + long(k * w), now.begin() + long(k * w + w),
                     b.snapshot.begin() + long(k * w)))
        continue;
      ++changed;
      if (shown++ >= 8) continue;
      std::string ix;
      for (int64_t v : idxs[k]) ix += fmt::format("{}{}", ix.empty() ? "" : ", ", v);
      out_ << fmt::format("  {}[{}]: {} -> {}\n", t.name, ix,
                          format_value(t.dtype, &b.snapshot[k * w], f),
                          format_value(t.dtype, &now[k * w], f));
    }
    if (changed > shown || changed > 8)
      out_ << fmt::format("  ... {} of {} elements changed\n", changed, idxs.size());
    if (!changed) out_ << "  (the values are unchanged)\n";
    b.snapshot = std::move(now);
  }
  return stop;
}

void Session::cmd_break(const std::string& a, bool temporary) {
  std::string spec = trim(a), cond;
  size_t k = spec.find(" if ");
  if (k != std::string::npos) cond = trim(spec.substr(k + 4)), spec = trim(spec.substr(0, k));
  if (spec.empty()) throw Error("break: expected FILE:LINE, LINE, LABEL or ENGINE:INDEX");
  Breakpoint b;
  b.temporary = temporary;
  b.cond = cond;
  size_t colon = spec.rfind(':');
  size_t count = 0;
  if (colon != std::string::npos && parse_engine(spec.substr(0, colon)) >= 0 &&
      parse_engine(spec.substr(0, colon)) < kNumEngines) {
    b.kind = Breakpoint::inst;
    b.engine = Engine(parse_engine(spec.substr(0, colon)));
    b.line_or_pc = to_int(spec.substr(colon + 1), "break: instruction index", 0);
    if (b.line_or_pc < 0 || size_t(b.line_or_pc) >= mod_.streams[int(b.engine)].size())
      throw Error(fmt::format("break: {} has {} instructions", name_of(b.engine),
                              mod_.streams[int(b.engine)].size()));
    b.insts.emplace_back(b.engine, b.line_or_pc);
    const DebugLoc* d = loc_of(b.engine, b.line_or_pc);
    b.what =
        fmt::format("{}[{}]{}", name_of(b.engine), b.line_or_pc,
                    d ? fmt::format(" at {}:{}", basename_of(mod_.files[d->file]), d->line) : "");
    count = 1;
  } else if (colon != std::string::npos || is_number(spec)) {
    b.kind = Breakpoint::line;
    b.file = 0;
    if (colon != std::string::npos) {
      std::string fname = spec.substr(0, colon);
      b.file = -1;
      for (size_t i = 0; i < mod_.files.size(); ++i)
        if (mod_.files[i] == fname || basename_of(mod_.files[i]) == fname) b.file = int(i);
      if (b.file < 0) throw Error(fmt::format("break: no source file '{}'", fname));
    }
    b.line_or_pc =
        to_int(colon == std::string::npos ? spec : spec.substr(colon + 1), "break: line");
    for (int e = 0; e < kNumEngines; ++e)
      for (size_t pc = 0; pc < mod_.streams[e].size(); ++pc)
        count += loc_matches(mod_, loc_of(Engine(e), int64_t(pc)), b.file, b.line_or_pc);
    if (!count)
      throw Error(fmt::format("break: no instruction comes from line {} of {}", b.line_or_pc,
                              mod_.files[size_t(b.file)]));
    b.what = fmt::format("{}:{}", basename_of(mod_.files[size_t(b.file)]), b.line_or_pc);
  } else {
    // A label may exist in several streams (the same macro expanded for several engines).
    std::string at;
    for (int e = 0; e < kNumEngines; ++e)
      for (const Label& l : mod_.labels[e])
        if (l.name == spec) {
          b.kind = Breakpoint::inst;
          if (!count) b.engine = Engine(e);
          b.insts.emplace_back(Engine(e), int64_t(l.index));
          at += fmt::format("{}{}[{}]", at.empty() ? "" : ", ", name_of(Engine(e)), l.index);
          ++count;
        }
    b.what = fmt::format("{} ({})", spec, at);
    if (!count)
      throw Error(fmt::format("break: '{}' is not a line, FILE:LINE, label or ENGINE:INDEX", spec));
  }
  if (!cond.empty()) {
    b.what += " if " + cond;
    StepEvent probe;
    probe.engine = b.engine;
    eval_cond(cond, probe); // reject a bad condition now
  }
  b.id = next_bp_++;
  out_ << fmt::format("{} {} at {}{}\n", temporary ? "Temporary breakpoint" : "Breakpoint", b.id,
                      b.what,
                      b.kind == Breakpoint::line ? fmt::format(" ({} instructions)", count) : "");
  bps_.push_back(std::move(b));
}

void Session::cmd_watch(const std::string& a, bool read) {
  Breakpoint b;
  b.kind = read ? Breakpoint::rwatch : Breakpoint::watch;
  b.slice = parse_slice(mod_, a);
  b.core = cur_core_;
  b.regions = slice_regions(*b.slice, b.core);
  b.snapshot = read_slice(*b.slice, b.core);
  b.what = trim(a);
  b.id = next_bp_++;
  out_ << fmt::format("{} {}: {} ({} bytes)\n", read ? "Read watchpoint" : "Watchpoint", b.id,
                      b.what, b.snapshot.size());
  bps_.push_back(std::move(b));
}

void Session::cmd_delete(const std::string& a) {
  std::vector<std::string> w = words(a);
  if (w.empty()) {
    bps_.clear();
    out_ << "Deleted all breakpoints and watchpoints.\n";
    return;
  }
  for (const std::string& s : w) {
    int64_t id = to_int(s, "delete");
    auto it =
        std::find_if(bps_.begin(), bps_.end(), [&](const Breakpoint& b) { return b.id == id; });
    if (it == bps_.end()) throw Error(fmt::format("delete: no breakpoint {}", id));
    bps_.erase(it);
  }
}

void Session::cmd_enable(const std::string& a, bool on) {
  std::vector<std::string> w = words(a);
  for (Breakpoint& b : bps_)
    if (w.empty()) b.enabled = on;
  for (const std::string& s : w) {
    int64_t id = to_int(s, on ? "enable" : "disable");
    auto it =
        std::find_if(bps_.begin(), bps_.end(), [&](const Breakpoint& b) { return b.id == id; });
    if (it == bps_.end()) throw Error(fmt::format("no breakpoint {}", id));
    it->enabled = on;
  }
}

} // namespace nisa::interp::debug
