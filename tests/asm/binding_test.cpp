// Names and integer expressions evaluated at every expansion (the expressions are compiled
// once, asm/expr_program.cpp; names resolve through per-node caches): what a name means must
// follow every rebinding, shadowing and redefinition.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "asm/asm.h"
#include "isa/op_index.h"

namespace nisa::nasm {
namespace {

namespace fs = std::filesystem;

Module must_assemble(std::string_view src) {
  auto r = assemble_string(src, "t.nasm", {});
  EXPECT_TRUE(r.ok()) << r.diagnostics_text();
  return r.module ? *r.module : Module{};
}

// `main` assembled from a fresh directory that also holds `inc_name` with `inc` (to be
// .include'd: one unit whose nodes' caches every inclusion shares), the directory removed after.
AsmResult assemble_with_include(std::string_view dir_name, std::string_view inc_name,
                                std::string_view inc, std::string_view main) {
  const fs::path dir = fs::path(::testing::TempDir()) / dir_name;
  fs::create_directories(dir);
  std::ofstream(dir / inc_name) << inc;
  std::ofstream(dir / "main.nasm") << main;
  AsmResult r = assemble_file((dir / "main.nasm").string());
  fs::remove_all(dir);
  return r;
}

// The column each memset of `a` (fp32[128, 64], at 0) starts at.
std::vector<uint64_t> memset_columns(const Module& m) {
  std::vector<uint64_t> cols;
  for (const Inst& in : m.streams[static_cast<int>(Engine::dve)]) {
    EXPECT_EQ(in.ops[0].ap.dims[0].count, 1u);
    cols.push_back(in.ops[0].ap.offset / 4);
  }
  return cols;
}

TEST(AsmBinding, NamesFollowShadowingAndRedefinition) {
  Module m = must_assemble(R"(
.sbuf a : fp32[128, 64]
.set G = 1
.equ W = 2
.macro m x
  dve.memset a[:, x * W + G : x * W + G + 1], 0.0
.endm
.macro outer x
  m x + 1
  dve.memset a[:, x : x + 1], 0.0
.endm
  m 0
.set G = 5
  m 1
.for x in 0 .. 2
  m x + 10
.endfor
.for G in 20 .. 21
  m 0
  dve.memset a[:, G : G + 1], 0.0
.endfor
  outer 3
.set G = G + 1
  m 0
)");
  // m 0 with G = 1; m 1 with G = 5; the parameter x (10, 11) hides the loop's x; a macro does
  // not see its caller's loop variable G (the global 5), the loop body does (20); outer's m
  // gets x + 1 = 4 and outer's own x is still 3; G redefined to 6.
  EXPECT_EQ(memset_columns(m), (std::vector<uint64_t>{1, 7, 25, 27, 5, 20, 13, 3, 6}));
}

TEST(AsmBinding, ConstantsHiddenByLocals) {
  Module m = must_assemble(R"(
.sbuf a : fp32[128, 64]
.equ W = 2
.param P = 3
.macro m W
  dve.memset a[:, W * 4 + P : W * 4 + P + 1], 0.0
.endm
.macro n x
  dve.memset a[:, x * W + P : x * W + P + 1], 0.0
.endm
  n 1
  m 5
  n 2
.for P in 0 .. 2
  dve.memset a[:, W + P : W + P + 1], 0.0
  n 0
.endfor
.set S = 1
.macro setter S
  .set S = S + 10
  dve.memset a[:, S : S + 1], 0.0
.endm
  setter 4
  dve.memset a[:, S : S + 1], 0.0
)");
  // n 1: 1*2 + 3; m's parameter W = 5 hides the .equ: 5*4 + 3; n 2: the .equ again; the loop's
  // P (0, 1) hides the .param in the loop body, not in n (3); setter's .set changes its
  // parameter (4 + 10), not the global S (1).
  EXPECT_EQ(memset_columns(m), (std::vector<uint64_t>{5, 23, 7, 2, 3, 3, 3, 14, 1}));
}

TEST(AsmBinding, ParameterTypeChangesBetweenExpansions) {
  Module m = must_assemble(R"(
.sbuf a : fp32[128, 64]
.macro f v
  dve.memset a[:, 0:1], v * 2
.endm
  f 3
  f 1.25
  f 3
)");
  const auto& dve = m.streams[static_cast<int>(Engine::dve)];
  ASSERT_EQ(dve.size(), 3u);
  EXPECT_FLOAT_EQ(dve[0].ops[1].f, 6.0f);
  EXPECT_FLOAT_EQ(dve[1].ops[1].f, 2.5f);
  EXPECT_FLOAT_EQ(dve[2].ops[1].f, 6.0f);
}

TEST(AsmBinding, IntegerOperatorsAndShortCircuits) {
  Module m = must_assemble(R"(
.macro li v
  sp.li r1, v
.endm
.for k in 0 .. 2
  li 0 && nosuch
  li 1 || nosuch
  li k && 3
  li k || 0
  li min(4, 2 + k, 7) * cdiv(7 + k, 2) + align_up(5, 4)
  li -(3 << 2) >> 1
  li (k == 1) + (k != 1) * 10 + (k >= 1) * 100 + (k < 1) * 1000
  li 17 % (5 + k) - 9 / (2 + k)
  li ~k & 6 | 8 ^ 1
.endfor
)");
  const auto& sp = m.streams[static_cast<int>(Engine::sp)];
  ASSERT_EQ(sp.size(), 18u);
  const std::vector<int64_t> want = {
      0, 1, 0, 0, 2 * 4 + 8, -6, 10 + 1000, 2 - 4, (~0 & 6) | (8 ^ 1), // k = 0
      0, 1, 1, 1, 3 * 4 + 8, -6, 1 + 100,   5 - 3, (~1 & 6) | (8 ^ 1), // k = 1
  };
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(sp[i].ops[1].i, want[i]) << "li #" << i;
}

TEST(AsmBinding, SlicesLowerAtEveryExpansion) {
  Module m = must_assemble(R"(
.sbuf a : fp32[128, 64]
.sbuf c : fp32[128, 4, 16]
.macro z k, p
  dve.memset a[p:p+2, k], 0.0
  dve.memset a[32:36, k:k+8:2], 0.0
  dve.memset c[0:2, k, 3:7], 0.0
  dve.memset c[p:p+1, 1:3, :], 0.0
.endm
  z 1, 0
  z 3, 64
)");
  const auto& dve = m.streams[static_cast<int>(Engine::dve)];
  ASSERT_EQ(dve.size(), 8u);
  const uint64_t c0 = 128 * 64 * 4 / 128; // c follows a (64 fp32 per partition)
  struct Want {
    uint16_t part_start, part_count;
    uint64_t offset;
    std::vector<std::pair<int32_t, uint32_t>> dims;
  };
  const Want want[] = {
      {0, 2, 1 * 4, {{1, 1}}},                  // a[0:2, 1]
      {32, 4, 1 * 4, {{2, 4}}},                 // a[32:36, 1:9:2]
      {0, 2, c0 + (1 * 16 + 3) * 4, {{1, 4}}},  // c[0:2, 1, 3:7]
      {0, 1, c0 + 16 * 4, {{16, 2}, {1, 16}}},  // c[0:1, 1:3, :]
      {64, 2, 3 * 4, {{1, 1}}},                 // a[64:66, 3]
      {32, 4, 3 * 4, {{2, 4}}},                 // a[32:36, 3:11:2]
      {0, 2, c0 + (3 * 16 + 3) * 4, {{1, 4}}},  // c[0:2, 3, 3:7]
      {64, 1, c0 + 16 * 4, {{16, 2}, {1, 16}}}, // c[64:65, 1:3, :]
  };
  for (size_t i = 0; i < 8; ++i) {
    const AccessPattern& ap = dve[i].ops[0].ap;
    EXPECT_EQ(ap.part_start, want[i].part_start) << i;
    EXPECT_EQ(ap.part_count, want[i].part_count) << i;
    EXPECT_EQ(ap.offset, want[i].offset) << i;
    ASSERT_EQ(ap.ndims, want[i].dims.size()) << i;
    for (size_t k = 0; k < want[i].dims.size(); ++k) {
      EXPECT_EQ(ap.dims[k].stride, want[i].dims[k].first) << i;
      EXPECT_EQ(ap.dims[k].count, want[i].dims[k].second) << i;
    }
  }
}

// An enumerator, queue or register operand written as a bare name is read without a Value
// when no variable of that name is visible (asm/operands.cpp plain_name): a parameter or loop
// variable of the same name must still win wherever it is visible, and only there.
TEST(AsmBinding, NamedOperandsFollowVariables) {
  Module m = must_assemble(R"(
.hbm h : fp32[128, 64] input @ 0
.sbuf a : fp32[128, 64]
.macro f copy, q1
  act.activation a, a, func=copy
  sp.dma q1, a, h
.endm
  act.activation a, a, func=copy
  sp.dma q1, a, h
  f exp, q7
  f copy=tanh, q1=q1
.for q1 in 0 .. 1
  f relu, q(q1 + 4)
.endfor
  act.activation a, a, func=copy
  sp.dma q1, a, h
)");
  auto func = [](std::string_view n) { return int64_t(*enum_parse(EnumType::ActFunc, n)); };
  std::vector<int64_t> funcs, queues;
  for (const Inst& in : m.streams[static_cast<int>(Engine::act)])
    funcs.push_back(in.ops[op::activation::func].i);
  for (const Inst& in : m.streams[static_cast<int>(Engine::sp)])
    queues.push_back(in.ops[op::dma::queue].i);
  EXPECT_EQ(funcs, (std::vector<int64_t>{func("copy"), func("exp"), func("tanh"), func("relu"),
                                         func("copy")}));
  EXPECT_EQ(queues, (std::vector<int64_t>{1, 7, 1, 4, 1}));
}

// A planned slice reads a bound that is a bare name without eval_int (asm/slice_plan.cpp
// planned_int): a parameter or loop variable of a global's name must still win where visible,
// also in a file included (one unit, its nodes' caches shared) where a global is seen first
// and a loop variable or parameter of its name later.
TEST(AsmBinding, SliceBoundsFollowVariables) {
  AsmResult r =
      assemble_with_include("nisa_binding_bounds", "bounds.inc",
                            "  dve.memset a[:, G : H], 0.0\n  dve.memset a[:, G], 0.0\n", R"(
.sbuf a : fp32[128, 64]
.set G = 1
.equ H = 40
.macro m
  dve.memset a[:, G : H], 0.0
  dve.memset a[:, G], 0.0
.endm
.macro p G, H
  m
  .include "bounds.inc"
.endm
  m
  .include "bounds.inc"
  p 5, 9
.for G in 10 .. 12
  m
  .include "bounds.inc"
.endfor
.set G = 2
  p 7, 8
  .include "bounds.inc"
)");
  ASSERT_TRUE(r.ok()) << r.diagnostics_text();
  std::vector<std::pair<uint64_t, uint32_t>> got; // (column, count)
  for (const Inst& in : r.module->streams[static_cast<int>(Engine::dve)])
    got.emplace_back(in.ops[0].ap.offset / 4, in.ops[0].ap.dims[0].count);
  // m sees the globals only (G 1, then 2); p's parameters and the loop's G hide them.
  const std::vector<std::pair<uint64_t, uint32_t>> want = {
      {1, 39}, {1, 1}, {1, 39},  {1, 1},  {1, 39}, {1, 1}, {5, 4},   {5, 1},
      {1, 39}, {1, 1}, {10, 30}, {10, 1}, {1, 39}, {1, 1}, {11, 29}, {11, 1},
      {2, 38}, {2, 1}, {7, 1},   {7, 1},  {2, 38}, {2, 1}};
  EXPECT_EQ(got, want);
}

// A slice of a tensor named by a variable is lowered by its node's plan for that tensor
// (asm/slice_plan.cpp planned_index): the variable's tensor wins over a tensor of the name
// written, and a node meeting another tensor is lowered for that one.
TEST(AsmBinding, SliceBasesFollowVariables) {
  Module m = must_assemble(R"(
.sbuf x : fp32[128, 64]
.sbuf y : fp32[128, 64]
.sbuf z : fp32[64, 32]
.macro f x, c
  dve.memset x[0:2, c:c+1], 0.0
.endm
  f x, 1
  f y, 2
  f z, 3
.for x in 0 .. 1
  f z, 4
.endfor
  dve.memset x[0:2, 5:6], 0.0
)");
  std::vector<std::pair<uint64_t, uint32_t>> got; // (byte offset, partitions)
  for (const Inst& in : m.streams[static_cast<int>(Engine::dve)])
    got.emplace_back(in.ops[0].ap.offset, in.ops[0].ap.part_count);
  const uint64_t y = 64 * 4, z = 2 * 64 * 4; // y after x, z after y (64-byte aligned)
  EXPECT_EQ(got, (std::vector<std::pair<uint64_t, uint32_t>>{
                     {4, 2}, {y + 8, 2}, {z + 12, 2}, {z + 16, 2}, {20, 2}}));
}

// An ap(...) operand is lowered without a Value (asm/operands.cpp, Slices::raw_pattern), from a
// plan made once per node with its space and dtype names read (asm/slice_plan.cpp raw_plan):
// its space, dtype and integer fields still follow the variables visible where it is written,
// also in a file included (one unit) where the names are first unbound and later parameters.
TEST(AsmBinding, RawApFollowsVariables) {
  AsmResult r = assemble_with_include("nisa_binding_ap", "ap.inc",
                                      "  dve.memset ap(sbuf, fp32, 0, 128, O, [[1, 4]]), 0.0\n", R"(
.sbuf a : fp32[128, 64]
.set O = 8
.macro f sbuf, fp32, O
  .include "ap.inc"
.endm
  .include "ap.inc"
  f psum, bf16, 16
.for O in 32 .. 33
  .include "ap.inc"
.endfor
.set hbm = sbuf
  dve.memset ap(hbm, fp32, 0, 128, O, [[1, 4]]), 0.0
  f sbuf, fp8e4m3, 4
)");
  ASSERT_TRUE(r.ok()) << r.diagnostics_text();
  std::vector<std::tuple<int, uint64_t, int>> got; // (space, offset, dtype)
  for (const Inst& in : r.module->streams[static_cast<int>(Engine::dve)])
    got.emplace_back(int(in.ops[0].ap.space), in.ops[0].ap.offset, int(in.ops[0].ap.dtype));
  auto dt = [](std::string_view n) { return int(*parse_dtype(n)); };
  const int sb = int(MemSpace::sbuf), ps = int(MemSpace::psum);
  EXPECT_EQ(got, (std::vector<std::tuple<int, uint64_t, int>>{{sb, 8, dt("fp32")},
                                                              {ps, 16, dt("bf16")},
                                                              {sb, 32, dt("fp32")},
                                                              {sb, 8, dt("fp32")},
                                                              {sb, 4, dt("fp8e4m3")}}));
}

// A @wait's or @signal's semaphore named directly is read from its node's NodeInfo once seen
// (asm/sync.cpp sem_fast): a parameter or loop variable of a semaphore's name must still win
// where visible, also in a file included (one unit) where the name first names the semaphore.
TEST(AsmBinding, SyncSemaphoresFollowVariables) {
  AsmResult r =
      assemble_with_include("nisa_binding_sync", "sync.inc",
                            "  dve.memset a[:, 0:1], 0.0  @wait(s1 >= 1) @signal(s1)\n", R"(
.sbuf a : fp32[128, 64]
.sem s0, s1, s2
.macro f s1
  .include "sync.inc"
.endm
  .include "sync.inc"
  f s2
.for s1 in 0 .. 1
  f s0
.endfor
  .include "sync.inc"
)");
  ASSERT_TRUE(r.ok()) << r.diagnostics_text();
  std::vector<std::pair<int, int>> got; // (wait's semaphore, signal's)
  for (const Inst& in : r.module->streams[static_cast<int>(Engine::dve)]) {
    ASSERT_EQ(in.waits.size(), 1u);
    ASSERT_EQ(in.signals.size(), 1u);
    got.emplace_back(in.waits[0].sem, in.signals[0].sem);
  }
  EXPECT_EQ(got, (std::vector<std::pair<int, int>>{{1, 1}, {2, 2}, {0, 0}, {1, 1}}));
}

} // namespace
} // namespace nisa::nasm
