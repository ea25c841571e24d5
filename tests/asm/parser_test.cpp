// The hand-written parser (asm/parser.cpp) against the reference: the ANTLR parser generated
// from grammar/NeuronAsm.g4 (full LL prediction). Both must accept and reject the same texts;
// when both accept, they must build the same tree (compared as to_sexpr printouts); when both
// reject, the first error must be at the same place (line and column). Checked on every listing of
// the repository, on seeded random statements built from the grammar (and mutated copies of them,
// about half invalid), and on hand-written precedence cases.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "asm/ast.h"
#include "tests/support/antlr_reference.h"
#include "tests/support/test_files.h"

namespace nisa::nasm {
namespace {

namespace fs = std::filesystem;
const std::string kDir = NISA_ASM_TEST_DIR;

struct Outcome {
  bool ours_ok = false, antlr_ok = false;
};

// Parses `text` with both parsers; returns "" when they agree, else what differs.
std::string compare(const std::string& text, Outcome* outcome = nullptr) {
  const ParsedFile f = parse_source("test.nasm", text);
  std::vector<std::string> errors;
  const std::string ref = antlr_ref::antlr_sexpr(text, errors);
  if (outcome) *outcome = {f.errors.empty(), errors.empty()};
  return antlr_ref::diff_parses(f, ref, errors);
}

TEST(Parser, MatchesAntlrOnEveryListing) {
  size_t files = 0, accepted = 0;
  for (const fs::path& p : antlr_ref::corpus(kDir)) {
    Outcome o;
    EXPECT_EQ(compare(test::read_file(p), &o), "") << p;
    accepted += o.antlr_ok;
    ++files;
  }
  EXPECT_GT(files, 50u);
  // Nearly every listing is syntactically valid (tests/asm/invalid holds semantic errors too):
  // the tree comparison must not be vacuous.
  EXPECT_GT(accepted, files / 2);
}

// ---- random statements from the grammar ----------------------------------------------------

class Gen {
public:
  explicit Gen(uint32_t seed) : rng_(seed) {}

  // A few lines; each piece is one token or a line end ("\n", possibly after a comment).
  std::vector<std::string> text() {
    out_.clear();
    for (int n = between(1, 4); n-- > 0;) line();
    return std::move(out_);
  }

  // Drops, duplicates, swaps or replaces a piece, or inserts a random one.
  void mutate(std::vector<std::string>& p) {
    if (p.empty()) return;
    const size_t i = static_cast<size_t>(between(0, static_cast<int>(p.size()) - 1));
    switch (between(0, 4)) {
    case 0: p.erase(p.begin() + static_cast<long>(i)); break;
    case 1: p.insert(p.begin() + static_cast<long>(i), p[i]); break;
    case 2:
      if (i + 1 < p.size()) std::swap(p[i], p[i + 1]);
      break;
    case 3: p[i] = any_token(); break;
    default: p.insert(p.begin() + static_cast<long>(i), any_token()); break;
    }
  }

  int between(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }

private:
  template <size_t N> const char* one_of(const char* const (&v)[N]) {
    return v[static_cast<size_t>(between(0, static_cast<int>(N) - 1))];
  }
  void put(std::string s) { out_.push_back(std::move(s)); }
  // A comma, sometimes ending the line (the statement goes on on the next one).
  void comma() {
    switch (between(0, 9)) {
    case 0: put(",\n"); break;
    case 1: put(", ; more\n"); break;
    case 2: put(",  // more\n\n"); break;
    default: put(","); break;
    }
  }
  void end_line() {
    switch (between(0, 9)) {
    case 0: put("; comment\n"); break;
    case 1: put("// comment\n"); break;
    case 2: put("\r\n"); break;
    default: put("\n"); break;
    }
  }

