// Golden tests (LLVM MC style): tests/asm/golden/NAME.nasm assembles to exactly the text in
// NAME.expected, the disassembly with encodings and source comments. After an intended change,
// regenerate with scripts/regen-asm-golden.sh (NISA_REGEN_GOLDEN=1) and review the diff.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "asm/asm.h"
#include "isa/print.h"
#include "tests/support/test_files.h"

namespace nisa::nasm {
namespace {
namespace fs = std::filesystem;

const std::string kDir = std::string(NISA_ASM_TEST_DIR) + "/golden";

std::vector<std::string> golden_files() {
  std::vector<std::string> v;
  for (const auto& p : test::files_in(kDir, {".nasm"})) v.push_back(p.stem().string());
  return v;
}

class Golden : public ::testing::TestWithParam<std::string> {};

TEST_P(Golden, DisassemblyMatchesExpectation) {
  const std::string name = GetParam();
  // Assembled under its bare file name so that source comments do not depend on the checkout.
  AsmOptions o;
  o.include_dirs = {kDir};
  auto r = assemble_string(test::read_file(kDir + "/" + name + ".nasm"), name + ".nasm", o);
  ASSERT_TRUE(r.ok()) << r.diagnostics_text();
  ModulePrintOptions po;
  po.show_encoding = true;
  const std::string got = print_module(*r.module, po);
  const std::string expected_path = kDir + "/" + name + ".expected";
  if (std::getenv("NISA_REGEN_GOLDEN")) {
    std::ofstream(expected_path) << got;
    GTEST_SKIP() << "regenerated " << expected_path;
  }
  ASSERT_TRUE(fs::exists(expected_path))
      << "missing " << expected_path << " (run scripts/regen-asm-golden.sh)";
  EXPECT_EQ(got, test::read_file(expected_path));
  // The golden text is itself assembly: it must assemble back to the same streams.
  auto again = assemble_string(got, name + ".dis.nasm");
  ASSERT_TRUE(again.ok()) << again.diagnostics_text();
  EXPECT_EQ(again.module->streams, r.module->streams);
  EXPECT_EQ(again.module->tensors, r.module->tensors);
}

INSTANTIATE_TEST_SUITE_P(Files, Golden, ::testing::ValuesIn(golden_files()),
                         [](const auto& info) { return info.param; });

} // namespace
} // namespace nisa::nasm
