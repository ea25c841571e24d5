// Tokens of the nisa assembly language: the lexer rules of grammar/NeuronAsm.g4, implemented
// by hand (asm/lexer.cpp). The grammar's generated lexer is the reference: tests/asm/
// lexer_test.cpp checks both produce the same tokens on every listing and on random text.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

namespace nisa::nasm {

// Token kinds. The fixed-spelling kinds are the grammar's literals ('.kernel', '+=', ...).
#define NISA_FIXED_TOKENS(X)                                                                       \
  X(KwKernel, ".kernel")                                                                           \
  X(KwTarget, ".target")                                                                           \
  X(KwParam, ".param")                                                                             \
  X(KwEqu, ".equ")                                                                                 \
  X(KwSet, ".set")                                                                                 \
  X(KwIf, ".if")                                                                                   \
  X(KwElif, ".elif")                                                                               \
  X(KwElse, ".else")                                                                               \
  X(KwEndif, ".endif")                                                                             \
  X(KwFor, ".for")                                                                                 \
  X(KwEndfor, ".endfor")                                                                           \
  X(KwMacro, ".macro")                                                                             \
  X(KwEndm, ".endm")                                                                               \
  X(KwInclude, ".include")                                                                         \
  X(KwError, ".error")                                                                             \
  X(KwHbm, ".hbm")                                                                                 \
  X(KwSbuf, ".sbuf")                                                                               \
  X(KwPsum, ".psum")                                                                               \
  X(KwView, ".view")                                                                               \
  X(KwSem, ".sem")                                                                                 \
  X(KwGroup, ".group")                                                                             \
  X(KwRanks, ".ranks")                                                                             \
  X(KwLnc, ".lnc")                                                                                 \
  X(DotDot, "..")                                                                                  \
  X(Colon, ":")                                                                                    \
  X(LBrack, "[")                                                                                   \
  X(RBrack, "]")                                                                                   \
  X(LParen, "(")                                                                                   \
  X(RParen, ")")                                                                                   \
  X(At, "@")                                                                                       \
  X(Assign, "=")                                                                                   \
  X(PlusAssign, "+=")                                                                              \
  X(Plus, "+")                                                                                     \
  X(Minus, "-")                                                                                    \
  X(Not, "!")                                                                                      \
  X(Tilde, "~")                                                                                    \
  X(Star, "*")                                                                                     \
  X(Slash, "/")                                                                                    \
  X(Percent, "%")                                                                                  \
  X(Shl, "<<")                                                                                     \
  X(Shr, ">>")                                                                                     \
  X(Lt, "<")                                                                                       \
  X(Le, "<=")                                                                                      \
  X(Gt, ">")                                                                                       \
  X(Ge, ">=")                                                                                      \
  X(EqEq, "==")                                                                                    \
  X(Ne, "!=")                                                                                      \
  X(Amp, "&")                                                                                      \
  X(Caret, "^")                                                                                    \
  X(Pipe, "|")                                                                                     \
  X(AndAnd, "&&")                                                                                  \
  X(OrOr, "||")

enum class Tok : uint8_t {
  Eof,
  NL,        // end of a line
  Comma,     // ',' and any line ends (and comments) after it: a comma continues the line
  Dotted,    // engine.name
  Directive, // .name that is no keyword (an unknown directive or a local label)
  Number,    // digits and letters: validated when evaluated
  Id,
  String,  // "..." with \-escapes
  ErrChar, // any other character: the parser reports it
#define X(name, text) name,
  NISA_FIXED_TOKENS(X)
#undef X
};

// What a token of that kind looks like, for messages: "'.kernel'", "a name", "end of line".
std::string_view tok_description(Tok k);
// The spelling of a fixed token ('.kernel', '+='), "" for the others.
std::string_view tok_spelling(Tok k);

struct Token {
  uint32_t begin = 0, end = 0; // byte range in the source
  uint32_t line = 0;           // 1-based
  uint32_t col = 0;            // 1-based, in code points
  Tok kind = Tok::Eof;
};

// Tokenises `src` (valid UTF-8, ending with '\n') one token at a time; comments, blanks and `\`
// line continuations are skipped. Never fails: stray characters become ErrChar tokens; at the
// end, Eof forever.
class Lexer {
public:
  explicit Lexer(std::string_view src, uint32_t offset = 0) : t_(src), pos_(offset) {}
  Token next();
  // Writes the tokens up to and including the line's NL (or Eof) to out[0, max) (max >= 1),
  // stopping early when that is full; returns how many it wrote.
  size_t read_line(Token* out, size_t max);

private:
  Token scan();
  // Consumes n bytes of one line (no '\n'), counting code points for the column.
  void advance(size_t n);
  void newline();
  size_t match_comma_tail(size_t at) const;
  size_t match_number(size_t at) const;
  size_t match_string(size_t at) const;

  std::string_view t_;
  size_t pos_ = 0;
  uint32_t line_ = 1, col_ = 1;
};

// Every token of `src`, through Eof.
std::vector<Token> lex(std::string_view src);
// The token that starts at byte `offset` of `src` (its line and col are left 0).
Token lex_at(std::string_view src, uint32_t offset);

} // namespace nisa::nasm