  std::string any_token() {
    static const char* const v[] = {
        ",",       ",\n",  "\n",       ":",      "=",     "+=",     "..",     "@",      "(",
        ")",       "[",    "]",        "-",      "+",     "!",      "~",      "*",      "/",
        "%",       "<<",   ">>",       "<",      "<=",    ">",      ">=",     "==",     "!=",
        "&",       "^",    "|",        "&&",     "||",    "a",      "in",     "step",   "as",
        "f32",     "wait", "7",        "0x1f",   "\"s\"", ".Lx",    ".foo",   "dve.op", ".if",
        ".kernel", ".for", ".macro",   ".hbm",   ".view", ".sem",   ".group", ".set",   ".endm",
        "#",       "\\\n", ".include", ".error", ".else", ".endif", ".ranks", ".lnc"};
    return one_of(v);
  }
  std::string name() {
    static const char* const v[] = {"a", "b", "x", "n", "in", "step", "as", "wait", "r1", "f32"};
    return one_of(v);
  }
  std::string leaf() {
    switch (between(0, 9)) {
    case 0: {
      static const char* const v[] = {"1", "0x1f", "2.5", "1e-3", "12abc", "0"};
      return one_of(v);
    }
    case 1: return chance(0.5) ? "\"s\"" : "\"a\\\"b\"";
    case 2: return chance(0.5) ? ".Lx" : ".foo";
    default: return name();
    }
  }

  void expr(int depth) {
    if (depth <= 0 || chance(0.25)) return put(leaf());
    switch (between(0, 11)) {
    case 0:
    case 1:
    case 2:
    case 3: { // binary chains: precedence and associativity
      static const char* const ops[] = {"*", "/",  "%",  "+",  "-", "<<", ">>", "<",  "<=",
                                        ">", ">=", "==", "!=", "&", "^",  "|",  "&&", "||"};
      expr(depth - 1);
      for (int n = between(1, 3); n-- > 0;) {
        put(one_of(ops));
        expr(depth - 1);
      }
      return;
    }
    case 4: { // unary chains
      static const char* const ops[] = {"-", "+", "!", "~"};
      for (int n = between(1, 3); n-- > 0;) put(one_of(ops));
      return expr(depth - 1);
    }
    case 5: // index / slice
    case 6:
      expr(depth - 1);
      for (int k = between(1, 2); k-- > 0;) {
        put("[");
        for (int n = between(1, 3); n-- > 0;) {
          slice(depth - 1);
          if (n) comma();
        }
        put("]");
      }
      return;
    case 7: // call with positional and named arguments
      put(name());
      put("(");
      for (int n = between(0, 3); n-- > 0;) {
        if (chance(0.4)) put(name()), put("=");
        expr(depth - 1);
        if (n) comma();
      }
      put(")");
      return;
    case 8:
      put("(");
      expr(depth - 1);
      put(")");
      return;
    case 9: // list
      put("[");
      for (int n = between(0, 3); n-- > 0;) {
        expr(depth - 1);
        if (n) comma();
      }
      put("]");
      return;
    default: return put(leaf());
    }
  }
  // a:b:c, ::2, :, a:, @r1, @vec(t), the empty slice, ...
  void slice(int depth) {
    if (chance(0.15)) {
      put("@");
      if (chance(0.5)) return put("r1");
      return expr(depth);
    }
    if (chance(0.7)) expr(depth);
    if (chance(0.5)) {
      put(":");
      if (chance(0.6)) expr(depth);
      if (chance(0.5)) {
        put(":");
        if (chance(0.6)) expr(depth);
      }
    }
  }
  void expr_list() {
    put("[");
    for (int n = between(0, 3); n-- > 0;) {
      expr(2);
      if (n) comma();
    }
    put("]");
  }
  void operands(bool allow_named) {
    for (int n = between(0, 3); n-- > 0;) {
      expr(3);
      if (allow_named && chance(0.3)) put("="), expr(2);
      if (n) comma();
    }
  }
  void decls() {
    for (int n = between(1, 3); n-- > 0;) {
      put(name());
      if (chance(0.5)) put("="), expr(2);
      if (n) comma();
    }
  }

