// The cost model and the target table.
#include <gtest/gtest.h>

#include "builders.h"
#include "interp/core/cost.h"
#include "interp/core/machine.h"
#include "interp/core/target.h"

#include <set>
#include <utility>

namespace nisa::test {
namespace {

using namespace nisa::interp;

// The host stride of SBUF and PSUM (interp/core/target.h host_stride()): 64-byte aligned partition
// starts, never a multiple of 4 KiB, and 16 partitions in lockstep (the scan / fold kernels)
// on 16 distinct L1 set groups (64 sets of 64 B: address bits 6..11). A 4 KiB-multiple stride
// puts all 16 in one set. Machines lay their cores out with it.
TEST(Target, HostStrideIsPaddedOffEvery4KiBMultiple) {
  for (Target tg : {Target::trn1, Target::trn2, Target::trn3}) {
    const TargetParams& t = target_params(tg);
    for (auto [size, stride] : {std::pair{t.sbuf_part_bytes, t.sbuf_stride},
                                std::pair{t.psum_part_bytes, t.psum_stride}}) {
      EXPECT_NE(stride % 4096, 0u) << t.name;
      EXPECT_EQ(stride % 64, 0u) << t.name;
      EXPECT_GE(stride, size) << t.name;
      EXPECT_LE(stride - size, 4096u) << t.name; // a pad, not a second partition
      std::set<uint64_t> sets;
      for (uint64_t p = 0; p < 16; ++p) sets.insert(p * stride / 64 % 64);
      EXPECT_EQ(sets.size(), 16u) << t.name << " stride " << stride;
    }
    KB k;
    k.hbm("x", DType::fp32, {4, 8}, Role::input);
    MachineOptions mo;
    mo.target = tg;
    Machine m(k.m, mo);
    const CoreState& st = m.cores[0].st;
    EXPECT_EQ(st.sbuf_part_bytes, t.sbuf_part_bytes);
    EXPECT_EQ(st.sbuf_stride, t.sbuf_stride);
    EXPECT_EQ(st.psum_part_bytes, t.psum_part_bytes);
    EXPECT_EQ(st.psum_stride, t.psum_stride);
    EXPECT_EQ(m.cores[0].sbuf.size(), 128 * t.sbuf_stride);
    EXPECT_EQ(m.cores[0].psum.size(), 128 * t.psum_stride);
  }
}

TEST(Target, TableValues) {
  const TargetParams& t1 = target_params(Target::trn1);
  const TargetParams& t2 = target_params(Target::trn2);
  const TargetParams& t3 = target_params(Target::trn3);
  EXPECT_EQ(t1.sbuf_part_bytes, 192u * 1024);
  EXPECT_EQ(t2.sbuf_part_bytes, 224u * 1024);
  EXPECT_EQ(t3.sbuf_part_bytes, 256u * 1024);
  EXPECT_EQ(t1.sbuf_usable_bytes, 180224u);
  EXPECT_EQ(t2.sbuf_usable_bytes, 212984u);
  EXPECT_EQ(t3.sbuf_usable_bytes, 245752u);
  for (const TargetParams* t : {&t1, &t2, &t3}) {
    EXPECT_EQ(t->psum_part_bytes, 16384u);
    EXPECT_EQ(t->psum_banks * t->psum_bank_bytes, t->psum_part_bytes);
    EXPECT_EQ(t->dma_queues, 16u);
    EXPECT_EQ(t->regs, 64u);
    for (int e = 0; e < kNumEngines; ++e)
      EXPECT_EQ(t->ticks_per_cycle[e] * t->clock_mhz[e], kTickMHz) << t->name << " " << e;
  }
  EXPECT_EQ(t1.clock_mhz[int(Engine::pe)], 2800u);
  EXPECT_EQ(t1.clock_mhz[int(Engine::dve)], 1120u);
  EXPECT_EQ(t2.clock_mhz[int(Engine::dve)], 960u);
  EXPECT_EQ(t2.clock_mhz[int(Engine::act)], 1200u);
  EXPECT_EQ(t3.clock_mhz[int(Engine::dve)], 1200u);
  EXPECT_FALSE(t1.lnc2);
  EXPECT_TRUE(t2.lnc2 && t3.lnc2);
  EXPECT_EQ(find_target("trn2"), &t2);
  EXPECT_EQ(find_target("gen4"), &t3);
  EXPECT_EQ(find_target("trn9"), nullptr);
}

Inst search(Opcode op, uint32_t F) {
  Inst in = make_inst(op, Engine::dve);
  in.ops[0].ap = sbuf_ap(0, 128, 0, DType::uint32, 8);
  in.ops[1].ap = sbuf_ap(0, 128, 1024, DType::fp32, F);
  if (op != Opcode::max8) in.ops[2].ap = sbuf_ap(0, 128, 512, DType::fp32, 8);
  return in;
}

TEST(Cost, SearchFamilyIsFPlus144DveCycles) {
  for (Target t : {Target::trn1, Target::trn2, Target::trn3})
    for (Opcode op : {Opcode::max8, Opcode::find_index8, Opcode::match_replace8})
      for (uint32_t F : {8u, 9u, 512u, 4097u, 16384u}) {
        const TargetParams& tp = target_params(t);
        Inst in = search(op, F);
        EXPECT_EQ(cost_cycles(in, tp), int64_t(F) + 144);
        EXPECT_EQ(cost_ticks(in, tp), (int64_t(F) + 144) * tp.ticks_per_cycle[int(Engine::dve)]);
      }
}

TEST(Cost, ScanningTopKFormula) {
  // ceil(k/8) rounds of max8 + match_replace8 over V: ceil(k/8) * 2 * (V + 144) cycles.
  const TargetParams& tp = target_params(Target::trn2);
  const uint32_t V = 4000, k = 20;
  int64_t total = 0;
  for (uint32_t r = 0; r < (k + 7) / 8; ++r)
    total += cost_cycles(search(Opcode::max8, V), tp) +
             cost_cycles(search(Opcode::match_replace8, V), tp);
  EXPECT_EQ(total, 3 * 2 * (V + 144));
}

TEST(Cost, MatmulActAndElementwiseAnchors) {
  const TargetParams& tp = target_params(Target::trn2);
  Inst mm = make_inst(Opcode::matmul, Engine::pe);
  mm.ops[0].ap = psum_ap(0, 128, 0, DType::fp32, 512);
  mm.ops[1].ap = sbuf_ap(0, 128, 0, DType::bf16, 128);
  mm.ops[2].ap = sbuf_ap(0, 128, 4096, DType::bf16, 512);
  EXPECT_EQ(cost_cycles(mm, tp), 512);
  mm.ops[2].ap.dims[0].count = 32;
  EXPECT_EQ(cost_cycles(mm, tp), 64); // II >= 64
  mm.ops[1].ap.dtype = DType::fp32;
  EXPECT_EQ(cost_cycles(mm, tp), 256); // fp32 4x
  Inst act = make_inst(Opcode::activation, Engine::act);
  act.ops[0].ap = sbuf_ap(0, 128, 0, DType::fp32, 1000);
  act.ops[1].ap = sbuf_ap(0, 128, 8192, DType::fp32, 1000);
  EXPECT_EQ(cost_cycles(act, tp), 64 + 1000);
  Inst tt = make_inst(Opcode::tensor_tensor, Engine::dve);
  tt.ops[0].ap = tt.ops[1].ap = tt.ops[2].ap = sbuf_ap(0, 128, 0, DType::fp32, 300);
  EXPECT_EQ(cost_cycles(tt, tp), 60 + 2 * 300);
  Inst cp = make_inst(Opcode::copy, Engine::dve);
  cp.ops[0].ap = cp.ops[1].ap = sbuf_ap(0, 1, 0, DType::fp32, 300);
  EXPECT_EQ(cost_cycles(cp, tp), 60 + 300); // independent of the partition count
  EXPECT_EQ(cost_cycles(make_inst(Opcode::nop, Engine::sp), tp), 4);
}

TEST(Cost, DmaTransfer) {
  const TargetParams& tp = target_params(Target::trn2);
  // 128 partitions use all 16 engines: 27.2 GB/s * 16.
  DmaTime t = dma_transfer(tp, 435200, 128);
  EXPECT_EQ(t.data_ticks, 1000 * kTickMHz / 1000); // 435200 B at 435.2 GB/s = 1 us
  EXPECT_EQ(t.latency_ticks, 2000 * kTickMHz / 1000);
  // 8 partitions: one engine -> 16x slower streaming, same share of the shared link.
  DmaTime t1 = dma_transfer(tp, 435200, 8);
  EXPECT_EQ(t1.data_ticks, 16 * t.data_ticks);
  EXPECT_EQ(t1.link_ticks, t.link_ticks);
  EXPECT_EQ(ticks_to_ns(kTickMHz), 1000.0);
}

} // namespace
} // namespace nisa::test
