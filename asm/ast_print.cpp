// The parse tree as S-expressions, one line per statement: `(line LABEL STMT)` with `-` for
// an absent label or statement. Tokens print as written; absent optional parts as `_`.
//   (kernel N) (target N) (assign .param|.equ|.set N E) (if E) (elif E) (else) (endif)
//   (for VAR IN FROM TO) (for VAR IN FROM TO STEPWORD STEP) (endfor)
//   (macro N (param P) (param P E) ...) (endm) (include S) (error S)
//   (tensor .hbm|.sbuf|.psum N DTYPE (shape E...) ROLE|_ ADDR|_)
//   (view N SRC AS DTYPE (shape E...)) (sem (decl N) (decl N E) ...) (group N E)
//   (launch .ranks|.lnc E)
//   (directive D TOKEN...) (inst MNEMONIC (op E) (op E E) ... (sync KIND (arg E) (arg E E)...)...)
//   (macrocall N (op E) ...)
// Expressions: NUMBER NAME "STRING" (call F (carg E) (carg NAME E)...) (paren E) (list E...)
//   (index E SLICE...) with SLICE = (dyn E) | (range LO|_ [: HI|_ [: STEP|_]]), (OP E), (OP L R)
// tests/asm/antlr_reference.cpp prints ANTLR's tree in the same form (tests/asm/parser_test.cpp).
#include "asm/ast.h"

namespace nisa::nasm {
namespace {

class Printer {
public:
  explicit Printer(const ParsedFile& f) : f_(f) {}
  std::string run();

private:
  void tok(uint32_t t) {
    out_ += ' ';
    if (t == kNone)
      out_ += '_';
    else if (lex_at(f_.src, t).kind == Tok::Comma)
      out_ += ',';
    else
      out_ += f_.text(t);
  }
  void expr(uint32_t e);
  void items(const Stmt& s, const char* head, bool named);

  const ParsedFile& f_;
  std::string out_;
};

void Printer::expr(uint32_t e) {
  if (e == kNone) {
    out_ += " _";
    return;
  }
  const Node& n = f_.node(e);
  const uint32_t* k = f_.kid_begin(n);
  switch (n.kind) {
  case NodeKind::Number:
  case NodeKind::String:
  case NodeKind::Name: tok(n.tok); return;
  case NodeKind::Call:
    out_ += " (call";
    tok(n.tok);
    for (uint32_t i = 0; i < n.nkids; ++i) expr(k[i]);
    break;
  case NodeKind::CallArg:
    out_ += " (carg";
    if (n.b != kNone) tok(n.b);
    expr(n.a);
    break;
  case NodeKind::Paren:
    out_ += " (paren";
    expr(n.a);
    break;
  case NodeKind::List:
    out_ += " (list";
    for (uint32_t i = 0; i < n.nkids; ++i) expr(k[i]);
    break;
  case NodeKind::Index:
    out_ += " (index";
    expr(n.a);
    for (uint32_t i = 0; i < n.nkids; ++i) expr(k[i]);
    break;
  case NodeKind::Unary:
    out_ += " (";
    out_ += tok_spelling(n.op);
    expr(n.a);
    break;
  case NodeKind::Binary:
    out_ += " (";
    out_ += tok_spelling(n.op);
    expr(n.a);
    expr(n.b);
    break;
  case NodeKind::DynSlice:
    out_ += " (dyn";
    expr(n.a);
    break;
  case NodeKind::RangeSlice:
    out_ += " (range";
    expr(n.a);
    if (n.flags & Node::kFirstColon) {
      out_ += " :";
      expr(n.b);
      if (n.flags & Node::kSecondColon) {
        out_ += " :";
        expr(n.c);
      }
    }
    break;
  }
  out_ += ')';
}

// Operands/arguments as (HEAD E) / (HEAD E E); declarations as (HEAD NAME) / (HEAD NAME E);
// with no HEAD, the bare expressions (shapes).
void Printer::items(const Stmt& s, const char* head, bool named) {
  for (uint32_t i = 0; i < s.nitems; ++i) {
    const Item& it = f_.items[s.items + i];
    if (!*head) {
      expr(it.lhs);
      continue;
    }
    out_ += " (";
    out_ += head;
    if (named)
      tok(it.tok);
    else
      expr(it.lhs);
    if (it.rhs != kNone) expr(it.rhs);
    out_ += ')';
  }
}

std::string Printer::run() {
  for (const Stmt& s : f_.stmts) {
    out_ += "(line";
    tok(s.label == kNone ? kNone : s.label);
    if (s.label == kNone) out_.back() = '-';
    auto head = [&](const char* h) {
      out_ += " (";
      out_ += h;
    };
    switch (s.kind) {
    case StmtKind::None: out_ += " -)\n"; continue;
    case StmtKind::Kernel: head("kernel"), tok(s.name); break;
    case StmtKind::Target: head("target"), tok(s.name); break;
    case StmtKind::Assign: head("assign"), tok(s.tok), tok(s.name), expr(s.e0); break;
    case StmtKind::If: head("if"), expr(s.e0); break;
    case StmtKind::Elif: head("elif"), expr(s.e0); break;
    case StmtKind::Else: head("else"); break;
    case StmtKind::Endif: head("endif"); break;
    case StmtKind::For:
      head("for"), tok(s.name), tok(s.word), expr(s.e0), expr(s.e1);
      if (s.word2 != kNone) tok(s.word2), expr(s.e2);
      break;
    case StmtKind::Endfor: head("endfor"); break;
    case StmtKind::Macro: head("macro"), tok(s.name), items(s, "param", true); break;
    case StmtKind::Endm: head("endm"); break;
    case StmtKind::Include: head("include"), tok(s.word); break;
    case StmtKind::Error: head("error"), tok(s.word); break;
    case StmtKind::Tensor:
      head("tensor"), tok(s.tok), tok(s.name), tok(s.word2);
      out_ += " (shape";
      items(s, "", false);
      out_ += ')';
      tok(s.word), expr(s.e0);
      break;
    case StmtKind::View:
      head("view"), tok(s.name), expr(s.e0), tok(s.word), tok(s.word2);
      out_ += " (shape";
      items(s, "", false);
      out_ += ')';
      break;
    case StmtKind::Sem: head("sem"), items(s, "decl", true); break;
    case StmtKind::Group: head("group"), tok(s.name), expr(s.e0); break;
    case StmtKind::Launch: head("launch"), tok(s.tok), expr(s.e0); break;
    case StmtKind::UnknownDirective:
      head("directive");
      for (Lexer lx(f_.src, s.tok);;) {
        const Token t = lx.next();
        tok(t.begin);
        if (t.begin >= s.last || t.kind == Tok::Eof) break;
      }
      break;
    case StmtKind::Inst:
      head("inst"), tok(s.tok), items(s, "op", false);
      for (uint32_t y = 0; y < s.nsyncs; ++y) {
        const Sync& sy = f_.syncs[s.syncs + y];
        out_ += " (sync";
        tok(sy.kind);
        for (uint32_t i = 0; i < sy.nitems; ++i) {
          const Item& a = f_.items[sy.items + i];
          out_ += " (arg";
          expr(a.lhs);
          if (a.rhs != kNone) expr(a.rhs);
          out_ += ')';
        }
        out_ += ')';
      }
      break;
    case StmtKind::MacroCall: head("macrocall"), tok(s.tok), items(s, "op", false); break;
    }
    out_ += "))\n"; // closes the statement and the line
  }
  return std::move(out_);
}

} // namespace

std::string to_sexpr(const ParsedFile& f) { return Printer(f).run(); }

} // namespace nisa::nasm