  void line() {
    switch (between(0, 9)) { // an optional label
    case 0: put(name()), put(":"); break;
    case 1: put("dve.l"), put(":"); break;
    case 2: put(".Lx"), put(":"); break;
    default: break;
    }
    if (!chance(0.08)) stmt();
    end_line();
  }

  void stmt() {
    switch (between(0, 23)) {
    case 0: return put(chance(0.5) ? ".kernel" : ".target"), put(name());
    case 1: {
      static const char* const kw[] = {".param", ".equ", ".set"};
      put(one_of(kw)), put(name()), put("=");
      return expr(4);
    }
    case 2: return put(chance(0.5) ? ".if" : ".elif"), expr(4);
    case 3: {
      static const char* const kw[] = {".else", ".endif", ".endfor", ".endm"};
      return put(one_of(kw));
    }
    case 4:
      put(".for"), put(name()), put("in"), expr(2), put(".."), expr(2);
      if (chance(0.5)) put("step"), expr(2);
      return;
    case 5:
      put(".macro"), put(name());
      if (chance(0.7)) decls();
      return;
    case 6: return put(chance(0.5) ? ".include" : ".error"), put("\"file.inc\"");
    case 7: {
      static const char* const kw[] = {".hbm", ".sbuf", ".psum"};
      put(one_of(kw)), put(name()), put(":"), put("f32");
      expr_list();
      if (chance(0.5)) put(name());
      if (chance(0.5)) put("@"), expr(2);
      return;
    }
    case 8:
      put(".view"), put(name()), put("="), expr(3), put("as"), put("bf16");
      return expr_list();
    case 9: return put(".sem"), decls();
    case 10:
      if (chance(0.7)) return put(".group"), put(name()), put("="), expr(3);
      return put(chance(0.5) ? ".ranks" : ".lnc"), expr(3);
    case 11: // an unknown directive: anything up to the end of the line
      put(chance(0.5) ? ".foo" : ".Lx");
      for (int n = between(0, 5); n-- > 0;) {
        const std::string t = any_token();
        if (t != "\n") put(t); // a comma may still end the line: the directive goes on
      }
      return;
    case 12:
    case 13:
    case 14:
    case 15:
    case 16:
    case 17: { // an instruction with operands and sync clauses
      put(chance(0.5) ? "dve.op" : "pe.matmul");
      operands(true);
      for (int n = between(0, 2); n-- > 0;) {
        put("@"), put(chance(0.5) ? "wait" : "signal"), put("(");
        for (int k = between(1, 3); k-- > 0;) {
          expr(2);
          if (chance(0.4)) put("+="), expr(2);
          if (k) comma();
        }
        put(")");
      }
      return;
    }
    default: // a macro call
      put(name());
      return operands(true);
    }
  }

