#include "isa/formulas.h"

namespace nisa {

ActFormula act_formula(ActFunc f) {
  switch (f) { // no default: -Wswitch names an ActFunc without a row
#define NISA_ACT_FORMULA_CASE(id, formula, note)                                                   \
  case ActFunc::id: return {formula, note};
    NISA_ACT_FORMULAS(NISA_ACT_FORMULA_CASE)
#undef NISA_ACT_FORMULA_CASE
  }
  return {};
}

std::string_view reduce_rule(AluOp op) {
  switch (op) {
#define NISA_REDUCE_RULE_CASE(id, rule)                                                            \
  case AluOp::id: return rule;
    NISA_REDUCE_RULES(NISA_REDUCE_RULE_CASE)
#undef NISA_REDUCE_RULE_CASE
  default: return {};
  }
}

} // namespace nisa
