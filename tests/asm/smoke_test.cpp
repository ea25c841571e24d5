// End-to-end assembler checks on small sources: expansion, allocation, slices, sync.
#include <gtest/gtest.h>

#include "asm/asm.h"
#include "isa/print.h"

namespace nisa::nasm {
namespace {

const std::string kDir = NISA_ASM_TEST_DIR;

Module must_assemble(std::string_view src, AsmOptions o = {}) {
  auto r = assemble_string(src, "t.nasm", o);
  EXPECT_TRUE(r.ok()) << r.diagnostics_text();
  return r.module ? *r.module : Module{};
}

TEST(AsmSmoke, CumsumExampleAssembles) {
  auto r = assemble_file(kDir + "/inputs/cumsum.nasm");
  ASSERT_TRUE(r.ok()) << r.diagnostics_text();
  const Module& m = *r.module;
  EXPECT_EQ(m.kernel, "cumsum");
  // NP = 2 row tiles, NF = 3 column tiles: per tile 2 dma on sp, scan + copy on dve.
  const auto& dve = m.streams[static_cast<int>(Engine::dve)];
  const auto& sp = m.streams[static_cast<int>(Engine::sp)];
  EXPECT_EQ(sp.size(), 2u * 2 * 3);
  EXPECT_EQ(dve.size(), 1u + 2 * (1 + 3 * 2));
  // Last column tile: FS = 5000 - 4096 = 904; second row tile p = 1.
  const Inst& scan = dve[dve.size() - 2];
  EXPECT_EQ(scan.op, Opcode::scan);
  EXPECT_EQ(scan.ops[0].ap.part_count, 128);
  EXPECT_EQ(scan.ops[0].ap.dims[0].count, 904u);
  EXPECT_EQ(scan.ops[4].i, static_cast<int64_t>(AluOp::multiply));
  ASSERT_EQ(scan.waits.size(), 2u);
  EXPECT_EQ(scan.waits[0].value, 6u); // s_in >= I+1 with I = 1*3 + 2
  EXPECT_EQ(scan.waits[1].value, 5u);
  const Inst& load = sp[sp.size() - 2];
  // x[128:256, 4096:5000] of bf16[256, 5000]: rows start at 128, 904 columns.
  EXPECT_EQ(load.ops[2].ap.space, MemSpace::hbm);
  EXPECT_EQ(load.ops[2].ap.part_count, 128);
  EXPECT_EQ(load.ops[2].ap.part_stride, 5000);
  EXPECT_EQ(load.ops[2].ap.offset, (128u * 5000 + 4096) * 2);
  EXPECT_EQ(load.ops[2].ap.dims[0].count, 904u);
}

TEST(AsmSmoke, DefinesOverrideParams) {
  AsmOptions o;
  o.defines = {{"ROWS", "128"}, {"DT", "fp32"}};
  auto r = assemble_file(kDir + "/inputs/cumsum.nasm", o);
  ASSERT_TRUE(r.ok()) << r.diagnostics_text();
  EXPECT_EQ(r.module->tensors[0].dtype, DType::fp32);
  EXPECT_EQ(r.module->streams[static_cast<int>(Engine::sp)].size(), 2u * 3);
}

TEST(AsmSmoke, PrintedModuleReassembles) {
  auto r = assemble_file(kDir + "/inputs/cumsum.nasm");
  ASSERT_TRUE(r.ok()) << r.diagnostics_text();
  const std::string text = print_module(*r.module);
  auto r2 = assemble_string(text, "disasm.nasm");
  ASSERT_TRUE(r2.ok()) << r2.diagnostics_text() << text;
  EXPECT_EQ(r2.module->streams, r.module->streams);
  EXPECT_EQ(r2.module->tensors, r.module->tensors);
  EXPECT_EQ(r2.module->sems, r.module->sems);
}

} // namespace
} // namespace nisa::nasm
