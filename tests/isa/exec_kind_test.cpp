// Execution facts derived from the table (isa/exec_kind.h) and the generated operand indices
// (isa/op_index.h).
#include <gtest/gtest.h>

#include <climits>

#include "isa/exec_kind.h"
#include "isa/op_index.h"

namespace nisa {
namespace {

TEST(ExecKind, FromTheTable) {
  EXPECT_EQ(exec_kind(desc(Opcode::dma)), ExecKind::dma);
  EXPECT_EQ(exec_kind(desc(Opcode::dma_transpose)), ExecKind::dma);
  EXPECT_EQ(exec_kind(desc(Opcode::dma_compute)), ExecKind::dma);
  EXPECT_EQ(exec_kind(desc(Opcode::send_recv)), ExecKind::send_recv);
  EXPECT_EQ(exec_kind(desc(Opcode::core_barrier)), ExecKind::barrier);
  EXPECT_EQ(exec_kind(desc(Opcode::all_reduce)), ExecKind::collective);
  EXPECT_EQ(exec_kind(desc(Opcode::permute_implicit)), ExecKind::collective);
  EXPECT_EQ(exec_kind(desc(Opcode::ring_rank)), ExecKind::engine); // a sequencer instruction
  EXPECT_EQ(exec_kind(desc(Opcode::matmul)), ExecKind::engine);
  Inst p = make_inst(Opcode::permute_implicit, Engine::cc);
  p.ops[op::permute_implicit::channel].i = 3;
  EXPECT_EQ(cc_channel(p), 3);
  EXPECT_EQ(cc_channel(make_inst(Opcode::all_gather, Engine::cc)), 0);
  Inst d = make_inst(Opcode::dma, Engine::act);
  d.ops[op::dma::queue].i = 7;
  EXPECT_TRUE(is_async_dma(d));
  EXPECT_EQ(dma_queue(d), 7);
}

TEST(ExecKind, RegisterAlu) {
  EXPECT_EQ(reg_alu(Opcode::add, INT32_MAX, 1), INT32_MIN); // wraps
  EXPECT_EQ(reg_alu(Opcode::sub, 0, 1), -1);
  EXPECT_EQ(reg_alu(Opcode::mul, 65536, 65536), 0);
  EXPECT_EQ(reg_alu(Opcode::shl, 1, 33), 2);   // the low 5 bits count
  EXPECT_EQ(reg_alu(Opcode::shr, -1, 28), 15); // logical
  EXPECT_EQ(reg_alu(Opcode::and_, 6, 3), 2);
  EXPECT_EQ(reg_alu(Opcode::or_, 6, 3), 7);
  EXPECT_EQ(reg_alu(Opcode::min, -5, 3), -5); // signed
  EXPECT_EQ(reg_alu(Opcode::max, -5, 3), 3);
  EXPECT_TRUE(is_reg_alu(Opcode::max));
  EXPECT_FALSE(is_reg_alu(Opcode::li));
}

TEST(ExecKind, FreeSpan) {
  AccessPattern ap;
  ap.ndims = 2;
  ap.dims[0] = {-10, 3};
  ap.dims[1] = {1, 4};
  const ApSpan s = ap_free_span(ap);
  EXPECT_EQ(int64_t(s.lo), -20);
  EXPECT_EQ(int64_t(s.hi), 3);
}

// Every generated index names the table's operand of that position.
TEST(OpIndex, MatchesTheTable) {
  auto name = [](Opcode o, int k) { return desc(o).operands[size_t(k)].name; };
  EXPECT_EQ(name(Opcode::matmul, op::matmul::moving), "moving");
  EXPECT_EQ(name(Opcode::matmul, op::matmul::transpose), "transpose");
  EXPECT_EQ(name(Opcode::activation, op::activation::reduce_res), "reduce_res");
  EXPECT_EQ(name(Opcode::scalar_tensor_tensor, op::scalar_tensor_tensor::in1), "in1");
  EXPECT_EQ(name(Opcode::dma_compute, op::dma_compute::oob), "oob");
  EXPECT_EQ(name(Opcode::permute_implicit, op::permute_implicit::channel), "channel");
  EXPECT_EQ(name(Opcode::ring_rank, op::collective::group), "group");
}

} // namespace
} // namespace nisa
