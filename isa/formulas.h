// The formulas of isa/formulas.def: what each activation function computes and how
// tensor_reduce folds with each operator (docs/isa.md, `nisa isa`).
#pragma once
#include <string_view>

#include "isa/enums.h"
#include "isa/formulas.def"

namespace nisa {

struct ActFormula {
  std::string_view formula; // f(x), in the notation of isa/formulas.def
  std::string_view note;    // edges and evaluation order; "" for none
};
// Every ActFunc has one (a missing row does not compile).
ActFormula act_formula(ActFunc f);

// The fold tensor_reduce computes with `op`; "" when op is not a reduction operator.
std::string_view reduce_rule(AluOp op);

// How activation applies f; what every fold shares; what tensor_reduce's negate does.
inline constexpr std::string_view kActApply = NISA_ACT_APPLY;
inline constexpr std::string_view kReduceCommon = NISA_REDUCE_COMMON;
inline constexpr std::string_view kReduceNegate = NISA_REDUCE_NEGATE;

} // namespace nisa
