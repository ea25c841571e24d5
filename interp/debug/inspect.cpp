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

void Session::cmd_info(const std::string& a) {
  std::vector<std::string> w = words(a);
  std::string what = w.empty() ? "" : w[0];
  auto starts = [&](const char* full) {
    return !what.empty() && std::string(full).compare(0, what.size(), what) == 0;
  };
  if (starts("breakpoints") || starts("watchpoints")) {
    if (bps_.empty()) {
      out_ << "No breakpoints or watchpoints.\n";
      return;
    }
    out_ << fmt::format("{:<4} {:<16} {:<4} {:<5} {}\n", "Num", "Type", "Enb", "Hits", "What");
    for (const Breakpoint& b : bps_) {
      const char* type = b.kind == Breakpoint::watch    ? "watchpoint"
                         : b.kind == Breakpoint::rwatch ? "read watchpoint"
                         : b.temporary                  ? "tbreakpoint"
                                                        : "breakpoint";
      out_ << fmt::format("{:<4} {:<16} {:<4} {:<5} {}\n", b.id, type, b.enabled ? "y" : "n",
                          b.hits, b.what);
    }
  } else if (starts("engines")) {
    out_ << fmt::format("t = {}\n", ns(sched_->now())) << engines_text();
  } else if (starts("queues")) {
    bool any = false;
    for (const AgentState& s : sched_->agents()) {
      if (s.queue < 0) continue;
      any = true;
      std::string who = m_->num_cores() > 1 ? fmt::format("core {} ", s.core) : "";
      out_ << fmt::format("{}q{}: {} pending\n", who, s.queue, s.queued.size());
      for (size_t i = 0; i < s.queued.size(); ++i)
        out_ << fmt::format("  {}[{}]  [{}, {})\n", name_of(s.queued[i].first), s.queued[i].second,
                            ns(s.spans[i].first), ns(s.spans[i].second));
    }
    if (!any) out_ << "No DMA queue has been used yet.\n";
  } else if (starts("sems") || starts("semaphores")) {
    for (size_t c = 0; c < m_->cores.size(); ++c) {
      if (m_->num_cores() > 1) out_ << trim(who_of(*m_, int(c))) << ":\n";
      for (size_t s = 0; s < mod_.sems.size(); ++s)
        out_ << fmt::format("  {} = {}\n", mod_.sems[s].name, m_->cores[c].st.sems[s]);
    }
  } else if (starts("registers")) {
    int only = w.size() > 1 ? parse_engine(w[1]) : -1;
    if (w.size() > 1 && (only < 0 || only >= kNumEngines))
      throw Error(fmt::format("info registers: unknown engine '{}'", w[1]));
    const CoreState& st = m_->cores[size_t(cur_core_)].st;
    for (int e = 0; e < kNumEngines; ++e) {
      if (only >= 0 && e != only) continue;
      std::string line;
      for (int r = 0; r < kNumRegs; ++r)
        if (st.regs[e][r]) line += fmt::format(" r{}={}", r, st.regs[e][r]);
      out_ << fmt::format("  {:<5}{}\n", name_of(Engine(e)), line.empty() ? " (all zero)" : line);
    }
  } else if (starts("tensors")) {
    for (const TensorDecl& t : mod_.tensors) {
      std::string shape;
      for (int64_t d : t.shape) shape += fmt::format("{}{}", shape.empty() ? "" : ", ", d);
      std::string at = t.space == MemSpace::hbm
                           ? fmt::format("address {:#x}", t.address)
                           : fmt::format("partitions {}.. offset {:#x}", t.part_start, t.address);
      out_ << fmt::format("  {:<10} {:<4} {}[{}] {} {}\n", t.name, name_of(t.space),
                          dtype_name(t.dtype), shape, name_of(t.role), at);
    }
  } else if (starts("timeline")) {
    int64_t n = w.size() > 1 ? to_int(w[1], "info timeline", 0) : 10;
    const auto& recs = trace_->records();
    size_t from = recs.size() > size_t(n) ? recs.size() - size_t(n) : 0;
    out_ << trace_header(*m_);
    for (size_t i = from; i < recs.size(); ++i) out_ << trace_line(*m_, recs[i]);
  } else if (starts("races")) {
    if (races_->races().empty()) out_ << "No races found so far.\n";
    for (const RaceReport& r : races_->races()) out_ << races_->report_text(r);
  } else {
    throw Error("info: expected breakpoints, engines, queues, sems, registers, tensors, timeline "
                "or races");
  }
}

