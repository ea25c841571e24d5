// The generated ANTLR lexer/parser as the reference of the hand-written front end: see
// antlr_reference.h. The printer mirrors asm/ast_print.cpp rule for rule.
#include "tests/support/antlr_reference.h"

#include "tests/support/test_files.h"

#include <algorithm>
#include <array>
#include <stdexcept>

#include "NeuronAsmLexer.h"
#include "NeuronAsmParser.h"
#include "antlr4-runtime.h"

namespace nisa::nasm::antlr_ref {
namespace {

using P = nisa_grammar::NeuronAsmParser;
using L = nisa_grammar::NeuronAsmLexer;

constexpr size_t kNumTok = static_cast<size_t>(Tok::OrOr) + 1;

std::array<size_t, kNumTok> make_type_table() {
  std::array<size_t, kNumTok> t{};
  t[static_cast<size_t>(Tok::Eof)] = antlr4::Token::EOF;
  t[static_cast<size_t>(Tok::NL)] = L::NL;
  t[static_cast<size_t>(Tok::Comma)] = L::COMMA;
  t[static_cast<size_t>(Tok::Dotted)] = L::DOTTED;
  t[static_cast<size_t>(Tok::Directive)] = L::DIRECTIVE;
  t[static_cast<size_t>(Tok::Number)] = L::NUMBER;
  t[static_cast<size_t>(Tok::Id)] = L::ID;
  t[static_cast<size_t>(Tok::String)] = L::STRING;
  t[static_cast<size_t>(Tok::ErrChar)] = L::ERRCHAR;
  antlr4::ANTLRInputStream in("");
  L lexer(&in);
  const antlr4::dfa::Vocabulary& voc = lexer.getVocabulary();
  for (size_t k = static_cast<size_t>(Tok::KwKernel); k < kNumTok; ++k) {
    const std::string want = "'" + std::string(tok_spelling(static_cast<Tok>(k))) + "'";
    size_t found = 0;
    for (size_t type = 1; type <= voc.getMaxTokenType(); ++type)
      if (voc.getLiteralName(type) == want) found = type;
    if (found == 0) throw std::logic_error("no ANTLR token type for " + want);
    t[k] = found;
  }
  return t;
}

// Code-point index of every byte offset of `s` (and of s.size()).
std::vector<size_t> code_point_index(std::string_view s) {
  std::vector<size_t> idx(s.size() + 1);
  size_t cp = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    idx[i] = cp;
    if ((static_cast<unsigned char>(s[i]) & 0xc0) != 0x80) ++cp;
  }
  // A continuation byte belongs to the code point before it: fix up in a second pass.
  for (size_t i = 0; i < s.size(); ++i)
    if ((static_cast<unsigned char>(s[i]) & 0xc0) == 0x80) idx[i] = idx[i - 1];
  idx[s.size()] = cp;
  return idx;
}

class ErrorCollector : public antlr4::BaseErrorListener {
public:
  explicit ErrorCollector(std::vector<std::string>& errors) : errors_(errors) {}
  void syntaxError(antlr4::Recognizer*, antlr4::Token*, size_t line, size_t col,
                   const std::string& msg, std::exception_ptr) override {
    errors_.push_back(std::to_string(line) + ":" + std::to_string(col) + ": " + msg);
  }

private:
  std::vector<std::string>& errors_;
};

// Prints ANTLR's tree as to_sexpr prints ours (format: asm/ast_print.cpp).
class Printer {
public:
  std::string run(P::ProgramContext* prog);

private:
  void tok(antlr4::Token* t) {
    out_ += ' ';
    if (!t)
      out_ += '?';
    else if (t->getType() == L::COMMA)
      out_ += ',';
    else
      out_ += t->getText();
  }
  void tok(antlr4::tree::TerminalNode* n) { tok(n ? n->getSymbol() : nullptr); }
  void opt_tok(antlr4::Token* t) {
    if (t)
      tok(t);
    else
      out_ += " _";
  }
  void head(const char* h) {
    out_ += " (";
    out_ += h;
  }
  void expr(P::ExprContext* e);
  void primary(P::PrimaryContext* p);
  void slice(P::SliceContext* s);
  void opt_expr(P::ExprContext* e) {
    if (e)
      expr(e);
    else
      out_ += " _";
  }
  void shape(P::ExprListContext* l) {
    out_ += " (shape";
    if (l)
      for (auto* e : l->expr()) expr(e);
    out_ += ')';
  }
  // (HEAD E) / (HEAD E E)
  void operand(const char* h, P::ExprContext* lhs, P::ExprContext* rhs) {
    head(h);
    expr(lhs);
    if (rhs) expr(rhs);
    out_ += ')';
  }
  // (HEAD NAME) / (HEAD NAME E)
  void decl(const char* h, antlr4::Token* name, P::ExprContext* value) {
    head(h);
    tok(name);
    if (value) expr(value);
    out_ += ')';
  }
  void stmt(P::StmtContext* s);

