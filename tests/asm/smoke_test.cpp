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

TEST(AsmSmoke, MacrosLoopsConditionalsAndLabels) {
  Module m = must_assemble(R"(
.sbuf a : fp32[128, 64]
.sbuf b : fp32[128, 64]
.macro fill t, v=2.5, n=1
  .for k in 0 .. n
    dve.memset t[:, k*8 : k*8+8], v + k
  .endfor
.endm
.equ MODE = 2
.if MODE == 1
  fill a
.elif MODE == 2
  fill b, n=3
.else
  .error "bad mode"
.endif
top:
  sp.li r1, 4
  sp.sub r1, r1, 1
  sp.bnz r1, top
)");
  const auto& dve = m.streams[static_cast<int>(Engine::dve)];
  ASSERT_EQ(dve.size(), 3u);
  for (int k = 0; k < 3; ++k) {
    EXPECT_FLOAT_EQ(dve[k].ops[1].f, 2.5f + static_cast<float>(k));
    EXPECT_EQ(dve[k].ops[0].ap.offset, 128u * 64 * 4 / 128 + static_cast<uint64_t>(k) * 8 * 4);
    EXPECT_EQ(dve[k].ops[0].ap.dims[0].count, 8u);
  }
  const auto& sp = m.streams[static_cast<int>(Engine::sp)];
  ASSERT_EQ(sp.size(), 3u);
  EXPECT_EQ(sp[2].ops[1].i, 0); // bnz back to the li
  ASSERT_EQ(m.labels[static_cast<int>(Engine::sp)].size(), 1u);
  EXPECT_EQ(m.labels[static_cast<int>(Engine::sp)][0].name, "top");
}

TEST(AsmSmoke, DynamicOffsetsAndViews) {
  Module m = must_assemble(R"(
.hbm  w   : bf16[1000, 64] input
.sbuf idx : int32[128, 4]
.sbuf t   : bf16[128, 64]
.view w2 = w as fp32[1000, 32]
  sp.dma q2, t[0:1, :], w[@r7, :]
  sp.dma q3, t, w[@vec(idx[:, 2:3]), :]
  sp.dma q4, t[0:1, 0:32], w2[5, :]
)");
  const auto& sp = m.streams[static_cast<int>(Engine::sp)];
  ASSERT_EQ(sp.size(), 3u);
  const AccessPattern& r = sp[0].ops[2].ap;
  EXPECT_EQ(r.dyn, DynKind::reg);
  EXPECT_EQ(r.dyn_reg, 7);
  EXPECT_EQ(r.dyn_mult, 64);
  EXPECT_EQ(r.dyn_limit, 1000u);
  const AccessPattern& v = sp[1].ops[2].ap;
  EXPECT_EQ(v.dyn, DynKind::vec);
  EXPECT_EQ(v.part_count, 128);
  EXPECT_EQ(v.vidx.part_count, 128);
  EXPECT_EQ(v.vidx.offset, 8u); // column 2 of int32
  EXPECT_EQ(v.vidx.dtype, DType::int32);
  const AccessPattern& vw = sp[2].ops[2].ap;
  EXPECT_EQ(vw.dtype, DType::fp32);
  EXPECT_EQ(vw.offset, 5u * 32 * 4);
}

TEST(AsmSmoke, TargetAndGenArePredefined) {
  // The same listing picks a different instruction form per target (docs/asm.md §3).
  const std::string src = R"(
.sbuf d : fp32[1, 16]
.sbuf v : fp32[1, 8]
.sbuf i : uint32[1, 8]
.if TARGET == trn1 && GEN == 2
  dve.find_index8 i, d, v
  dve.match_replace8 d, d, v
.elif GEN >= 3
  dve.match_replace8 d, d, v, idx=i
.endif
.equ G = GEN * 10
  sp.li r1, G
)";
  struct Case {
    Target t;
    size_t insts;
    int gen;
  };
  for (Case c : {Case{Target::trn1, 2, 2}, Case{Target::trn2, 1, 3}, Case{Target::trn3, 1, 4}}) {
    AsmOptions o;
    o.target = c.t;
    Module m = must_assemble(src, o);
    const auto& dve = m.streams[static_cast<int>(Engine::dve)];
    ASSERT_EQ(dve.size(), c.insts) << name_of(c.t);
    EXPECT_EQ(dve[0].op, c.gen == 2 ? Opcode::find_index8 : Opcode::match_replace8);
    const auto& sp = m.streams[static_cast<int>(Engine::sp)];
    ASSERT_EQ(sp.size(), 1u);
    EXPECT_EQ(sp[0].ops[1].i, c.gen * 10);
  }
  // `.target` in the listing updates them too.
  Module m = must_assemble(".target trn1\n" + src);
  EXPECT_EQ(m.streams[static_cast<int>(Engine::dve)].size(), 2u);
}

