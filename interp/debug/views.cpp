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

uint64_t Slice::elems() const {
  uint64_t n = 1;
  for (auto [a, b] : dims) n *= uint64_t(b - a);
  return n;
}

Slice parse_slice(const Module& m, const std::string& text) {
  std::string t = trim(text);
  size_t br = t.find('[');
  std::string name = trim(t.substr(0, br));
  Slice s;
  for (const TensorDecl& d : m.tensors)
    if (d.name == name) s.tensor = &d;
  if (!s.tensor) throw Error(fmt::format("no tensor '{}' (info tensors lists them)", name));
  const auto& shape = s.tensor->shape;
  for (int64_t n : shape) s.dims.emplace_back(0, n);
  if (br == std::string::npos) return s;
  if (t.back() != ']') throw Error(fmt::format("'{}': expected ']' at the end", t));
  std::string body = t.substr(br + 1, t.size() - br - 2);
  std::vector<std::string> items;
  std::stringstream ss(body);
  for (std::string it; std::getline(ss, it, ',');) items.push_back(trim(it));
  if (items.size() > shape.size())
    throw Error(
        fmt::format("'{}': {} indices for a tensor of rank {}", t, items.size(), shape.size()));
  for (size_t k = 0; k < items.size(); ++k) {
    const std::string& it = items[k];
    size_t colon = it.find(':');
    int64_t lo, hi;
    if (colon == std::string::npos) {
      lo = to_int(it, "slice index", INT64_MIN, INT64_MAX - 1);
      hi = lo + 1;
    } else {
      std::string a = trim(it.substr(0, colon)), b = trim(it.substr(colon + 1));
      lo = a.empty() ? 0 : to_int(a, "slice start");
      hi = b.empty() ? shape[k] : to_int(b, "slice end");
    }
    if (lo < 0 || hi > shape[k] || lo >= hi)
      throw Error(fmt::format("'{}': index {} range {}:{} is outside 0:{} or empty", t, k, lo, hi,
                              shape[k]));
    s.dims[k] = {lo, hi};
  }
  return s;
}

std::string Session::source_line(uint32_t file, uint32_t line) {
  if (file >= mod_.files.size()) return "";
  const std::string& path = mod_.files[file];
  auto it = source_cache_.find(path);
  if (it == source_cache_.end()) {
    std::vector<std::string> lines;
    std::ifstream f(path);
    for (std::string l; std::getline(f, l);) lines.push_back(l);
    it = source_cache_.emplace(path, std::move(lines)).first;
  }
  return line >= 1 && line <= it->second.size() ? it->second[line - 1] : "";
}

std::string Session::location_line(const StepEvent& ev) const {
  std::string who = who_of(*m_, ev.core);
  std::string agent = ev.dma_queue >= 0 ? fmt::format("q{}: transfer of {}[{}]", ev.dma_queue,
                                                      name_of(ev.engine), ev.pc)
                                        : fmt::format("{}[{}]", name_of(ev.engine), ev.pc);
  const DebugLoc* d = loc_of(ev.engine, ev.pc);
  std::string at = d ? fmt::format(" at {}:{}", basename_of(mod_.files[d->file]), d->line) : "";
  return fmt::format("{}{}{}, completes at t = {}", who, agent, at, ns(ev.time));
}

void Session::print_stop() {
  std::optional<StepEvent> ev = sched_->peek();
  if (!ev) return print_end();
  cur_core_ = ev->core;
  out_ << location_line(*ev) << "\n";
  if (const DebugLoc* d = loc_of(ev->engine, ev->pc)) {
    std::string text = source_line(d->file, d->line);
    if (!text.empty()) out_ << fmt::format("{:>6}  {}\n", d->line, text);
  }
  out_ << "   => " << describe_inst(mod_, mod_.streams[int(ev->engine)][size_t(ev->pc)]) << "\n";
}

