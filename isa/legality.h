// Legality of a decoded instruction on a target, derived from the table (isa/insts.def) plus
// the per-opcode shape and dtype rules of the ISA: the one copy of these rules, called by the
// assembler (a diagnostic at the operand), the interpreter (a Fault when the instruction runs)
// and `nisa check`.
//
// Only static rules live here: what the operand records (spaces, dtypes, partition ranges,
// free shapes, immediates, enumerators) decide. What depends on memory contents, register
// values or dynamic offsets (bounds, a matmul's PSUM bank after a dynamic offset, gather
// indices) stays with the interpreter.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "isa/isa.h"

namespace nisa {

// ---- generations ------------------------------------------------------------------------------
// Whether a generation mask of the table (InstDesc::gens, OperandDesc::gens, imm_gens) holds
// the target.
constexpr bool gen_allows(uint8_t gens, Target t) { return (gens & gen_bit(t)) != 0; }
// "trn2, trn3": the targets of a generation mask.
std::string gens_text(uint8_t gens);

// ---- ALU operator classes ---------------------------------------------------------------------
bool is_bitvec(AluOp op);  // bitwise_and/or/xor, invert, left/right_shift
bool is_unary(AluOp op);   // abs, square, relu, rsqrt, reciprocal, invert
bool is_compare(AluOp op); // equal .. less

// ---- matmul -------------------------------------------------------------------------------------
struct MatmulLimits {
  uint32_t max_k = 128;       // contraction (partitions of stationary and moving)
  uint32_t max_m = 128;       // stationary columns = dst partitions
  uint64_t max_n = 512;       // moving columns = dst elements per partition
  bool one_psum_bank = true;  // dst within one 2 KiB PSUM bank (gen2/3)
  bool transpose_mode = true; // transpose=1 is transpose mode (gen3+; gen2 ignores the flag)
};
// Limits for a matmul writing a dst of this dtype on the target (docs/machine.md "Matmul and PSUM
// accumulation": N <= 512 on gen2/3, 4096 fp32 / 8192 bf16 on gen4).
MatmulLimits matmul_limits(Target t, DType dst);
// Whether matmul (not in transpose mode) may write a dst of this dtype: fp32, or bf16 on gen4.
bool matmul_dst_dtype_ok(Target t, DType dst);
inline constexpr uint64_t kPsumBankBytes = 2048;

// ---- start partitions ---------------------------------------------------------------------------
// Whether an access of part_count partitions may start at part_start under the start-partition
// rule of the compute engines (isa.h start_partition_error, which says why not).
constexpr bool start_partition_ok(uint32_t part_start, uint32_t part_count) {
  return part_count > 64   ? part_start == 0
         : part_count > 32 ? part_start == 0 || part_start == 64
                           : part_start % 32 == 0;
}

// ---- the rules ----------------------------------------------------------------------------------
// A broken rule: the operand it is about (an index in Inst::ops, or -1 for the instruction as a
// whole) and the reason, without the instruction's name (legality_text adds it).
struct Illegal {
  int operand = -1;
  std::string message;
};

// Rules of one access-pattern operand k of `in`: the memory spaces of the table, GpSimd never
// in PSUM, PSUM never a DMA operand, and the start-partition rule of the compute engines.
std::optional<std::string> ap_operand_error(const Inst& in, size_t k, const AccessPattern& ap);

// The generation rules of the table: the opcode, operands whose non-default values exist only
// on some generations, scalar operands whose immediates do.
std::optional<Illegal> gen_error(const Inst& in, Target t);

// Every static rule (generation, operand, shape and dtype) of `in` on target t. Operands whose
// bit is set in `skip` (index k -> bit k) are left out of the per-operand rules, and any skipped
// operand leaves out the opcode's own rules (the assembler's raw ap(...) operands: what a
// disassembler printed is taken as written).
std::optional<Illegal> legality_error(const Inst& in, Target t, uint64_t skip = 0);
// The shape, dtype and operator rules only (no generation rules).
std::optional<Illegal> shape_error(const Inst& in, Target t, uint64_t skip = 0);

// "pe.matmul operand `moving`: has N = 1024 columns (at most 512 on trn2)" or
// "pe.matmul: ..." for an instruction-wide rule.
std::string legality_text(const Inst& in, const Illegal& e);

} // namespace nisa
