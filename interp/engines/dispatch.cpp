#include "interp/engines/engines.h"

namespace nisa::interp {
namespace {
constexpr SemFn kSemantics[] = {
#define INST(id, mn, code, eng, gens, cost, doc, ...) &sem_##id,
#include "isa/insts.def"
#undef INST
};
static_assert(std::size(kSemantics) == kNumOpcodes);
} // namespace

SemFn semantics(Opcode op) { return kSemantics[static_cast<int>(op)]; }
} // namespace nisa::interp