void Session::print_end() {
  const RunResult& r = sched_->result();
  if (r.status == RunStatus::ok) {
    out_ << fmt::format("The kernel finished at t = {} ({} events).\n", ns(sched_->now()), steps_);
    return;
  }
  out_ << r.report;
  out_ << fmt::format("Stopped by the {} at t = {}; the machine state is kept for inspection "
                      "(info engines, print, x).\n",
                      r.status == RunStatus::deadlock ? "deadlock"
                      : r.status == RunStatus::fault  ? "fault"
                                                      : "budget",
                      ns(sched_->now()));
  out_ << engines_text();
}

std::string Session::where_text(Engine e, int64_t pc) const {
  const DebugLoc* d = loc_of(e, pc);
  if (!d) return fmt::format("#0  {}[{}]\n", name_of(e), pc);
  auto file = [&](uint32_t f) { return f < mod_.files.size() ? mod_.files[f] : std::string("?"); };
  std::string s =
      fmt::format("#0  {}[{}] at {}:{}:{}\n", name_of(e), pc, file(d->file), d->line, d->col);
  int depth = 1;
  for (int32_t f = d->frame; f >= 0 && size_t(f) < mod_.frames.size(); f = mod_.frames[f].parent) {
    const ExpansionFrame& fr = mod_.frames[size_t(f)];
    const char* what = fr.kind == ExpansionFrame::Macro     ? "in expansion of macro"
                       : fr.kind == ExpansionFrame::ForIter ? "in .for iteration"
                                                            : "in file included";
    s += fmt::format("#{}  {} {} at {}:{}:{}\n", depth++, what, fr.what, file(fr.file), fr.line,
                     fr.col);
  }
  return s;
}

std::string Session::engines_text() {
  std::string s;
  int width = m_->num_cores() > 1 ? 22 : 10;
  // Queues with no transfer yet are not agents: list them per core in one line at the end.
  std::vector<std::array<bool, kNumDmaQueues>> seen(size_t(m_->num_cores()));
  for (const AgentState& a : sched_->agents()) {
    const CoreSlot& cs = m_->cores[size_t(a.core)];
    if (a.queue >= 0) seen[size_t(a.core)][size_t(a.queue)] = true;
    std::string agent = who_of(*m_, a.core) + (a.queue >= 0 ? fmt::format("q{}", a.queue)
                                                            : std::string(name_of(a.engine)));
    if (a.queue >= 0) {
      if (a.queued.empty()) {
        s += fmt::format("  {:<{}} idle\n", agent, width);
        continue;
      }
      auto [e, pc] = a.queued.front();
      const DebugLoc* d = loc_of(e, pc);
      s += fmt::format(
          "  {:<{}} running  transfer of {}[{}]{}, ends t = {}{}\n", agent, width, name_of(e), pc,
          d ? fmt::format(" ({}:{})", basename_of(mod_.files[d->file]), d->line) : "",
          ns(a.spans.front().second),
          a.queued.size() > 1 ? fmt::format(", {} more queued", a.queued.size() - 1) : "");
      continue;
    }
    const auto& stream = mod_.streams[int(a.engine)];
    if (a.state == AgentState::done) {
      s += fmt::format("  {:<{}} done{}\n", agent, width,
                       stream.empty() ? " (no instructions)" : "");
      continue;
    }
    const DebugLoc* d = loc_of(a.engine, a.pc);
    const Inst& in = stream[size_t(a.pc)];
    s += fmt::format("  {:<{}} {:<8} {}[{}]{}\n", agent, width, name_of(a.state), name_of(a.engine),
                     a.pc,
                     d ? fmt::format(" {}:{}", basename_of(mod_.files[d->file]), d->line) : "");
    s += fmt::format("             {}\n", describe_inst(mod_, in));
    if (a.state == AgentState::waiting)
      for (const Wait& w : in.waits) {
        uint32_t v = w.sem < cs.st.sems.size() ? cs.st.sems[w.sem] : 0;
        bool ok = w.cmp == WaitCmp::ge ? v >= w.value : v == w.value;
        if (!ok)
          s += fmt::format("             waits for {} {} {} (value {}) since t = {}\n",
                           w.sem < mod_.sems.size() ? mod_.sems[w.sem].name : "?", name_of(w.cmp),
                           w.value, v, ns(a.since));
      }
  }
  for (int c = 0; c < m_->num_cores(); ++c) {
    std::string idle;
    for (int q = 0; q < kNumDmaQueues; ++q) {
      if (seen[size_t(c)][size_t(q)]) continue;
      int e = q;
      while (e + 1 < kNumDmaQueues && !seen[size_t(c)][size_t(e + 1)]) ++e;
      idle += fmt::format("{}q{}", idle.empty() ? "" : ", ", q) +
              (e > q ? fmt::format("..q{}", e) : "");
      q = e;
    }
    if (!idle.empty()) s += fmt::format("  {}{} idle (no transfer yet)\n", who_of(*m_, c), idle);
  }
  return s;
}

