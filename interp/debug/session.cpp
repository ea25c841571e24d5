#include "interp/debug/session.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "interp/npy.h"
#include "interp/target.h"

namespace nisa::interp::debug {
namespace {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r\n"), b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

std::vector<std::string> words(const std::string& s) {
  std::istringstream is(s);
  std::vector<std::string> out;
  for (std::string w; is >> w;) out.push_back(w);
  return out;
}

bool is_number(const std::string& s) {
  if (s.empty()) return false;
  size_t i = s[0] == '-' ? 1 : 0;
  if (s.size() > i + 2 && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X'))
    return s.find_first_not_of("0123456789abcdefABCDEF", i + 2) == std::string::npos;
  return i < s.size() && s.find_first_not_of("0123456789", i) == std::string::npos;
}

int64_t to_int(const std::string& s, const char* what) {
  if (!is_number(s)) throw Error(fmt::format("{}: '{}' is not a number", what, s));
  return std::stoll(s, nullptr, 0);
}

std::string ns(int64_t ticks) { return fmt::format("{:.3f} ns", ticks_to_ns(ticks)); }

std::string basename_of(const std::string& p) {
  size_t k = p.find_last_of('/');
  return k == std::string::npos ? p : p.substr(k + 1);
}

} // namespace

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
      lo = to_int(it, "slice index");
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

// Collects the byte extents each event reads and writes, while watchpoints exist.
class Session::Watcher final : public ExecObserver {
public:
  explicit Watcher(const Machine& m) : m_(m) {}
  bool active = false;
  std::vector<Region> regions;
  void exec(const ExecEvent& ev, ExecCtx& cx, const Inst& in) override {
    regions.clear();
    if (active && ev.runs_semantics) collect_accesses(m_, ev.core, cx, in, regions);
  }

private:
  const Machine& m_;
};

Session::Session(const Module& mod, const RunConfig& cfg, std::ostream& out)
    : mod_(mod), cfg_(cfg), out_(out) {
  MachineOptions mo = cfg_.machine;
  if (!cfg_.target_given) mo.target = mod.target;
  m_ = std::make_unique<Machine>(mod, mo);
  build_commands();
  start();
}

Session::~Session() = default;

void Session::start() {
  sched_.reset();
  m_->reset();
  bind_inputs(*m_, cfg_.inputs);
  races_ = std::make_unique<RaceChecker>(*m_);
  trace_ = std::make_unique<TraceRecorder>(*m_, TraceFilter{}, nullptr, true);
  bool active = watcher_ && watcher_->active;
  watcher_ = std::make_unique<Watcher>(*m_);
  watcher_->active = active;
  observers_.list = {races_.get(), trace_.get(), watcher_.get()};
  SchedOptions so = cfg_.sched;
  so.observer = &observers_;
  steps_ = 0;
  races_seen_ = 0;
  last_.reset();
  cur_core_ = 0;
  sched_ = std::make_unique<Scheduler>(*m_, so);
  for (Breakpoint& b : bps_)
    if (b.slice) b.snapshot = read_slice(*b.slice, b.core);
}

bool Session::do_step() {
  for (const RegEdit& e : edits_)
    if (e.step == steps_) m_->cores[size_t(e.core)].st.regs[e.engine][e.reg] = e.value;
  std::optional<StepEvent> ev = sched_->peek();
  bool more = sched_->step();
  ++steps_;
  last_ = ev;
  if (ev) cur_core_ = ev->core;
  return more;
}

void Session::replay_to(int64_t target) {
  std::erase_if(edits_, [&](const RegEdit& e) { return e.step > target; });
  start();
  while (steps_ < target && !sched_->finished()) do_step();
  for (const RegEdit& e : edits_) // made while stopped at the target: part of its state
    if (e.step == steps_) m_->cores[size_t(e.core)].st.regs[e.engine][e.reg] = e.value;
  for (Breakpoint& b : bps_)
    if (b.slice) b.snapshot = read_slice(*b.slice, b.core);
  races_seen_ = races_->races().size();
}

bool Session::not_running() {
  if (!sched_->finished()) return false;
  const RunResult& r = sched_->result();
  out_ << fmt::format("The kernel is not running ({}); use run or restart.\n",
                      r.status == RunStatus::ok         ? "it finished"
                      : r.status == RunStatus::deadlock ? "it deadlocked"
                                                        : "it faulted");
  return true;
}

const DebugLoc* Session::loc_of(Engine e, int64_t pc) const {
  const auto& d = mod_.debug[int(e)];
  return pc >= 0 && size_t(pc) < d.size() ? &d[size_t(pc)] : nullptr;
}

int Session::parse_engine(const std::string& s) const {
  for (int e = 0; e < kNumEngines; ++e)
    if (name_of(Engine(e)) == s) return e;
  if (s.size() > 1 && s[0] == 'q' && is_number(s.substr(1))) {
    int q = std::stoi(s.substr(1));
    if (q < kNumDmaQueues) return kNumEngines + q;
  }
  return -1;
}

// ---- views -------------------------------------------------------------------------------------

namespace {
// "rank R core C " of a core index, or "" on a single core.
std::string who_of(const Machine& m, int core) {
  std::string who;
  if (m.opt.ranks > 1) who += fmt::format("rank {} ", m.cores[size_t(core)].rank);
  if (m.opt.lnc > 1) who += fmt::format("core {} ", m.cores[size_t(core)].core);
  return who;
}
} // namespace

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
                      r.status == RunStatus::deadlock ? "deadlock" : "fault", ns(sched_->now()));
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
  uint64_t pb = sbuf ? st.sbuf_part_bytes : st.psum_part_bytes;
  return (sbuf ? st.sbuf : st.psum) + (uint64_t(t.part_start) + uint64_t(idx[0])) * pb + t.address +
         flat * w;
}

