// Stalls per semaphore and the hints, each detected from the run's history (docs/profile.md
// "Hints"): a hint names the line, the time at stake and what to change.
#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_set>

#include <fmt/format.h>

#include "interp/core/cost.h"
#include "interp/profile/analyse.h"
#include "isa/exec_kind.h"
#include "isa/op_index.h"

namespace nisa::interp::detail {

namespace {

// A semaphore's value after each change, in time order, and the node that made the change.
struct SemChange {
  int64_t t;
  uint32_t value;
  int64_t by;
};

// Every semaphore's history, replayed from the nodes' signals (at each node's end: an
// instruction's own, a DMA's or a collective's at its transfer's end) and sem_sets.
class SemReplay {
public:
  explicit SemReplay(const ProfileInput& in) : in_(in) {
    struct Op {
      int64_t t;
      int core;
      uint16_t sem;
      bool set;
      uint32_t v;
      int64_t by;
    };
    std::vector<Op> ops;
    for (int64_t id : in.ids) {
      const HistNode& n = in.h.at(id);
      if (n.end > in.makespan) continue;
      const Inst& i = in.inst(n);
      const ExecKind k = exec_kind(i);
      if (n.kind == HistKind::exec && (k == ExecKind::dma || k == ExecKind::collective)) continue;
      for (const Signal& s : i.signals) ops.push_back({n.end, n.core, s.sem, false, s.delta, id});
      if (n.kind == HistKind::exec && i.op == Opcode::sem_set)
        ops.push_back({n.end, n.core, uint16_t(i.ops[op::sem_set::sem].i), true,
                       uint32_t(i.ops[op::sem_set::value].i), id});
    }
    std::stable_sort(ops.begin(), ops.end(), [](const Op& a, const Op& b) { return a.t < b.t; });
    for (const Op& o : ops) {
      std::vector<SemChange>& v = changes_[{o.core, o.sem}];
      uint32_t cur = v.empty() ? init(o.sem) : v.back().value;
      v.push_back({o.t, o.set ? o.v : cur + o.v, o.by});
    }
  }

  // Whether wait w of core `core` held at `at` (changes at `at` included), and since when: the
  // change that made it true (by: -1 for the initial value, or when the walk back stopped at
  // `floor` or after kMaxWalk changes, since then only known to be at most that time).
  struct Since {
    bool held = false;
    int64_t t = 0;
    int64_t by = -1;
  };
  static constexpr size_t kMaxWalk = 64;
  Since satisfied_since(int core, const Wait& w, int64_t at, int64_t floor) const {
    auto holds = [&](uint32_t v) { return w.cmp == WaitCmp::ge ? v >= w.value : v == w.value; };
    auto it = changes_.find({core, w.sem});
    if (it == changes_.end()) return {holds(init(w.sem)), 0, -1};
    const std::vector<SemChange>& v = it->second;
    size_t j = size_t(std::upper_bound(v.begin(), v.end(), at,
                                       [](int64_t t, const SemChange& c) { return t < c.t; }) -
                      v.begin());
    if (!holds(j ? v[j - 1].value : init(w.sem))) return {false, at, -1};
    for (size_t steps = 0; j > 0; --j, ++steps) {
      const uint32_t before = j > 1 ? v[j - 2].value : init(w.sem);
      if (!holds(before)) return {true, v[j - 1].t, v[j - 1].by};
      if (v[j - 1].t < floor || steps >= kMaxWalk) return {true, v[j - 1].t, -2};
    }
    return {true, 0, -1};
  }

