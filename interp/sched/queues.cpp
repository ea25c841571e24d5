// DMA queue agents (interp/sched/agents.h): a transfer is enqueued when its instruction
// completes on its engine, takes the queue's data path and the core's link in order, and
// completes asynchronously; then it moves the data and applies the instruction's signals.
#include <algorithm>
#include <cstring>

#include "interp/core/cost.h"
#include "interp/sched/agents.h"

namespace nisa::interp::detail {

void Agents::enqueue(int c, int e, const PInst& P) {
  CoreRt& C = x_.cores[c];
  QueueRt& Q = C.queue[P.queue];
  Xfer x;
  x.pi = &P;
  x.eng = uint8_t(e);
  x.pc = uint32_t(C.eng[e].pc);
  std::memcpy(x.regs, C.eng[e].cx.regs, sizeof x.regs);
  if (x_.o.observer) x_.o.observer->enqueue(c, Engine(e), x.pc, P.queue);
  DmaTime t = dma_transfer(*x_.m.tp, P.bytes, P.rows, x_.m.opt.cost_scale[int(CostUnit::dma)]);
  int64_t t0 = std::max(C.now, Q.data_free);
  int64_t begin = std::max(t0, C.link_free);
  const int64_t data_free = Q.data_free, link_free = C.link_free, last_end = Q.last_end;
  C.link_free = begin + t.link_ticks;
  int64_t data_end = begin + x_.jitter(c, kNumEngines + P.queue, t.data_ticks);
  Q.data_free = data_end;
  x.begin = begin;
  x.end = std::max(Q.last_end, data_end + t.latency_ticks);
  Q.last_end = x.end;
  if (x_.o.history) {
    HistNode n;
    n.kind = HistKind::dma;
    n.start = begin;
    n.data_end = data_end;
    n.end = x.end;
    n.ready = C.now;
    n.trigger = C.cur_node;
    // What set `begin`: the trigger (the event being processed), else the core's link (also
    // when the queue was free no earlier: more queues would not help), else the queue.
    if (begin == C.now) {
      n.pred = C.cur_node, n.pred_at = C.now;
    } else if (begin == link_free) {
      n.pred = C.link_node, n.pred_at = link_free;
    } else {
      n.pred = Q.data_node, n.pred_at = data_free;
    }
    if (x.end == last_end && last_end > data_end + t.latency_ticks) n.end_pred = Q.end_node;
    n.pc = x.pc;
    n.core = c;
    n.engine = uint8_t(e);
    n.queue = P.queue;
    x.node = x_.add_node(c, n);
    Q.data_node = C.link_node = Q.end_node = x.node;
  }
  QueueStats& qs = x_.res.stats.cores[c].queue[P.queue];
  ++qs.transfers;
  qs.bytes += P.bytes;
  qs.busy_ticks += x.end - begin;
  x_.push(c, x.end, kNumEngines + P.queue);
  Q.q.push_back(x);
}

template <bool kSlow> void Agents::dma_done(int c, int q) {
  CoreRt& C = x_.cores[c];
  QueueRt& Q = C.queue[q];
  Xfer x = Q.q.front();
  Q.q.pop_front();
  C.cur_eng = x.eng, C.cur_pc = x.pc;
  C.makespan = std::max(C.makespan, C.now);
  ExecCtx cx = C.eng[x.eng].cx;
  cx.regs = x.regs;
  ExecEvent ev;
  if constexpr (kSlow) {
    C.cur_node = x.node;
    if (x_.o.observer) {
      ev = ExecEvent{c, Engine(x.eng), int64_t(x.pc), q, x.begin, x.end, true};
      x_.o.observer->exec(ev, cx, *x.pi->in);
    }
  }
  exec<kSlow>(cx, *x.pi);
  if constexpr (kSlow)
    x_.record(TimelineEvent::dma, c, kTrackQueue0 + q, x.eng, x.begin, x.end - x.begin, x.pi->bytes,
              x.pc);
  signal(c, *x.pi);
  if constexpr (kSlow) {
    if (x_.o.observer) x_.o.observer->done(ev);
  }
}

template void Agents::dma_done<false>(int, int);
template void Agents::dma_done<true>(int, int);

} // namespace nisa::interp::detail
