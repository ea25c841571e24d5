// Recursive-descent parser for grammar/NeuronAsm.g4, rule for rule (the rule each function
// implements is quoted above it). Every decision is LL(1) or LL(2), as in the grammar. On a
// syntax error the rest of the line is skipped and parsing goes on with the next line.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <tuple>

#include "asm/ast.h"

namespace nisa::nasm {
namespace {

// Bounds that keep the recursion (here and in the evaluator) shallow on any input.
constexpr uint32_t kMaxStatementTokens = 4000;
constexpr int kMaxNesting = 64;

struct ParseError {};

// The tokens of the current line, read from the lexer a line at a time; pos() indexes them (the
// tree stores tokens by their byte offset in the source). A syntax error throws ParseError.
class TokenStream {
public:
  explicit TokenStream(ParsedFile& f) : f_(f), lexer_(f.src) { toks_.resize(64); }

  // `ahead` is 0 or 1: the parser takes no token past the line's last (its NL or Eof, or the
  // last of a line cut short, which take() refuses), and a copy of that token follows it.
  Tok peek(uint32_t ahead = 0) const { return toks_[pos_ + ahead].kind; }
  // Reads the next line's tokens, through its NL (or Eof); a line longer than any statement
  // may be is cut short (take() reports it).
  void read_line() {
    pos_ = 0;
    n_ = 0;
    for (;;) { // into toks_, grown when a line fills it (a slot is left for the copy)
      const size_t room = std::min<size_t>(toks_.size() - 1, kMaxStatementTokens + 2) - n_;
      n_ += static_cast<uint32_t>(lexer_.read_line(toks_.data() + n_, room));
      const Tok last = toks_[n_ - 1].kind;
      if (last == Tok::NL || last == Tok::Eof || n_ >= kMaxStatementTokens + 2) break;
      toks_.resize(toks_.size() * 2);
    }
    toks_[n_] = toks_[n_ - 1]; // what peek(1) sees at the last token
  }
  bool at(Tok k) const { return peek() == k; }
  uint32_t pos() const { return pos_; }
  void rewind(uint32_t pos) { pos_ = pos; }
  const Token& current() const { return toks_[pos_]; }
  Tok first() const { return toks_[0].kind; }
  Tok last_kind() const { return toks_[pos_ - 1].kind; } // of the token taken last
  bool at_eof() const { return at_eof_; }
  uint32_t off(uint32_t i) const { return toks_[i].begin; }
  uint32_t end(uint32_t i) const { return toks_[i].end; }
  uint32_t here() const { return toks_[std::min(pos_, n_ - 1)].begin; }
  std::string_view tok_text(uint32_t i) const {
    return std::string_view(f_.src).substr(toks_[i].begin, toks_[i].end - toks_[i].begin);
  }
  // Consumes the current token; returns its offset.
  uint32_t take() {
    if (pos_ >= kMaxStatementTokens)
      error(pos_, fmt::format("statement longer than {} tokens", kMaxStatementTokens));
    return off(pos_++);
  }
  uint32_t expect(Tok k, std::string_view what = {}) {
    if (!at(k)) error_expected(what.empty() ? tok_description(k) : what);
    return take();
  }
  bool accept(Tok k) {
    if (!at(k)) return false;
    take();
    return true;
  }
  [[noreturn]] void error(uint32_t i, std::string msg) {
    const Token& t = toks_[std::min(i, n_ - 1)];
    f_.errors.push_back({t.line, t.col, std::move(msg)});
    throw ParseError{};
  }
  [[noreturn]] void error_expected(std::string_view what) {
    const Tok k = peek();
    if (k == Tok::ErrChar) error(pos_, fmt::format("unexpected character '{}'", tok_text(pos_)));
    std::string found;
    if (k == Tok::NL || k == Tok::Eof || k == Tok::Comma)
      found = std::string(tok_description(k));
    else
      found = fmt::format("'{}'", tok_text(pos_));
    error(pos_, fmt::format("expected {}, found {}", what, found));
  }
  // Finishes the current line (reading the rest of it if it was cut short).
  void skip_line() {
    Tok last = toks_[n_ - 1].kind;
    while (last != Tok::NL && last != Tok::Eof) last = lexer_.next().kind;
    at_eof_ = last == Tok::Eof;
  }

private:
  ParsedFile& f_;
  Lexer lexer_;
  std::vector<Token> toks_; // the line's n_ tokens, a copy of the last, spare room
  uint32_t n_ = 0;
  uint32_t pos_ = 0;
  bool at_eof_ = false;
};

// Expressions and slices (the grammar's expr, primary and slice rules): nodes of the file.
class ExprParser {
public:
  ExprParser(ParsedFile& f, TokenStream& ts) : f_(f), ts_(ts) {}
  uint32_t expr(int min_level = 1);
  static bool starts_expr(Tok k) {
    switch (k) {
    case Tok::Number:
    case Tok::String:
    case Tok::Id:
    case Tok::Directive:
    case Tok::LParen:
    case Tok::LBrack:
    case Tok::Minus:
    case Tok::Plus:
    case Tok::Not:
    case Tok::Tilde: return true;
    default: return false;
    }
  }