  // When every wait of node n (on its core) had held since, looked at from `at`.
  int64_t ready_since(const HistNode& n, int64_t at, int64_t floor) const {
    int64_t t = 0;
    for (const Wait& w : in_.inst(n).waits)
      t = std::max(t, satisfied_since(n.core, w, at, floor).t);
    return t;
  }

private:
  uint32_t init(uint16_t s) const { return s < in_.mod.sems.size() ? in_.mod.sems[s].init : 0; }
  const ProfileInput& in_;
  std::map<std::pair<int, uint16_t>, std::vector<SemChange>> changes_;
};

double ns(int64_t t) { return ticks_to_ns(t); }

// The semaphore of n's waits that the node `by` signalled (none: -1).
int stalled_on(const ProfileInput& in, const HistNode& n, const HistNode& by) {
  const Inst& b = in.inst(by);
  for (const Wait& w : in.inst(n).waits) {
    for (const Signal& s : b.signals)
      if (s.sem == w.sem) return w.sem;
    if (b.op == Opcode::sem_set && b.ops[op::sem_set::sem].i == w.sem) return w.sem;
  }
  return -1;
}

// The union of [start, end) of a unit's nodes on one core, sorted.
using Spans = std::vector<std::pair<int64_t, int64_t>>;
int64_t overlap(const Spans& busy, int64_t s, int64_t e) {
  int64_t o = 0;
  auto it = std::upper_bound(busy.begin(), busy.end(), std::pair<int64_t, int64_t>{s, INT64_MAX});
  if (it != busy.begin()) --it;
  for (; it != busy.end() && it->first < e; ++it)
    o += std::max<int64_t>(0, std::min(e, it->second) - std::max(s, it->first));
  return o;
}

} // namespace

std::vector<Stall> stalls(const ProfileInput& in) {
  std::map<std::pair<std::string, std::string>, Stall> by;
  std::map<std::pair<std::string, std::string>, std::set<SourceLine>> lines;
  for (int64_t id : in.ids) {
    const HistNode& n = in.h.at(id);
    if (n.kind != HistKind::exec || n.start <= n.ready || n.end > in.makespan) continue;
    const ExecKind k = exec_kind(in.inst(n));
    std::string sem = "(rendezvous)";
    if (k != ExecKind::barrier && k != ExecKind::send_recv) {
      if (!in.h.valid(n.pred)) continue;
      const int s = stalled_on(in, n, in.h.at(n.pred));
      sem = s >= 0 ? in.sem_name(uint16_t(s)) : "(other)";
    }
    const auto key = std::make_pair(std::string(name_of(Engine(n.engine))), sem);
    Stall& st = by[key];
    st.engine = key.first, st.sem = key.second;
    st.ticks += n.start - n.ready;
    ++st.count;
    if (in.h.valid(n.pred)) lines[key].insert(in.line(in.h.at(n.pred)));
  }
  std::vector<Stall> out;
  for (auto& [key, st] : by) {
    st.signalled_by.assign(lines[key].begin(), lines[key].end());
    out.push_back(std::move(st));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Stall& a, const Stall& b) { return a.ticks > b.ticks; });
  return out;
}

