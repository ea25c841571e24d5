// The memory operands of an instruction as the table describes them, for the passes that
// look at what an instruction reads and writes (race checker, --check-uninit, nisa check).
#pragma once
#include "isa/exec_kind.h"

namespace nisa::interp {

// for_each_mem_operand: isa/exec_kind.h.

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
