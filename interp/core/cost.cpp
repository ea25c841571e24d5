#include "interp/core/cost.h"
#include "isa/op_index.h"

#include <algorithm>

namespace nisa::interp {
namespace {

// Anchors: docs/machine.md "Cost anchors". Fixed parts are the ~60-cycle SBUF/PSUM access
// initiation; the search family's 144 is the seeds' formula (F + 144).
constexpr ClassCost kCosts[] = {
    /* ctrl         */ {4, 0, 4},
    /* pe_matmul    */ {0, 1, 64},
    /* pe_transpose */ {0, 1, 64},
    /* act_func     */ {64, 1, 64},
    /* elem0        */ {60, 1, 0},
    /* elem1        */ {60, 1, 0},
    /* elem2        */ {60, 2, 0},
    /* dve_scan     */ {60, 2, 0},
    /* dve_search   */ {144, 1, 0},
    /* pool_gather  */ {60, 1, 0},
    /* dma_xfer     */ {64, 0, 0},
    /* cc           */ {64, 0, 0},
};
static_assert(std::size(kCosts) == static_cast<size_t>(CostClass::cc) + 1);

bool is_tensor(const OperandDesc& d, const Operand& o) {
  return (d.kind == OperandKind::Dst || d.kind == OperandKind::Src) && o.present;
}

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

} // namespace

const ClassCost& class_cost(CostClass c) { return kCosts[static_cast<int>(c)]; }

uint64_t elems_for_cost(const Inst& in) {
  const InstDesc& d = desc(in.op);
  switch (d.cost) {
  case CostClass::pe_matmul: return in.ops[op::matmul::moving].ap.free_elems();
  case CostClass::pe_transpose:
    return in.ops[op::pe_transpose::src].ap.part_count; // [P, P] identity
  case CostClass::dve_search:                           // src / data
    static_assert(int(op::max8::src) == op::find_index8::data &&
                  int(op::max8::src) == op::match_replace8::data);
    return in.ops[op::max8::src].ap.free_elems();
  default: break;
  }
  uint64_t n = 0;
  for (size_t i = 0; i < in.ops.size() && i < d.operands.size(); ++i)
    if (is_tensor(d.operands[i], in.ops[i])) n = std::max(n, in.ops[i].ap.free_elems());
  return n;
}

int64_t cost_cycles(const Inst& in, const TargetParams& /*tp*/) {
  const InstDesc& d = desc(in.op);
  const ClassCost& c = class_cost(d.cost);
  if (d.cost == CostClass::ctrl || d.cost == CostClass::dma_xfer || d.cost == CostClass::cc)
    return std::max(c.min_cycles, c.fixed);
  int64_t n = static_cast<int64_t>(elems_for_cost(in));
  int64_t cycles = std::max(c.min_cycles, c.fixed + c.per_elem * n);
  if (d.cost == CostClass::pe_matmul || d.cost == CostClass::pe_transpose) {
    bool fp32 = false;
    for (size_t i = 1; i < in.ops.size(); ++i)
      if (d.operands[i].kind == OperandKind::Src && in.ops[i].ap.dtype == DType::fp32) fp32 = true;
    if (fp32) cycles *= 4; // fp32 runs at a quarter of the bf16 rate
  }
  return cycles;
}

DmaTime dma_transfer(const TargetParams& tp, uint64_t bytes, uint32_t rows, double scale) {
  uint64_t engines = std::clamp<uint64_t>(
      ceil_div(std::max<uint32_t>(rows, 1), tp.dma_parts_per_engine), 1, tp.dma_engines);
  // ticks = bytes / (MB/s) * (ticks/us): kTickMHz ticks per us, MB/s = bytes per us.
  DmaTime t;
  t.data_ticks = static_cast<int64_t>(ceil_div(bytes * kTickMHz, engines * tp.dma_engine_mbps));
  t.link_ticks = static_cast<int64_t>(
      ceil_div(bytes * kTickMHz, uint64_t(tp.dma_engines) * tp.dma_engine_mbps));
  t.latency_ticks = ns_to_ticks(tp.dma_latency_ns);
  t.data_ticks = scale_ticks(t.data_ticks, scale);
  t.link_ticks = scale_ticks(t.link_ticks, scale);
  return t;
}

uint64_t dma_bytes(const Inst& in) {
  const InstDesc& d = desc(in.op);
  uint64_t elems = 0, width = 0, srcs = 0;
  for (size_t i = 0; i < in.ops.size(); ++i) {
    if (!is_tensor(d.operands[i], in.ops[i])) continue;
    const AccessPattern& ap = in.ops[i].ap;
    if (d.operands[i].kind == OperandKind::Dst)
      elems = ap.elems();
    else
      ++srcs;
    width = std::max<uint64_t>(width, dtype_bytes(ap.dtype));
  }
  if (in.op == Opcode::dma_compute) width *= 2; // reads two sources per element
  (void)srcs;
  return elems * width;
}

uint32_t dma_rows(const Inst& in) {
  const InstDesc& d = desc(in.op);
  uint32_t rows = 1;
  for (size_t i = 0; i < in.ops.size(); ++i) {
    if (!is_tensor(d.operands[i], in.ops[i])) continue;
    const AccessPattern& ap = in.ops[i].ap;
    if (ap.space == MemSpace::sbuf) return ap.part_count;
    rows = std::max<uint32_t>(rows, ap.part_count);
  }
  return rows;
}

int64_t cc_transfer_ticks(const TargetParams& tp, uint64_t steps, uint64_t link_bytes,
                          double scale) {
  return static_cast<int64_t>(steps) * ns_to_ticks(tp.cc_latency_ns) +
         scale_ticks(static_cast<int64_t>(ceil_div(link_bytes * kTickMHz, tp.cc_link_mbps)), scale);
}

CcRing cc_ring_cost(Opcode op, uint64_t dst_bytes, uint64_t g) {
  g = std::max<uint64_t>(g, 1);
  const uint64_t hops = std::max<uint64_t>(g - 1, 1); // a group of one still pays one step
  switch (op) {
  case Opcode::permute_implicit:
  case Opcode::collective_permute: return {1, dst_bytes};
  case Opcode::all_gather: return {hops, dst_bytes / g * (g - 1)}; // g-1 hops of one chunk
  case Opcode::reduce_scatter: return {hops, dst_bytes * (g - 1)}; // dst is one chunk
  case Opcode::all_to_all: return {hops, dst_bytes / g * (g - 1)};
  case Opcode::all_reduce: return {2 * hops, 2 * (dst_bytes / g) * (g - 1)}; // RS then AG
  default: return {1, dst_bytes};
  }
}

} // namespace nisa::interp