namespace {
// Calls f(index vector) for every element of a slice, row-major.
template <class F> void for_each_index(const Slice& s, F&& f) {
  std::vector<int64_t> idx;
  for (auto [a, b] : s.dims) idx.push_back(a);
  if (s.dims.empty()) return f(idx);
  while (true) {
    f(idx);
    size_t k = s.dims.size();
    while (k > 0) {
      --k;
      if (++idx[k] < s.dims[k].second) break;
      idx[k] = s.dims[k].first;
      if (k == 0) return;
    }
  }
}
} // namespace

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
    uint64_t pb = sbuf ? st.sbuf_part_bytes : st.psum_part_bytes;
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

namespace {
std::string format_value(DType t, const uint8_t* p, char f) {
  if (f == 'x') {
    uint64_t bits = 0;
    for (int b = dtype_bytes(t) - 1; b >= 0; --b) bits = bits << 8 | p[b];
    return fmt::format("0x{:0{}x}", bits, dtype_bytes(t) * 2);
  }
  if (f == 'd' && info(t).is_float) {
    float v = load_as_f32(t, p);
    return std::isfinite(v) ? fmt::format("{}", int64_t(v)) : fmt::format("{}", v);
  }
  if (f == 'd') return fmt::format("{}", load_as_int(t, p));
  return fmt::format("{:.6g}", load_as_f32(t, p));
}
} // namespace

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

// ---- breakpoints -------------------------------------------------------------------------------

namespace {
bool loc_matches(const Module& m, const DebugLoc* d, int file, int64_t line) {
  if (!d) return false;
  if ((file < 0 || int(d->file) == file) && d->line == line) return true;
  for (int32_t f = d->frame; f >= 0 && size_t(f) < m.frames.size(); f = m.frames[f].parent)
    if ((file < 0 || int(m.frames[f].file) == file) && m.frames[f].line == line) return true;
  return false;
}
} // namespace