void Session::cmd_print(const std::string& a) {
  std::string arg = trim(a);
  char f = 0;
  auto take_fmt = [&](std::string& s, bool front) {
    if (front && s.size() >= 2 && s[0] == '/') {
      f = s[1];
      s = trim(s.substr(2));
    } else if (!front && s.size() >= 2 && s[s.size() - 2] == '/') {
      f = s.back();
      s = trim(s.substr(0, s.size() - 2));
    }
  };
  take_fmt(arg, true);
  take_fmt(arg, false);
  if (f && f != 'x' && f != 'd' && f != 'f')
    throw Error(fmt::format("print: unknown format /{} (/x /d /f)", f));
  if (arg.empty()) throw Error("print: expected TENSOR[slice], ENGINE.rN or a semaphore");
  if (arg.find('[') == std::string::npos && !m_->find_tensor(arg)) {
    StepEvent probe;
    probe.core = cur_core_;
    if (auto nx = sched_->peek()) probe.engine = nx->engine;
    try {
      out_ << fmt::format("{} = {}\n", arg, eval_term(arg, probe));
    } catch (const RangeError&) {
      throw;
    } catch (const Error&) {
      throw Error(fmt::format("print: '{}' is no tensor, register (ENGINE.rN) or semaphore", arg));
    }
    return;
  }
  out_ << format_slice(parse_slice(mod_, arg), f, cur_core_);
}

void Session::cmd_x(const std::string& a) {
  std::string arg = trim(a);
  int64_t n = 16;
  if (!arg.empty() && arg[0] == '/') {
    size_t sp = arg.find(' ');
    n = to_int(arg.substr(1, sp - 1), "x/N");
    arg = sp == std::string::npos ? "" : trim(arg.substr(sp));
  }
  if (n < 1 || n > 4096) throw Error("x: N must be 1..4096");
  size_t c1 = arg.find(':');
  if (c1 == std::string::npos)
    throw Error("x: expected SPACE:ADDR (sbuf:P:OFF, psum:P:OFF, hbm:ADDR)");
  std::string space = arg.substr(0, c1), rest = arg.substr(c1 + 1);
  const uint8_t* base = nullptr;
  uint64_t limit = 0;
  std::string label;
  if (space == "hbm") {
    const RankSlot& r = m_->ranks[size_t(m_->cores[size_t(cur_core_)].rank)];
    uint64_t addr = uint64_t(to_int(rest, "x: address", 0));
    if (addr >= r.hbm_bytes)
      throw Error(
          fmt::format("x: hbm address {:#x} is outside the {} bytes of HBM", addr, r.hbm_bytes));
    base = r.hbm.data() + addr;
    limit = r.hbm_bytes - addr;
    label = fmt::format("hbm:{:#x}", addr);
  } else if (space == "sbuf" || space == "psum") {
    size_t c2 = rest.find(':');
    if (c2 == std::string::npos) throw Error("x: expected sbuf:PARTITION:OFFSET");
    int64_t p = to_int(rest.substr(0, c2), "x: partition");
    uint64_t off = uint64_t(to_int(rest.substr(c2 + 1), "x: offset", 0));
    const CoreState& st = m_->cores[size_t(cur_core_)].st;
    uint64_t pb = space == "sbuf" ? st.sbuf_part_bytes : st.psum_part_bytes;
    if (p < 0 || p >= kNumPartitions || off >= pb)
      throw Error(
          fmt::format("x: {}:{}:{:#x} is outside 128 partitions of {} bytes", space, p, off, pb));
    base = (space == "sbuf" ? st.sbuf : st.psum) +
           uint64_t(p) * (space == "sbuf" ? st.sbuf_stride : st.psum_stride) + off;
    limit = pb - off;
    label = fmt::format("{}:{}:{:#x}", space, p, off);
  } else {
    throw Error(fmt::format("x: unknown space '{}' (sbuf, psum, hbm)", space));
  }
  n = std::min<int64_t>(n, int64_t(limit));
  for (int64_t i = 0; i < n; i += 16) {
    std::string line = fmt::format("{}+{:#06x}:", label, i);
    for (int64_t j = i; j < std::min<int64_t>(n, i + 16); ++j)
      line += fmt::format(" {:02x}", base[j]);
    out_ << line << "\n";
  }
}

void Session::cmd_list(const std::string& a) {
  auto nx = sched_->peek();
  uint32_t file = 0, center = 1;
  if (nx)
    if (const DebugLoc* d = loc_of(nx->engine, nx->pc)) file = d->file, center = d->line;
  if (!trim(a).empty()) center = uint32_t(to_int(trim(a), "list", 1, UINT32_MAX));
  // Which engines (of the current core) are at each line.
  std::map<uint32_t, std::string> at;
  for (const AgentState& s : sched_->agents()) {
    if (s.queue >= 0 || s.core != cur_core_ || s.state == AgentState::done) continue;
    const DebugLoc* d = loc_of(s.engine, s.pc);
    if (!d || d->file != file) continue;
    std::string& m = at[d->line];
    m += (m.empty() ? "" : ",") + std::string(name_of(s.engine));
  }
  uint32_t lo = center > 5 ? center - 5 : 1;
  for (uint32_t l = lo; l < lo + 11; ++l) {
    std::string text = source_line(file, l);
    if (text.empty() && l > center) {
      if (file < mod_.files.size() && source_cache_[mod_.files[file]].size() < l) break;
    }
    bool here = nx && nx->dma_queue < 0 && l == center && trim(a).empty();
    out_ << fmt::format("{:<2} {:>9} {:>5}  {}\n", here ? "=>" : "", at.count(l) ? at[l] : "", l,
                        text);
  }
}

