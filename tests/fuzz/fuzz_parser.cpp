// Differential libFuzzer target for the assembler's front end: the hand-written lexer and parser
// (asm/lexer.cpp, asm/parser.cpp) against the ANTLR lexer and parser generated from
// grammar/NeuronAsm.g4 (tests/support/antlr_reference.h), checked as tests/asm/lexer_test.cpp and
// parser_test.cpp check them: the same tokens (type, code-point start/stop, line, column); the
// same accept/reject decision; equal trees when both accept; the first error at the same
// line:col when both reject. Any disagreement is printed to stderr and abort()s.
//
// Skipped inputs: longer than kMaxInput bytes, or not valid UTF-8 (strict RFC 3629: the ANTLR
// input stream throws on malformed text; parse_source rejects it on its own), or where our
// parser reports its intended limits (brackets/prefix operators nested deeper than 64, a
// statement longer than 4000 tokens), which the grammar does not have. ANTLR runs on a thread
// with a large stack: its recursion is unbounded, and after an error on a line its recovery
// may resume inside a deeply nested expression that our parser skips with the rest of the line.
#include <pthread.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "asm/ast.h"
#include "asm/token.h"
#include "tests/support/antlr_reference.h"

namespace {

using namespace nisa::nasm;
using antlr_ref::AntlrToken;

constexpr size_t kMaxInput = 4096;
constexpr size_t kAntlrStack = size_t{512} << 20; // 512 MiB, reserved only

// Strict UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF).
bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t n = 0;
    unsigned lo = 0x80, hi = 0xbf; // bounds of the second byte
    if (c >= 0xc2 && c <= 0xdf)
      n = 2;
    else if (c == 0xe0)
      n = 3, lo = 0xa0;
    else if (c == 0xed)
      n = 3, hi = 0x9f;
    else if (c >= 0xe1 && c <= 0xef)
      n = 3;
    else if (c == 0xf0)
      n = 4, lo = 0x90;
    else if (c >= 0xf1 && c <= 0xf3)
      n = 4;
    else if (c == 0xf4)
      n = 4, hi = 0x8f;
    else
      return false;
    if (i + n > s.size()) return false;
    const auto c1 = static_cast<unsigned char>(s[i + 1]);
    if (c1 < lo || c1 > hi) return false;
    for (size_t k = 2; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return false;
    i += n;
  }
  return true;
}

[[noreturn]] void fail(const std::string& what, const std::string& text) {
  std::fprintf(stderr, "fuzz_parser: %s\ninput (%zu bytes):\n%s\n", what.c_str(), text.size(),
               text.c_str());
  std::abort();
}

// What the ANTLR side computes, on its own thread.
struct AntlrRun {
  const std::string* text = nullptr;
  std::vector<AntlrToken> tokens;
  std::string sexpr;
  std::vector<std::string> errors;
};

void* run_antlr(void* arg) {
  auto* r = static_cast<AntlrRun*>(arg);
  r->tokens = antlr_ref::antlr_lex(*r->text);
  r->sexpr = antlr_ref::antlr_sexpr(*r->text, r->errors);
  return nullptr;
}

void run_antlr_big_stack(AntlrRun& r) {
  pthread_attr_t attr;
  pthread_t thread;
  if (pthread_attr_init(&attr) != 0 || pthread_attr_setstacksize(&attr, kAntlrStack) != 0 ||
      pthread_create(&thread, &attr, run_antlr, &r) != 0 || pthread_join(thread, nullptr) != 0) {
    std::fprintf(stderr, "fuzz_parser: cannot run the ANTLR thread\n");
    std::abort();
  }
  pthread_attr_destroy(&attr);
}

bool intended_limit(const std::vector<SyntaxError>& errors) {
  for (const SyntaxError& e : errors)
    if (e.message.find("nested deeper") != std::string::npos ||
        e.message.find("longer than") != std::string::npos)
      return true;
  return false;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kMaxInput) return -1;
  std::string text(reinterpret_cast<const char*>(data), size);
  if (!valid_utf8(text)) return -1;

  // Ours first: inputs hitting our intended limits are never given to ANTLR.
  const ParsedFile f = parse_source("fuzz.nasm", text);
  if (intended_limit(f.errors)) return -1;

  // Both lexers see the text ending with '\n', as lex() requires and parse_source ensures, and
  // without a leading byte order mark, which parse_source and ANTLR's input stream drop.
  std::string lexed = text.starts_with(kUtf8Bom) ? text.substr(kUtf8Bom.size()) : text;
  if (lexed.empty() || lexed.back() != '\n') lexed.push_back('\n');
  AntlrRun a;
  a.text = &lexed; // antlr_sexpr would append the same '\n'
  run_antlr_big_stack(a);

  // Tokens one by one, then accept/reject, the first error's place or the trees.
  if (auto d = antlr_ref::diff_tokens(a.tokens, antlr_ref::lex_as_antlr(lexed)); !d.empty())
    fail("lexers differ at " + d, text);
  if (auto d = antlr_ref::diff_parses(f, a.sexpr, a.errors); !d.empty()) fail(d, text);
  return 0;
}
