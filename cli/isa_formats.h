// Machine-readable renderings of the instruction table (isa/insts.def): `nisa isa --format
// json` (schema in docs/isa-json.md) and `nisa isa --format tmlanguage`, the TextMate grammar
// of .nasm (editors/vscode/syntaxes/nasm.tmLanguage.json; docs/editors.md).
#pragma once
#include <string>

namespace nisa::cli {
std::string isa_json();
std::string tmlanguage_json();
} // namespace nisa::cli
