// The console's text of the model's structs: stops, the end of a run, engines and queues,
// frames, slices and breakpoints.
#include <algorithm>
#include <fstream>

#include <fmt/format.h>

#include "interp/debug/internal.h"

namespace nisa::interp::debug {

std::string Printer::source_line(uint32_t file, uint32_t line) {
  const Module& mod = model_.module();
  if (file >= mod.files.size()) return "";
  const std::string& path = mod.files[file];
  auto it = source_cache_.find(path);
  if (it == source_cache_.end()) {
    std::vector<std::string> lines;
    std::ifstream f(path);
    for (std::string l; std::getline(f, l);) lines.push_back(l);
    it = source_cache_.emplace(path, std::move(lines)).first;
  }
  return line >= 1 && line <= it->second.size() ? it->second[line - 1] : "";
}

std::string Printer::breakpoint_text(const BreakpointInfo& b) const {
  if (b.kind == BreakpointInfo::watch || b.kind == BreakpointInfo::rwatch)
    return fmt::format("{} {}: {} ({} bytes)\n",
                       b.kind == BreakpointInfo::rwatch ? "Read watchpoint" : "Watchpoint", b.id,
                       b.what, b.bytes);
  return fmt::format(
      "{} {} at {}{}\n", b.temporary ? "Temporary breakpoint" : "Breakpoint", b.id, b.what,
      b.kind == BreakpointInfo::line ? fmt::format(" ({} instructions)", b.instructions) : "");
}

std::string Printer::location_line(const StepEvent& ev) const {
  std::string who = who_of(model_.machine(), ev.core);
  std::string agent = ev.dma_queue >= 0 ? fmt::format("q{}: transfer of {}[{}]", ev.dma_queue,
                                                      name_of(ev.engine), ev.pc)
                                        : fmt::format("{}[{}]", name_of(ev.engine), ev.pc);
  auto loc = model_.location(ev.engine, ev.pc);
  std::string at = loc ? fmt::format(" at {}:{}", basename_of(loc->file), loc->line) : "";
  return fmt::format("{}{}{}, completes at t = {}", who, agent, at, ns(ev.time));
}

std::string Printer::end_line(const RunEnd& e) const {
  return fmt::format("Stopped by the {} at t = {}; the machine state is kept for inspection "
                     "(info engines, print, x).",
                     e.status == RunStatus::deadlock ? "deadlock"
                     : e.status == RunStatus::fault  ? "fault"
                                                     : "budget",
                     ns(e.time));
}

std::string Printer::end_text(const RunEnd& e) const {
  if (e.status == RunStatus::ok)
    return fmt::format("The kernel finished at t = {} ({} events).\n", ns(e.time), e.steps);
  return e.report + end_line(e) + "\n" + engines_text();
}

std::string Printer::stop_text(const Stop& s) {
  const Module& mod = model_.module();
  const Machine& m = model_.machine();
  std::string t;
  const bool replaying = s.origin == Stop::Origin::replay || s.origin == Stop::Origin::reverse;
  if (s.reason == Stop::Reason::interrupted)
    t += replaying ? fmt::format("Interrupted while replaying, at event {}.\n", s.steps)
                   : std::string("Interrupted.\n");
  switch (s.reason == Stop::Reason::interrupted ? Stop::Origin::resume : s.origin) {
  case Stop::Origin::resume: break;
  case Stop::Origin::run: t += fmt::format("Starting kernel {}.\n", mod.kernel); break;
  case Stop::Origin::restart:
    t += fmt::format("Restarted kernel {} at t = 0.\n", mod.kernel);
    break;
  case Stop::Origin::replay: t += fmt::format("Replayed to event {}.\n", s.steps); break;
  case Stop::Origin::reverse:
    t += s.steps == 0 ? std::string("No earlier stop: back at the start of the run.\n")
                      : fmt::format("Back at the previous stop (event {}).\n", s.steps);
    break;
  }
  if (s.reason == Stop::Reason::not_running) {
    RunStatus st = s.end ? s.end->status : RunStatus::ok;
    return t + fmt::format("The kernel is not running ({}); use run or restart.\n",
                           st == RunStatus::ok         ? "it finished"
                           : st == RunStatus::deadlock ? "it deadlocked"
                           : st == RunStatus::fault    ? "it faulted"
                                                       : "it spent its --max-steps budget");
  }
  if (const auto& b = s.breakpoint) {
    if (!b->cond_error.empty())
      t += fmt::format("error in the condition of breakpoint {}: {}\n", b->id, b->cond_error);
    t += fmt::format("{} {}, {}\n", b->temporary ? "Temporary breakpoint" : "Breakpoint", b->id,
                     b->what);
  }
  for (const WatchHit& h : s.watches) {
    const StepEvent& e = h.by;
    std::string by =
        who_of(m, e.core) + (e.dma_queue >= 0 ? fmt::format("q{} (transfer of {}[{}])", e.dma_queue,
                                                            name_of(e.engine), e.pc)
                                              : fmt::format("{}[{}]", name_of(e.engine), e.pc));
    t += fmt::format("{} {}: {} {} by {}\n", h.read ? "Read watchpoint" : "Watchpoint", h.id,
                     h.what, h.read ? "read" : "written", by);
    if (h.read) continue;
    char f = info(h.tensor->dtype).is_float ? 'f' : 'd';
    for (const WatchHit::Change& c : h.changes) {
      std::string ix;
      for (int64_t v : c.index) ix += fmt::format("{}{}", ix.empty() ? "" : ", ", v);
      t += fmt::format("  {}[{}]: {} -> {}\n", h.tensor->name, ix,
                       format_value(h.tensor->dtype, c.before.data(), f),
                       format_value(h.tensor->dtype, c.after.data(), f));
    }
    if (h.changed > 8) t += fmt::format("  ... {} of {} elements changed\n", h.changed, h.elements);
    if (!h.changed) t += "  (the values are unchanged)\n";
  }
  for (size_t i : s.races) t += model_.races().report_text(model_.races().races()[i]);
  if (const auto& d = s.engine_done)
    t += fmt::format("{}{} has finished: {}[{}] was its last instruction.\n", who_of(m, d->core),
                     name_of(d->engine), name_of(d->engine), d->pc);
  if (s.next) {
    const StepEvent& ev = *s.next;
    t += location_line(ev) + "\n";
    if (const DebugLoc* d = debug_loc(mod, ev.engine, ev.pc)) {
      std::string text = source_line(d->file, d->line);
      if (!text.empty()) t += fmt::format("{:>6}  {}\n", d->line, text);
    }
    t += "   => " + describe_inst(mod, mod.streams[int(ev.engine)][size_t(ev.pc)]) + "\n";
  } else if (s.end) {
    t += end_text(*s.end);
    if (model_.check_races() && model_.races().races().empty())
      t += model_.races().no_race_text() + ".\n";
  }
  return t;
}

std::string Printer::where_text(const std::vector<Frame>& frames) const {
  std::string s;
  for (size_t k = 0; k < frames.size(); ++k) {
    const Frame& f = frames[k];
    s += fmt::format("#{}  {}", k, f.title());
    if (f.loc) s += fmt::format(" at {}:{}:{}", f.loc->file, f.loc->line, f.loc->col);
    s += "\n";
  }
  return s;
}

std::string Printer::engines_text() const {
  const Machine& m = model_.machine();
  const Module& mod = model_.module();
  std::string s;
  int width = m.num_cores() > 1 ? 22 : 10;
  // Queues with no transfer yet are not agents: list them per core in one line at the end.
  std::vector<std::array<bool, kNumDmaQueues>> seen(size_t(m.num_cores()));
  auto at = [](const std::optional<SourceLoc>& l, const char* pre, const char* post) {
    return l ? fmt::format("{}{}:{}{}", pre, basename_of(l->file), l->line, post) : "";
  };
  for (const Agent& g : model_.agents()) {
    const AgentState& a = g.state;
    if (a.queue >= 0) seen[size_t(a.core)][size_t(a.queue)] = true;
    std::string agent = who_of(m, a.core) + (a.queue >= 0 ? fmt::format("q{}", a.queue)
                                                          : std::string(name_of(a.engine)));
    if (a.queue >= 0) {
      if (g.idle()) {
        s += fmt::format("  {:<{}} idle\n", agent, width);
        continue;
      }
      auto [e, pc] = a.queued.front();
      s += fmt::format("  {:<{}} running  transfer of {}[{}]{}, ends t = {}{}\n", agent, width,
                       name_of(e), pc, at(g.loc, " (", ")"), ns(a.spans.front().second),
                       a.queued.size() > 1 ? fmt::format(", {} more queued", a.queued.size() - 1)
                                           : "");
      continue;
    }
    if (a.state == AgentState::done) {
      s += fmt::format("  {:<{}} done{}\n", agent, width,
                       g.has_instructions ? "" : " (no instructions)");
      continue;
    }
    s += fmt::format("  {:<{}} {:<8} {}[{}]{}\n", agent, width, name_of(a.state), name_of(a.engine),
                     a.pc, at(g.loc, " ", ""));
    s += fmt::format("             {}\n",
                     describe_inst(mod, mod.streams[int(a.engine)][size_t(a.pc)]));
    for (const UnmetWait& w : g.unmet)
      s += fmt::format("             waits for {} {} {} (value {}) since t = {}\n", w.sem,
                       name_of(w.cmp), w.value, w.current, ns(a.since));
  }
  for (int c = 0; c < m.num_cores(); ++c) {
    std::string idle;
    for (int q = 0; q < kNumDmaQueues; ++q) {
      if (seen[size_t(c)][size_t(q)]) continue;
      int e = q;
      while (e + 1 < kNumDmaQueues && !seen[size_t(c)][size_t(e + 1)]) ++e;
      idle += fmt::format("{}q{}", idle.empty() ? "" : ", ", q) +
              (e > q ? fmt::format("..q{}", e) : "");
      q = e;
    }
    if (!idle.empty()) s += fmt::format("  {}{} idle (no transfer yet)\n", who_of(m, c), idle);
  }
  return s;
}

std::string Printer::slice_text(const Slice& s, int core, char f) const {
  const TensorDecl& t = *s.tensor;
  if (!f) f = info(t.dtype).is_float ? 'f' : 'd';
  // Rows: the first dimension; columns: the rest, flattened. Only the elements shown are read
  // (an 8192 x 8192 tensor costs its 81 cells, not its 64M elements).
  const uint64_t total = s.elems();
  uint64_t nrows = s.dims.empty() ? 1 : uint64_t(s.dims[0].second - s.dims[0].first);
  uint64_t ncols = total / std::max<uint64_t>(nrows, 1);
  if (s.dims.size() == 1) nrows = 1, ncols = total;
  auto pick = [](uint64_t n) {
    std::vector<int64_t> r; // -1: the elision mark
    if (n <= 8) {
      for (uint64_t i = 0; i < n; ++i) r.push_back(int64_t(i));
    } else {
      for (uint64_t i = 0; i < 4; ++i) r.push_back(int64_t(i));
      r.push_back(-1);
      for (uint64_t i = n - 4; i < n; ++i) r.push_back(int64_t(i));
    }
    return r;
  };
  const std::vector<int64_t> rows = pick(nrows), cols = pick(ncols);
  const bool part = t.space != MemSpace::hbm;
  std::string shape;
  for (auto [a, b] : s.dims) shape += fmt::format("{}{}:{}", shape.empty() ? "" : ", ", a, b);
  std::string s_out = fmt::format(
      "{}[{}] {} in {}{} ({} elements){}\n", t.name, shape, dtype_name(t.dtype), name_of(t.space),
      part && model_.machine().num_cores() > 1 ? fmt::format(" core {}", core) : "", total,
      s.dims.size() > 2 ? "; columns are the free indices flattened" : "");
  auto label = [&](int64_t c) -> std::string {
    if (c < 0) return "...";
    if (s.dims.size() == 1) return fmt::format("[{}]", s.dims[0].first + c);
    if (s.dims.size() == 2) return fmt::format("[{}]", s.dims[1].first + c);
    return fmt::format("[+{}]", c);
  };
  std::vector<std::vector<std::string>> cells;
  size_t width = 4;
  for (int64_t r : rows) {
    std::vector<std::string> line;
    for (int64_t c : cols) {
      if (r < 0 || c < 0) {
        line.push_back("...");
        continue;
      }
      const std::vector<uint8_t> v = model_.element(s, core, uint64_t(r) * ncols + uint64_t(c));
      line.push_back(format_value(t.dtype, v.data(), f));
      width = std::max(width, line.back().size());
    }
    cells.push_back(std::move(line));
  }
  for (int64_t c : cols) width = std::max(width, label(c).size());
  std::string head = fmt::format("{:>8}", part ? "part" : "");
  for (int64_t c : cols) head += fmt::format(" {:>{}}", label(c), width);
  s_out += head + "\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const int64_t r = rows[i];
    std::string rl = r < 0                ? "..."
                     : s.dims.size() <= 1 ? ""
                     : part               ? fmt::format("p{}", s.dims[0].first + r)
                                          : fmt::format("[{}]", s.dims[0].first + r);
    std::string line = fmt::format("{:>8}", rl);
    for (const std::string& c : cells[i]) line += fmt::format(" {:>{}}", c, width);
    s_out += line + "\n";
  }
  return s_out;
}