  std::string out_;
};

void Printer::expr(P::ExprContext* e) {
  if (!e) {
    out_ += " ?";
    return;
  }
  if (auto* x = dynamic_cast<P::PrimaryExprContext*>(e)) {
    primary(x->primary());
    return;
  }
  if (auto* x = dynamic_cast<P::IndexExprContext*>(e)) {
    head("index");
    expr(x->expr());
    for (auto* s : x->slice()) slice(s);
  } else if (auto* x = dynamic_cast<P::UnaryExprContext*>(e)) {
    out_ += " (";
    out_ += x->op ? x->op->getText() : "?";
    expr(x->expr());
  } else if (auto* x = dynamic_cast<P::BinaryExprContext*>(e)) {
    out_ += " (";
    out_ += x->op ? x->op->getText() : "?";
    expr(x->expr(0));
    expr(x->expr(1));
  } else {
    out_ += " (?";
  }
  out_ += ')';
}

void Printer::primary(P::PrimaryContext* p) {
  if (auto* x = dynamic_cast<P::NumberPrimContext*>(p)) return tok(x->NUMBER());
  if (auto* x = dynamic_cast<P::StringPrimContext*>(p)) return tok(x->STRING());
  if (auto* x = dynamic_cast<P::NamePrimContext*>(p)) return tok(x->name);
  if (auto* x = dynamic_cast<P::CallPrimContext*>(p)) {
    head("call");
    tok(x->name);
    for (auto* a : x->callArg()) {
      head("carg");
      if (a->name) tok(a->name);
      expr(a->expr());
      out_ += ')';
    }
  } else if (auto* x = dynamic_cast<P::ParenPrimContext*>(p)) {
    head("paren");
    expr(x->expr());
  } else if (auto* x = dynamic_cast<P::ListPrimContext*>(p)) {
    head("list");
    for (auto* e : x->expr()) expr(e);
  } else {
    out_ += " (?";
  }
  out_ += ')';
}

void Printer::slice(P::SliceContext* s) {
  if (auto* x = dynamic_cast<P::DynSliceContext*>(s)) {
    head("dyn");
    expr(x->expr());
  } else if (auto* x = dynamic_cast<P::RangeSliceContext*>(s)) {
    head("range");
    opt_expr(x->lo);
    if (x->c1) {
      out_ += " :";
      opt_expr(x->hi);
      if (x->c2) {
        out_ += " :";
        opt_expr(x->step);
      }
    }
  } else {
    out_ += " (?";
  }
  out_ += ')';
}

void Printer::stmt(P::StmtContext* s) {
  if (auto* x = dynamic_cast<P::KernelStmtContext*>(s)) {
    head("kernel"), tok(x->name);
  } else if (auto* x = dynamic_cast<P::TargetStmtContext*>(s)) {
    head("target"), tok(x->name);
  } else if (auto* x = dynamic_cast<P::AssignStmtContext*>(s)) {
    head("assign"), tok(x->kind), tok(x->name), expr(x->expr());
  } else if (auto* x = dynamic_cast<P::IfStmtContext*>(s)) {
    head("if"), expr(x->expr());
  } else if (auto* x = dynamic_cast<P::ElifStmtContext*>(s)) {
    head("elif"), expr(x->expr());
  } else if (dynamic_cast<P::ElseStmtContext*>(s)) {
    head("else");
  } else if (dynamic_cast<P::EndifStmtContext*>(s)) {
    head("endif");
  } else if (auto* x = dynamic_cast<P::ForStmtContext*>(s)) {
    head("for"), tok(x->var), tok(x->kw), expr(x->from), expr(x->to);
    if (x->stepkw) tok(x->stepkw), expr(x->step);
  } else if (dynamic_cast<P::EndforStmtContext*>(s)) {
    head("endfor");
  } else if (auto* x = dynamic_cast<P::MacroStmtContext*>(s)) {
    head("macro"), tok(x->name);
    for (auto* p : x->macroParam()) decl("param", p->name, p->expr());
  } else if (dynamic_cast<P::EndmStmtContext*>(s)) {
    head("endm");
  } else if (auto* x = dynamic_cast<P::IncludeStmtContext*>(s)) {
    head("include"), tok(x->STRING());
  } else if (auto* x = dynamic_cast<P::ErrorStmtContext*>(s)) {
    head("error"), tok(x->STRING());
  } else if (auto* x = dynamic_cast<P::TensorStmtContext*>(s)) {
    head("tensor"), tok(x->kind), tok(x->name), tok(x->dtype), shape(x->exprList());
    opt_tok(x->role), opt_expr(x->addr);
  } else if (auto* x = dynamic_cast<P::ViewStmtContext*>(s)) {
    head("view"), tok(x->name), expr(x->src), tok(x->askw), tok(x->dtype);
    shape(x->exprList());
  } else if (auto* x = dynamic_cast<P::SemStmtContext*>(s)) {
    head("sem");
    for (auto* d : x->semDecl()) decl("decl", d->name, d->expr());
  } else if (auto* x = dynamic_cast<P::GroupStmtContext*>(s)) {
    head("group"), tok(x->name), expr(x->expr());
  } else if (auto* x = dynamic_cast<P::LaunchStmtContext*>(s)) {
    head("launch"), tok(x->kind), expr(x->expr());
  } else if (auto* x = dynamic_cast<P::UnknownDirectiveContext*>(s)) {
    head("directive");
    for (auto* c : x->children)
      if (auto* t = dynamic_cast<antlr4::tree::TerminalNode*>(c)) tok(t);
  } else if (auto* x = dynamic_cast<P::InstStmtContext*>(s)) {
    head("inst"), tok(x->DOTTED());
    for (auto* o : x->operand()) operand("op", o->lhs, o->rhs);
    for (auto* y : x->sync()) {
      head("sync"), tok(y->kind);
      for (auto* a : y->syncArg()) operand("arg", a->lhs, a->rhs);
      out_ += ')';
    }
  } else if (auto* x = dynamic_cast<P::MacroCallContext*>(s)) {
    head("macrocall"), tok(x->ID());
    for (auto* o : x->operand()) operand("op", o->lhs, o->rhs);
  } else {
    head("?");
  }
  out_ += ')';
}

std::string Printer::run(P::ProgramContext* prog) {
  for (auto* l : prog->line()) {
    P::StmtContext* s = l->stmt();
    if (!l->label && !s) continue;
    out_ += "(line";
    if (l->label)
      tok(l->label);
    else
      out_ += " -";
    if (s)
      stmt(s);
    else
      out_ += " -";
    out_ += ")\n";
  }
  return std::move(out_);
}

} // namespace

