// The memory operands of an instruction as the table describes them, for the passes that
// look at what an instruction reads and writes (race checker, --check-uninit, nisa check).
#pragma once
#include "isa/isa.h"

namespace nisa::interp {

// f(operand description, operand, is_write) for each present read (a Src, or a Scalar given
// as an access pattern) and each present write (a Dst), in operand order.
template <class F> void for_each_mem_operand(const Inst& in, F&& f) {
  const InstDesc& d = desc(in.op);
  for (size_t k = 0; k < d.operands.size() && k < in.ops.size(); ++k) {
    const Operand& o = in.ops[k];
    const OperandKind kind = d.operands[k].kind;
    const bool is_read = kind == OperandKind::Src || (kind == OperandKind::Scalar && o.is_ap);
    const bool is_write = kind == OperandKind::Dst;
    if (o.present && (is_read || is_write)) f(d.operands[k], o, is_write);
  }
}

// Whether the instruction's oob operand (if it has one) says skip.
inline bool oob_skip_of(const Inst& in) {
  const InstDesc& d = desc(in.op);
  bool skip = false;
  for (size_t j = 0; j < d.operands.size() && j < in.ops.size(); ++j)
    if (d.operands[j].kind == OperandKind::Enum && d.operands[j].enum_type == EnumType::OobMode)
      skip = in.ops[j].i == static_cast<int>(OobMode::skip);
  return skip;
}

} // namespace nisa::interp