TEST(AsmSmoke, PredefinedNamesAreReadOnly) {
  for (const char* src :
       {".param GEN = 3\n", ".equ TARGET = trn2\n", ".set GEN = 4\n", ".sem GEN\n"}) {
    auto r = assemble_string(src, "t.nasm");
    EXPECT_FALSE(r.ok()) << src;
    EXPECT_NE(r.diagnostics_text().find("is predefined from the target"), std::string::npos)
        << r.diagnostics_text();
  }
  AsmOptions o;
  o.defines = {{"GEN", "2"}};
  auto r = assemble_string("  sp.nop\n", "t.nasm", o);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.diagnostics_text().find("-D GEN: 'GEN' is predefined"), std::string::npos)
      << r.diagnostics_text();
}

TEST(AsmSmoke, OneKeptHbmDimIsOneRow) {
  Module m = must_assemble(R"(
.hbm  x : fp32[3, 100000] input
.hbm  y : fp32[100000] input
.hbm  z : fp32[40, 50, 60] input
.sbuf v : fp32[128, 1000]
  sp.dma q0, v[0:99, :], x[2, 1000:100000]
  sp.dma q1, v[0:1, 0:500], y[10:1010:2]
  sp.dma q2, v[0:1, 0:40], z[:, 7, 9]
  sp.dma q3, v[0:40, 0:50], z[:, 0:50, 9]
)");
  const auto& sp = m.streams[static_cast<int>(Engine::sp)];
  ASSERT_EQ(sp.size(), 4u);
  auto addr = [&](size_t t) { return m.tensors[t].address; };
  struct Want {
    uint64_t offset;
    uint16_t rows;
    int64_t row_stride;
    int32_t stride;
    uint32_t count;
  };
  const Want want[] = {
      {addr(0) + (2 * 100000 + 1000) * 4, 1, 0, 1, 99000}, // one row of 99000
      {addr(1) + 10 * 4, 1, 0, 2, 500},                    // strided 1-D slice
      {addr(2) + (7 * 60 + 9) * 4, 1, 0, 50 * 60, 40},     // a kept outer dim
      {addr(2) + 9 * 4, 40, 50 * 60, 60, 50},              // two kept dims: rows as before
  };
  for (size_t k = 0; k < 4; ++k) {
    const AccessPattern& a = sp[k].ops[2].ap;
    EXPECT_EQ(a.offset, want[k].offset) << k;
    EXPECT_EQ(a.part_count, want[k].rows) << k;
    if (want[k].rows > 1) {
      EXPECT_EQ(a.part_stride, want[k].row_stride) << k;
    }
    ASSERT_EQ(a.ndims, 1) << k;
    EXPECT_EQ(a.dims[0].stride, want[k].stride) << k;
    EXPECT_EQ(a.dims[0].count, want[k].count) << k;
  }
}

TEST(AsmSmoke, LocalLabelsAreUniquePerExpansion) {
  Module m = must_assemble(R"(
.macro spin n
  sp.li r1, n
.Ltop:
  sp.sub r1, r1, 1
  sp.bnz r1, .Ltop
.endm
  spin 3
.for k in 0 .. 2
.Lagain:
  spin k + 5
  sp.bz r2, .Lagain
.endfor
.Lend:
  sp.br .Lend
)");
  const auto& sp = m.streams[static_cast<int>(Engine::sp)];
  // spin = 3 instructions; layout: spin(0..2) | it0: spin(3..5) bz(6) | it1: spin(7..9) bz(10)
  ASSERT_EQ(sp.size(), 12u);
  auto target = [&](size_t k) { return sp[k].ops.back().i; };
  EXPECT_EQ(target(2), 1);   // first spin's .Ltop
  EXPECT_EQ(target(5), 4);   // spin inside iteration 0
  EXPECT_EQ(target(6), 3);   // iteration 0's .Lagain
  EXPECT_EQ(target(9), 8);   // spin inside iteration 1
  EXPECT_EQ(target(10), 7);  // iteration 1's .Lagain
  EXPECT_EQ(target(11), 11); // top-level .Lend
  // The printed module reassembles to the same branch targets.
  auto r = assemble_string(print_module(m), "disasm.nasm");
  ASSERT_TRUE(r.ok()) << r.diagnostics_text() << print_module(m);
  const auto& sp2 = r.module->streams[static_cast<int>(Engine::sp)];
  ASSERT_EQ(sp2.size(), sp.size());
  for (size_t k = 0; k < sp.size(); ++k) EXPECT_EQ(sp2[k].ops.back().i, sp[k].ops.back().i) << k;
}

} // namespace
} // namespace nisa::nasm
