// Declarations of every instruction's semantic function, generated from isa/insts.def:
// sem_<ident>(ExecCtx&, const Inst&). Each is defined in the file of its engine
// (pe.cpp, act.cpp, dve.cpp, pool.cpp, dma.cpp, ctrl.cpp, cc.cpp); a row without a
// definition fails at link time, so "every row has semantics" is checked by the build.
#pragma once
#include "interp/core/exec.h"

namespace nisa::interp {
#define INST(id, mn, code, eng, gens, cost, doc, ...) void sem_##id(ExecCtx& cx, const Inst& in);
#include "isa/insts.def"
#undef INST
} // namespace nisa::interp
