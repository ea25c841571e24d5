// The parsed form of one source file: one Stmt per non-empty line, expression nodes.
// It mirrors grammar/NeuronAsm.g4 rule for rule (the grammar is the specification; tests/asm/
// parser_test.cpp checks that asm/parser.cpp and the ANTLR parser generated from the grammar
// build the same tree), but is flat and compact: nodes live in arrays and refer to each other
// by index and to tokens by their byte offset in the source (the token array is not kept: a
// token is re-read from the source when its text or position is needed, which is rare), so a
// 100k-line file costs a few hundred bytes per line.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "asm/token.h"

namespace nisa::nasm {

constexpr uint32_t kNone = UINT32_MAX; // no node, no token

// Fields named `tok` (and other token fields) hold a token's byte offset in the source.

enum class NodeKind : uint8_t {
  Number,     // tok; flags & kIntValue: a decimal integer, value = b << 32 | a
  String,     // tok
  Name,       // tok (an ID, or a DIRECTIVE such as .Lloop)
  Call,       // tok = the name; kids = CallArg nodes
  CallArg,    // a = expr; b = the name token of `name=expr`, or kNone
  Paren,      // tok = '('; a = expr
  List,       // tok = '['; kids = elements
  Index,      // a = the sliced expr; kids = DynSlice/RangeSlice nodes
  Unary,      // tok = the operator; a = operand
  Binary,     // a, b = operands; c = the operator token
  DynSlice,   // tok = '@'; a = expr
  RangeSlice, // lo? (':' hi? (':' step?)?)?  a = lo, b = hi, c = step; flags = colons written
};

struct Node {
  NodeKind kind = NodeKind::Number;
  Tok op = Tok::Eof;    // Unary / Binary: the operator
  uint8_t flags = 0;    // RangeSlice: kFirstColon | kSecondColon; Number: kIntValue
  uint8_t len = 0;      // Number/String/Name/Call: the length of tok, when under 256 (else 0)
  uint32_t tok = kNone; // the node's first token: where diagnostics point
  uint32_t a = kNone, b = kNone, c = kNone;
  uint32_t kids = 0, nkids = 0; // range of ParsedFile::kids
  static constexpr uint8_t kFirstColon = 1, kSecondColon = 2, kIntValue = 4;
};

enum class StmtKind : uint8_t {
  None, // a label alone
  Kernel,
  Target,
  Assign, // .param / .equ / .set: tok's kind says which
  If,
  Elif,
  Else,
  Endif,
  For,
  Endfor,
  Macro,
  Endm,
  Include,
  Error,
  Tensor, // .hbm / .sbuf / .psum: tok's kind says which
  View,
  Sem,
  Group,
  Launch, // .ranks / .lnc: tok's kind says which
  UnknownDirective,
  Inst,
  MacroCall,
};

// `lhs` or `lhs = rhs` (operands), `lhs` or `lhs += rhs` (sync arguments); `name` or
// `name = rhs` (macro parameters, semaphore declarations: tok = name); `lhs` (shape lists).
struct Item {
  uint32_t tok = kNone;
  uint32_t lhs = kNone, rhs = kNone;
};

// @kind(arg, ...)
struct Sync {
  uint32_t tok = kNone;  // '@'
  uint32_t kind = kNone; // the ID after '@'
  uint32_t last = kNone; // ')'
  uint32_t items = 0, nitems = 0;
};

struct Stmt {
  StmtKind kind = StmtKind::None;
  uint32_t first = kNone; // first token of the line: the label or the statement
  uint32_t label = kNone; // `label:`'s name token
  uint32_t tok = kNone;   // the statement's first token: keyword, mnemonic or macro name
  uint32_t last = kNone;  // its last token
  uint32_t end = 0;       // the byte after its last token (a label alone: after the label)
  uint32_t line = 0, col = 0, tok_len = 0; // where `tok` is, its length
  uint32_t name = kNone;                   // the declared name; .for: the variable
  uint32_t word = kNone;  // .for: 'in'; .view: 'as'; tensor: the role; .include/.error: STRING
  uint32_t word2 = kNone; // .for: 'step'; tensor/.view: the dtype
  uint32_t e0 = kNone, e1 = kNone, e2 = kNone; // value/condition; .for from/to/step;
                                               // tensor '@' address; .view source
  uint32_t items = 0, nitems = 0;              // operands, macro parameters, semaphores, shape
  uint32_t syncs = 0, nsyncs = 0;
};

struct SyntaxError {
  uint32_t line = 0, col = 0; // 1-based
  std::string message;
};

struct ParsedFile {
  std::string name; // as given (for diagnostics)
  std::string src;  // the text, ending with '\n'
  // Where each line starts in `src`: offsets, not views, so that a ParsedFile can move (a
  // short `src` lives inside the string object).
  std::vector<uint32_t> line_starts;
  std::vector<Stmt> stmts; // lines with a label or a statement, in order
  std::vector<Node> nodes;
  std::vector<uint32_t> kids; // child node lists
  std::vector<Item> items;
  std::vector<Sync> syncs;
  std::vector<SyntaxError> errors;

  // The token at byte offset `tok`: kind, extent, line and column.
  Token token(uint32_t tok) const;
  std::string_view text(uint32_t tok) const {
    const Token t = lex_at(src, tok);
    return std::string_view(src).substr(t.begin, t.end - t.begin);
  }
  // A node's first token (without re-reading the source when the node knows its length).
  std::string_view text(const Node& n) const {
    return n.len ? std::string_view(src).substr(n.tok, n.len) : text(n.tok);
  }
  uint32_t line_of(uint32_t offset) const;                       // 1-based
  std::pair<uint32_t, uint32_t> position(uint32_t offset) const; // line, column (code points)
  const Node& node(uint32_t i) const { return nodes[i]; }
  const uint32_t* kid_begin(const Node& n) const { return kids.data() + n.kids; }
  std::string_view line_text(uint32_t line) const; // without its end of line
};

constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";

// Reads one source file (a leading UTF-8 byte order mark is dropped, as ANTLR's input stream
// drops it). Syntax errors are collected (one per line at most, up to 100) in
// `errors`; the statements of the lines without errors are kept.
ParsedFile parse_source(std::string name, std::string text);

// The tree as an S-expression, one line per statement: what the parser tests compare with
// the ANTLR parse tree (format in asm/ast_print.cpp).
std::string to_sexpr(const ParsedFile& f);

} // namespace nisa::nasm
