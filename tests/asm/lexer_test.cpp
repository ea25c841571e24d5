// The hand-written lexer (asm/lexer.h) against the reference: the ANTLR lexer generated from
// grammar/NeuronAsm.g4. Same token types, code-point start/stop, line and column, on every
// listing of the repository and on seeded random text built from the grammar's tricky pieces.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "NeuronAsmLexer.h"
#include "asm/lexer.h"

namespace nisa::nasm {
namespace {

namespace fs = std::filesystem;
const std::string kDir = NISA_ASM_TEST_DIR;

struct Tok {
  size_t type, start, stop, line, col;
  bool operator==(const Tok&) const = default;
};

std::vector<Tok> lex_all(antlr4::TokenSource& src) {
  std::vector<Tok> out;
  for (;;) {
    auto t = src.nextToken();
    out.push_back({t->getType(), t->getStartIndex(), t->getStopIndex(), t->getLine(),
                   t->getCharPositionInLine()});
    if (t->getType() == antlr4::Token::EOF) return out;
  }
}

// Compares both lexers on `text`; returns the first difference, or "" when they agree.
std::string compare(const std::string& text) {
  antlr4::ANTLRInputStream in1(text), in2(text);
  nisa_grammar::NeuronAsmLexer ref(&in1);
  ref.removeErrorListeners();
  FastLexer fast(text, &in2);
  const auto a = lex_all(ref), b = lex_all(fast);
  for (size_t k = 0; k < std::max(a.size(), b.size()); ++k) {
    if (k < a.size() && k < b.size() && a[k] == b[k]) continue;
    auto show = [&](const std::vector<Tok>& v) {
      if (k >= v.size()) return std::string("(none)");
      const Tok& t = v[k];
      return "type " + std::to_string(t.type) + " [" + std::to_string(t.start) + ", " +
             std::to_string(t.stop) + "] at " + std::to_string(t.line) + ":" +
             std::to_string(t.col);
    };
    return "token " + std::to_string(k) + ": antlr " + show(a) + ", fast " + show(b);
  }
  return "";
}

TEST(FastLexer, MatchesAntlrOnEveryListing) {
  size_t files = 0;
  for (const fs::path& dir :
       {fs::path(kDir) / "golden", fs::path(kDir) / "invalid", fs::path(kDir) / "inputs",
        fs::path(kDir) / "../../kernels_asm", fs::path(kDir) / "../../kernels_asm/lib"}) {
    if (!fs::is_directory(dir)) continue;
    for (const auto& e : fs::directory_iterator(dir)) {
      const auto ext = e.path().extension();
      if (ext != ".nasm" && ext != ".inc") continue;
      std::ifstream f(e.path(), std::ios::binary);
      std::stringstream ss;
      ss << f.rdbuf();
      EXPECT_EQ(compare(ss.str()), "") << e.path();
      ++files;
    }
  }
  EXPECT_GT(files, 50u);
}

TEST(FastLexer, MatchesAntlrOnRandomText) {
  // Pieces chosen to hit every rule's edges: numbers with fractions and exponents, dotted
  // names, directives vs keywords, comma continuations, comments, strings with escapes,
  // line continuations, two-character operators, stray characters and UTF-8.
  const std::vector<std::string> pieces = {
      "a",     "dve.x",  ".if",   ".iffy",     ".L1",   "..",    ".",          "1",      "0x1f",
      "1.5",   "2e",     "e",     "-",         "+",     "3",     "1e-3",       "7.",     ".5",
      ",",     ", ;c\n", ",\r\n", ",  // x\n", "\n",    "\r\n",  "\r",         " ",      "\t",
      ";x",    "//y",    "/",     "\\",        "\\ \n", "\"s\"", "\"a\\\"b\"", "\"open", "\\\"",
      "<",     "<<",     "<=",    ">",         ">=",    ">>",    "=",          "==",     "!",
      "!=",    "&",      "&&",    "|",         "||",    "+=",    ":",          "[",      "]",
      "(",     ")",      "@",     "%",         "^",     "~",     "*",          "#",      "$",
      "é",     "→",      "_x9",   "a.b.c",     "9a.b",  "1.2.3", "x.",         "dve.",   ".endm",
      ".endmx"};
  std::mt19937 rng(20261129);
  std::uniform_int_distribution<size_t> pick(0, pieces.size() - 1), len(0, 40);
  for (int n = 0; n < 3000; ++n) {
    std::string text;
    for (size_t k = len(rng); k-- > 0;) text += pieces[pick(rng)];
    const std::string diff = compare(text);
    ASSERT_EQ(diff, "") << "input: \"" << text << "\"";
  }
}

} // namespace
} // namespace nisa::nasm