std::string AntlrToken::str() const {
  return "type " + (type == antlr4::Token::EOF ? std::string("EOF") : std::to_string(type)) + " [" +
         std::to_string(start) + ", " + std::to_string(stop) + "] at " + std::to_string(line) +
         ":" + std::to_string(col);
}

size_t antlr_type(Tok k) {
  static const std::array<size_t, kNumTok> table = make_type_table();
  return table.at(static_cast<size_t>(k));
}

std::vector<AntlrToken> to_antlr_tokens(std::string_view src, const std::vector<Token>& toks) {
  const std::vector<size_t> cp = code_point_index(src);
  std::vector<AntlrToken> out;
  out.reserve(toks.size());
  for (const Token& t : toks) {
    AntlrToken a;
    a.type = antlr_type(t.kind);
    a.start = cp.at(t.begin);
    // EOF: [index, index - 1], as ANTLR's Lexer::emitEOF (size_t arithmetic, like ANTLR's).
    a.stop = t.kind == Tok::Eof ? a.start - 1 : cp.at(t.end) - 1;
    a.line = t.line;
    a.col = t.col - 1;
    out.push_back(a);
  }
  return out;
}

std::vector<AntlrToken> lex_as_antlr(std::string_view src) {
  return to_antlr_tokens(src, lex(src));
}

