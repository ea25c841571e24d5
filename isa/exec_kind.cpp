#include "isa/exec_kind.h"

#include <algorithm>

namespace nisa {

ExecKind exec_kind(const InstDesc& d) {
  if (d.op == Opcode::send_recv) return ExecKind::send_recv;
  if (d.op == Opcode::core_barrier) return ExecKind::barrier;
  if (d.cost == CostClass::dma_xfer) return ExecKind::dma;
  if (d.cost == CostClass::cc) return ExecKind::collective;
  return ExecKind::engine;
}

int64_t cc_channel(const Inst& in) {
  return in.op == Opcode::permute_implicit ? in.ops[op::permute_implicit::channel].i : 0;
}

bool is_reg_alu(Opcode op) {
  switch (op) {
  case Opcode::add:
  case Opcode::sub:
  case Opcode::mul:
  case Opcode::shl:
  case Opcode::shr:
  case Opcode::and_:
  case Opcode::or_:
  case Opcode::min:
  case Opcode::max: return true;
  default: return false;
  }
}

int32_t reg_alu(Opcode op, int32_t sa, int32_t sb) {
  const uint32_t a = uint32_t(sa), b = uint32_t(sb);
  switch (op) {
  case Opcode::add: return int32_t(a + b);
  case Opcode::sub: return int32_t(a - b);
  case Opcode::mul: return int32_t(a * b);
  case Opcode::shl: return int32_t(a << (b & 31)); // 32-bit shifters: the low 5 bits count
  case Opcode::shr: return int32_t(a >> (b & 31));
  case Opcode::and_: return int32_t(a & b);
  case Opcode::or_: return int32_t(a | b);
  case Opcode::min: return std::min(sa, sb);
  case Opcode::max: return std::max(sa, sb);
  default: return sa;
  }
}

ApSpan ap_free_span(const AccessPattern& ap) {
  ApSpan s;
  for (int j = 0; j < ap.ndims && j < kMaxFreeDims; ++j) {
    const ApI128 reach = ApI128(ap.dims[j].stride) * (ap.dims[j].count ? ap.dims[j].count - 1 : 0);
    (reach < 0 ? s.lo : s.hi) += reach;
  }
  return s;
}

} // namespace nisa
