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
#include <regex>
#include <sstream>

#include "asm/asm.h"

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
  static const std::regex loc_re(R"(^:\[\[@LINE([+-]\d+)?\]\]:(\d+): error: (.*)$)");
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
    std::smatch m;
    if (std::regex_match(body, m, loc_re)) {
      Expect e;
      e.line = n + static_cast<uint32_t>(m[1].matched ? std::stoi(m[1].str()) : 0);
      e.col = static_cast<uint32_t>(std::stoul(m[2].str()));
      e.message = m[3].str();
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
  for (const auto& e : fs::directory_iterator(kDir))
    if (e.path().extension() == ".nasm") v.push_back(e.path().filename().string());
  std::sort(v.begin(), v.end());
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
