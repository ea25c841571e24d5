// `nisa isa [NAME...]` through the binary: a NAME prints only that instruction (in text, md,
// encoding and json), with the enumerations its operands take; every spelling of a name
// (mnemonic, ENGINE.MNEMONIC, the table's identifier) works; an unknown name is exit 1 with a
// did-you-mean; without a NAME the md output is docs/isa.md.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/support/test_files.h"

namespace nisa::test {
namespace {

namespace fs = std::filesystem;

struct Out {
  int code = -1;
  std::string out, err;
};

Out isa(const std::string& args) {
  const fs::path dir = fs::temp_directory_path();
  const fs::path o = dir / fmt::format("nisa_isa_cli_{}.out", getpid()),
                 e = dir / fmt::format("nisa_isa_cli_{}.err", getpid());
  const int rc = std::system(
      fmt::format("{} isa {} > '{}' 2> '{}'", NISA_BINARY, args, o.string(), e.string()).c_str());
  Out r;
  r.code = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  r.out = read_file(o);
  r.err = read_file(e);
  fs::remove(o);
  fs::remove(e);
  return r;
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t k = s.find(what); k != std::string::npos; k = s.find(what, k + 1)) ++n;
  return n;
}

// The paragraph of the full text reference that starts with `head` (up to its blank line).
std::string section(const std::string& ref, const std::string& head) {
  const size_t b = ref.find(head);
  if (b == std::string::npos) return "";
  return ref.substr(b, ref.find("\n\n", b) + 2 - b);
}

TEST(IsaCli, ANameSelectsThatInstructionInText) {
  const Out all = isa("");
  ASSERT_EQ(all.code, 0) << all.err;
  const Out r = isa("activation");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(count(r.out, "opcode 0x"), 1u) << r.out; // one instruction, not 52
  // Its section is the full reference's section of activation, word for word.
  const std::string sec = section(all.out, "activation (activation)  opcode 0x0200\n");
  ASSERT_FALSE(sec.empty());
  EXPECT_EQ(r.out.rfind(sec, 0), 0u) << r.out;
  // Then the enumerations its operands take (ActFunc with the formulas, ReduceCmd), no other.
  EXPECT_NE(r.out.find("\nActFunc: copy=0 exp=1 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gelu_apprx_tanh        = 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 "
                       "x^3)))"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\nReduceCmd: idle=0 reset=1 "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("AluOp:"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("DType:"), std::string::npos) << r.out;
  EXPECT_LT(count(r.out, "\n"), count(all.out, "\n") / 5);
}

TEST(IsaCli, EverySpellingOfAName) {
  // transpose is pe's and dve's
  Out r = isa("transpose");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(count(r.out, "opcode 0x"), 2u);
  EXPECT_NE(r.out.find("transpose (pe_transpose)  opcode 0x0101"), std::string::npos);
  EXPECT_NE(r.out.find("transpose (dve_transpose)  opcode 0x0309"), std::string::npos);
  for (const char* one : {"pe.transpose", "pe_transpose"}) {
    r = isa(one);
    ASSERT_EQ(r.code, 0) << one << ": " << r.err;
    EXPECT_EQ(count(r.out, "opcode 0x"), 1u) << one;
    EXPECT_EQ(r.out.rfind("transpose (pe_transpose)  opcode 0x0101\n", 0), 0u) << r.out;
  }
  // several names, in the order given, each once
  r = isa("tensor_reduce act.activation tensor_reduce");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(count(r.out, "opcode 0x"), 2u);
  EXPECT_LT(r.out.find("tensor_reduce (tensor_reduce)"), r.out.find("activation (activation)"));
}

TEST(IsaCli, UnknownNamesAreErrorsWithASuggestion) {
  struct Case {
    const char* args;
    const char* err;
  };
  for (const Case& c : {
           Case{"bogus", "nisa isa: unknown instruction 'bogus'\n"},
           Case{"activaton", "nisa isa: unknown instruction 'activaton'; did you mean "
                             "'activation'?\n"},
           Case{"activation tensor_redcue",
                "nisa isa: unknown instruction 'tensor_redcue'; did you mean 'tensor_reduce'?\n"},
           Case{"act.tensor_reduce",
                "nisa isa: 'act.tensor_reduce': tensor_reduce is not an instruction of act "
                "(engines: dve)\n"},
           Case{"dev.memset", "nisa isa: unknown engine 'dev' in 'dev.memset'; did you mean "
                              "'dve'? (engines: pe, act, dve, pool, sp, cc)\n"},
           Case{"act.activaton", "nisa isa: unknown instruction 'activaton' on act; did you mean "
                                 "'activation'?\n"},
           Case{"--format tmlanguage activation",
                "nisa isa: the tmlanguage grammar covers every instruction; NAME selects "
                "instructions for md, text, encoding and json\n"},
       }) {
    const Out r = isa(c.args);
    EXPECT_EQ(r.code, 1) << c.args;
    EXPECT_EQ(r.out, "") << c.args; // nothing half printed
    EXPECT_EQ(r.err, c.err) << c.args;
  }
}

TEST(IsaCli, ANameSelectsInMarkdownEncodingAndJson) {
  Out r = isa("--format md activation");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("### `activation` (activation)\n", 0), 0u) << r.out;
  EXPECT_EQ(count(r.out, "- opcode: `0x"), 1u);
  EXPECT_EQ(r.out.find("## Summary"), std::string::npos);
  EXPECT_NE(r.out.find("### ActFunc\n"), std::string::npos);
  EXPECT_NE(r.out.find("| `gelu_apprx_tanh` | 11 | `0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 "
                       "x^3)))` |"),
            std::string::npos)
      << r.out;
  r = isa("--format md tensor_reduce");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("| `max` | the largest element; NaN when an element is NaN |"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("negate=1 negates the result, not the inputs"), std::string::npos);

  r = isa("--format encoding activation");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(count(r.out, "\n"), 3u) << r.out; // the header, its rule and one row
  EXPECT_NE(r.out.find("| `0x0200` | `activation` (act) |"), std::string::npos) << r.out;

  r = isa("--format json activation memset");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc["instructions"].size(), 2u);
  EXPECT_EQ(doc["instructions"][0]["mnemonic"], "activation");
  EXPECT_EQ(doc["instructions"][0]["opcode"], 0x0200);
  EXPECT_EQ(doc["instructions"][1]["mnemonic"], "memset");
  bool found = false;
  for (const auto& m : doc["enums"]["ActFunc"])
    if (m["name"] == "gelu_apprx_tanh") {
      found = true;
      EXPECT_EQ(m["formula"], "0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))");
    }
  EXPECT_TRUE(found);
}

TEST(IsaCli, WithoutANameMarkdownIsDocsIsaMd) {
  const Out r = isa("--format md");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, read_file(fs::path(NISA_SOURCE_DIR) / "docs/isa.md"));
}

} // namespace
} // namespace nisa::test