uint8_t* Session::elem_ptr(const TensorDecl& t, const std::vector<int64_t>& idx, int core) const {
  uint64_t w = uint64_t(dtype_bytes(t.dtype));
  if (t.space == MemSpace::hbm) {
    uint64_t flat = 0;
    for (size_t k = 0; k < idx.size(); ++k) flat = flat * uint64_t(t.shape[k]) + uint64_t(idx[k]);
    return m_->hbm_tensor(m_->cores[size_t(core)].rank, t) + flat * w;
  }
  uint64_t flat = 0;
  for (size_t k = 1; k < idx.size(); ++k) flat = flat * uint64_t(t.shape[k]) + uint64_t(idx[k]);
  const CoreState& st = m_->cores[size_t(core)].st;
  bool sbuf = t.space == MemSpace::sbuf;
  uint64_t stride = sbuf ? st.sbuf_stride : st.psum_stride; // host layout
  return (sbuf ? st.sbuf : st.psum) + (uint64_t(t.part_start) + uint64_t(idx[0])) * stride +
         t.address + flat * w;
}

std::vector<uint8_t> Session::read_slice(const Slice& s, int core) const {
  std::vector<uint8_t> out;
  int w = dtype_bytes(s.tensor->dtype);
  out.reserve(s.elems() * uint64_t(w));
  for_each_index(s, [&](const std::vector<int64_t>& idx) {
    const uint8_t* p = elem_ptr(*s.tensor, idx, core);
    out.insert(out.end(), p, p + w);
  });
  return out;
}

std::vector<Region> Session::slice_regions(const Slice& s, int core) const {
  const TensorDecl& t = *s.tensor;
  uint64_t w = uint64_t(dtype_bytes(t.dtype));
  std::vector<Region> out;
  std::vector<int64_t> first, last;
  for (auto [a, b] : s.dims) first.push_back(a), last.push_back(b - 1);
  if (t.space != MemSpace::hbm) {
    const CoreState& st = m_->cores[size_t(core)].st;
    bool sbuf = t.space == MemSpace::sbuf;
    uint64_t pb = sbuf ? st.sbuf_stride : st.psum_stride; // host pointer -> modelled byte
    const uint8_t* base = sbuf ? st.sbuf : st.psum;
    Region r;
    r.kind = sbuf ? MemKind::sbuf : MemKind::psum;
    r.unit = uint16_t(core);
    r.p0 = uint32_t(t.part_start + s.dims[0].first);
    r.p1 = uint32_t(t.part_start + s.dims[0].second);
    first[0] = last[0] = s.dims[0].first;
    r.b0 = uint64_t(elem_ptr(t, first, core) - base) % pb;
    r.b1 = uint64_t(elem_ptr(t, last, core) - base) % pb + w;
    out.push_back(r);
    return out;
  }
  // hbm: one byte range per run of the last dimension, merged when adjacent.
  Slice rows = s;
  rows.dims.back() = {s.dims.back().first, s.dims.back().first + 1};
  const uint8_t* hbm = m_->ranks[size_t(m_->cores[size_t(core)].rank)].hbm.data();
  uint64_t run = uint64_t(s.dims.back().second - s.dims.back().first) * w;
  for_each_index(rows, [&](const std::vector<int64_t>& idx) {
    uint64_t b0 = uint64_t(elem_ptr(t, idx, core) - hbm);
    if (!out.empty() && out.back().b1 == b0) {
      out.back().b1 += run;
      return;
    }
    Region r;
    r.kind = MemKind::hbm;
    r.unit = uint16_t(m_->cores[size_t(core)].rank);
    r.p0 = 0, r.p1 = 1, r.b0 = b0, r.b1 = b0 + run;
    out.push_back(r);
  });
  return out;
}

