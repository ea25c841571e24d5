// The five records the scheduler's processes exchange (interp/sched/exchange.h), each written
// and read here: the stop, the collective triggers, a collective's sides and sources, the
// cores' state and the statistics with the timeline.
#include "interp/sched/exchange.h"

#include <algorithm>
#include <array>
#include <stdexcept>

namespace nisa::interp::detail {

Exchange::Stop Exchange::stop(Stop mine) {
  if (!procs_) return mine;
  Bytes b;
  b.put(uint8_t(mine.fault));
  b.put(mine.fault ? mine.at : Event{});
  b.put(uint8_t(mine.budget));
  b.put_str(mine.text);
  b.put(uint8_t(mine.interrupted));
  Stop all;
  all.text = std::move(mine.text);
  for (auto& bytes : procs_->allgather(b.b)) {
    Bytes in{std::move(bytes)};
    const bool f = in.get<uint8_t>() != 0;
    const Event ev = in.get<Event>();
    all.budget |= in.get<uint8_t>() != 0;
    std::string t = in.get_str();
    all.interrupted |= in.get<uint8_t>() != 0;
    if (f && (!all.fault || all.at > ev)) all.fault = true, all.at = ev, all.text = std::move(t);
  }
  return all;
}

bool Exchange::arrivals(bool any, std::string& fault, std::vector<CcArrivalRec>& pending) {
  if (!procs_) {
    for (CoreRt& C : x_.cores) {
      for (CcArrivalRec& rec : C.cc) pending.push_back(std::move(rec));
      C.cc.clear();
    }
    return any;
  }
  Bytes mine;
  mine.put(uint8_t(any));
  mine.put_str(fault);
  for (const CoreRt& C : x_.cores)
    for (const CcArrivalRec& r : C.cc) {
      mine.put(int32_t(r.a.core));
      mine.put(r.a.eng);
      mine.put(r.a.pc);
      mine.put(r.a.at);
      mine.put(r.a.min_cost);
      mine.put(r.a.node);
      for (int32_t v : r.a.regs) mine.put(v);
      mine.put(uint32_t(r.members.size()));
      for (int k : r.members) mine.put(int32_t(k));
    }
  for (CoreRt& C : x_.cores) C.cc.clear();
  any = false;
  fault.clear();
  const Program& prog = *x_.program;
  for (auto& b : procs_->allgather(mine.b)) {
    Bytes in{std::move(b)};
    any |= in.get<uint8_t>() != 0;
    std::string f = in.get_str();
    if (fault.empty()) fault = std::move(f);
    while (!in.done()) {
      CcArrivalRec r;
      r.a.core = in.get<int32_t>();
      r.a.eng = in.get<uint8_t>();
      r.a.pc = in.get<uint32_t>();
      r.a.at = in.get<int64_t>();
      r.a.min_cost = in.get<int64_t>();
      r.a.node = in.get<int64_t>();
      for (int32_t& v : r.a.regs) v = in.get<int32_t>();
      if (r.a.core < 0 || size_t(r.a.core) >= x_.cores.size() || r.a.eng >= kNumEngines ||
          r.a.pc >= prog.prog[r.a.eng].size())
        throw Error("MPI: a bad collective arrival record");
      r.a.pi = &prog.prog[r.a.eng][r.a.pc];
      r.members.resize(in.get<uint32_t>());
      for (int& k : r.members) k = in.get<int32_t>();
      pending.push_back(std::move(r));
    }
  }
  return any;
}

void Exchange::share_sizes(CcParty& p) {
  if (!procs_) return;
  const size_t n = p.side.size();
  Bytes mine;
  for (size_t i = 0; i < n; ++i) {
    if (!p.local[i]) continue;
    const CcSide& sd = p.side[i];
    mine.put(uint64_t(i));
    mine.put_str(sd.fault);
    mine.put(sd.src_dtype);
    mine.put(sd.src_elems);
    mine.put(sd.dst_elems);
    mine.put(sd.src_rows);
    mine.put(sd.src_cols);
  }
  for (auto& b : procs_->allgather(mine.b)) {
    Bytes in{std::move(b)};
    while (!in.done()) {
      const size_t i = size_t(in.get<uint64_t>());
      if (i >= n) throw Error("MPI: a bad collective record");
      CcSide& sd = p.side[i];
      sd.fault = in.get_str();
      sd.src_dtype = in.get<DType>();
      sd.src_elems = in.get<uint64_t>();
      sd.dst_elems = in.get<uint64_t>();
      sd.src_rows = in.get<uint32_t>();
      sd.src_cols = in.get<uint64_t>();
    }
  }
}

void Exchange::share_sources(CcParty& p, const std::vector<int>& owner) {
  if (!procs_) return;
  // Each source to every other process whose destinations need it, in one global order.
  const size_t n = p.side.size();
  const int me = procs_->rank();
  for (int q = 0; q < procs_->size(); ++q) {
    std::vector<bool> writes(n);
    for (size_t i = 0; i < n; ++i) writes[i] = owner[i] == q;
    const std::vector<bool> needs = cc_sources_needed(p, writes);
    for (size_t i = 0; i < n; ++i) {
      if (!needs[i] || owner[i] == q) continue;
      CcSide& sd = p.side[i];
      if (owner[i] == me) {
        procs_->send(q, sd.src.data(), sd.src.size(), 1);
      } else if (q == me) {
        sd.src.resize(size_t(sd.src_elems) * dtype_bytes(sd.src_dtype));
        procs_->recv(owner[i], sd.src.data(), sd.src.size(), 1);
      }
    }
  }
}

// The history's core lists to rank 0 (the collectives' list is the same in every process).
void Exchange::gather_history() {
  History& h = x_.res.history;
  if (!x_.o.history || h.lists.empty()) return;
  h.dropped = procs_->sum(h.dropped);
  if (procs_->rank() != 0) {
    Bytes mine;
    for (size_t c = 0; c < x_.cores.size(); ++c) {
      if (!x_.m.local_core(int(c))) continue;
      const std::vector<HistNode>& v = h.lists[c];
      mine.put(uint64_t(v.size()));
      for (const HistNode& n : v) mine.put(n);
    }
    const uint64_t k = mine.b.size();
    procs_->send(0, reinterpret_cast<const uint8_t*>(&k), sizeof k, 3);
    procs_->send(0, mine.b.data(), k, 3);
    return;
  }
  for (int p = 1; p < procs_->size(); ++p) {
    uint64_t k = 0;
    procs_->recv(p, reinterpret_cast<uint8_t*>(&k), sizeof k, 3);
    std::vector<uint8_t> b(k);
    procs_->recv(p, b.data(), k, 3);
    Bytes in{std::move(b)};
    const auto [lo, hi] = cores_of(p);
    for (int c = lo; c < hi; ++c) {
      std::vector<HistNode>& v = h.lists[size_t(c)];
      const uint64_t n = in.get<uint64_t>();
      if (n > (in.b.size() - in.at) / sizeof(HistNode)) throw Error("MPI: a bad history record");
      v.resize(n);
      for (HistNode& node : v) node = in.get<HistNode>();
    }
  }
}

std::pair<int, int> Exchange::cores_of(int p) const {
  return {Procs::lo(p, procs_->size(), x_.m.opt.ranks) * x_.m.opt.lnc,
          Procs::lo(p + 1, procs_->size(), x_.m.opt.ranks) * x_.m.opt.lnc};
}

void Exchange::gather_state() {
  if (!procs_) return;
  Bytes mine;
  for (size_t c = 0; c < x_.cores.size(); ++c) {
    if (!x_.m.local_core(int(c))) continue;
    const CoreRt& C = x_.cores[c];
    for (const EngRt& E : C.eng) {
      mine.put(E.pc);
      mine.put(E.st);
      mine.put(E.since);
    }
    for (uint32_t v : x_.m.cores[c].st.sems) mine.put(v);
    mine.put(C.now);
    mine.put(C.steps);
    mine.put(uint64_t(C.watched.size()));
    for (const auto& [agent, pcs] : C.watched) {
      mine.put(agent);
      mine.put(uint64_t(pcs.size()));
      for (auto [pc, k] : pcs) mine.put(pc), mine.put(k);
    }
  }
  std::vector<std::vector<uint8_t>> all = procs_->allgather(mine.b);
  for (int p = 0; p < procs_->size(); ++p) {
    if (p == procs_->rank()) continue;
    Bytes in{std::move(all[size_t(p)])};
    const auto [lo, hi] = cores_of(p);
    for (int c = lo; c < hi; ++c) {
      CoreRt& C = x_.cores[size_t(c)];
      for (EngRt& E : C.eng) {
        E.pc = in.get<int64_t>();
        E.st = in.get<St>();
        E.since = in.get<int64_t>();
      }
      for (uint32_t& v : x_.m.cores[size_t(c)].st.sems) v = in.get<uint32_t>();
      C.now = in.get<int64_t>();
      C.steps = in.get<uint64_t>();
      C.watched.clear();
      for (uint64_t k = in.get<uint64_t>(); k > 0; --k) {
        auto& pcs = C.watched[in.get<uint32_t>()];
        for (uint64_t j = in.get<uint64_t>(); j > 0; --j) {
          const int64_t pc = in.get<int64_t>();
          pcs[pc] = in.get<uint64_t>();
        }
      }
    }
  }
}

void Exchange::gather_stats() {
  if (!procs_) return;
  RunResult& res = x_.res;
  Bytes mine;
  for (size_t c = 0; c < x_.cores.size(); ++c)
    if (x_.m.local_core(int(c))) mine.put(res.stats.cores[c]);
  std::vector<std::vector<uint8_t>> all = procs_->allgather(mine.b);
  for (int p = 0; p < procs_->size(); ++p) {
    Bytes in{std::move(all[size_t(p)])};
    const auto [lo, hi] = cores_of(p);
    for (int c = lo; c < hi; ++c) res.stats.cores[size_t(c)] = in.get<CoreStats>();
  }
  gather_history();
  if (!x_.o.timeline) return;
  const uint64_t dropped = procs_->sum(res.timeline_dropped);
  const int me = procs_->rank();
  if (me != 0) {
    uint64_t k = res.timeline.size();
    procs_->send(0, reinterpret_cast<const uint8_t*>(&k), sizeof k, 2);
    procs_->send(0, reinterpret_cast<const uint8_t*>(res.timeline.data()),
                 k * sizeof(TimelineEvent), 2);
    procs_->send(0, reinterpret_cast<const uint8_t*>(x_.tags.data()), k * sizeof x_.tags[0], 2);
    res.timeline.clear();
    res.timeline_dropped = dropped;
    return;
  }
  struct Tagged {
    std::array<uint64_t, 3> tag;
    TimelineEvent ev;
  };
  std::vector<Tagged> merged;
  auto take = [&](const std::vector<TimelineEvent>& ev,
                  const std::vector<std::array<uint64_t, 3>>& tg) {
    for (size_t i = 0; i < ev.size(); ++i) merged.push_back({tg[i], ev[i]});
  };
  take(res.timeline, x_.tags);
  for (int p = 1; p < procs_->size(); ++p) {
    uint64_t k = 0;
    procs_->recv(p, reinterpret_cast<uint8_t*>(&k), sizeof k, 2);
    std::vector<TimelineEvent> ev(k);
    std::vector<std::array<uint64_t, 3>> tg(k);
    procs_->recv(p, reinterpret_cast<uint8_t*>(ev.data()), k * sizeof(TimelineEvent), 2);
    procs_->recv(p, reinterpret_cast<uint8_t*>(tg.data()), k * sizeof tg[0], 2);
    take(ev, tg);
  }
  std::stable_sort(merged.begin(), merged.end(),
                   [](const Tagged& a, const Tagged& b) { return a.tag < b.tag; });
  res.timeline.clear();
  uint64_t extra = 0;
  for (const Tagged& t : merged)
    if (res.timeline.size() < x_.timeline_cap)
      res.timeline.push_back(t.ev);
    else
      ++extra;
  res.timeline_dropped = dropped + extra;
}

} // namespace nisa::interp::detail