  // Called after taking an opening bracket or a prefix operator; close_bracket() after its end.
  void open_bracket() {
    if (++nesting_ > kMaxNesting)
      ts_.error(ts_.pos() - 1,
                fmt::format("{} nested deeper than {}",
                            ts_.last_kind() == Tok::LParen || ts_.last_kind() == Tok::LBrack
                                ? "brackets"
                                : "operators",
                            kMaxNesting));
  }
  void close_bracket() { --nesting_; }
  void reset() { // a new line, or the line again
    nesting_ = 0;
    scratch_.clear();
  }

private:
  // Binding strength of a binary operator (0: not one), highest first as in the grammar.
  static int level(Tok k) {
    switch (k) {
    case Tok::Star:
    case Tok::Slash:
    case Tok::Percent: return 10;
    case Tok::Plus:
    case Tok::Minus: return 9;
    case Tok::Shl:
    case Tok::Shr: return 8;
    case Tok::Lt:
    case Tok::Le:
    case Tok::Gt:
    case Tok::Ge: return 7;
    case Tok::EqEq:
    case Tok::Ne: return 6;
    case Tok::Amp: return 5;
    case Tok::Caret: return 4;
    case Tok::Pipe: return 3;
    case Tok::AndAnd: return 2;
    case Tok::OrOr: return 1;
    default: return 0;
    }
  }

  uint32_t unary();
  uint32_t postfix();
  uint32_t primary();
  uint32_t slice();
  [[gnu::always_inline]] uint32_t add(const Node& n) {
    f_.nodes.push_back(n);
    return static_cast<uint32_t>(f_.nodes.size() - 1);
  }
  // Moves the scratch stack's entries from `mark` on into `n`'s kids.
  void take_kids(Node& n, size_t mark) {
    n.kids = static_cast<uint32_t>(f_.kids.size());
    n.nkids = static_cast<uint32_t>(scratch_.size() - mark);
    f_.kids.insert(f_.kids.end(), scratch_.begin() + static_cast<long>(mark), scratch_.end());
    scratch_.resize(mark);
  }

  ParsedFile& f_;
  TokenStream& ts_;
  int nesting_ = 0;
  std::vector<uint32_t> scratch_;
};

// Lines and statements (the grammar's program, line, stmt, operand and sync rules).
class Parser {
public:
  explicit Parser(ParsedFile& f) : f_(f), ts_(f), ex_(f, ts_) {}
  void program();

private:
  void line();
  void line_rest(uint32_t start, bool label); // the line after the label decision
  void stmt(Stmt& s);
  void operands(Stmt& s);
  void sync();
  void expr_list(Stmt& s); // exprList? up to ']'
  void take_items(uint32_t& begin, uint32_t& count, size_t mark) {
    begin = static_cast<uint32_t>(f_.items.size());
    count = static_cast<uint32_t>(item_scratch_.size() - mark);
    f_.items.insert(f_.items.end(), item_scratch_.begin() + static_cast<long>(mark),
                    item_scratch_.end());
    item_scratch_.resize(mark);
  }

