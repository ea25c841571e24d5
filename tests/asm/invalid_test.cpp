// Invalid sources (tests/asm/invalid/*.nasm): each carries its expected diagnostics as
// LLVM-style comments, checked exactly (line, column, message, expansion notes):
//   ; CHECK: :[[@LINE]]:COL: error: MESSAGE       error on this line (or [[@LINE+N]] / -N)
//   ; CHECK: note: TEXT                           a note of the previous CHECK'd error
//   ; CHECK: error: MESSAGE                       an error without a location (-D names)
//   ; RUN: -D NAME=VALUE --target trn1            options for this file
// Every diagnostic must be expected and every expectation must be met.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "asm/asm.h"
#include "tests/support/test_files.h"

namespace nisa::nasm {
namespace {
namespace fs = std::filesystem;

const std::string kDir = std::string(NISA_ASM_TEST_DIR) + "/invalid";

struct Expect {
  uint32_t line = 0, col = 0;
  std::string message;
  std::vector<std::string> notes;
};

struct Spec {
  AsmOptions opts;
  std::vector<Expect> expects;
};

Spec read_spec(const std::string& path) {
  Spec s;
  s.opts.include_dirs = {kDir};
  std::ifstream f(path);
  std::string line;
  for (uint32_t n = 1; std::getline(f, line); ++n) {
    auto run = line.find("; RUN:");
    if (run != std::string::npos) {
      std::istringstream args(line.substr(run + 6));
      for (std::string a; args >> a;) {
        std::string v;
        args >> v;
        if (a == "-D")
          s.opts.defines.emplace_back(v.substr(0, v.find('=')), v.substr(v.find('=') + 1));
        if (a == "--target") s.opts.target = static_cast<Target>(*enum_parse(EnumType::Target, v));
      }
    }
    auto c = line.find("; CHECK: ");
    if (c == std::string::npos) continue;
    const std::string body = line.substr(c + 9);
    if (body.rfind(":[[@LINE", 0) == 0) {
      // :[[@LINE]]:COL: error: MSG  or  :[[@LINE+N]]:COL: error: MSG
      const size_t close = body.find("]]:");
      const size_t colon = body.find(": error: ", close);
      if (close == std::string::npos || colon == std::string::npos) {
        ADD_FAILURE() << path << ":" << n << ": malformed CHECK line";
        continue;
      }
      const std::string delta = body.substr(8, close - 8);
      Expect e;
      e.line = n + static_cast<uint32_t>(delta.empty() ? 0 : std::stoi(delta));
      e.col = static_cast<uint32_t>(std::stoul(body.substr(close + 3, colon - close - 3)));
      e.message = body.substr(colon + 9);
      s.expects.push_back(e);
    } else if (body.rfind("note: ", 0) == 0 && !s.expects.empty()) {
      s.expects.back().notes.push_back(body.substr(6));
    } else if (body.rfind("error: ", 0) == 0) {
      s.expects.push_back({0, 0, body.substr(7), {}});
    } else {
      ADD_FAILURE() << path << ":" << n << ": malformed CHECK line";
    }
  }
  return s;
}

std::vector<std::string> invalid_files() {
  std::vector<std::string> v;
  for (const auto& p : test::files_in(kDir, {".nasm"})) v.push_back(p.filename().string());
  return v;
}

class Invalid : public ::testing::TestWithParam<std::string> {};

TEST_P(Invalid, ReportsExactlyTheExpectedDiagnostics) {
  const std::string path = kDir + "/" + GetParam();
  Spec spec = read_spec(path);
  ASSERT_FALSE(spec.expects.empty()) << "no CHECK lines in " << path;
  auto r = assemble_file(path, spec.opts);
  EXPECT_FALSE(r.ok());
  std::vector<bool> used(r.diags.size(), false);
  for (const auto& e : spec.expects) {
    bool found = false;
    for (size_t k = 0; k < r.diags.size() && !found; ++k) {
      const auto& d = r.diags[k];
      if (used[k] || d.line != e.line || d.col != e.col || d.message != e.message) continue;
      used[k] = found = true;
      for (const auto& n : e.notes) {
        bool any = false;
        for (std::string dn : d.notes) {
          // Notes name files by the path given to the assembler: compare without the folder.
          for (size_t p; (p = dn.find(kDir + "/")) != std::string::npos;)
            dn.erase(p, kDir.size() + 1);
          any |= dn == n;
        }
        EXPECT_TRUE(any) << "missing note '" << n << "' on " << d.str();
      }
    }
    EXPECT_TRUE(found) << "expected " << e.line << ":" << e.col << ": error: " << e.message
                       << "\ngot:\n"
                       << r.diagnostics_text();
  }
  for (size_t k = 0; k < r.diags.size(); ++k)
    EXPECT_TRUE(used[k]) << "unexpected diagnostic:\n" << r.diags[k].str();
}

INSTANTIATE_TEST_SUITE_P(Files, Invalid, ::testing::ValuesIn(invalid_files()),
                         [](const auto& info) {
                           std::string n = info.param.substr(0, info.param.size() - 5);
                           for (char& c : n)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

TEST(Invalid, AtLeastFortyFiles) { EXPECT_GE(invalid_files().size(), 40u); }

TEST(Diagnostics, FormatHasSourceLineCaretAndNotes) {
  auto r = assemble_string(".macro m\n  dve.max88\n.endm\nm\n", "f.nasm");
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(r.diags.size(), 1u);
  EXPECT_EQ(r.diags[0].str(), "f.nasm:2:7: error: unknown mnemonic 'max88'; did you mean 'max8'?\n"
                              "  dve.max88\n"
                              "      ^\n"
                              "note: in expansion of macro 'm' at f.nasm:4:1\n");
}

TEST(Diagnostics, ErrorLimitStopsTheAssembly) {
  std::string src;
  for (int k = 0; k < 50; ++k) src += "  dve.nope" + std::to_string(k) + "\n";
  AsmOptions o;
  o.max_errors = 20;
  auto r = assemble_string(src, "many.nasm", o);
  ASSERT_EQ(r.diags.size(), 21u);
  EXPECT_EQ(r.diags.back().message, "too many errors (20); stopping");
}

TEST(Diagnostics, InstructionLimitStopsTheAssembly) {
  AsmOptions o;
  o.max_instructions = 10;
  auto r = assemble_string(".for i in 0 .. 20\n  sp.nop\n.endfor\n", "limit.nasm", o);
  ASSERT_EQ(r.diags.size(), 1u) << r.diagnostics_text();
  EXPECT_EQ(r.diags[0].line, 2u);
  EXPECT_EQ(r.diags[0].message, "the kernel exceeds the limit of 10 instructions");
  ASSERT_EQ(r.diags[0].notes.size(), 1u);
  EXPECT_EQ(r.diags[0].notes[0], "in iteration i=10 of .for at limit.nasm:1:1");
}

// A source shorter than std::string's inline buffer moves with its ParsedFile: the caret's line
// must still be read from the right place (found by fuzz_asm under ASan).
TEST(Diagnostics, ShortSourceKeepsItsLineForTheCaret) {
  auto r = assemble_string("==k", "short.nasm");
  ASSERT_EQ(r.diags.size(), 1u);
  EXPECT_EQ(r.diags[0].line, 1u);
  EXPECT_EQ(r.diags[0].col, 1u);
  EXPECT_EQ(r.diags[0].message, "expected a statement, found '=='");
  EXPECT_EQ(r.diags[0].source_line, "==k");
  auto crlf = assemble_string("sp.nop\r\n@\r\n", "crlf.nasm");
  ASSERT_EQ(crlf.diags.size(), 1u);
  EXPECT_EQ(crlf.diags[0].line, 2u);
  EXPECT_EQ(crlf.diags[0].source_line, "@");
}

// A UTF-8 byte order mark is not part of the text: same module, same error columns (found by
// fuzz_parser: ANTLR's input stream drops it, our lexer read it as a stray character).
TEST(Diagnostics, ByteOrderMarkIsIgnored) {
  const std::string body = ".kernel k\n.sbuf a : fp32[128, 8]\n  pool.iota a[:, 0:4], [[1, 4]]\n";
  auto plain = assemble_string(body, "plain.nasm");
  auto bom = assemble_string("\xEF\xBB\xBF" + body, "bom.nasm");
  ASSERT_TRUE(plain.ok()) << plain.diagnostics_text();
  ASSERT_TRUE(bom.ok()) << bom.diagnostics_text();
  EXPECT_EQ(plain.module->streams, bom.module->streams);
  auto bad = assemble_string("\xEF\xBB\xBF.kernel 3\n", "bad.nasm");
  ASSERT_EQ(bad.diags.size(), 1u);
  EXPECT_EQ(bad.diags[0].col, 9u);
  EXPECT_EQ(bad.diags[0].source_line, ".kernel 3");
}

// A branch whose instruction fails after its label operand was read: the label's fixup must
// go with it (it pointed past the end of the stream; found by fuzz_asm under UBSan).
TEST(Diagnostics, FailedBranchLeavesNoFixupBehind) {
  auto r = assemble_string(".kernel k\ntop:\n  sp.br top @wait(nosuch >= 1)\n", "br.nasm");
  ASSERT_EQ(r.diags.size(), 1u) << r.diagnostics_text();
  EXPECT_EQ(r.diags[0].line, 3u);
  EXPECT_EQ(r.diags[0].message, "unknown semaphore 'nosuch'");
  EXPECT_FALSE(r.ok());
}

// Nested loops multiply: each .for stays under its own limit, the whole expansion is bounded
// too (statements executed plus iterations), and an error repeated by a loop stops the
// assembly after a while instead of being re-diagnosed a million times (found by fuzz_asm).
TEST(Diagnostics, NestedLoopsAndRepeatedErrorsAreBounded) {
  AsmOptions o;
  o.max_steps = 1000;
  auto nested = assemble_string(
      ".for i in 0 .. 1000000\n.for j in 0 .. 1000000\n.endfor\n.endfor\n", "nested.nasm", o);
  ASSERT_EQ(nested.diags.size(), 1u) << nested.diagnostics_text();
  EXPECT_EQ(nested.diags[0].line, 2u);
  EXPECT_EQ(nested.diags[0].message, "the expansion exceeds the limit of 1000 steps (statements "
                                     "executed and loop iterations; nested loops multiply)");
  auto repeated = assemble_string(".for i in 0 .. 1000000\n  dve.nope\n.endfor\n", "rep.nasm");
  ASSERT_EQ(repeated.diags.size(), 2u) << repeated.diagnostics_text();
  EXPECT_EQ(repeated.diags[0].line, 2u);
  EXPECT_EQ(repeated.diags[1].message, "1000 repeated errors (in a loop?); stopping");
  EXPECT_FALSE(repeated.ok());
}

TEST(Diagnostics, MalformedBytesAndDeepNestingAreErrorsNotCrashes) {
  auto bad = assemble_string("sp.nop\n  sp.nop \xff\n", "bytes.nasm");
  ASSERT_EQ(bad.diags.size(), 1u);
  EXPECT_EQ(bad.diags[0].line, 2u);
  EXPECT_EQ(bad.diags[0].col, 10u);
  EXPECT_EQ(bad.diags[0].message, "invalid UTF-8 byte in the source");
  auto deep = assemble_string(
      ".equ X = " + std::string(100, '(') + "1" + std::string(100, ')') + "\n", "deep.nasm");
  ASSERT_EQ(deep.diags.size(), 1u);
  EXPECT_EQ(deep.diags[0].message, "brackets nested deeper than 64");
  std::string chain = ".equ X = 1";
  for (int k = 0; k < 1500; ++k) chain += " + 1";
  auto ok = assemble_string(chain + "\n.if X != 1501\n.error \"wrong\"\n.endif\n", "chain.nasm");
  EXPECT_TRUE(ok.ok()) << ok.diagnostics_text();
}

} // namespace
} // namespace nisa::nasm
