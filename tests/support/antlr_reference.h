// Test-only bridge to the ANTLR lexer and parser generated from grammar/NeuronAsm.g4, the
// reference that the hand-written front end (asm/lexer.cpp, asm/parser.cpp) is checked against:
//   - our tokens in ANTLR's terms (type from the generated vocabulary, code-point start/stop,
//     line, 0-based charPositionInLine), and the generated lexer's tokens in the same form;
//   - the generated parser's tree printed in the format of nisa::nasm::to_sexpr.
#pragma once
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "asm/ast.h"
#include "asm/token.h"

namespace nisa::nasm::antlr_ref {

// One token as ANTLR describes it.
struct AntlrToken {
  size_t type = 0;  // the generated vocabulary's type; antlr4::Token::EOF at the end
  size_t start = 0; // code-point index of the first character
  size_t stop = 0;  // code-point index of the last one (EOF: start - 1)
  size_t line = 0;  // 1-based
  size_t col = 0;   // charPositionInLine: 0-based, in code points
  bool operator==(const AntlrToken&) const = default;
  std::string str() const; // "type 52 [3, 5] at 1:2", for messages
};

// The generated vocabulary's type of a token kind: a fixed token maps to the type whose literal
// name is "'<spelling>'", the others to NeuronAsmLexer::NL, COMMA, ..., antlr4::Token::EOF.
size_t antlr_type(Tok k);

// `toks` = lex(src) in ANTLR's terms.
std::vector<AntlrToken> to_antlr_tokens(std::string_view src, const std::vector<Token>& toks);
// lex(src) in ANTLR's terms (src must end with '\n', as lex() requires).
std::vector<AntlrToken> lex_as_antlr(std::string_view src);
// Every token of the generated NeuronAsmLexer (skipped ones aside) up to and including EOF.
std::vector<AntlrToken> antlr_lex(const std::string& src);

// Parses `text` ('\n' appended when missing, as parse_source does) with the generated lexer
// and parser (full LL prediction, the default error strategy) and prints the tree in the
// format of to_sexpr (asm/ast_print.cpp). Syntax errors go to `errors` as "line:col: message"
// (col 0-based, as ANTLR reports it); with errors, the printout describes ANTLR's recovered
// tree (missing parts print as '?') and is not meant for comparison.
std::string antlr_sexpr(const std::string& text, std::vector<std::string>& errors);

// The line number of an error string from antlr_sexpr ("12:3: ..." -> 12); 0 if malformed.
size_t error_line(const std::string& error);

// ---- the comparisons the tests and fuzz_parser make ("" when both sides agree)

// Token by token: the generated lexer's tokens against ours (both from antlr_lex/lex_as_antlr).
std::string diff_tokens(const std::vector<AntlrToken>& antlr, const std::vector<AntlrToken>& ours);
// Our parse against ANTLR's (antlr_sexpr's tree and errors): the same accept/reject decision;
// when both accept, the same tree; when both reject, the first error at the same line:col.
std::string diff_parses(const ParsedFile& ours, const std::string& antlr_tree,
                        const std::vector<std::string>& antlr_errors);

// Every listing of the repository (*.nasm, *.inc under tests/asm/{golden,invalid,inputs},
// kernels_asm and kernels_asm/lib); `asm_test_dir` is tests/asm.
std::vector<std::filesystem::path> corpus(const std::string& asm_test_dir);

} // namespace nisa::nasm::antlr_ref