  ParsedFile& f_;
  TokenStream ts_;
  ExprParser ex_;
  std::vector<Item> item_scratch_;
};

// program : line* EOF ;
void Parser::program() {
  while (!ts_.at_eof()) {
    ts_.read_line();
    if (ts_.first() == Tok::Eof) return;
    ex_.reset();
    item_scratch_.clear();
    try {
      line();
    } catch (const ParseError&) {
      if (f_.errors.size() >= 100) return;
    }
    ts_.skip_line();
  }
}

// line : (label=(ID | DOTTED | DIRECTIVE) ':')? stmt? NL ;
void Parser::line() {
  const uint32_t start = 0;
  const Tok k = ts_.peek();
  const bool label =
      (k == Tok::Id || k == Tok::Dotted || k == Tok::Directive) && ts_.peek(1) == Tok::Colon;
  if (label && k == Tok::Directive) {
    // `.x: rest` is a label and a statement, or one unknownDirective statement. As ANTLR's
    // full-LL prediction does, take the label if the rest of the line parses, else the latter.
    const size_t nodes = f_.nodes.size(), kids = f_.kids.size(), items = f_.items.size(),
                 syncs = f_.syncs.size(), errors = f_.errors.size();
    try {
      line_rest(start, true);
      return;
    } catch (const ParseError&) {
      ts_.rewind(start);
      ex_.reset();
      item_scratch_.clear();
      f_.nodes.resize(nodes);
      f_.kids.resize(kids);
      f_.items.resize(items);
      f_.syncs.resize(syncs);
      f_.errors.resize(errors);
    }
  }
  line_rest(start, label && k != Tok::Directive);
}

void Parser::line_rest(uint32_t start, bool label) {
  Stmt s;
  s.first = ts_.off(start);
  if (label) {
    s.label = ts_.take();
    ts_.take();
  }
  if (!ts_.at(Tok::NL)) stmt(s);
  s.end = ts_.end(s.kind == StmtKind::None ? start : ts_.pos() - 1);
  ts_.expect(Tok::NL, "end of line");
  if (s.label != kNone || s.kind != StmtKind::None) f_.stmts.push_back(s);
}

void Parser::stmt(Stmt& s) {
  s.tok = ts_.here();
  s.line = ts_.current().line;
  s.col = ts_.current().col;
  s.tok_len = ts_.current().end - ts_.current().begin;
  const Tok k = ts_.peek();
  switch (k) {
  case Tok::KwKernel: // '.kernel' name=ID
  case Tok::KwTarget: // '.target' name=ID
    ts_.take();
    s.kind = k == Tok::KwKernel ? StmtKind::Kernel : StmtKind::Target;
    s.name = ts_.expect(Tok::Id);
    break;
  case Tok::KwParam: // kind=('.param' | '.equ' | '.set') name=ID '=' expr
  case Tok::KwEqu:
  case Tok::KwSet:
    ts_.take();
    s.kind = StmtKind::Assign;
    s.name = ts_.expect(Tok::Id);
    ts_.expect(Tok::Assign);
    s.e0 = ex_.expr();
    break;
  case Tok::KwIf: // '.if' expr
  case Tok::KwElif:
    ts_.take();
    s.kind = k == Tok::KwIf ? StmtKind::If : StmtKind::Elif;
    s.e0 = ex_.expr();
    break;
  case Tok::KwElse:
  case Tok::KwEndif:
  case Tok::KwEndfor:
  case Tok::KwEndm:
    ts_.take();
    s.kind = k == Tok::KwElse     ? StmtKind::Else
             : k == Tok::KwEndif  ? StmtKind::Endif
             : k == Tok::KwEndfor ? StmtKind::Endfor
                                  : StmtKind::Endm;
    break;
  case Tok::KwFor: // '.for' var=ID kw=ID from=expr '..' to=expr (stepkw=ID step=expr)?
    ts_.take();
    s.kind = StmtKind::For;
    s.name = ts_.expect(Tok::Id);
    s.word = ts_.expect(Tok::Id, "'in'");
    s.e0 = ex_.expr();
    ts_.expect(Tok::DotDot);
    s.e1 = ex_.expr();
    if (ts_.at(Tok::Id)) {
      s.word2 = ts_.take();
      s.e2 = ex_.expr();
    }
    break;
  case Tok::KwMacro: { // '.macro' name=ID (macroParam (COMMA macroParam)*)?
    ts_.take();
    s.kind = StmtKind::Macro;
    s.name = ts_.expect(Tok::Id);
    const size_t mark = item_scratch_.size();
    if (ts_.at(Tok::Id)) {
      do { // macroParam : name=ID ('=' expr)? ;
        Item p;
        p.tok = ts_.expect(Tok::Id, "a parameter name");
        if (ts_.accept(Tok::Assign)) p.rhs = ex_.expr();
        item_scratch_.push_back(p);
      } while (ts_.accept(Tok::Comma));
    }
    take_items(s.items, s.nitems, mark);
    break;
  }
  case Tok::KwInclude: // '.include' STRING
  case Tok::KwError:   // '.error' STRING
    ts_.take();
    s.kind = k == Tok::KwInclude ? StmtKind::Include : StmtKind::Error;
    s.word = ts_.expect(Tok::String);
    break;
  case Tok::KwHbm: // kind=('.hbm'|'.sbuf'|'.psum') name=ID ':' dtype=ID '[' exprList? ']'
  case Tok::KwSbuf:
  case Tok::KwPsum: //   role=ID? ('@' addr=expr)?
    ts_.take();
    s.kind = StmtKind::Tensor;
    s.name = ts_.expect(Tok::Id);
    ts_.expect(Tok::Colon);
    s.word2 = ts_.expect(Tok::Id, "a dtype");
    expr_list(s);
    if (ts_.at(Tok::Id)) s.word = ts_.take();
    if (ts_.accept(Tok::At)) s.e0 = ex_.expr();
    break;
  case Tok::KwView: // '.view' name=ID '=' src=expr askw=ID dtype=ID '[' exprList? ']'
    ts_.take();
    s.kind = StmtKind::View;
    s.name = ts_.expect(Tok::Id);
    ts_.expect(Tok::Assign);
    s.e0 = ex_.expr();
    s.word = ts_.expect(Tok::Id, "'as'");
    s.word2 = ts_.expect(Tok::Id, "a dtype");
    expr_list(s);
    break;
  case Tok::KwSem: { // '.sem' semDecl (COMMA semDecl)*
    ts_.take();
    s.kind = StmtKind::Sem;
    const size_t mark = item_scratch_.size();
    do { // semDecl : name=ID ('=' expr)? ;
      Item d;
      d.tok = ts_.expect(Tok::Id, "a semaphore name");
      if (ts_.accept(Tok::Assign)) d.rhs = ex_.expr();
      item_scratch_.push_back(d);
    } while (ts_.accept(Tok::Comma));
    take_items(s.items, s.nitems, mark);
    break;
  }
  case Tok::KwGroup: // '.group' name=ID '=' expr
    ts_.take();
    s.kind = StmtKind::Group;
    s.name = ts_.expect(Tok::Id);
    ts_.expect(Tok::Assign);
    s.e0 = ex_.expr();
    break;
  case Tok::KwRanks: // kind=('.ranks' | '.lnc') expr
  case Tok::KwLnc:
    ts_.take();
    s.kind = StmtKind::Launch;
    s.e0 = ex_.expr();
    break;
  case Tok::Directive: // DIRECTIVE (~NL)*
    ts_.take();
    s.kind = StmtKind::UnknownDirective;
    while (!ts_.at(Tok::NL) && !ts_.at(Tok::Eof)) ts_.take();
    break;
  case Tok::Dotted: // DOTTED (operand (COMMA operand)*)? sync*
    ts_.take();
    s.kind = StmtKind::Inst;
    operands(s);
    if (ts_.at(Tok::At)) {
      // A statement's sync clauses are stored contiguously.
      const auto begin = static_cast<uint32_t>(f_.syncs.size());
      while (ts_.at(Tok::At)) sync();
      s.syncs = begin;
      s.nsyncs = static_cast<uint32_t>(f_.syncs.size()) - begin;
    }
    break;
  case Tok::Id: // ID (operand (COMMA operand)*)?
    ts_.take();
    s.kind = StmtKind::MacroCall;
    operands(s);
    break;
  default: ts_.error_expected("a statement");
  }
  s.last = ts_.off(ts_.pos() - 1);
}

// (operand (COMMA operand)*)?   operand : lhs=expr ('=' rhs=expr)? ;
void Parser::operands(Stmt& s) {
  const size_t mark = item_scratch_.size();
  if (ExprParser::starts_expr(ts_.peek())) {
    do {
      Item o;
      o.tok = ts_.here();
      o.lhs = ex_.expr();
      if (ts_.accept(Tok::Assign)) o.rhs = ex_.expr();
      item_scratch_.push_back(o);
    } while (ts_.accept(Tok::Comma));
    // The most common slip: a missing comma between two operands.
    if (ExprParser::starts_expr(ts_.peek()))
      ts_.error(ts_.pos(), "expected ',' before the next operand");
  }
  take_items(s.items, s.nitems, mark);
}

// sync : '@' kind=ID '(' syncArg (COMMA syncArg)* ')' ;
// syncArg : lhs=expr ('+=' rhs=expr)? ;
void Parser::sync() {
  Sync y;
  y.tok = ts_.take();
  y.kind = ts_.expect(Tok::Id, "'wait' or 'signal'");
  ts_.expect(Tok::LParen);
  ex_.open_bracket();
  const size_t mark = item_scratch_.size();
  do {
    Item a;
    a.tok = ts_.here();
    a.lhs = ex_.expr();
    if (ts_.accept(Tok::PlusAssign)) a.rhs = ex_.expr();
    item_scratch_.push_back(a);
  } while (ts_.accept(Tok::Comma));
  // `s => 1`, `s = 1`, `s =< 1`: the comparisons of a wait are `>=` and `==`.
  if (ts_.peek() == Tok::Assign) {
    const Tok n = ts_.peek(1);
    const char* want = n == Tok::Gt   ? "'>='"
                       : n == Tok::Lt ? "'>=' (waits hold from a count on)"
                                      : "'>=' or '=='";
    ts_.error(ts_.pos(),
              fmt::format("expected ')' or ',', found '{}'; a wait compares with '>=' or '==': "
                          "did you mean {}?",
                          n == Tok::Gt   ? "=>"
                          : n == Tok::Lt ? "=<"
                                         : "=",
                          want));
  }
  y.last = ts_.expect(Tok::RParen, "')' or ','");
  ex_.close_bracket();
  take_items(y.items, y.nitems, mark);
  f_.syncs.push_back(y);
}

// '[' exprList? ']'   exprList : expr (COMMA expr)* ;
void Parser::expr_list(Stmt& s) {
  ts_.expect(Tok::LBrack);
  const size_t mark = item_scratch_.size();
  if (!ts_.at(Tok::RBrack)) {
    do {
      Item e;
      e.tok = ts_.here();
      e.lhs = ex_.expr();
      item_scratch_.push_back(e);
    } while (ts_.accept(Tok::Comma));
  }
  ts_.expect(Tok::RBrack, "']' or ','");
  take_items(s.items, s.nitems, mark);
}

// expr : primary | expr '[' slice (COMMA slice)* ']' | op=('-'|'+'|'!'|'~') expr
//      | expr op=BINARY expr  (ten levels, left-associative)
uint32_t ExprParser::expr(int min_level) {
  uint32_t lhs = unary();
  for (int l = level(ts_.peek()); l >= min_level && l > 0; l = level(ts_.peek())) {
    Node n;
    n.kind = NodeKind::Binary;
    n.op = ts_.peek();
    n.c = ts_.take();
    n.tok = f_.nodes[lhs].tok;
    n.a = lhs;
    n.b = expr(l + 1);
    lhs = add(n);
  }
  return lhs;
}

// A prefix operator's operand binds tighter than any binary operator, looser than '['.
uint32_t ExprParser::unary() {
  const Tok k = ts_.peek();
  if (k == Tok::Minus || k == Tok::Plus || k == Tok::Not || k == Tok::Tilde) {
    Node n;
    n.kind = NodeKind::Unary;
    n.op = k;
    n.tok = ts_.take();
    open_bracket(); // a chain of prefix operators nests like brackets do
    n.a = unary();
    close_bracket();
    return add(n);
  }
  return postfix();
}

// expr '[' slice (COMMA slice)* ']'
uint32_t ExprParser::postfix() {
  uint32_t e = primary();
  while (ts_.at(Tok::LBrack)) {
    ts_.take();
    open_bracket();
    Node n;
    n.kind = NodeKind::Index;
    n.tok = f_.nodes[e].tok;
    n.a = e;
    const size_t mark = scratch_.size();
    do scratch_.push_back(slice());
    while (ts_.accept(Tok::Comma));
    ts_.expect(Tok::RBrack, "']' or ','");
    close_bracket();
    take_kids(n, mark);
    e = add(n);
  }
  return e;
}

// slice : '@' expr | lo=expr? (c1=':' hi=expr? (c2=':' step=expr?)?)? ;
uint32_t ExprParser::slice() {
  Node n;
  n.tok = ts_.here();
  if (ts_.accept(Tok::At)) {
    n.kind = NodeKind::DynSlice;
    n.a = expr();
    return add(n);
  }
  n.kind = NodeKind::RangeSlice;
  if (starts_expr(ts_.peek())) n.a = expr();
  if (ts_.accept(Tok::Colon)) {
    n.flags |= Node::kFirstColon;
    if (starts_expr(ts_.peek())) n.b = expr();
    if (ts_.accept(Tok::Colon)) {
      n.flags |= Node::kSecondColon;
      if (starts_expr(ts_.peek())) n.c = expr();
    }
  }
  return add(n);
}

// primary : NUMBER | STRING | name=ID '(' (callArg (COMMA callArg)*)? ')' | name=(ID|DIRECTIVE)
//         | '(' expr ')' | '[' (expr (COMMA expr)*)? ']' ;
uint32_t ExprParser::primary() {
  Node n;
  n.tok = ts_.here();
  if (const uint32_t len = ts_.current().end - ts_.current().begin; len < 256)
    n.len = static_cast<uint8_t>(len);
  switch (ts_.peek()) {
  case Tok::Number: {
    n.kind = NodeKind::Number;
    // Plain decimal integers (most numbers) are converted once here, not at every evaluation.
    const std::string_view t = ts_.tok_text(ts_.pos());
    if (t.size() <= 18 &&
        std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      uint64_t v = 0;
      for (char c : t) v = v * 10 + static_cast<uint64_t>(c - '0');
      n.flags = Node::kIntValue;
      n.a = static_cast<uint32_t>(v);
      n.b = static_cast<uint32_t>(v >> 32);
    }
    break;
  }
  case Tok::String: n.kind = NodeKind::String; break;
  case Tok::Directive: n.kind = NodeKind::Name; break;
  case Tok::Id:
    if (ts_.peek(1) != Tok::LParen) {
      n.kind = NodeKind::Name;
      break;
    }
    { // callArg : (name=ID '=')? expr ;
      ts_.take();
      ts_.take();
      open_bracket();
      n.kind = NodeKind::Call;
      const size_t mark = scratch_.size();
      if (!ts_.at(Tok::RParen)) {
        do {
          Node a;
          a.kind = NodeKind::CallArg;
          a.tok = ts_.here();
          if (ts_.at(Tok::Id) && ts_.peek(1) == Tok::Assign) {
            a.b = ts_.take();
            ts_.take();
          }
          a.a = expr();
          scratch_.push_back(add(a));
        } while (ts_.accept(Tok::Comma));
      }
      ts_.expect(Tok::RParen, "')' or ','");
      close_bracket();
      take_kids(n, mark);
      return add(n);
    }
  case Tok::LParen:
    ts_.take();
    open_bracket();
    n.kind = NodeKind::Paren;
    n.a = expr();
    ts_.expect(Tok::RParen);
    close_bracket();
    return add(n);
  case Tok::LBrack: {
    ts_.take();
    open_bracket();
    n.kind = NodeKind::List;
    const size_t mark = scratch_.size();
    if (!ts_.at(Tok::RBrack)) {
      do scratch_.push_back(expr());
      while (ts_.accept(Tok::Comma));
    }
    ts_.expect(Tok::RBrack, "']' or ','");
    close_bracket();
    take_kids(n, mark);
    return add(n);
  }
  default: ts_.error_expected("an expression");
  }
  ts_.take();
  return add(n);
}

// Splits the source into lines; returns how many hold more than blanks and a comment (an
// upper bound on the statements).
size_t split_lines(ParsedFile& f) {
  const std::string_view t = f.src;
  f.line_starts.reserve(t.size() / 16 + 16); // re-sized if the lines are shorter
  size_t code = 0;
  for (size_t b = 0; b < t.size();) {
    f.line_starts.push_back(static_cast<uint32_t>(b));
    const size_t e = t.find('\n', b);
    size_t first = b; // the first byte that is not ' ', '\t' or '\r'
    while (first < t.size() && (t[first] == ' ' || t[first] == '\t' || t[first] == '\r')) ++first;
    if (first < e && t[first] != ';' && !(t[first] == '/' && t.substr(first, 2) == "//")) ++code;
    b = e == std::string_view::npos ? t.size() : e + 1;
  }
  return code;
}

std::optional<size_t> invalid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    // ASCII runs, 8 bytes at a time.
    uint64_t w;
    if (i + 8 <= s.size() && (std::memcpy(&w, s.data() + i, 8), (w & 0x8080808080808080u) == 0)) {
      i += 8;
      continue;
    }
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    const int n = (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return i;
    for (int k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return i;
    if ((n == 2 && c < 0xc2) || (n == 4 && c > 0xf4)) return i;
    i += static_cast<size_t>(n);
  }
  return std::nullopt;
}

} // namespace

ParsedFile parse_source(std::string name, std::string text) {
  ParsedFile f;
  f.name = std::move(name);
  f.src = std::move(text);
  // A UTF-8 byte order mark (editors on Windows write one) is not part of the text.
  if (f.src.starts_with(kUtf8Bom)) f.src.erase(0, kUtf8Bom.size());
  // Every statement ends with NL: make sure the last one does.
  if (f.src.empty() || f.src.back() != '\n') f.src.push_back('\n');
  const size_t code = split_lines(f);
  // Columns count code points: reject malformed UTF-8 first.
  if (auto bad = invalid_utf8(f.src)) {
    const std::string_view s = f.src;
    const size_t line_start = *bad == 0 ? std::string_view::npos : s.rfind('\n', *bad - 1);
    const auto line =
        static_cast<uint32_t>(std::count(s.begin(), s.begin() + static_cast<long>(*bad), '\n') + 1);
    const auto col =
        static_cast<uint32_t>(line_start == std::string_view::npos ? *bad + 1 : *bad - line_start);
    f.errors.push_back({line, col, "invalid UTF-8 byte in the source"});
    return f;
  }
  if (f.src.size() >= UINT32_MAX) {
    f.errors.push_back({1, 1, "the source is larger than 4 GiB"});
    return f;
  }
  // Generous reservations (about 1 node per 4 bytes of dense code), in proportion to the lines
  // that hold code, not to blank and comment lines (12M blank lines reserved 2 GB): pages
  // never touched cost nothing, a reallocation copies them all.
  const size_t dense = std::min(f.src.size(), code * 64);
  f.stmts.reserve(code);
  f.nodes.reserve(dense / 4 + 16);
  f.kids.reserve(dense / 16 + 16);
  f.items.reserve(std::min(code * 8, dense / 2) + 16);
  Parser(f).program();
  return f;
}

uint32_t ParsedFile::line_of(uint32_t offset) const {
  // The last line that starts at or before `offset`.
  auto it = std::upper_bound(line_starts.begin(), line_starts.end(), offset);
  return static_cast<uint32_t>(std::max<std::ptrdiff_t>(it - line_starts.begin(), 1));
}

std::pair<uint32_t, uint32_t> ParsedFile::position(uint32_t offset) const {
  const uint32_t line = line_of(offset);
  uint32_t col = 1;
  for (uint32_t p = line_starts.empty() ? 0 : line_starts[line - 1]; p < offset; ++p)
    col += (static_cast<unsigned char>(src[p]) & 0xc0) != 0x80;
  return {line, col};
}

std::string_view ParsedFile::line_text(uint32_t line) const {
  if (line < 1 || line > line_starts.size()) return {};
  std::string_view l = std::string_view(src).substr(line_starts[line - 1]);
  l = l.substr(0, l.find('\n'));
  if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
  return l;
}

Token ParsedFile::token(uint32_t tok) const {
  Token t = lex_at(src, tok);
  std::tie(t.line, t.col) = position(tok);
  return t;
}

} // namespace nisa::nasm
