// The hand-written lexer (asm/token.h, asm/lexer.cpp) against the reference: the ANTLR lexer
// generated from grammar/NeuronAsm.g4. Same token types, code-point start/stop, line and
// column, on every listing of the repository and on seeded random text built from the
// grammar's tricky pieces.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "asm/token.h"
#include "tests/support/antlr_reference.h"
#include "tests/support/test_files.h"

namespace nisa::nasm {
namespace {

namespace fs = std::filesystem;
const std::string kDir = NISA_ASM_TEST_DIR;

// Compares both lexers on `text` ('\n' appended when missing: lex() requires it); returns the
// first difference, or "" when they agree.
std::string compare(std::string text) {
  if (text.empty() || text.back() != '\n') text.push_back('\n');
  return antlr_ref::diff_tokens(antlr_ref::antlr_lex(text), antlr_ref::lex_as_antlr(text));
}

TEST(Lexer, MatchesAntlrOnEveryListing) {
  size_t files = 0;
  for (const fs::path& p : antlr_ref::corpus(kDir)) {
    EXPECT_EQ(compare(test::read_file(p)), "") << p;
    ++files;
  }
  EXPECT_GT(files, 50u);
}

TEST(Lexer, MatchesAntlrOnRandomText) {
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

// Comments are skipped 8 bytes at a time while those are ASCII and hold no line end: a
// non-ASCII character, a lone '\r', a NUL or the line end at every offset of such a block.
TEST(Lexer, MatchesAntlrOnCommentsOfEveryLength) {
  const std::vector<std::string> tails = {"é é x", "\r x", "\r\n", "→", std::string(1, '\0'), ""};
  for (size_t n = 0; n < 26; ++n)
    for (const std::string& tail : tails) {
      const std::string text =
          "a ;" + std::string(n, 'c') + tail + std::string(n % 9, 'd') + " b\n";
      ASSERT_EQ(compare(text), "") << "input: \"" << text << "\"";
      ASSERT_EQ(compare("//" + text.substr(3)), "") << "input: //" << text.substr(3);
    }
}

// Every fixed token kind maps to a distinct ANTLR type (the adapter's table is complete).
TEST(Lexer, EveryFixedTokenHasAnAntlrType) {
  std::vector<size_t> seen;
  for (auto k = static_cast<size_t>(Tok::Eof); k <= static_cast<size_t>(Tok::OrOr); ++k) {
    const size_t t = antlr_ref::antlr_type(static_cast<Tok>(k));
    EXPECT_EQ(std::count(seen.begin(), seen.end(), t), 0) << "kind " << k;
    seen.push_back(t);
  }
}

} // namespace
} // namespace nisa::nasm
