// The agents of a core (docs/machine.md "Scheduling"): its engines, each issuing its stream in
// order (an instruction issues when the engine is free and its waits hold, runs its semantics
// at completion, then applies its signals and wakes the engines they unblock), and its DMA
// queues, whose transfers complete in order (interp/sched/queues.cpp). Everything here touches
// one core's CoreRt and statistics only, so the cores of a phase run on any host thread.
// `template <bool kSlow>`: the slow path adds timelines, observers and --check-uninit.
#pragma once
#include <cstdint>

#include "interp/sched/state.h"
#include "interp/sched/uninit.h"

namespace nisa::interp::detail {

class Agents {
public:
  explicit Agents(SchedState& x) : x_(x) {}

  // At time 0: every engine of core c issues its first instruction.
  void start(int c);
  // The fast path: core c runs its events before its horizon (until it stops).
  void run_phase(int c);
  // The slow path: one event of core c (a fault stops the core).
  void step(int c, const Event& ev);
  // P completed on core c: its signals apply, then the engines they unblock issue.
  void signal(int c, const PInst& P);

private:
  // The hot path, inline in engines.cpp (as the one class it was split from had it).
  template <bool kSlow> inline void process(int c, const Event& ev);
  template <bool kSlow> inline void try_issue(int c, int e);
  template <bool kSlow> inline void complete(int c, int e);
  template <bool kSlow> void exec(ExecCtx& cx, const PInst& P);
  inline bool waits_hold(const std::vector<uint32_t>& sems, const PInst& P) const;
  inline void wake(int c);
  bool checkpoint(int c, const Event& ev);
  bool over_budget(int c, const Event& ev);
  // DMA queues (queues.cpp).
  void enqueue(int c, int e, const PInst& P);
  template <bool kSlow> void dma_done(int c, int q);

  SchedState& x_;
};

// An instruction's semantics (engines and DMA transfers).
template <bool kSlow> inline void Agents::exec(ExecCtx& cx, const PInst& P) {
  if constexpr (kSlow) {
    if (x_.m.opt.check_uninit) check_reads(x_.m, cx, *P.in);
  }
  cx.legal = P.legal;
  P.fn(cx, *P.in);
  if constexpr (kSlow) {
    if (x_.m.opt.check_uninit) mark_writes(x_.m, cx, *P.in);
  }
}

extern template void Agents::dma_done<false>(int, int); // queues.cpp
extern template void Agents::dma_done<true>(int, int);

} // namespace nisa::interp::detail
