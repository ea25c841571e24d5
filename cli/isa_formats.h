// Machine-readable renderings of the instruction table (isa/insts.def): `nisa isa --format
// json` (schema in docs/isa-json.md) and `nisa isa --format tmlanguage`, the TextMate grammar
// of .nasm (editors/vscode/syntaxes/nasm.tmLanguage.json; docs/editors.md).
#pragma once
#include <span>
#include <string>

#include "isa/isa.h"

namespace nisa::cli {
// The table; with `only`, those instructions (in that order) and every enumeration.
std::string isa_json(std::span<const InstDesc* const> only = {});
std::string tmlanguage_json();
} // namespace nisa::cli