std::string Printer::breakpoints_table() const {
  std::vector<BreakpointInfo> bps = model_.breakpoints();
  if (bps.empty()) return "No breakpoints or watchpoints.\n";
  std::string s =
      fmt::format("{:<4} {:<16} {:<4} {:<5} {}\n", "Num", "Type", "Enb", "Hits", "What");
  for (const BreakpointInfo& b : bps) {
    const char* type = b.kind == BreakpointInfo::watch    ? "watchpoint"
                       : b.kind == BreakpointInfo::rwatch ? "read watchpoint"
                       : b.temporary                      ? "tbreakpoint"
                                                          : "breakpoint";
    s += fmt::format("{:<4} {:<16} {:<4} {:<5} {}\n", b.id, type, b.enabled ? "y" : "n", b.hits,
                     b.what);
  }
  return s;
}

std::string Printer::queues_text() const {
  std::string out;
  for (const Agent& g : model_.agents()) {
    const AgentState& s = g.state;
    if (s.queue < 0) continue;
    std::string who = model_.machine().num_cores() > 1 ? fmt::format("core {} ", s.core) : "";
    out += fmt::format("{}q{}: {} pending\n", who, s.queue, s.queued.size());
    for (size_t i = 0; i < s.queued.size(); ++i)
      out += fmt::format("  {}[{}]  [{}, {})\n", name_of(s.queued[i].first), s.queued[i].second,
                         ns(s.spans[i].first), ns(s.spans[i].second));
  }
  return out.empty() ? "No DMA queue has been used yet.\n" : out;
}