std::string Session::format_slice(const Slice& s, char f, int core) {
  const TensorDecl& t = *s.tensor;
  if (!f) f = info(t.dtype).is_float ? 'f' : 'd';
  // Rows: the first dimension; columns: the rest, flattened.
  std::vector<std::vector<int64_t>> all;
  for_each_index(s, [&](const std::vector<int64_t>& idx) { all.push_back(idx); });
  size_t nrows = size_t(s.dims.empty() ? 1 : s.dims[0].second - s.dims[0].first);
  size_t ncols = all.size() / std::max<size_t>(nrows, 1);
  if (s.dims.size() == 1) nrows = 1, ncols = all.size();
  auto pick = [](size_t n) {
    std::vector<long> v; // -1: the elision mark
    if (n <= 8) {
      for (size_t i = 0; i < n; ++i) v.push_back(long(i));
    } else {
      for (size_t i = 0; i < 4; ++i) v.push_back(long(i));
      v.push_back(-1);
      for (size_t i = n - 4; i < n; ++i) v.push_back(long(i));
    }
    return v;
  };
  std::vector<long> rows = pick(nrows), cols = pick(ncols);
  bool part = t.space != MemSpace::hbm;
  std::string shape;
  for (auto [a, b] : s.dims) shape += fmt::format("{}{}:{}", shape.empty() ? "" : ", ", a, b);
  std::string s_out = fmt::format(
      "{}[{}] {} in {}{} ({} elements){}\n", t.name, shape, dtype_name(t.dtype), name_of(t.space),
      part && m_->num_cores() > 1 ? fmt::format(" core {}", core) : "", all.size(),
      s.dims.size() > 2 ? "; columns are the free indices flattened" : "");
  auto label = [&](long c) -> std::string {
    if (c < 0) return "...";
    const auto& idx = all[size_t(c)];
    if (s.dims.size() == 1) return fmt::format("[{}]", idx[0]);
    if (s.dims.size() == 2) return fmt::format("[{}]", idx[1]);
    return fmt::format("[+{}]", c);
  };
  std::vector<std::vector<std::string>> cells;
  size_t width = 4;
  for (long r : rows) {
    std::vector<std::string> line;
    for (long c : cols) {
      if (r < 0 || c < 0) {
        line.push_back("...");
        continue;
      }
      line.push_back(
          format_value(t.dtype, elem_ptr(t, all[size_t(r) * ncols + size_t(c)], core), f));
      width = std::max(width, line.back().size());
    }
    cells.push_back(std::move(line));
  }
  for (long c : cols) width = std::max(width, label(c).size());
  std::string head = fmt::format("{:>8}", part ? "part" : "");
  for (long c : cols) head += fmt::format(" {:>{}}", label(c), width);
  s_out += head + "\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    long r = rows[i];
    std::string rl =
        r < 0 ? "..."
        : s.dims.size() == 1
            ? ""
            : fmt::format("{}{}", part ? "p" : "[", all[size_t(r) * ncols][0]) + (part ? "" : "]");
    std::string line = fmt::format("{:>8}", rl);
    for (const std::string& c : cells[i]) line += fmt::format(" {:>{}}", c, width);
    s_out += line + "\n";
  }
  return s_out;
}

} // namespace nisa::interp::debug
