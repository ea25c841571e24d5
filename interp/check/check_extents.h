// The bytes an instruction may access, found without memory (part of `nisa check`,
// docs/check.md): its access patterns with the registers of the walk (check_registers.h),
// every value a register loaded from memory or a vector index may take, and every row.
#pragma once
#include <cstdint>
#include <vector>

#include "interp/core/region.h"
#include "isa/module.h"

namespace nisa::interp::check_detail {

// Appends to `out` the regions that `in`, run on core `core` (of `lnc` cores a rank), may read
// and write. `regs` are the engine's registers; bit r of `unknown`: register r holds a value
// loaded from memory.
void access_regions(int core, int lnc, const Inst& in, const int32_t* regs, uint64_t unknown,
                    std::vector<Region>& out);

} // namespace nisa::interp::check_detail
