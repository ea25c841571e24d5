#include "interp/sched/rendezvous.h"

#include <algorithm>

#include "interp/core/cost.h"
#include "interp/engines/collective.h"
#include "interp/sched/uninit.h"

namespace nisa::interp::detail {

void record_rendezvous(SchedState& x, int c, int e, int kind, int64_t key) {
  CoreRt& C = x.cores[c];
  EngRt& E = C.eng[e];
  E.st = St::rendezvous;
  E.since = C.now;
  E.rdv_pred = C.cur_node;
  C.rdv.push_back(RdvArrival{uint8_t(e), uint8_t(kind), key});
  // The release lands no earlier than the instruction's latency after this arrival.
  const int64_t lat = E.prog[E.pc].lat;
  C.horizon = std::min(C.horizon, C.now > kNever - lat ? kNever : C.now + lat);
}

void Rendezvous::arrive(int c, int e, int kind, int64_t key) {
  const CoreSlot& cs = x_.m.cores[c];
  Party& party = parties_[{cs.rank, kind * 64 + (kind == 0 ? e : 0), key}];
  party.arrived.emplace_back(c, e);
  std::vector<int> members;
  for (int k = 0; k < x_.m.opt.lnc; ++k) members.push_back(cs.rank * x_.m.opt.lnc + k);
  for (int mc : members) {
    bool found = false;
    for (auto& [pc_, pe_] : party.arrived) found |= pc_ == mc;
    if (!found) return; // still waiting for someone
  }
  std::vector<std::pair<int, int>> go;
  for (int mc : members)
    for (auto it = party.arrived.begin(); it != party.arrived.end(); ++it)
      if (it->first == mc) {
        go.push_back(*it);
        party.arrived.erase(it);
        break;
      }
  // The last arrival (its engine's `since`) releases the party: matched in any order.
  int64_t at = 0;
  for (auto [gc, ge] : go) at = std::max(at, x_.cores[gc].eng[ge].since);
  release(kind, go, at);
}

void Rendezvous::release(int kind, const std::vector<std::pair<int, int>>& go, int64_t now) {
  int64_t extra = 0;
  if (kind == 1) {
    auto [c0, e0] = go[0];
    auto [c1, e1] = go[1];
    EngRt& A = x_.cores[c0].eng[e0];
    EngRt& B = x_.cores[c1].eng[e1];
    const PInst& P = A.prog[A.pc];
    const Inst& Q = *B.prog[B.pc].in;
    x_.cur_core = c0, x_.cur_eng = e0, x_.cur_pc = A.pc;
    if (x_.m.opt.check_uninit) { // both sources read before either destination is written
      check_reads(x_.m, A.cx, *P.in);
      check_reads(x_.m, B.cx, Q);
    }
    exchange_send_recv(A.cx, *P.in, B.cx, Q);
    if (x_.m.opt.check_uninit) {
      mark_writes(x_.m, A.cx, *P.in);
      mark_writes(x_.m, B.cx, Q);
    }
    DmaTime t = dma_transfer(*x_.m.tp, P.bytes, P.rows, x_.m.opt.cost_scale[int(CostUnit::dma)]);
    extra = t.data_ticks + t.latency_ticks;
  }
  if (x_.o.observer) x_.o.observer->rendezvous(go);
  int64_t last = -1; // history: what brought the last arrival (whose time is `now`)
  for (auto [c, e] : go)
    if (last < 0 && x_.cores[c].eng[e].since == now) last = x_.cores[c].eng[e].rdv_pred;
  for (auto [c, e] : go) {
    CoreRt& C = x_.cores[c];
    EngRt& E = C.eng[e];
    const PInst& P = E.prog[E.pc];
    EngineStats& es = x_.res.stats.cores[c].eng[e];
    es.wait_ticks += now - E.since;
    ++es.insts;
    es.busy_ticks += P.lat + extra;
    es.cycles += P.cycles;
    if (x_.o.timeline) {
      if (now > E.since) x_.record(TimelineEvent::wait, c, e, e, E.since, now - E.since, 0);
      x_.record(TimelineEvent::inst, c, e, e, now, P.lat + extra, 0);
    }
    if (x_.o.history) {
      HistNode n;
      n.start = now;
      n.end = n.data_end = now + P.lat + extra;
      n.ready = E.since;
      n.pred = last;
      n.pred_at = now;
      n.pc = uint32_t(E.pc);
      n.core = c;
      n.engine = uint8_t(e);
      E.node = x_.add_node(c, n);
    }
    E.st = St::running;
    E.issued = now;
    x_.push(c, now + P.lat + extra, e);
  }
}

} // namespace nisa::interp::detail