std::string Printer::sems_text() const {
  const Machine& m = model_.machine();
  std::string out;
  for (size_t c = 0; c < m.cores.size(); ++c) {
    if (m.num_cores() > 1) out += trim(who_of(m, int(c))) + ":\n";
    for (const SemValue& s : model_.semaphores(int(c)))
      out += fmt::format("  {} = {}\n", s.name, s.value);
  }
  return out;
}

std::string Printer::registers_text(int only) const {
  std::string out;
  for (int e = 0; e < kNumEngines; ++e) {
    if (only >= 0 && e != only) continue;
    std::string line;
    auto regs = model_.registers(model_.current_core(), Engine(e));
    for (int r = 0; r < kNumRegs; ++r)
      if (regs[size_t(r)]) line += fmt::format(" r{}={}", r, regs[size_t(r)]);
    out += fmt::format("  {:<5}{}\n", name_of(Engine(e)), line.empty() ? " (all zero)" : line);
  }
  return out;
}

std::string Printer::tensors_text() const {
  std::string out;
  for (const TensorDecl& t : model_.module().tensors) {
    std::string shape;
    for (int64_t d : t.shape) shape += fmt::format("{}{}", shape.empty() ? "" : ", ", d);
    std::string at = t.space == MemSpace::hbm
                         ? fmt::format("address {:#x}", t.address)
                         : fmt::format("partitions {}.. offset {:#x}", t.part_start, t.address);
    out += fmt::format("  {:<10} {:<4} {}[{}] {} {}\n", t.name, name_of(t.space),
                       dtype_name(t.dtype), shape, name_of(t.role), at);
  }
  return out;
}

