// `nisa asm --diagnostics-format json`: the diagnostics as JSON (schema nisa-diagnostics/1,
// docs/asm.md "Diagnostics as JSON").
#pragma once
#include <string>
#include <vector>

#include "asm/asm.h"

namespace nisa::nasm {

// A note of Diagnostic::notes split into what it says and where: "in expansion of macro 'm'
// at f.nasm:3:5" -> {kind "macro", what "m", file "f.nasm", line 3, col 5}.
struct NoteInfo {
  std::string kind; // macro, for, include, or "" when the note has another form
  std::string what; // the macro's name, the iteration ("i = 2"), "" for include
  std::string file;
  uint32_t line = 0, col = 0;
  std::string message; // the note as printed
};
NoteInfo parse_note(const std::string& note);

std::string diagnostics_json(const std::vector<Diagnostic>& diags);

} // namespace nisa::nasm
