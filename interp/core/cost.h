// The cost model: one table of per-class costs in each engine's own clock (docs/machine.md).
#pragma once
#include <cstdint>

#include "interp/core/cost_scale.h"
#include "interp/core/target.h"
#include "isa/isa.h"

namespace nisa::interp {

// cycles = max(min_cycles, fixed + per_elem * N) in the issuing engine's clock, where N is the
// class's size measure (see elems_for_cost). pe classes multiply by 4 when an input is fp32.
struct ClassCost {
  int64_t fixed;
  int64_t per_elem;
  int64_t min_cycles;
};
const ClassCost& class_cost(CostClass c);

// The size measure N of an instruction for its class: the moving free size (matmul), the source
// partition count (PE transpose), the data operand's free size (search family), otherwise the
// largest free size of its tensor operands.
uint64_t elems_for_cost(const Inst& in);

// Cycles the instruction occupies its engine. For DMA-class and collective instructions this is
// the trigger cost only; the transfer is priced by dma_transfer / cc_transfer.
int64_t cost_cycles(const Inst& in, const TargetParams& tp);
inline int64_t cost_ticks(const Inst& in, const TargetParams& tp) {
  return cost_cycles(in, tp) * tp.ticks_per_cycle[static_cast<int>(in.engine)];
}

// A DMA transfer of `bytes` whose SBUF side (or HBM row count) spans `rows` rows: one DMA
// engine serves dma_parts_per_engine rows, so small-partition transfers use fewer engines.
// `scale` (MachineOptions::cost_scale of dma) divides data_ticks and link_ticks (scale_ticks);
// the fixed latency is not occupancy and stays.
struct DmaTime {
  int64_t data_ticks; // time the transfer streams
  int64_t link_ticks; // time it occupies the core's aggregate DMA bandwidth
  int64_t latency_ticks;
};
DmaTime dma_transfer(const TargetParams& tp, uint64_t bytes, uint32_t rows, double scale = 1);
// Bytes moved by a DMA-class instruction (max element width of its operands x elements, summed
// over the sources for dma_compute) and the row count used by dma_transfer.
uint64_t dma_bytes(const Inst& in);
uint32_t dma_rows(const Inst& in);
// A collective on one channel: `steps` ring hops, each paying the step latency, moving
// `link_bytes` in all over the channel (cc_ring_cost gives both for an instruction). `scale`
// (MachineOptions::cost_scale of cc) divides the link time (scale_ticks), not the step latency.
int64_t cc_transfer_ticks(const TargetParams& tp, uint64_t steps, uint64_t link_bytes,
                          double scale = 1);
// Ring algorithm of a collective over a group of g ranks whose destination holds dst_bytes
// per rank: the number of hops and the bytes each rank's link carries.
struct CcRing {
  uint64_t steps;
  uint64_t link_bytes;
};
CcRing cc_ring_cost(Opcode op, uint64_t dst_bytes, uint64_t g);

} // namespace nisa::interp
