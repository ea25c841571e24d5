// The nisa assembler: .nasm text -> Module (docs/asm.md).
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "isa/module.h"

namespace nisa::nasm {

// Where an assembly's time went (nisa asm --time-report; bench/asm_process.py), in seconds.
struct AsmTimes {
  double read = 0;    // reading the main file
  double parse = 0;   // lexing and parsing every unit (the main file, each include)
  double expand = 0;  // expansion: blocks, loops, macros, expressions, operands, checks
  double resolve = 0; // labels, @after edges, the module finished
};

struct AsmOptions {
  std::vector<std::pair<std::string, std::string>> defines; // -D NAME=VALUE
  std::vector<std::string> include_dirs;                    // -I DIR
  std::optional<Target> target;                             // --target (overrides .target)
  int max_errors = 20;
  int max_depth = 64;                   // nested macro expansions and includes
  int64_t max_iterations = 1'000'000;   // per .for
  int64_t max_instructions = 4'000'000; // per kernel
  int64_t max_steps = 8'000'000;        // statements executed plus loop iterations, all told
  // Bytes lexed, all told: every file once when it is read (the main file, each include), and
  // each statement's bytes every time it is expanded (loops, macros and includes multiply).
  int64_t max_lexed_bytes = int64_t(256) << 20;
  AsmTimes* times = nullptr; // when set, each phase's time is added there
};

// The largest source file (the main file or an include), in bytes.
inline constexpr uint64_t kMaxSourceBytes = uint64_t(64) << 20;

struct Diagnostic {
  enum Severity { Error, Note };
  Severity severity = Error;
  std::string file;
  uint32_t line = 0, col = 0; // 1-based; 0 = no location
  std::string message;
  std::string source_line;        // the text of the line (for the caret)
  std::vector<std::string> notes; // expansion chain, innermost first
  // "file:line:col: error: message\n<source>\n<caret>\nnote: ...\n"
  std::string str() const;
};

struct AsmResult {
  std::optional<Module> module; // set when there is no error
  std::vector<Diagnostic> diags;
  // What the assembly read, so that a cache of its output can tell whether it still holds
  // (cli/kernel_cache.h): every file read with the FNV-1a 64 of its bytes (the main file
  // first; not for assemble_string), and every include candidate that did not exist then (a
  // file made there later would be included instead).
  std::vector<std::pair<std::string, uint64_t>> read_files;
  std::vector<std::string> absent_files;
  bool ok() const { return module.has_value(); }
  std::string diagnostics_text() const; // every diagnostic, formatted
};

AsmResult assemble_file(const std::string& path, const AsmOptions& opts = {});
// `name` is the file name used in diagnostics; includes resolve against the -I dirs and the
// current directory.
AsmResult assemble_string(std::string_view text, const std::string& name,
                          const AsmOptions& opts = {});

// Did-you-mean: a candidate that differs only in case; else the closest candidate within a
// small edit distance; else, for names of '_'-separated words, the one candidate holding the
// word's words (gelu_tanh -> gelu_apprx_tanh, rank -> rank_id); else "".
std::string suggest(std::string_view word, const std::vector<std::string>& candidates);

} // namespace nisa::nasm
