// --check-uninit (docs/decisions.md): every byte of on-chip memory and HBM has a shadow byte
// (Machine::shadow_of), set when an instruction writes it; an instruction that reads a byte
// whose shadow is clear faults. The scheduler checks an instruction's reads before its
// semantics run and marks its writes after (slow path only).
#pragma once
#include "interp/core/machine.h"

namespace nisa::interp::detail {

void check_reads(Machine& m, ExecCtx& cx, const Inst& in); // throws Fault
void mark_writes(Machine& m, ExecCtx& cx, const Inst& in);

} // namespace nisa::interp::detail
