// ANTLR front end: one source file -> parse tree (grammar/NeuronAsm.g4), with syntax errors
// collected rather than printed. SLL prediction first; full LL only when SLL fails.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "NeuronAsmLexer.h"
#include "NeuronAsmParser.h"
#include "asm/lexer.h"

namespace nisa::nasm {

struct SyntaxError {
  uint32_t line = 0, col = 0; // 1-based
  std::string message;
};

struct ParsedFile {
  std::string name; // as given (for diagnostics)
  std::string text;
  std::string src;                     // text ending with '\n', what the lexer reads
  std::vector<std::string_view> lines; // source lines, for carets
  std::unique_ptr<antlr4::ANTLRInputStream> input;
  std::unique_ptr<FastLexer> lexer; // views `src`
  std::unique_ptr<antlr4::CommonTokenStream> tokens;
  std::unique_ptr<nisa_grammar::NeuronAsmParser> parser;
  nisa_grammar::NeuronAsmParser::ProgramContext* tree = nullptr;
  std::vector<SyntaxError> errors;
  std::string_view line_text(uint32_t line) const {
    return line >= 1 && line <= lines.size() ? lines[line - 1] : std::string_view{};
  }
};

std::unique_ptr<ParsedFile> parse_source(std::string name, std::string text);

} // namespace nisa::nasm