  std::mt19937 rng_;
  std::vector<std::string> out_;
};

// Pieces joined by blanks, sometimes by nothing (neighbours may then lex differently, e.g.
// `a` `.b` -> `a.b`) or by a `\` line continuation.
std::string join(const std::vector<std::string>& pieces, Gen& g) {
  std::string s;
  for (const std::string& p : pieces) {
    if (!s.empty() && s.back() != '\n') {
      const int r = g.between(0, 99);
      s += r < 2 ? " \\\n" : r < 15 ? "" : " ";
    }
    s += p;
  }
  return s;
}

TEST(Parser, MatchesAntlrOnRandomStatements) {
  Gen g(20261129);
  constexpr int kCases = 10000;
  int accepted = 0, rejected = 0;
  for (int n = 0; n < kCases; ++n) {
    std::vector<std::string> pieces = g.text();
    if (g.chance(0.55))
      for (int k = g.between(1, 2); k-- > 0;) g.mutate(pieces);
    const std::string text = join(pieces, g);
    Outcome o;
    const std::string diff = compare(text, &o);
    ASSERT_EQ(diff, "") << "case " << n << ", input:\n" << text;
    (o.antlr_ok ? accepted : rejected)++;
  }
  // Both outcomes must be well represented for the comparison to mean something.
  EXPECT_GT(accepted, kCases / 3);
  EXPECT_GT(rejected, kCases / 3);
  std::printf("random statements: %d accepted, %d rejected\n", accepted, rejected);
}

// ---- precedence and associativity, written by hand from the grammar -------------------------

std::string ours(const std::string& text) {
  const ParsedFile f = parse_source("t.nasm", text);
  EXPECT_TRUE(f.errors.empty()) << text;
  return to_sexpr(f);
}

TEST(Parser, Precedence) {
  const std::pair<const char*, const char*> cases[] = {
      // '[' binds tighter than a prefix operator, which binds tighter than '*'.
      {".if -a[1]*b", "(line - (if (* (- (index a (range 1))) b)))\n"},
      // Binary operators are left-associative.
      {".if a - b - c", "(line - (if (- (- a b) c)))\n"},
      {".if a / b * c % d", "(line - (if (% (* (/ a b) c) d)))\n"},
      {".if a || b && c", "(line - (if (|| a (&& b c))))\n"},
      {".if a && b || c", "(line - (if (|| (&& a b) c)))\n"},
      {".if !x == y", "(line - (if (== (! x) y)))\n"},
      {".if 1 << 2 + 3", "(line - (if (<< 1 (+ 2 3))))\n"},
      {".if a | b ^ c & d", "(line - (if (| a (^ b (& c d)))))\n"},
      {".if a == b < c", "(line - (if (== a (< b c))))\n"},
      {".if a < b >> c", "(line - (if (< a (>> b c))))\n"},
      {".if - - ~x", "(line - (if (- (- (~ x)))))\n"},
      {".if -(a + b)[2]", "(line - (if (- (index (paren (+ a b)) (range 2)))))\n"},
      {".if a[1][2:]", "(line - (if (index (index a (range 1)) (range 2 : _))))\n"},
      {"x: dve.op a[::2, :, @r1, @vec(t), , 1:2:3], b=c @signal(s += 2)",
       "(line x (inst dve.op (op (index a (range _ : _ : 2) (range _ : _) (dyn r1)"
       " (dyn (call vec (carg t))) (range _) (range 1 : 2 : 3))) (op b c)"
       " (sync signal (arg s 2))))\n"},
      {"m f(a, n=1 + 2), [1, 2]",
       "(line - (macrocall m (op (call f (carg a) (carg n (+ 1 2)))) (op (list 1 2))))\n"},
      // The label wins the label/directive ambiguity; a label alone is a line too.
      {".Lx: .foo a, b\n.Ly:", "(line .Lx (directive .foo a , b))\n(line .Ly -)\n"},
  };
  for (const auto& [text, want] : cases) {
    EXPECT_EQ(ours(text), want) << text;
    EXPECT_EQ(compare(text), "") << text;
  }
}

// A line longer than a statement may be is cut where take() refuses the 4000th token, whatever
// that token and the one after it are (an ID before '(' or '=' is read one token ahead); the
// next line is parsed again.
TEST(Parser, LineOfTooManyTokensIsCutAndTheNextLineParses) {
  auto repeat = [](std::string head, const std::string& piece, int n) {
    while (n-- > 0) head += piece;
    return head;
  };
  const std::vector<std::string> lines = {
      repeat(".foo", " a", 4100), repeat("dve.x a", ", f(b)", 2100),
      repeat("dve.x a", ", f(b)", 1999) + " , b", repeat(".if x", " + y", 4100),
      repeat("m a", ", b = c", 1100)};
  for (const std::string& line : lines)
    for (const std::string& tail : {std::string(), std::string("\n.endm\n")}) {
      const ParsedFile f = parse_source("long.nasm", line + tail);
      ASSERT_EQ(f.errors.size(), 1u) << line.substr(0, 40);
      EXPECT_EQ(f.errors[0].line, 1u);
      EXPECT_NE(f.errors[0].message.find("longer than 4000 tokens"), std::string::npos)
          << f.errors[0].message;
      EXPECT_EQ(f.stmts.size(), tail.empty() ? 0u : 1u);
    }
}

} // namespace
} // namespace nisa::nasm
