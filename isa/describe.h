// Text of an instruction for reports: pure functions over a Module and an Inst.
#pragma once
#include <cstdint>
#include <string>

#include "isa/module.h"

namespace nisa {

// One-line text of an instruction (mnemonic, operands, waits, signals) and its source
// location ("file:line:col", plus the expansion chain), for reports.
std::string describe_inst(const Module& m, const Inst& in);
std::string source_of(const Module& m, Engine e, int64_t pc);

} // namespace nisa