std::vector<AntlrToken> antlr_lex(const std::string& src) {
  antlr4::ANTLRInputStream in(src);
  L lexer(&in);
  lexer.removeErrorListeners();
  std::vector<AntlrToken> out;
  for (;;) {
    auto t = lexer.nextToken();
    out.push_back({t->getType(), t->getStartIndex(), t->getStopIndex(), t->getLine(),
                   t->getCharPositionInLine()});
    if (t->getType() == antlr4::Token::EOF) return out;
  }
}

std::string antlr_sexpr(const std::string& text, std::vector<std::string>& errors) {
  std::string src = text;
  if (src.empty() || src.back() != '\n') src.push_back('\n');
  ErrorCollector collect(errors);
  antlr4::ANTLRInputStream in(src);
  L lexer(&in);
  lexer.removeErrorListeners();
  lexer.addErrorListener(&collect);
  antlr4::CommonTokenStream tokens(&lexer);
  P parser(&tokens);
  parser.removeErrorListeners();
  parser.addErrorListener(&collect);
  parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(
      antlr4::atn::PredictionMode::LL);
  P::ProgramContext* tree = parser.program();
  return Printer().run(tree);
}

size_t error_line(const std::string& error) {
  size_t n = 0, i = 0;
  for (; i < error.size() && error[i] >= '0' && error[i] <= '9'; ++i)
    n = n * 10 + static_cast<size_t>(error[i] - '0');
  return i > 0 && i < error.size() && error[i] == ':' ? n : 0;
}

std::string diff_tokens(const std::vector<AntlrToken>& antlr, const std::vector<AntlrToken>& ours) {
  for (size_t k = 0; k < std::max(antlr.size(), ours.size()); ++k) {
    if (k < antlr.size() && k < ours.size() && antlr[k] == ours[k]) continue;
    auto show = [&](const std::vector<AntlrToken>& v) {
      return k < v.size() ? v[k].str() : std::string("(none)");
    };
    return "token " + std::to_string(k) + ": antlr " + show(antlr) + ", lex " + show(ours);
  }
  return "";
}

std::string diff_parses(const ParsedFile& ours, const std::string& antlr_tree,
                        const std::vector<std::string>& antlr_errors) {
  auto ours_error = [&] {
    const SyntaxError& e = ours.errors.front();
    return std::to_string(e.line) + ":" + std::to_string(e.col) + ": " + e.message;
  };
  if (ours.errors.empty() != antlr_errors.empty()) {
    if (ours.errors.empty())
      return "ANTLR rejects (" + antlr_errors.front() + "), ours accepts:\n" + to_sexpr(ours);
    return "ours rejects (" + ours_error() + "), ANTLR accepts:\n" + antlr_tree;
  }
  if (!antlr_errors.empty()) {
    // ANTLR's columns are 0-based, ours 1-based.
    const std::string& a = antlr_errors.front();
    const SyntaxError& e = ours.errors.front();
    if (error_line(a) != e.line ||
        a.compare(0, a.find(' '), std::to_string(e.line) + ":" + std::to_string(e.col - 1) + ":"))
      return "first errors at different places: ANTLR " + a + ", ours " + ours_error();
    return "";
  }
  const std::string tree = to_sexpr(ours);
  if (tree != antlr_tree) return "trees differ:\nANTLR:\n" + antlr_tree + "ours:\n" + tree;
  return "";
}

std::vector<std::filesystem::path> corpus(const std::string& asm_test_dir) {
  const std::filesystem::path t(asm_test_dir);
  std::vector<std::filesystem::path> out;
  for (const auto& dir : {t / "golden", t / "invalid", t / "inputs", t / "../../kernels_asm",
                          t / "../../kernels_asm/lib"})
    for (auto& p : test::files_in(dir, {".nasm", ".inc"})) out.push_back(std::move(p));
  return out;
}

} // namespace nisa::nasm::antlr_ref
