// Execution facts derived from the table (isa/insts.def) that the scheduler, `nisa check`, the
// race checker and the assembler's autosync all need: how an instruction executes (on its
// engine, as an asynchronous DMA on a queue, as a collective on a channel, ...), the register
// ALU of the sequencers, an access pattern's reach and an instruction's memory operands.
#pragma once
#include <cstdint>
#include <optional>

#include "isa/isa.h"
#include "isa/op_index.h"

namespace nisa {

enum class ExecKind : uint8_t {
  engine,     // runs to completion on its engine (compute and sequencer instructions)
  dma,        // triggers an asynchronous transfer on a DMA queue (operand 0) of its engine
  send_recv,  // the LNC=2 pipe: both cores' engines meet
  barrier,    // core_barrier: the same engine of every core meets
  collective, // the cc unit: a transfer on a collective channel (cc_channel)
};
ExecKind exec_kind(const InstDesc& d);
inline ExecKind exec_kind(const Inst& in) { return exec_kind(desc(in.op)); }
// An asynchronous DMA: its signals fire when the transfer completes, not when it is issued.
inline bool is_async_dma(const Inst& in) { return exec_kind(in) == ExecKind::dma; }
// The DMA queue of an async DMA (operand 0 of every dma_xfer row but send_recv).
inline int64_t dma_queue(const Inst& in) { return in.ops[op::dma_xfer::queue].i; }
// The collective channel an instruction moves on: permute_implicit names it, the other
// collectives use channel 0. (Not range-checked: callers report a bad channel.)
int64_t cc_channel(const Inst& in);

// The sequencers' register ALU: rd = rs op rt on 32-bit registers (add, sub, mul, shl, shr,
// and, or, min, max: wrapping, shift counts by their low 5 bits, shr logical, min/max signed).
bool is_reg_alu(Opcode op);
int32_t reg_alu(Opcode op, int32_t a, int32_t b);

// Element offsets from the base that the free dims of an access pattern reach: every element
// lies in [lo, hi] (inclusive; lo <= 0 <= hi; without partitions and dynamic offsets).
__extension__ typedef __int128 ApI128;
struct ApSpan {
  ApI128 lo = 0, hi = 0;
};
ApSpan ap_free_span(const AccessPattern& ap);

// f(operand description, operand, is_write) for each present read (a Src, or a Scalar given as
// an access pattern) and each present write (a Dst), in operand order.
template <class F> void for_each_mem_operand(const Inst& in, F&& f) {
  const InstDesc& d = desc(in.op);
  for (size_t k = 0; k < d.operands.size() && k < in.ops.size(); ++k) {
    const Operand& o = in.ops[k];
    const OperandKind kind = d.operands[k].kind;
    const bool is_read = kind == OperandKind::Src || (kind == OperandKind::Scalar && o.is_ap);
    const bool is_write = kind == OperandKind::Dst;
    if (o.present && (is_read || is_write)) f(d.operands[k], o, is_write);
  }
}

} // namespace nisa