void Session::cmd_disas(const std::string& a) {
  auto nx = sched_->peek();
  int e = nx ? int(nx->engine) : int(Engine::sp);
  if (!trim(a).empty()) {
    e = parse_engine(trim(a));
    if (e < 0 || e >= kNumEngines) throw Error(fmt::format("disas: unknown engine '{}'", trim(a)));
  }
  int64_t pc = 0;
  for (const AgentState& s : sched_->agents())
    if (s.queue < 0 && s.core == cur_core_ && int(s.engine) == e) pc = s.pc;
  const auto& stream = mod_.streams[e];
  if (stream.empty()) {
    out_ << fmt::format("{} has no instructions.\n", name_of(Engine(e)));
    return;
  }
  int64_t from = std::max<int64_t>(0, pc - 3),
          to = std::min<int64_t>(int64_t(stream.size()), pc + 6);
  for (int64_t i = from; i < to; ++i) {
    const DebugLoc* d = loc_of(Engine(e), i);
    out_ << fmt::format("{:<2} {}[{}] {}  {}\n", i == pc ? "=>" : "", name_of(Engine(e)), i,
                        d ? fmt::format("{}:{}", basename_of(mod_.files[d->file]), d->line) : "",
                        describe_inst(mod_, stream[size_t(i)]));
  }
  if (pc >= int64_t(stream.size())) out_ << fmt::format("   ({} is done)\n", name_of(Engine(e)));
}

void Session::cmd_where(const std::string&) {
  auto nx = sched_->peek();
  if (!nx) {
    out_ << "No instruction is pending.\n";
    return;
  }
  if (nx->dma_queue >= 0) out_ << fmt::format("q{}: a transfer triggered by\n", nx->dma_queue);
  out_ << where_text(nx->engine, nx->pc);
}

void Session::cmd_set(const std::string& a) {
  std::vector<std::string> w = words(a);
  if (w.size() >= 2 && w[0] == "check-races") {
    if (w[1] != "on" && w[1] != "off") throw Error("set check-races: expected on or off");
    check_races_ = w[1] == "on";
    out_ << fmt::format("Race checking is {}{}.\n", w[1],
                        check_races_ ? " (a race stops the session)" : "");
    return;
  }
  std::string rest = trim(a);
  if (rest.rfind("var ", 0) == 0) rest = trim(rest.substr(4));
  size_t eq = rest.find('=');
  if (eq == std::string::npos)
    throw Error("set: expected `set var ENGINE.rN = V` or `set check-races on|off`");
  std::string lhs = trim(rest.substr(0, eq));
  int64_t v = to_int(trim(rest.substr(eq + 1)), "set var: value", INT32_MIN, INT32_MAX);
  size_t dot = lhs.find('.');
  auto nx = sched_->peek();
  int e = dot == std::string::npos ? (nx ? int(nx->engine) : -1) : parse_engine(lhs.substr(0, dot));
  std::string reg = dot == std::string::npos ? lhs : lhs.substr(dot + 1);
  int r = e < 0 || e >= kNumEngines ? -1 : reg_index(reg, "set var: register index");
  if (r < 0)
    throw Error(fmt::format("set var: '{}' is not a register (ENGINE.r0 .. ENGINE.r63)", lhs));
  m_->cores[size_t(cur_core_)].st.regs[e][r] = int32_t(v);
  edits_.push_back(RegEdit{steps_, cur_core_, e, r, int32_t(v)});
  out_ << fmt::format("{}.r{} = {}\n", name_of(Engine(e)), r, int32_t(v));
}

void Session::cmd_dump(const std::string& a) {
  std::vector<std::string> w = words(a);
  if (w.size() != 2) throw Error("dump: expected TENSOR FILE.npy");
  const TensorDecl* t = m_->find_tensor(w[0]);
  if (!t) throw Error(fmt::format("dump: no tensor '{}'", w[0]));
  Slice s = parse_slice(mod_, w[0]);
  std::vector<uint8_t> bytes = read_slice(s, cur_core_);
  write_npy(w[1], t->dtype, t->shape, bytes.data());
  out_ << fmt::format("Wrote {} ({} bytes of {}) to {}.\n", t->name, bytes.size(),
                      dtype_name(t->dtype), w[1]);
}

} // namespace nisa::interp::debug
