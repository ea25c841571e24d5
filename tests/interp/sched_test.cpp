// Machine construction and reuse.
#include <gtest/gtest.h>

#include <cmath>

#include "builders.h"

namespace nisa::test {
namespace {

using interp::Machine;
using interp::MachineOptions;

TEST(Machine, MemoriesArePoisonedAndSizedPerTarget) {
  KB k;
  k.hbm("x", DType::fp32, {4, 8}, Role::input);
  k.hbm("y", DType::bf16, {4, 8}, Role::output);
  MachineOptions mo;
  mo.lnc = 2;
  mo.ranks = 3;
  Machine m(k.m, mo);
  EXPECT_EQ(m.num_cores(), 6);
  EXPECT_EQ(m.ranks.size(), 3u);
  // Modelled partitions of 224 KiB / 16 KiB; on the host 256 bytes apart more (the pad).
  EXPECT_EQ(m.cores[0].st.sbuf_part_bytes, 224u * 1024);
  EXPECT_EQ(m.cores[0].st.psum_part_bytes, 16u * 1024);
  EXPECT_EQ(m.cores[0].sbuf.size(), 128u * (224 * 1024 + 256));
  EXPECT_EQ(m.cores[0].psum.size(), 128u * (16 * 1024 + 256));
  float f;
  std::memcpy(&f, m.cores[5].sbuf.data() + 12345 * 4, 4);
  EXPECT_TRUE(std::isnan(f));
  std::memcpy(&f, m.cores[3].psum.data() + 100, 4);
  EXPECT_TRUE(std::isnan(f));
  uint16_t h;
  std::memcpy(&h, m.hbm_tensor(2, k.m.tensors[1]), 2);
  EXPECT_TRUE(std::isnan(bf16_to_f32(h)));
  EXPECT_EQ(m.core(2, 1).rank, 2);
  EXPECT_EQ(m.core(2, 1).core, 1);
}

TEST(Machine, RejectsBadOptionsAndDeclarations) {
  KB k;
  MachineOptions mo;
  mo.lnc = 3;
  EXPECT_THROW(Machine(k.m, mo), std::runtime_error);
  KB k2;
  TensorDecl t;
  t.name = "big";
  t.space = MemSpace::sbuf;
  t.shape = {128, 60000}; // 240000 bytes per partition > 224 KiB
  k2.m.tensors.push_back(t);
  EXPECT_THROW(Machine(k2.m, {}), std::runtime_error);
  KB k3;
  t.shape = {4, 4};
  t.role = Role::input;
  k3.m.tensors.push_back(t);
  EXPECT_THROW(Machine(k3.m, {}), std::runtime_error); // inputs live in HBM
}

TEST(Machine, ResetRestoresSemaphoresAndPoison) {
  KB k;
  uint16_t s = k.sem("s", 4);
  k.add(Engine::sp, with_signal(nop(Engine::sp), s, 3));
  Machine m(k.m, {});
  EXPECT_EQ(interp::run(m).status, interp::RunStatus::ok);
  EXPECT_EQ(m.cores[0].st.sems[s], 7u);
  m.cores[0].sbuf.data()[0] = 1;
  m.reset();
  EXPECT_EQ(m.cores[0].st.sems[s], 4u);
  EXPECT_EQ(m.cores[0].sbuf.data()[0], interp::kPoisonByte);
  EXPECT_EQ(interp::run(m).status, interp::RunStatus::ok);
  EXPECT_EQ(m.cores[0].st.sems[s], 7u);
}

} // namespace
} // namespace nisa::test