std::string Printer::list_text(std::optional<uint32_t> line) {
  const Module& mod = model_.module();
  auto nx = model_.next_event();
  uint32_t file = 0, center = 1;
  if (nx)
    if (const DebugLoc* d = debug_loc(mod, nx->engine, nx->pc)) file = d->file, center = d->line;
  if (line) center = *line;
  // Which engines (of the current core) are at each line.
  std::map<uint32_t, std::string> at;
  for (const Agent& g : model_.agents()) {
    const AgentState& s = g.state;
    if (s.queue >= 0 || s.core != model_.current_core() || s.state == AgentState::done) continue;
    const DebugLoc* d = debug_loc(mod, s.engine, s.pc);
    if (!d || d->file != file) continue;
    std::string& m = at[d->line];
    m += (m.empty() ? "" : ",") + std::string(name_of(s.engine));
  }
  std::string out;
  uint32_t lo = center > 5 ? center - 5 : 1;
  for (uint32_t l = lo; l < lo + 11; ++l) {
    std::string text = source_line(file, l);
    if (text.empty() && l > center) {
      if (file < mod.files.size() && source_cache_[mod.files[file]].size() < l) break;
    }
    bool here = nx && nx->dma_queue < 0 && l == center && !line;
    out +=
        fmt::format("{:<2} {:>9} {:>5}  {}\n", here ? "=>" : "", at.count(l) ? at[l] : "", l, text);
  }
  return out;
}

std::string Printer::disas_text(Engine e) const {
  const Module& mod = model_.module();
  int64_t pc = 0;
  for (const Agent& g : model_.agents())
    if (g.state.queue < 0 && g.state.core == model_.current_core() && g.state.engine == e)
      pc = g.state.pc;
  const auto& stream = mod.streams[int(e)];
  if (stream.empty()) return fmt::format("{} has no instructions.\n", name_of(e));
  std::string out;
  int64_t from = std::max<int64_t>(0, pc - 3),
          to = std::min<int64_t>(int64_t(stream.size()), pc + 6);
  for (int64_t i = from; i < to; ++i) {
    auto loc = model_.location(e, i);
    out += fmt::format("{:<2} {}[{}] {}  {}\n", i == pc ? "=>" : "", name_of(e), i,
                       loc ? fmt::format("{}:{}", basename_of(loc->file), loc->line) : "",
                       describe_inst(mod, stream[size_t(i)]));
  }
  if (pc >= int64_t(stream.size())) out += fmt::format("   ({} is done)\n", name_of(e));
  return out;
}

} // namespace nisa::interp::debug
