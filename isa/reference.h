// The instruction reference (`nisa isa`, docs/isa.md), generated from the table.
#pragma once
#include <span>
#include <string>

#include "isa/isa.h"

namespace nisa {

// Every instruction (mnemonic, engines, generations, cost class, summary, operands with
// kinds, spaces, enum types and defaults, opcode) and every enumeration (the activation
// functions with their formulas, isa/formulas.def), as Markdown or as plain text.
// Deterministic: docs/isa.md is exactly isa_reference(true). With `only` (`nisa isa NAME...`):
// those instructions' sections, in that order, and the enumerations their operands take.
std::string isa_reference(bool markdown, std::span<const InstDesc* const> only = {});

// The per-instruction byte layouts (operand fields in order, minimum and maximum length) as a
// Markdown table: the generated part of docs/encoding.md (`nisa isa --format encoding`); with
// `only`, the rows of those instructions.
std::string encoding_reference(std::span<const InstDesc* const> only = {});

// Encoded length bounds of an instruction: {without waits/signals and with every variable
// field at its smallest, with 8 waits, 8 signals and every field at its largest}.
struct SizeBounds {
  int min, max;
};
SizeBounds encoded_size_bounds(const InstDesc& d);

} // namespace nisa
