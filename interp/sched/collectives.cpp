#include "interp/sched/collectives.h"

#include <algorithm>
#include <cstring>

#include "interp/core/cost.h"
#include "interp/engines/collective.h"
#include "interp/sched/uninit.h"
#include "isa/op_index.h"

namespace nisa::interp::detail {

void record_trigger(SchedState& x, int c, int e, const PInst& P) {
  CoreRt& C = x.cores[c];
  CcArrivalRec rec;
  CcArrival& a = rec.a;
  a.core = c;
  a.eng = uint8_t(e);
  a.pc = uint32_t(C.eng[e].pc);
  a.pi = &P;
  a.at = C.now;
  a.node = C.eng[e].node;
  std::memcpy(a.regs, C.eng[e].cx.regs, sizeof a.regs);
  if (x.o.observer) x.o.observer->enqueue(c, Engine(e), a.pc, kNumDmaQueues + P.queue);
  const CoreSlot& cs = x.m.cores[c];
  rec.members = CcUnit::members(x.mod, x.m.opt.ranks, cs.rank, *P.in);
  CcRing ring = cc_ring_cost(P.in->op, P.bytes, rec.members.size());
  a.min_cost = std::max<int64_t>(1, cc_transfer_ticks(*x.m.tp, ring.steps, ring.link_bytes,
                                                      x.m.opt.cost_scale[int(CostUnit::cc)]));
  for (int& r : rec.members) r = r * x.m.opt.lnc + cs.core;
  // Nothing another core does can reach this one before the transfer could end.
  C.horizon = std::min(C.horizon, a.at + a.min_cost);
  C.cc.push_back(std::move(rec));
}

bool Collectives::match(int64_t safe) {
  if (pending_.empty()) return false;
  std::stable_sort(pending_.begin(), pending_.end(),
                   [](const CcArrivalRec& x, const CcArrivalRec& y) {
                     return x.a.at != y.a.at       ? x.a.at < y.a.at
                            : x.a.core != y.a.core ? x.a.core < y.a.core
                                                   : x.a.eng < y.a.eng;
                   });
  size_t n = 0;
  while (n < pending_.size() && pending_[n].a.at < safe && !x_.stopped) {
    match(pending_[n]);
    ++n;
  }
  pending_.erase(pending_.begin(), pending_.begin() + long(n));
  return n > 0;
}

void Collectives::match(const CcArrivalRec& rec) {
  const CcArrival& a = rec.a;
  const PInst& P = *a.pi;
  const int ch = P.queue;
  x_.cur_core = a.core, x_.cur_eng = a.eng, x_.cur_pc = a.pc;
  if (!cc_.arrive(a, ch, P.in->ops[op::collective::group].i, rec.members, party_)) return;
  // Every rank triggered it: start when the channel of every participant is free.
  int64_t begin = a.at;
  for (const CcArrival& w : party_) begin = std::max(begin, cc_.free_at(w.core, ch));
  CcRing ring = cc_ring_cost(P.in->op, P.bytes, party_.size());
  const int c0 = party_[0].core, agent = kNumEngines + kNumDmaQueues + ch;
  int64_t ticks = std::max<int64_t>(1, cc_transfer_ticks(*x_.m.tp, ring.steps, ring.link_bytes,
                                                         x_.m.opt.cost_scale[int(CostUnit::cc)]));
  int64_t end = begin + x_.jitter(c0, agent, ticks);
  // Never before a participant's horizon let it run (its own cost bound, docs/machine.md).
  for (const CcArrival& w : party_) end = std::max(end, a.at + w.min_cost);
  // History: a node per participant (consecutive ids from `node`), each released by what set
  // `begin`: the last trigger (`a`, last in match's order) or a participant's channel.
  int64_t node = -1;
  if (x_.o.history) {
    HistNode n;
    n.kind = HistKind::cc;
    n.start = begin;
    n.end = n.data_end = end;
    n.ready = a.at;
    n.pred = a.node, n.pred_at = a.at;
    if (begin > a.at)
      for (const CcArrival& w : party_)
        if (cc_.free_at(w.core, ch) == begin) {
          n.pred = last_node_[size_t(w.core) * kNumCcChannels + size_t(ch)], n.pred_at = begin;
          break;
        }
    n.queue = uint8_t(ch);
    for (size_t i = 0; i < party_.size(); ++i) {
      n.pc = party_[i].pc;
      n.core = party_[i].core;
      n.engine = party_[i].eng;
      const int64_t id = x_.add_node(int(x_.cores.size()), n);
      if (i == 0) node = id;
    }
  }
  for (size_t i = 0; i < party_.size(); ++i) {
    const CcArrival& w = party_[i];
    if (node >= 0) last_node_[size_t(w.core) * kNumCcChannels + size_t(ch)] = node + int64_t(i);
    cc_.free_at(w.core, ch) = end;
    ChanStats& st = x_.res.stats.cores[w.core].chan[ch];
    ++st.transfers;
    st.bytes += ring.link_bytes;
    st.busy_ticks += end - begin;
  }
  cc_.inflight(c0, ch).push_back(CcXfer{party_, ch, begin, end, ring.link_bytes, node});
  sync_.push(x_.make_event(c0, end, agent));
}

void Collectives::limit_horizons(int64_t t) {
  for (const CcUnit::Waiting& w : cc_.waiting())
    bound_horizon(x_.cores[w.who.core], t, w.who.at, w.who.min_cost);
  for (const CcArrivalRec& r : pending_) bound_horizon(x_.cores[r.a.core], t, r.a.at, r.a.min_cost);
  for (size_t c = 0; c < x_.cores.size(); ++c)
    for (int ch = 0; ch < kNumCcChannels; ++ch)
      for (const CcXfer& x : cc_.inflight(int(c), ch))
        for (const CcArrival& w : x.who)
          x_.cores[w.core].horizon = std::min(x_.cores[w.core].horizon, x.end);
}

void Collectives::complete(const Event& sev) {
  const int c = int(sev.agent / kAgentsPerCore);
  const int ch = int(sev.agent % kAgentsPerCore) - kNumEngines - kNumDmaQueues;
  CcXfer x = std::move(cc_.inflight(c, ch).front());
  cc_.inflight(c, ch).pop_front();
  makespan_ = std::max(makespan_, sev.t);
  x_.now = std::max(x_.now, sev.t);
  const size_t n = x.who.size();
  x_.cur_core = x.who[0].core, x_.cur_eng = x.who[0].eng, x_.cur_pc = x.who[0].pc;
  ++x_.epoch;
  if (ex_.multi()) return complete_across_processes(sev, x, ch);
  const bool slow = x_.slow();
  std::vector<ExecCtx> cxs(n);
  std::vector<ExecCtx*> cxp(n);
  std::vector<const Inst*> ins(n);
  std::vector<ExecEvent> evs;
  for (size_t i = 0; i < n; ++i) {
    CcArrival& w = x.who[i];
    x_.cores[w.core].now = sev.t;
    cxs[i] = x_.cores[w.core].eng[w.eng].cx;
    cxs[i].regs = w.regs; // the registers at the trigger
    cxp[i] = &cxs[i];
    ins[i] = w.pi->in;
    if (slow)
      evs.push_back(ExecEvent{w.core, Engine(w.eng), int64_t(w.pc), kNumDmaQueues + ch, x.begin,
                              x.end, true});
  }
  if (slow) {
    if (x_.o.observer) x_.o.observer->collective(evs, cxp, ins);
    if (x_.m.opt.check_uninit)
      for (size_t i = 0; i < n; ++i) check_reads(x_.m, *cxp[i], *ins[i]);
  }
  run_collective(cxp, ins);
  if (slow) {
    if (x_.m.opt.check_uninit)
      for (size_t i = 0; i < n; ++i) mark_writes(x_.m, *cxp[i], *ins[i]);
    for (const CcArrival& w : x.who)
      x_.record(TimelineEvent::cc, w.core, kTrackChan0 + ch, w.eng, x.begin, x.end - x.begin,
                x.link_bytes, w.pc);
  }
  signal_participants(sev, x);
  if (slow && x_.o.observer)
    for (const ExecEvent& ev : evs) x_.o.observer->done(ev);
}

// A collective whose participants live in several processes (docs/machine.md "MPI
// processes"): each prepares its own, the sizes and faults go to all (who run the same
// checks), the sources go to the processes whose destinations need them, and each writes its
// own destinations.
void Collectives::complete_across_processes(const Event& sev, CcXfer& x, int ch) {
  const size_t n = x.who.size();
  CcParty p;
  p.mod = &x_.mod;
  p.side.resize(n);
  p.local.resize(n);
  std::vector<int> owner(n);
  for (size_t i = 0; i < n; ++i) {
    CcArrival& w = x.who[i];
    p.in.push_back(w.pi->in);
    p.side[i].rank = x_.m.cores[w.core].rank;
    p.local[i] = x_.m.local_core(w.core);
    owner[i] = ex_.owner(p.side[i].rank);
    x_.cores[w.core].now = sev.t;
    if (!p.local[i]) continue;
    ExecCtx cx = x_.cores[w.core].eng[w.eng].cx;
    cx.regs = w.regs; // the registers at the trigger
    cc_prepare(cx, *w.pi->in, p.side[i]);
  }
  ex_.share_sizes(p);
  cc_check(p); // the same Fault in every process
  ex_.share_sources(p, owner);
  cc_apply(p);
  if (x_.o.timeline)
    for (size_t i = 0; i < n; ++i) {
      const CcArrival& w = x.who[i];
      x_.tag = {x_.epoch, 0, i};
      if (p.local[i])
        x_.record(TimelineEvent::cc, w.core, kTrackChan0 + ch, w.eng, x.begin, x.end - x.begin,
                  x.link_bytes, w.pc);
    }
  signal_participants(sev, x);
}

// Every participant's signals (of this process's participants under MPI). A fault of an
// engine they wake is that core's, as if it had happened in the core's own run.
void Collectives::signal_participants(const Event& sev, const CcXfer& x) {
  for (size_t i = 0; i < x.who.size(); ++i) {
    const CcArrival& w = x.who[i];
    if (!x_.m.local_core(w.core)) continue;
    CoreRt& C = x_.cores[w.core];
    C.makespan = std::max(C.makespan, sev.t);
    C.cur_node = x.node >= 0 ? x.node + int64_t(i) : -1;
    x_.tag = {x_.epoch, 1, i};
    try {
      agents_.signal(w.core, *w.pi);
    } catch (const Fault& f) {
      x_.core_fault(w.core, Event{C.now, 0, uint32_t(w.core * kAgentsPerCore + C.cur_eng)},
                    f.what());
    }
  }
}

StepEvent Collectives::peek() const {
  const Event& ev = sync_.top();
  const int c = int(ev.agent / kAgentsPerCore),
            ch = int(ev.agent % kAgentsPerCore) - kNumEngines - kNumDmaQueues;
  const CcXfer& x = cc_.inflight(c, ch).front();
  StepEvent se;
  se.core = c;
  se.time = ev.t;
  se.engine = Engine(x.who[0].eng);
  se.pc = x.who[0].pc;
  se.dma_queue = kNumDmaQueues + ch;
  se.cc_channel = ch;
  return se;
}

} // namespace nisa::interp::detail
