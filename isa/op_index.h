// Named operand indices, generated from isa/insts.def: nisa::op::<ident>::<operand> is the
// index of that operand in Inst::ops (table order), e.g. in.ops[op::matmul::moving]. A
// misspelt instruction or operand name fails to compile.
#pragma once

namespace nisa::op {

#define D(n, ...) n
#define S(n, ...) n
#define DO(n, ...) n
#define SO(n, ...) n
#define SC(n, ...) n
#define SCI(n, ...) n
#define F(n, ...) n
#define I(n, ...) n
#define B(n, ...) n
#define E(n, ...) n
#define R(n) n
#define RI(n) n
#define Q(n) n
#define SEM(n) n
#define L(n) n
#define PAT(n) n
#define MASK(n) n
#define GRP(n) n
#define INST(id, mn, code, eng, gens, cost, doc, ...)                                              \
  namespace id {                                                                                   \
  enum Index : int { __VA_ARGS__ };                                                                \
  }
#include "isa/insts.def"
#undef INST
#include "isa/insts_operands_undef.inc"

// Operands several rows hold at the same index (checked here), for code over all of them.
namespace collective { // every cc row, and send_recv's dst and src
inline constexpr int dst = all_reduce::dst, src = all_reduce::src, group = all_reduce::group;
static_assert(all_gather::dst == dst && reduce_scatter::dst == dst && all_to_all::dst == dst &&
              collective_permute::dst == dst && permute_implicit::dst == dst &&
              send_recv::dst == dst);
static_assert(all_gather::src == src && reduce_scatter::src == src && all_to_all::src == src &&
              collective_permute::src == src && permute_implicit::src == src &&
              send_recv::src == src);
static_assert(all_gather::group == group && reduce_scatter::group == group &&
              all_to_all::group == group && collective_permute::group == group &&
              permute_implicit::group == group && ring_rank::group == group);
} // namespace collective
namespace dma_xfer { // the queue of every asynchronous DMA
inline constexpr int queue = dma::queue;
static_assert(dma_transpose::queue == queue && dma_compute::queue == queue);
} // namespace dma_xfer
namespace reg_write { // the destination register of every register-writing row
inline constexpr int rd = li::rd;
static_assert(add::rd == rd && sub::rd == rd && mul::rd == rd && shl::rd == rd && shr::rd == rd &&
              and_::rd == rd && or_::rd == rd && min::rd == rd && max::rd == rd &&
              sysreg::rd == rd && ld::rd == rd && ring_rank::rd == rd);
} // namespace reg_write
namespace reg_alu { // rd = rs op rt
inline constexpr int rd = add::rd, rs = add::rs, rt = add::rt;
static_assert(sub::rs == rs && mul::rs == rs && shl::rs == rs && shr::rs == rs && and_::rs == rs &&
              or_::rs == rs && min::rs == rs && max::rs == rs);
static_assert(sub::rt == rt && mul::rt == rt && shl::rt == rt && shr::rt == rt && and_::rt == rt &&
              or_::rt == rt && min::rt == rt && max::rt == rt);
} // namespace reg_alu

} // namespace nisa::op
