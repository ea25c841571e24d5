// docs/isa.md is the generated reference; the reference covers the whole table.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>

#include "isa/formulas.h"
#include "isa/isa.h"
#include "isa/reference.h"
#include "tests/support/test_files.h"

namespace nisa {
namespace {

TEST(Reference, DocsIsaMdIsUpToDate) {
  const std::string path = std::string(NISA_SOURCE_DIR) + "/docs/isa.md";
  const std::string on_disk = test::read_file(path);
  const std::string generated = isa_reference(true);
  if (on_disk == generated) return;
  // Point at the first differing line to make the failure readable.
  size_t at = 0;
  while (at < on_disk.size() && at < generated.size() && on_disk[at] == generated[at]) ++at;
  const auto line = std::count(generated.begin(), generated.begin() + static_cast<long>(at), '\n');
  FAIL() << path << " differs from the generator output (first difference on line " << line + 1
         << "). Regenerate it with:\n  <build>/cli/nisa isa --format md > docs/isa.md";
}

// docs/encoding.md embeds the generated layout table between two markers.
TEST(Reference, DocsEncodingMdLayoutTableIsUpToDate) {
  const std::string path = std::string(NISA_SOURCE_DIR) + "/docs/encoding.md";
  const std::string doc = test::read_file(path);
  const std::string begin = "<!-- BEGIN GENERATED: nisa isa --format encoding -->\n";
  const std::string end = "<!-- END GENERATED -->";
  const size_t b = doc.find(begin), e = doc.find(end);
  ASSERT_TRUE(b != std::string::npos && e != std::string::npos && b < e)
      << path << " lacks the generated-table markers";
  EXPECT_EQ(doc.substr(b + begin.size(), e - b - begin.size()), encoding_reference())
      << path << ": the layout table is stale. Replace the lines between the markers with the "
      << "output of `<build>/cli/nisa isa --format encoding`.";
}

TEST(Reference, CoversEveryInstructionAndEnum) {
  for (bool md : {true, false}) {
    const std::string ref = isa_reference(md);
    for (const auto& d : inst_table()) {
      EXPECT_NE(ref.find(fmt::format("0x{:04x}", d.opcode)), std::string::npos) << d.ident;
      EXPECT_NE(ref.find(std::string(d.summary)), std::string::npos) << d.ident;
      for (const auto& o : d.operands)
        EXPECT_NE(ref.find(std::string(o.name)), std::string::npos) << d.ident << "." << o.name;
    }
    for (const auto& m : enum_members(EnumType::ActFunc))
      EXPECT_NE(ref.find(std::string(m.name)), std::string::npos) << m.name;
  }
}

// The formulas come from isa/formulas.def: every activation function's row carries its
// formula, and tensor_reduce's section every reduction operator's fold and the negate rule.
TEST(Reference, FormulasAreInTheReference) {
  const std::string md = isa_reference(true), text = isa_reference(false);
  for (const auto& m : enum_members(EnumType::ActFunc)) {
    const ActFormula f = act_formula(static_cast<ActFunc>(m.value));
    EXPECT_NE(md.find(fmt::format("| `{}` | {} | `{}` |", m.name, m.value, f.formula)),
              std::string::npos)
        << m.name;
    // text: a line "    NAME   = FORMULA  (NOTE)" under the ActFunc line
    const size_t at = text.find(fmt::format("\n    {} ", m.name));
    ASSERT_NE(at, std::string::npos) << m.name;
    const std::string line = text.substr(at + 1, text.find('\n', at + 1) - at - 1);
    EXPECT_NE(line.find(fmt::format(" = {}", f.formula)), std::string::npos) << line;
    if (!f.note.empty()) {
      EXPECT_NE(line.find(std::string(f.note)), std::string::npos) << line;
    }
  }
  const size_t tr = md.find("### `tensor_reduce`"), next = md.find("### `", tr + 1);
  ASSERT_NE(tr, std::string::npos);
  const std::string section = md.substr(tr, next - tr);
  int ops = 0;
  for (const auto& m : enum_members(EnumType::AluOp)) {
    const std::string_view r = reduce_rule(static_cast<AluOp>(m.value));
    EXPECT_EQ(section.find(fmt::format("| `{}` |", m.name)) != std::string::npos, !r.empty())
        << m.name;
    ops += !r.empty();
  }
  EXPECT_EQ(ops, 10);
  EXPECT_NE(section.find(std::string(kReduceNegate)), std::string::npos);
  EXPECT_NE(md.find("| `gelu_apprx_tanh` | 11 | `0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 "
                    "x^3)))` |"),
            std::string::npos);
}

TEST(Reference, MarkdownShowsOperandRows) {
  const std::string ref = isa_reference(true);
  EXPECT_NE(ref.find("### `tensor_tensor` (tensor_tensor)\n\ndst = op(in0, in1) elementwise.\n\n"
                     "- opcode: `0x0300`\n- engines: dve, pool\n"),
            std::string::npos);
  EXPECT_NE(ref.find("| 6 | `reduce_res` | dst-ap | sbuf, psum | absent | all |"),
            std::string::npos);
  EXPECT_NE(ref.find("| 4 | `idx` | dst-ap | sbuf, psum | absent | trn2 (gen3), trn3 (gen4) |"),
            std::string::npos);
  EXPECT_NE(ref.find("| `>=` | 0 |"), std::string::npos);
}

} // namespace
} // namespace nisa

// Issue 17: the values of acc and reduce_cmd, and the transpose flag, are explained where the
// instructions are documented (the summary is the reference's text), not only in decisions.md.
TEST(Reference, AccReduceCmdAndTransposeAreExplained) {
  using namespace nisa;
  for (const InstDesc& d : inst_table()) {
    for (const OperandDesc& o : d.operands) {
      if (o.kind == OperandKind::Enum &&
          (o.enum_type == EnumType::AccMode || o.enum_type == EnumType::ReduceCmd)) {
        for (const auto& m : enum_members(o.enum_type))
          EXPECT_NE(d.summary.find(std::string(m.name) + " ("), std::string_view::npos)
              << d.mnemonic << " does not explain " << o.name << "=" << m.name;
      }
      if (o.kind == OperandKind::Bool && o.name == "transpose") {
        EXPECT_NE(d.summary.find("transpose=1"), std::string_view::npos) << d.mnemonic;
      }
    }
  }
}
