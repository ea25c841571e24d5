// print -> assemble round trips: every opcode, 500 random valid instances each, must come back
// as the identical record with identical bytes; and whole random modules through the
// disassembler's text.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "asm/asm.h"
#include "isa/encode.h"
#include "isa/print.h"
#include "tests/isa/random_inst.h"

namespace nisa::nasm {
namespace {

constexpr int kPerOpcode = 500;

// Declarations the random instructions refer to: s0..s7 and g0..g3.
Module names_module(const testing::RandomLimits& lim) {
  Module m;
  for (int k = 0; k < lim.sems; ++k) m.sems.push_back({"s" + std::to_string(k), 0});
  for (int k = 0; k < lim.groups; ++k) m.groups.push_back({"g" + std::to_string(k), {{0, 1}}});
  return m;
}

std::string preamble(const Module& names) {
  std::string s = ".target trn3\n";
  for (const auto& sem : names.sems) s += ".sem " + sem.name + "\n";
  for (const auto& g : names.groups) s += ".group " + g.name + " = [[0, 1]]\n";
  return s;
}

class PrintAssemble : public ::testing::TestWithParam<int> {};

TEST_P(PrintAssemble, RandomInstancesComeBackIdentical) {
  const Opcode op = static_cast<Opcode>(GetParam());
  std::mt19937_64 rng(0x5eed0000u + static_cast<unsigned>(GetParam()));
  testing::RandomLimits lim;
  const Module names = names_module(lim);
  PrintContext ctx{&names};
  std::string src = preamble(names);
  std::array<std::vector<Inst>, kNumEngines> expected;
  for (int k = 0; k < kPerOpcode; ++k) {
    Inst in = testing::random_inst(rng, op, lim);
    ASSERT_FALSE(check_inst(in)) << *check_inst(in);
    src += print_inst(in, ctx) + "\n";
    expected[static_cast<int>(in.engine)].push_back(std::move(in));
  }
  auto r = assemble_string(src, "roundtrip.nasm");
  ASSERT_TRUE(r.ok()) << r.diagnostics_text();
  for (int e = 0; e < kNumEngines; ++e) {
    const auto& got = r.module->streams[e];
    ASSERT_EQ(got.size(), expected[e].size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i], expected[e][i]) << print_inst(expected[e][i], ctx) << "\nreassembled as\n"
                                        << print_inst(got[i], ctx);
      std::vector<uint8_t> a, b;
      encode_inst(got[i], a);
      encode_inst(expected[e][i], b);
      ASSERT_EQ(a, b);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllOpcodes, PrintAssemble, ::testing::Range(0, kNumOpcodes),
                         [](const auto& info) {
                           return std::string(desc(static_cast<Opcode>(info.param)).ident);
                         });

std::vector<Label> sorted(std::vector<Label> v) {
  std::sort(v.begin(), v.end(), [](const Label& a, const Label& b) {
    return std::tie(a.index, a.name) < std::tie(b.index, b.name);
  });
  return v;
}

TEST(DisasmRoundTrip, RandomModulesReassembleToTheSameStreams) {
  std::mt19937_64 rng(42);
  for (int iter = 0; iter < 200; ++iter) {
    Module m = testing::random_module(rng);
    if (iter % 3 == 0) m.ranks.value = 1 + iter % 128; // launch settings (their values only:
    if (iter % 2 == 0) m.lnc.value = 1 + iter % 4 / 2; // the text is where they now stand)
    // Tensors that fit the target (random ones use arbitrary addresses).
    m.tensors = {{"x", MemSpace::hbm, DType::bf16, {256, 64}, Role::input, 0x1000, 0},
                 {"t", MemSpace::sbuf, DType::fp32, {64, 32}, Role::scratch, 0x200, 32},
                 {"p", MemSpace::psum, DType::fp32, {128, 512}, Role::scratch, 0x800, 0}};
    const std::string text = print_module(m);
    auto r = assemble_string(text, "disasm.nasm");
    ASSERT_TRUE(r.ok()) << r.diagnostics_text() << "\n" << text;
    const Module& b = *r.module;
    EXPECT_EQ(b.target, m.target);
    EXPECT_EQ(b.kernel, m.kernel);
    EXPECT_EQ(b.ranks.value, m.ranks.value);
    EXPECT_EQ(b.lnc.value, m.lnc.value);
    EXPECT_EQ(b.tensors, m.tensors);
    EXPECT_EQ(b.sems, m.sems);
    EXPECT_EQ(b.groups, m.groups);
    ASSERT_EQ(b.streams, m.streams) << text;
    for (int e = 0; e < kNumEngines; ++e)
      EXPECT_EQ(sorted(b.labels[e]), sorted(m.labels[e])) << text;
  }
}

TEST(Printer, RawAccessPatternSyntax) {
  AccessPattern ap;
  ap.space = MemSpace::hbm;
  ap.dtype = DType::bf16;
  ap.part_count = 128;
  ap.part_stride = 5000;
  ap.offset = 0x40;
  ap.ndims = 2;
  ap.dims[0] = {64, 3};
  ap.dims[1] = {1, 16};
  ap.dyn = DynKind::reg;
  ap.dyn_reg = 5;
  ap.dyn_mult = 5000;
  ap.dyn_limit = 256;
  EXPECT_EQ(print_ap(ap), "ap(hbm, bf16, 0, 128, 0x40, [[64, 3], [1, 16]], pstride=5000, dyn=r5, "
                          "mult=5000, limit=256)");
  EXPECT_EQ(print_float(1.0f), "1.0");
  EXPECT_EQ(print_float(-0.0f), "-0.0");
  EXPECT_EQ(print_float(-INFINITY), "-inf");
  EXPECT_EQ(print_float(0.1f), "0.1");
}

} // namespace
} // namespace nisa::nasm
