#include "interp/sched/uninit.h"

#include <cstring>
#include <string_view>

#include <fmt/format.h>

#include "interp/core/mem_operands.h"

namespace nisa::interp::detail {

namespace {

// Calls f(operand name, byte, element width) for every element that `in` reads (reads) or
// writes (!reads).
template <class F> void for_each_ap(ExecCtx& cx, const Inst& in, bool reads, F&& f) {
  const bool skip = oob_skip_of(in);
  for_each_mem_operand(in, [&](const OperandDesc& od, const Operand& o, bool is_write) {
    if (is_write == reads) return;
    if (reads && o.ap.dyn == DynKind::vec) { // the index tile is read too (one per row)
      const VecIndex& vi = o.ap.vidx;
      // Byte by byte: an element past the partition's end reads on into the next partition
      // (modelled bytes), not into the host pad (the view faults on it next).
      for (uint32_t p = 0; p < o.ap.part_count && vi.part_start + p < kNumPartitions; ++p)
        for (int b = 0; b < dtype_bytes(vi.dtype); ++b)
          f("vector index", cx.state->sbuf_at(vi.part_start + p, uint64_t(vi.offset) + b), 1);
    }
    View v = cx.view(o.ap, reads ? Access::read : Access::write, skip);
    uint32_t w = dtype_bytes(v.dtype);
    for (uint32_t p = 0; p < v.parts; ++p) {
      if (!v.row_skip.empty() && v.row_skip[p]) continue;
      for (uint64_t j = 0; j < v.free_elems; ++j) f(od.name, v.at(p, j), w);
    }
  });
}

} // namespace

void check_reads(Machine& m, ExecCtx& cx, const Inst& in) {
  for_each_ap(cx, in, true, [&](std::string_view name, const uint8_t* p, uint32_t w) {
    uint8_t* s = m.shadow_of(p);
    if (!s) return;
    for (uint32_t b = 0; b < w; ++b)
      if (!s[b])
        throw Fault(fmt::format("operand '{}' reads memory never written (uninitialised)", name));
  });
}

void mark_writes(Machine& m, ExecCtx& cx, const Inst& in) {
  for_each_ap(cx, in, false, [&](std::string_view, const uint8_t* p, uint32_t w) {
    if (uint8_t* s = m.shadow_of(p)) std::memset(s, 1, w);
  });
}

} // namespace nisa::interp::detail