std::vector<Hint> hints(const ProfileInput& in) {
  const SemReplay sems(in);
  const History& h = in.h;
  const int64_t floor_ticks = std::max<int64_t>(1, in.makespan / 100); // 1% of the makespan
  std::vector<Hint> out;

  // Per core and engine, its instructions in stream order; per core and unit, the busy spans;
  // the triggers whose transfer is on the critical path.
  std::map<std::pair<int, int>, std::vector<int64_t>> streams;
  std::map<std::pair<int, std::string>, Spans> busy;
  std::unordered_set<int64_t> critical_transfer;
  for (int64_t id : in.ids) {
    const HistNode& n = h.at(id);
    if (n.kind == HistKind::exec) streams[{n.core, n.engine}].push_back(id);
    if (n.kind == HistKind::dma && in.on_path.count(id)) critical_transfer.insert(n.trigger);
    busy[{n.core, in.unit(n)}].push_back({n.start, n.end});
  }
  for (auto& [k, v] : busy) { // merged into disjoint sorted spans
    std::sort(v.begin(), v.end());
    Spans m;
    for (auto s : v)
      if (!m.empty() && s.first <= m.back().second)
        m.back().second = std::max(m.back().second, s.second);
      else
        m.push_back(s);
    v = std::move(m);
  }

  // trigger-blocks-stream: a DMA trigger stalled on its waits while the next instruction of its
  // stream was ready (its own waits held) and on the critical path (or its DMA transfer is).
  struct Held {
    int64_t critical = 0, total = 0;
    uint64_t count = 0;
    SourceLine next;
    std::string engine, sem;
  };
  std::map<SourceLine, Held> held;
  for (const auto& [key, ids] : streams)
    for (size_t i = 0; i + 1 < ids.size(); ++i) {
      const HistNode& n = h.at(ids[i]);
      const HistNode& m = h.at(ids[i + 1]);
      if (exec_kind(in.inst(n)) != ExecKind::dma || n.start <= n.ready || m.end > in.makespan)
        continue;
      const int64_t since = sems.ready_since(m, n.start, n.ready);
      const int64_t t = std::min(n.start, m.ready) - std::max(since, n.ready);
      if (t <= 0) continue;
      Held& x = held[in.line(n)];
      x.total += t;
      ++x.count;
      if (in.on_path.count(ids[i + 1]) || critical_transfer.count(ids[i + 1]))
        x.critical += t, x.next = in.line(m);
      x.engine = std::string(name_of(Engine(n.engine)));
      if (h.valid(n.pred) && x.sem.empty()) {
        const int s = stalled_on(in, n, h.at(n.pred));
        if (s >= 0) x.sem = in.sem_name(uint16_t(s));
      }
    }
  for (const auto& [src, x] : held)
    if (x.critical >= floor_ticks)
      out.push_back({"trigger-blocks-stream",
                     fmt::format("{}: this DMA trigger waits on {} {} times and holds back {}'s "
                                 "next instruction ({}), ready meanwhile: {:.1f} ns on the "
                                 "critical path. Trigger it from another engine (a DMA can be "
                                 "issued from any engine), or place it later in {}'s stream",
                                 where(src), x.sem.empty() ? "its semaphores" : x.sem, x.count,
                                 x.engine, where(x.next), ns(x.critical), x.engine),
                     src, x.critical});

  // queue-serialises: transfers on the critical path that waited for their queue's earlier one
  // (not for the link). The time at stake is the part of that wait the link left free: the
  // earlier transfer's data time beyond its share of the link (none when a transfer takes every
  // DMA engine of the link: another queue would not have started it sooner).
  struct Queued {
    int64_t critical = 0;
    uint64_t count = 0;
    int queue = 0;
  };
  std::map<SourceLine, Queued> queued;
  const double dma_scale = in.m.opt.cost_scale[size_t(CostUnit::dma)];
  for (int64_t id : in.ids) {
    const HistNode& n = h.at(id);
    if (n.kind != HistKind::dma) continue;
    if (n.start <= n.ready || !h.valid(n.pred) || !in.on_path.count(id)) continue;
    const HistNode& p = h.at(n.pred);
    if (p.kind != HistKind::dma || p.queue != n.queue || p.core != n.core ||
        n.pred_at != p.data_end)
      continue;
    const Inst& pi = in.inst(p);
    const DmaTime t = dma_transfer(*in.m.tp, dma_bytes(pi), dma_rows(pi), dma_scale);
    const int64_t gain = std::min(n.start - n.ready, (p.data_end - p.start) - t.link_ticks);
    if (gain <= 0) continue;
    Queued& q = queued[in.line(n)];
    q.critical += gain;
    ++q.count;
    q.queue = n.queue;
  }
  for (const auto& [src, q] : queued)
    if (q.critical >= floor_ticks)
      out.push_back({"queue-serialises",
                     fmt::format("{}: {} transfers on the critical path waited for earlier "
                                 "transfers of queue q{} while the DMA link had room for them "
                                 "({:.1f} ns): spread them over more queues (the instruction's "
                                 "queue operand)",
                                 where(src), q.count, q.queue, ns(q.critical)),
                     src, q.critical});

  // idle-feeder: a compute instruction on the critical path that waited for a unit that then
  // idled while it ran (the feeder could have fetched the next inputs: double-buffer).
  struct Fed {
    int64_t idle = 0, critical = 0;
    std::string engine, feeder;
    SourceLine by;
  };
  std::map<SourceLine, Fed> fed;
  for (int64_t id : in.ids) {
    const HistNode& n = h.at(id);
    if (n.kind != HistKind::exec || n.start <= n.ready || !in.on_path.count(id) ||
        !h.valid(n.pred) || n.engine == int(Engine::sp) || n.engine == int(Engine::cc))
      continue;
    if (exec_kind(in.inst(n)) != ExecKind::engine) continue;
    const HistNode& p = h.at(n.pred);
    const std::string feeder = in.unit(p);
    if (feeder == in.unit(n)) continue;
    auto it = busy.find({n.core, feeder});
    const int64_t len = std::min(n.end, in.makespan) - n.start;
    const int64_t idle = len - (it == busy.end() ? 0 : overlap(it->second, n.start, n.start + len));
    Fed& f = fed[in.line(n)];
    f.idle += idle;
    f.critical += len;
    f.engine = in.unit(n);
    f.feeder = feeder;
    f.by = in.line(p);
  }
  for (const auto& [src, f] : fed)
    if (f.idle >= 5 * floor_ticks && 2 * f.idle >= f.critical)
      out.push_back(
          {"idle-feeder",
           fmt::format("{}: {} is on the critical path here for {:.1f} ns after "
                       "waiting for {} ({}), which idles {:.1f} ns of that time: give "
                       "it its next work before this instruction (double-buffer, or "
                       "split the work into independent chains)",
                       where(src), f.engine, ns(f.critical), f.feeder, where(f.by), ns(f.idle)),
           src, f.idle});

  // redundant-wait: a wait of a line that held every time its engine reached it (every
  // instruction the line assembled to, every time), made true each time by an earlier
  // instruction of the same engine (program order already orders them) or by the semaphore's
  // initial value.
  struct Waited {
    uint64_t times = 0;
    bool redundant = true, by_init = true;
    SourceLine src, by;
    std::string engine, sem, at;
  };
  std::map<std::tuple<SourceLine, int, size_t>, Waited> waits; // (line, engine, wait)
  for (int64_t id : in.ids) {
    const HistNode& n = h.at(id);
    if (n.kind != HistKind::exec || n.end > in.makespan) continue;
    const Inst& i = in.inst(n);
    for (size_t k = 0; k < i.waits.size(); ++k) {
      Waited& w = waits[{in.line(n), n.engine, k}];
      ++w.times;
      if (!w.redundant) continue;
      const SemReplay::Since since = sems.satisfied_since(n.core, i.waits[k], n.ready, 0);
      bool own = since.held && since.by != -2;
      if (own && since.by >= 0) {
        const HistNode& b = h.at(since.by);
        own = b.kind == HistKind::exec && b.core == n.core && b.engine == n.engine;
        if (own) w.by = in.line(b), w.by_init = false;
      }
      w.redundant = own;
      w.src = in.line(n);
      w.at = in.chain(n);
      w.at = w.at.substr(0, w.at.find(" (")); // the wait's own file:line:col
      w.engine = std::string(name_of(Engine(n.engine)));
      w.sem = in.sem_name(i.waits[k].sem);
    }
  }
  // Where the wait is written when that is not the line itself (a macro's body).
  auto at_text = [](const Waited& w) {
    const std::string line = where(w.src);
    return w.at.compare(0, line.size() + 1, line + ":") == 0 ? std::string() : " (at " + w.at + ")";
  };
  for (const auto& [key, w] : waits)
    if (w.redundant && w.times > 0)
      out.push_back(
          {"redundant-wait",
           w.by_init
               ? fmt::format(
                     "{}: the wait on {}{} held each of the {} times {} reached it, "
                     "from the semaphore's initial value on: in this run it orders nothing; "
                     "remove it unless another configuration (-D, --lnc) needs it",
                     where(w.src), w.sem, at_text(w), w.times, w.engine)
               : fmt::format("{}: the wait on {}{} held each of the {} times {} reached it, "
                             "made true by {}'s own earlier instruction ({}): program order "
                             "already puts that first here; remove it unless another configuration "
                             "(-D, --lnc) needs it",
                             where(w.src), w.sem, at_text(w), w.times, w.engine, w.engine,
                             where(w.by)),
           w.src, 0});
  std::stable_sort(out.begin(), out.end(),
                   [](const Hint& a, const Hint& b) { return a.ticks > b.ticks; });
  return out;
}

} // namespace nisa::interp::detail
