#include "interp/observe/race.h"

#include <algorithm>

#include <fmt/format.h>

#include "interp/core/mem_operands.h"

namespace nisa::interp {

namespace {

// Adds row p's extent [a, a + n) (host address) of a view to out, merging with the previous
// rectangle when it continues it. On chip the host address gives (partition, byte) by the host
// stride; the region is in modelled bytes.
void add_row(const Machine& m, int core, ExecCtx& cx, const uint8_t* a, uint64_t n, bool write,
             std::vector<Region>& out) {
  Region r;
  r.write = write;
  const CoreState& st = *cx.state;
  uint64_t sb = uint64_t(kNumPartitions) * st.sbuf_stride;
  uint64_t pb = uint64_t(kNumPartitions) * st.psum_stride;
  if (a >= st.sbuf && a < st.sbuf + sb) {
    uint64_t o = uint64_t(a - st.sbuf);
    r.kind = MemKind::sbuf, r.unit = uint16_t(core);
    r.p0 = uint32_t(o / st.sbuf_stride), r.p1 = r.p0 + 1;
    r.b0 = o % st.sbuf_stride, r.b1 = r.b0 + n;
  } else if (a >= st.psum && a < st.psum + pb) {
    uint64_t o = uint64_t(a - st.psum);
    r.kind = MemKind::psum, r.unit = uint16_t(core);
    r.p0 = uint32_t(o / st.psum_stride), r.p1 = r.p0 + 1;
    r.b0 = o % st.psum_stride, r.b1 = r.b0 + n;
  } else if (a >= cx.hbm && a < cx.hbm + cx.hbm_bytes) {
    r.kind = MemKind::hbm, r.unit = uint16_t(m.cores[size_t(core)].rank);
    r.p0 = 0, r.p1 = 1;
    r.b0 = uint64_t(a - cx.hbm), r.b1 = r.b0 + n;
  } else {
    return; // not machine memory (cannot happen for a resolved view)
  }
  if (!out.empty()) {
    Region& b = out.back();
    if (b.kind == r.kind && b.unit == r.unit && b.write == write) {
      if (r.kind == MemKind::hbm && r.b0 >= b.b0 && r.b0 <= b.b1) {
        b.b1 = std::max(b.b1, r.b1);
        return;
      }
      if (r.kind != MemKind::hbm && b.b0 == r.b0 && b.b1 == r.b1 && b.p1 == r.p0) {
        b.p1 = r.p1;
        return;
      }
    }
  }
  out.push_back(r);
}

void add_view(const Machine& m, int core, ExecCtx& cx, const View& v, bool write,
              std::vector<Region>& out) {
  int64_t lo = 0, hi = dtype_bytes(v.dtype);
  for (int k = 0; k < 4; ++k) {
    int64_t span = int64_t(v.count[k] ? v.count[k] - 1 : 0) * v.stride[k];
    (span < 0 ? lo : hi) += span;
  }
  if (v.free_elems == 0) return;
  for (uint32_t p = 0; p < v.parts; ++p) {
    if (!v.row_skip.empty() && v.row_skip[p]) continue;
    add_row(m, core, cx, v.row(p) + lo, uint64_t(hi - lo), write, out);
  }
}

} // namespace

void collect_accesses(const Machine& m, int core, ExecCtx& cx, const Inst& in,
                      std::vector<Region>& out) {
  const bool skip = oob_skip_of(in);
  for_each_mem_operand(in, [&](const OperandDesc&, const Operand& o, bool is_write) {
    try {
      if (o.ap.dyn == DynKind::vec) { // the index tile is read too (one element per row)
        const VecIndex& vi = o.ap.vidx;
        for (uint32_t p = 0; p < o.ap.part_count && vi.part_start + p < kNumPartitions; ++p)
          add_row(m, core, cx, cx.state->sbuf_at(vi.part_start + p, vi.offset),
                  uint64_t(dtype_bytes(vi.dtype)), false, out);
      }
      View v = cx.view(o.ap, is_write ? Access::write : Access::read, skip);
      add_view(m, core, cx, v, is_write, out);
    } catch (const Fault&) {
      // the semantics raise it with the full report
    }
  });
}

RaceChecker::RaceChecker(const Machine& m)
    : m_(m), agents_per_core_(kNumEngines + kNumDmaQueues + kNumCcChannels) {
  size_t n = size_t(m.num_cores()) * size_t(agents_per_core_);
  clk_.assign(n, Clock(n, 0));
  thresholds_.resize(m.mod->sems.size());
  for (const auto& stream : m.mod->streams)
    for (const Inst& in : stream)
      for (const Wait& w : in.waits)
        if (w.cmp == WaitCmp::ge && w.sem < thresholds_.size())
          thresholds_[w.sem].push_back(w.value);
  for (auto& t : thresholds_) {
    std::sort(t.begin(), t.end());
    t.erase(std::unique(t.begin(), t.end()), t.end());
  }
  sems_.assign(size_t(m.num_cores()), std::vector<SemHist>(m.mod->sems.size()));
  for (auto& core : sems_)
    for (size_t k = 0; k < core.size(); ++k) {
      core[k].base = m.mod->sems[k].init;
      core[k].at.assign(thresholds_[k].size(), Clock(n, 0));
    }
  pending_.resize(n);
  pending_head_.assign(n, 0);
  mems_.resize(size_t(std::max(m.num_cores(), m.opt.ranks)) * 3);
}

void RaceChecker::join(Clock& a, const Clock& b) {
  for (size_t i = 0; i < a.size(); ++i) a[i] = std::max(a[i], b[i]);
}

void RaceChecker::issue(int core, Engine e, int64_t pc) {
  const Inst& in = m_.mod->streams[int(e)][size_t(pc)];
  Clock& c = clk_[agent(core, e)];
  for (const Wait& w : in.waits) {
    if (w.sem >= sems_[size_t(core)].size()) continue;
    const SemHist& h = sems_[size_t(core)][w.sem];
    if (!h.any) continue;
    if (w.cmp == WaitCmp::ge) {
      if (h.base >= w.value) continue; // the initial value satisfied it: no signal needed
      const auto& t = thresholds_[w.sem];
      size_t k = size_t(std::lower_bound(t.begin(), t.end(), w.value) - t.begin());
      join(c, k < h.filled && t[k] == w.value ? h.at[k] : h.last);
    } else {
      join(c, h.last); // every signal so far led to the exact value
    }
  }
}

void RaceChecker::enqueue(int core, Engine e, int64_t, int queue) {
  pending_[qagent(core, queue)].push_back(clk_[agent(core, e)]);
}

void RaceChecker::rendezvous(const std::vector<std::pair<int, int>>& who) {
  Clock j(clk_[0].size(), 0);
  for (auto [c, e] : who) join(j, clk_[agent(c, Engine(e))]);
  for (auto [c, e] : who) clk_[agent(c, Engine(e))] = j;
}

// Each participant's channel agent starts from its trigger's clock; the transfer joins them all
// (every rank's data moves at once), then reads each source and writes each destination.
void RaceChecker::collective(const std::vector<ExecEvent>& evs, const std::vector<ExecCtx*>& cx,
                             const std::vector<const Inst*>& in) {
  Clock j(clk_[0].size(), 0);
  for (const ExecEvent& ev : evs) {
    uint32_t a = qagent(ev.core, ev.queue);
    auto& fifo = pending_[a];
    size_t& head = pending_head_[a];
    if (head < fifo.size()) {
      join(clk_[a], fifo[head]);
      if (++head == fifo.size()) fifo.clear(), head = 0;
    }
    ++clk_[a][a];
    join(j, clk_[a]);
  }
  for (const ExecEvent& ev : evs) clk_[qagent(ev.core, ev.queue)] = j;
  for (size_t i = 0; i < evs.size(); ++i) {
    cur_ = qagent(evs[i].core, evs[i].queue);
    ++events_;
    scratch_.clear();
    collect_accesses(m_, evs[i].core, *cx[i], *in[i], scratch_);
    RaceReport::Side side{evs[i].core, evs[i].engine, evs[i].pc, evs[i].queue, false};
    for (const Region& r : scratch_) {
      side.write = r.write;
      access(r, side);
    }
  }
  cur_ = qagent(evs[0].core, evs[0].queue); // the signals that follow carry the joined clock
}

void RaceChecker::sem(int core, uint16_t s, uint32_t value, bool set) {
  if (s >= sems_[size_t(core)].size()) return;
  SemHist& h = sems_[size_t(core)][s];
  if (set || (h.any && value < h.value)) { // a reset starts a new history
    h.base = 0;
    h.any = false;
    h.filled = 0;
  }
  if (h.any)
    join(h.last, clk_[cur_]);
  else
    h.last = clk_[cur_];
  h.any = true;
  h.value = value;
  const auto& t = thresholds_[s];
  while (h.filled < t.size() && t[h.filled] <= value) h.at[h.filled++] = h.last;
}

void RaceChecker::exec(const ExecEvent& ev, ExecCtx& cx, const Inst& in) {
  if (ev.queue >= 0) {
    cur_ = qagent(ev.core, ev.queue);
    auto& fifo = pending_[cur_];
    size_t& head = pending_head_[cur_];
    if (head < fifo.size()) {
      join(clk_[cur_], fifo[head]);
      if (++head == fifo.size()) fifo.clear(), head = 0;
    }
  } else {
    cur_ = agent(ev.core, ev.engine);
  }
  ++clk_[cur_][cur_];
  if (!ev.runs_semantics) return;
  ++events_;
  scratch_.clear();
  collect_accesses(m_, ev.core, cx, in, scratch_);
  RaceReport::Side side{ev.core, ev.engine, ev.pc, ev.queue, false};
  for (const Region& r : scratch_) {
    side.write = r.write;
    access(r, side);
  }
}

void RaceChecker::access(const Region& r, const RaceReport::Side& side) {
  ++accesses_;
  Mem& mem = mems_[mem_index(r)];
  const Clock& now = clk_[cur_];
  std::vector<Prev> carry; // records this access supersedes, for its own record
  auto report = [&](uint32_t agent, const RaceReport::Side& first, const Region& where) {
    std::array<int64_t, 6> key{agent, int64_t(first.engine), first.pc,
                               cur_,  int64_t(side.engine),  side.pc};
    if (!seen_.insert(key).second) return;
    RaceReport rep;
    rep.region = where.intersect(r);
    rep.region.write = r.write;
    rep.first = first;
    rep.second = side;
    races_.push_back(rep);
  };
  auto it = mem.recs.lower_bound(r.b0 > mem.longest ? r.b0 - mem.longest : 0);
  while (it != mem.recs.end() && it->first < r.b1) {
    Rec& x = it->second;
    if (!x.r.overlaps(r)) {
      ++it;
      continue;
    }
    bool ordered = x.agent == cur_ || now[x.agent] >= x.epoch;
    if (!ordered) {
      // The accesses x superseded precede x; one unordered with this access is a race of its
      // own (the direct pair), reported before the one through x.
      for (const Prev& p : x.prev)
        if ((p.side.write || r.write) && !(p.agent == cur_ || now[p.agent] >= p.epoch))
          report(p.agent, p.side, x.r);
      if (x.r.write || r.write) report(x.agent, x.side, x.r);
    }
    // A record the new access covers and follows is redundant: anything unordered with it is
    // unordered with the new access too (a read covers only reads). It is remembered in the
    // new record (at most kMaxPrev of them) so that races are reported with their direct pair.
    if (ordered && (r.write || !x.r.write) && r.covers(x.r)) {
      for (const Prev& p : x.prev) carry.push_back(p);
      if (x.agent != cur_ || x.side.pc != side.pc) carry.push_back(Prev{x.agent, x.epoch, x.side});
      it = mem.recs.erase(it);
    } else {
      ++it;
    }
  }
  if (carry.size() > kMaxPrev) carry.erase(carry.begin(), carry.end() - long(kMaxPrev));
  mem.recs.emplace(r.b0, Rec{r, cur_, now[cur_], side, std::move(carry)});
  mem.longest = std::max(mem.longest, r.b1 - r.b0);
}

namespace {
std::string grouped(uint64_t n) { // 12345 -> "12,345"
  std::string d = std::to_string(n), out;
  for (size_t k = 0; k < d.size(); ++k) {
    if (k && (d.size() - k) % 3 == 0) out += ',';
    out += d[k];
  }
  return out;
}
} // namespace

std::string RaceChecker::no_race_text() const {
  return fmt::format("check-races: no race in {} accesses ({} instructions and transfers)",
                     grouped(accesses_), grouped(events_));
}

size_t RaceChecker::state_size() const {
  size_t n = clk_.size() + races_.size() + seen_.size();
  for (const auto& core : sems_)
    for (const SemHist& h : core) n += 1 + h.at.size();
  for (const auto& p : pending_) n += p.size();
  for (const Mem& m : mems_)
    for (const auto& [k, rec] : m.recs) n += 1 + rec.prev.size();
  return n;
}

std::string RaceChecker::report_text(const RaceReport& r) const {
  auto line = [&](const RaceReport::Side& s) {
    std::string who = m_.num_cores() > 1 ? fmt::format("core {} ", s.core) : "";
    std::string agent =
        s.queue >= kNumDmaQueues ? fmt::format("cc ch{} (collective of {}[{}])",
                                               s.queue - kNumDmaQueues, name_of(s.engine), s.pc)
        : s.queue >= 0 ? fmt::format("q{} (transfer of {}[{}])", s.queue, name_of(s.engine), s.pc)
                       : fmt::format("{}[{}]", name_of(s.engine), s.pc);
    const Inst& in = m_.mod->streams[int(s.engine)][size_t(s.pc)];
    return fmt::format("    {} {}{} at {}\n      {}\n", s.write ? "write by" : "read by ", who,
                       agent, source_of(*m_.mod, s.engine, s.pc), describe_inst(*m_.mod, in));
  };
  return fmt::format("race on {}:\n{}{}    (no semaphore, barrier or program order between them)\n",
                     region_text(m_, r.region), line(r.first), line(r.second));
}

} // namespace nisa::interp