int64_t Session::eval_term(const std::string& t, const StepEvent& ev) {
  if (is_number(t)) return std::stoll(t, nullptr, 0);
  if (t == "$time") return int64_t(ticks_to_ns(ev.time));
  if (t == "$core") return ev.core;
  if (t == "$pc") return ev.pc;
  size_t dot = t.find('.');
  std::string eng = dot == std::string::npos ? std::string(name_of(ev.engine)) : t.substr(0, dot);
  std::string reg = dot == std::string::npos ? t : t.substr(dot + 1);
  int e = parse_engine(eng);
  if (e >= 0 && e < kNumEngines && reg.size() > 1 && reg[0] == 'r' && is_number(reg.substr(1))) {
    int r = std::stoi(reg.substr(1));
    if (r < kNumRegs) return m_->cores[size_t(ev.core)].st.regs[e][r];
  }
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

// ---- running -----------------------------------------------------------------------------------

void Session::resume(const std::function<bool(const StepEvent&)>& stop_after) {
  if (not_running()) return;
  watcher_->active = std::any_of(bps_.begin(), bps_.end(), [](const Breakpoint& b) {
    return b.enabled && (b.kind == Breakpoint::watch || b.kind == Breakpoint::rwatch);
  });
  bool first = true;
  while (true) {
    std::optional<StepEvent> ev = sched_->peek();
    if (!ev) return print_end();
    if (!first && check_breakpoint(*ev)) {
      hit_steps_.push_back(steps_);
      return print_stop();
    }
    first = false;
    do_step();
    bool stop = false;
    if (watcher_->active && check_watchpoints()) {
      hit_steps_.push_back(steps_);
      stop = true;
    }
    if (races_->races().size() > races_seen_) {
      for (size_t i = races_seen_; i < races_->races().size(); ++i)
        if (check_races_) out_ << races_->report_text(races_->races()[i]);
      races_seen_ = races_->races().size();
      if (check_races_) {
        hit_steps_.push_back(steps_);
        stop = true;
      }
    }
    if (sched_->finished()) return print_end();
    if (stop || stop_after(*ev)) return print_stop();
  }
}

void Session::cmd_run(const std::string&) {
  edits_.clear();
  replay_to(0);
  hit_steps_.clear();
  out_ << fmt::format("Starting kernel {}.\n", mod_.kernel);
  // A breakpoint on the very first event counts: check it before resuming.
  if (auto ev = sched_->peek(); ev && check_breakpoint(*ev)) {
    hit_steps_.push_back(steps_);
    return print_stop();
  }
  resume([](const StepEvent&) { return false; });
}

void Session::cmd_continue(const std::string&) {
  resume([](const StepEvent&) { return false; });
}

void Session::cmd_step(const std::string& a) {
  std::vector<std::string> w = words(a);
  int eng = -1;
  int64_t n = 1;
  if (!w.empty() && !is_number(w[0])) {
    eng = parse_engine(w[0]);
    if (eng < 0)
      throw Error(fmt::format("step: unknown engine '{}' (pe act dve pool sp cc q0..q15)", w[0]));
    w.erase(w.begin());
  }
  if (!w.empty()) n = to_int(w[0], "step count");
  if (n < 1) throw Error("step: the count must be at least 1");
  int64_t seen = 0;
  resume([&](const StepEvent& ev) {
    bool mine = eng < 0 || (eng < kNumEngines ? ev.dma_queue < 0 && int(ev.engine) == eng
                                              : ev.dma_queue == eng - kNumEngines);
    return mine && ++seen >= n;
  });
}

void Session::cmd_next(const std::string&) {
  if (not_running()) return;
  StepEvent ev0 = *sched_->peek();
  if (ev0.dma_queue >= 0) return cmd_step("");
  const DebugLoc* d0 = loc_of(ev0.engine, ev0.pc);
  int32_t f0 = d0 ? d0->frame : -1;
  uint32_t line0 = d0 ? d0->line : 0;
  // Stop before the engine's next instruction that is on another line of the same expansion
  // level, or outside it; deeper expansions (macros, .for iterations) are stepped over.
  resume([&](const StepEvent&) {
    auto nx = sched_->peek();
    if (!nx || nx->dma_queue >= 0 || nx->engine != ev0.engine || nx->core != ev0.core) return false;
    const DebugLoc* d = loc_of(nx->engine, nx->pc);
    if (!d) return true;
    if (d->frame == f0) return d->line != line0;
    for (int32_t f = d->frame; f >= 0; f = mod_.frames[size_t(f)].parent)
      if (f == f0) return false; // deeper
    return f0 >= 0;              // outside the current expansion (or nested, at top level)
  });
}

void Session::cmd_finish(const std::string&) {
  if (not_running()) return;
  StepEvent ev0 = *sched_->peek();
  const DebugLoc* d0 = loc_of(ev0.engine, ev0.pc);
  if (!d0 || d0->frame < 0)
    throw Error("finish: the stop is not inside a macro expansion or .for iteration");
  int32_t f0 = d0->frame;
  resume([&](const StepEvent&) {
    auto nx = sched_->peek();
    if (!nx || nx->dma_queue >= 0 || nx->engine != ev0.engine || nx->core != ev0.core) return false;
    const DebugLoc* d = loc_of(nx->engine, nx->pc);
    if (!d) return true;
    for (int32_t f = d->frame; f >= 0; f = mod_.frames[size_t(f)].parent)
      if (f == f0) return false;
    return true;
  });
}

void Session::cmd_until(const std::string& a) {
  if (trim(a).empty()) return cmd_next("");
  std::string spec = trim(a);
  int file = 0;
  size_t colon = spec.rfind(':');
  if (colon != std::string::npos) {
    std::string fname = spec.substr(0, colon);
    file = -1;
    for (size_t i = 0; i < mod_.files.size(); ++i)
      if (mod_.files[i] == fname || basename_of(mod_.files[i]) == fname) file = int(i);
    if (file < 0) throw Error(fmt::format("until: no source file '{}'", fname));
    spec = spec.substr(colon + 1);
  }
  int64_t line = to_int(spec, "until");
  resume([&](const StepEvent&) {
    auto nx = sched_->peek();
    return nx && nx->dma_queue < 0 && loc_matches(mod_, loc_of(nx->engine, nx->pc), file, line);
  });
}

void Session::cmd_restart(const std::string&) {
  edits_.clear();
  replay_to(0);
  hit_steps_.clear();
  out_ << fmt::format("Restarted kernel {} at t = 0.\n", mod_.kernel);
  print_stop();
}

void Session::cmd_reverse_step(const std::string& a) {
  int64_t n = trim(a).empty() ? 1 : to_int(trim(a), "reverse-step");
  if (n < 1) throw Error("reverse-step: the count must be at least 1");
  if (steps_ == 0) throw Error("reverse-step: already at the start of the run");
  int64_t target = std::max<int64_t>(0, steps_ - n);
  replay_to(target);
  std::erase_if(hit_steps_, [&](int64_t s) { return s > target; });
  out_ << fmt::format("Replayed to event {}.\n", steps_);
  print_stop();
}

void Session::cmd_reverse_continue(const std::string&) {
  int64_t target = 0;
  for (int64_t s : hit_steps_)
    if (s < steps_) target = std::max(target, s);
  replay_to(target);
  std::erase_if(hit_steps_, [&](int64_t s) { return s > target; });
  out_ << (target == 0 ? std::string("No earlier stop: back at the start of the run.\n")
                       : fmt::format("Back at the previous stop (event {}).\n", target));
  print_stop();
}

// ---- breakpoint commands -----------------------------------------------------------------------

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
    b.line_or_pc = to_int(spec.substr(colon + 1), "break: instruction index");
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

// ---- inspection --------------------------------------------------------------------------------

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
    int64_t n = w.size() > 1 ? to_int(w[1], "info timeline") : 10;
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
    uint64_t addr = uint64_t(to_int(rest, "x: address"));
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
    uint64_t off = uint64_t(to_int(rest.substr(c2 + 1), "x: offset"));
    const CoreState& st = m_->cores[size_t(cur_core_)].st;
    uint64_t pb = space == "sbuf" ? st.sbuf_part_bytes : st.psum_part_bytes;
    if (p < 0 || p >= kNumPartitions || off >= pb)
      throw Error(
          fmt::format("x: {}:{}:{:#x} is outside 128 partitions of {} bytes", space, p, off, pb));
    base = (space == "sbuf" ? st.sbuf : st.psum) + uint64_t(p) * pb + off;
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
  if (!trim(a).empty()) center = uint32_t(to_int(trim(a), "list"));
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
  int64_t v = to_int(trim(rest.substr(eq + 1)), "set var");
  size_t dot = lhs.find('.');
  auto nx = sched_->peek();
  int e = dot == std::string::npos ? (nx ? int(nx->engine) : -1) : parse_engine(lhs.substr(0, dot));
  std::string reg = dot == std::string::npos ? lhs : lhs.substr(dot + 1);
  if (e < 0 || e >= kNumEngines || reg.size() < 2 || reg[0] != 'r' || !is_number(reg.substr(1)) ||
      std::stoi(reg.substr(1)) >= kNumRegs)
    throw Error(fmt::format("set var: '{}' is not a register (ENGINE.r0 .. ENGINE.r63)", lhs));
  int r = std::stoi(reg.substr(1));
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

void Session::cmd_help(const std::string& a) {
  std::string name = trim(a);
  if (name.empty()) {
    out_ << "Commands (help CMD for details; an empty line repeats the last command):\n";
    for (const Command& c : commands_)
      out_ << fmt::format("  {:<18} {}\n", c.name + (c.alias.empty() ? "" : ", " + c.alias),
                          c.summary);
    return;
  }
  for (const Command& c : commands_)
    if (c.name == name || c.alias == name) {
      out_ << "usage: " << c.usage << "\n" << c.summary << "\n";
      if (!c.help.empty()) out_ << c.help << "\n";
      return;
    }
  throw Error(fmt::format("help: no command '{}'", name));
}

std::vector<std::string> Session::command_names() const {
  std::vector<std::string> n;
  for (const Command& c : commands_) n.push_back(c.name);
  return n;
}

bool Session::execute(const std::string& raw) {
  std::string line = trim(raw);
  if (line.empty() || line[0] == '#') return true;
  size_t sp = line.find_first_of(" \t/");
  std::string name = line.substr(0, sp);
  std::string args = sp == std::string::npos ? "" : line.substr(sp);
  if (!args.empty() && args[0] != '/') args = trim(args);
  if (name == "quit" || name == "q") return false;
  for (const Command& c : commands_)
    if (c.name == name || c.alias == name) {
      try {
        c.run(*this, args);
      } catch (const std::exception& e) {
        out_ << "error: " << e.what() << "\n";
      }
      return true;
    }
  out_ << fmt::format("error: unknown command '{}' (help lists the commands)\n", name);
  return true;
}

void Session::build_commands() {
  auto add = [&](std::string name, std::string alias, std::string usage, std::string summary,
                 std::string help, std::function<void(Session&, const std::string&)> run) {
    commands_.push_back(Command{std::move(name), std::move(alias), std::move(usage),
                                std::move(summary), std::move(help), std::move(run)});
  };
  add("run", "r", "run", "start the kernel from the beginning and run to a stop",
      "Resets memory, semaphores and registers (inputs are bound again) and runs until a "
      "breakpoint, watchpoint, race (with check-races on), deadlock, fault or the end.",
      [](Session& s, const std::string& a) { s.cmd_run(a); });
  add("continue", "c", "continue", "run until the next stop",
      "Runs from the current event, in modelled-time order, until a breakpoint or watchpoint "
      "hits, a race is found (check-races on), or the run ends (finish, deadlock or fault).",
      [](Session& s, const std::string& a) { s.cmd_continue(a); });
  add("step", "s", "step [ENGINE] [N]", "execute N events (of ENGINE only, if given)",
      "An event is an instruction completing on its engine, or a DMA transfer completing on its "
      "queue (ENGINE may be q0..q15). Events run in modelled-time order; after the step the "
      "next pending event is shown.",
      [](Session& s, const std::string& a) { s.cmd_step(a); });
  add("next", "n", "next", "step over to the next source line of the current engine",
      "Runs until the current engine's next instruction is on another line of the same "
      "expansion level; deeper macro expansions and .for iterations are stepped over whole. "
      "Other engines run as the schedule says.",
      [](Session& s, const std::string& a) { s.cmd_next(a); });
  add("until", "u", "until [FILE:]LINE", "run until an instruction of LINE is next",
      "Without LINE, the same as next.", [](Session& s, const std::string& a) { s.cmd_until(a); });
  add("finish", "", "finish", "run until the current engine leaves the current expansion",
      "The current expansion is the innermost macro expansion or .for iteration of the stop "
      "(see where).",
      [](Session& s, const std::string& a) { s.cmd_finish(a); });
  add("break", "b", "break FILE:LINE | LINE | LABEL | ENGINE:INDEX [if COND]",
      "stop before an instruction",
      "LINE matches instructions written on it and expansions requested on it (a macro call, "
      "a .for). COND is LHS OP RHS with OP one of == != < <= > >= over numbers, registers "
      "(dve.r3, or r3 of the stopping engine), semaphore names, $time (ns), $core and $pc.",
      [](Session& s, const std::string& a) { s.cmd_break(a, false); });
  add("tbreak", "", "tbreak SPEC [if COND]", "a breakpoint deleted after its first hit", "",
      [](Session& s, const std::string& a) { s.cmd_break(a, true); });
  add("watch", "", "watch TENSOR[slice]", "stop after an instruction writes the slice",
      "Any instruction or DMA transfer whose written byte range overlaps the slice stops the "
      "session; the changed elements are shown old -> new (the first 8). sbuf/psum slices "
      "are on the core of the current stop.",
      [](Session& s, const std::string& a) { s.cmd_watch(a, false); });
  add("rwatch", "", "rwatch TENSOR[slice]", "stop after an instruction reads the slice", "",
      [](Session& s, const std::string& a) { s.cmd_watch(a, true); });
  add("delete", "d", "delete [N...]", "delete breakpoints/watchpoints (all without N)", "",
      [](Session& s, const std::string& a) { s.cmd_delete(a); });
  add("disable", "", "disable [N...]", "disable breakpoints/watchpoints", "",
      [](Session& s, const std::string& a) { s.cmd_enable(a, false); });
  add("enable", "", "enable [N...]", "enable breakpoints/watchpoints", "",
      [](Session& s, const std::string& a) { s.cmd_enable(a, true); });
  add("info", "i",
      "info breakpoints|engines|queues|sems|registers [ENGINE]|tensors|timeline [N]|races",
      "show the state of the machine",
      "engines: every engine and DMA queue of every core: state (running, waiting, idle, "
      "done), current instruction and source line, and for a waiting engine the semaphore, "
      "its value and the value awaited. timeline: the last N trace records "
      "(docs/trace-format.md). races: the races found so far.",
      [](Session& s, const std::string& a) { s.cmd_info(a); });
  add("print", "p", "print TENSOR[slice] [/x|/d|/f] | ENGINE.rN | SEMAPHORE",
      "print a tensor slice as a grid, a register or a semaphore",
      "Rows are the first index (partitions for sbuf/psum), columns the remaining indices; "
      "large slices show their first and last 4 rows and columns. /x raw bits, /d integers, "
      "/f floats (the default for float dtypes).",
      [](Session& s, const std::string& a) { s.cmd_print(a); });
  add("x", "", "x/N SPACE:ADDR", "examine N raw bytes (sbuf:P:OFF, psum:P:OFF, hbm:ADDR)", "",
      [](Session& s, const std::string& a) { s.cmd_x(a); });
  add("list", "l", "list [LINE]", "source around the stop, with the line of each engine",
      "The margin names the engines whose next instruction comes from that line.",
      [](Session& s, const std::string& a) { s.cmd_list(a); });
  add("disas", "", "disas [ENGINE]", "disassemble around an engine's current instruction", "",
      [](Session& s, const std::string& a) { s.cmd_disas(a); });
  add("where", "bt", "where", "the expansion chain of the next event",
      "Innermost first: the instruction's line, then each macro expansion, .for iteration and "
      "include it came from.",
      [](Session& s, const std::string& a) { s.cmd_where(a); });
  add("set", "", "set var ENGINE.rN = V | set check-races on|off", "change a register or a setting",
      "Register changes are replayed by reverse-step and reverse-continue. With check-races "
      "on, the first access of an unordered pair stops the session (the checker always runs).",
      [](Session& s, const std::string& a) { s.cmd_set(a); });
  add("dump", "", "dump TENSOR FILE.npy", "save a whole tensor to a .npy file", "",
      [](Session& s, const std::string& a) { s.cmd_dump(a); });
  add("restart", "", "restart", "reset the machine to t = 0 (breakpoints are kept)", "",
      [](Session& s, const std::string& a) { s.cmd_restart(a); });
  add("reverse-step", "rs", "reverse-step [N]", "go back N events",
      "Deterministic replay: the run restarts and executes all but the last N events (with "
      "the same register changes), so memory, registers and semaphores equal those of a "
      "fresh run stopped there.",
      [](Session& s, const std::string& a) { s.cmd_reverse_step(a); });
  add("reverse-continue", "rc", "reverse-continue", "go back to the previous stop",
      "The previous breakpoint, watchpoint or race stop before the current event; the start "
      "of the run if there is none.",
      [](Session& s, const std::string& a) { s.cmd_reverse_continue(a); });
  add("help", "h", "help [CMD]", "list the commands, or describe one", "",
      [](Session& s, const std::string& a) { s.cmd_help(a); });
  add("quit", "q", "quit", "end the session", "", [](Session&, const std::string&) {});
}

} // namespace nisa::interp::debug
