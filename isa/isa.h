// The ISA as data: opcodes, operand kinds, instruction descriptors (from isa/insts.def),
// and the decoded-instruction record that every part of nisa exchanges.
#pragma once
#include <array>
#include <boost/container/small_vector.hpp>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "isa/dtype.h"
#include "isa/enums.h"

namespace nisa {

// ---- opcodes --------------------------------------------------------------------------------
enum class Opcode : uint16_t {
#define INST(id, mn, code, eng, gens, cost, doc, ...) id,
#include "isa/insts.def"
#undef INST
};
inline constexpr int kNumOpcodes = 0
#define INST(id, mn, code, eng, gens, cost, doc, ...) +1
#include "isa/insts.def"
#undef INST
    ;

// ---- operand kinds ---------------------------------------------------------------------------
enum class OperandKind : uint8_t {
  Dst,      // access pattern written
  Src,      // access pattern read
  Scalar,   // fp32 immediate or per-partition [P,1] access pattern (read)
  ImmF,     // fp32 immediate
  ImmI,     // int32 immediate
  Bool,     // 0 / 1
  Enum,     // enumerator of OperandDesc::enum_type
  Reg,      // r0..r63
  RegOrImm, // register or int32 immediate
  Queue,    // DMA queue 0..15
  Sem,      // semaphore index
  Label,    // branch target: index in the engine's stream
  Pattern,  // up to 4 [step, num] pairs
  Mask,     // 32 partition indices (255 = keep)
  Group,    // replica group index
};
std::string_view operand_kind_name(OperandKind k);

// Memory-space masks for access-pattern operands.
enum SpaceMask : uint8_t { kSpaceH = 1 << 0, kSpaceS = 1 << 1, kSpaceP = 1 << 2 };
constexpr uint8_t space_bit(MemSpace s) {
  return s == MemSpace::hbm    ? kSpaceH
         : s == MemSpace::sbuf ? kSpaceS
         : s == MemSpace::psum ? kSpaceP
                               : 0;
}

// Generation masks (bit g-2 for gen g).
enum GenMask : uint8_t { kGen2 = 1, kGen3 = 2, kGen4 = 4, kGenAll = 7 };
constexpr uint8_t gen_bit(Target t) {
  return static_cast<uint8_t>(1u << (static_cast<int>(t) - 2));
}
// Engine masks (bit = Engine value).
constexpr uint8_t engine_bit(Engine e) { return static_cast<uint8_t>(1u << static_cast<int>(e)); }

// Cost classes: the interpreter's cost table (interp/core/cost.*) gives each a latency formula.
#define NISA_COST_CLASSES(X)                                                                       \
  X(ctrl)         /* sequencer-only: sync, registers, branches */                                  \
  X(pe_matmul)    /* LoadStationary + MultiplyMoving */                                            \
  X(pe_transpose) /* identity matmul */                                                            \
  X(act_func)     /* ScalarE activation */                                                         \
  X(elem0)        /* no tensor input (memset, iota) */                                             \
  X(elem1)        /* one tensor input */                                                           \
  X(elem2)        /* two tensor inputs */                                                          \
  X(dve_scan)     /* tensor_tensor_scan */                                                         \
  X(dve_search)   /* max8 / find_index8 / match_replace8: F + 144 cycles */                        \
  X(pool_gather)  /* n_gather */                                                                   \
  X(dma_xfer)     /* DMA transfer on a queue (trigger cost on the issuing engine) */               \
  X(cc)           /* collective */
enum class CostClass : uint8_t {
#define X(c) c,
  NISA_COST_CLASSES(X)
#undef X
};
std::string_view cost_class_name(CostClass c);

struct OperandDesc {
  std::string_view name;
  OperandKind kind;
  EnumType enum_type = EnumType::Engine; // meaningful for Enum only
  uint8_t spaces = 0;                    // AP kinds: allowed memory spaces
  bool optional = false;                 // has a default (absent AP for DO/SO)
  std::string_view default_text;         // as written in assembly ("" for absent AP)
  uint8_t gens = kGenAll;                // generations where a non-default value is allowed
  // Scalar operands: generations where a non-default *immediate* is allowed (a [P, 1] tile is
  // allowed on every generation of `gens`), e.g. activation's bias on trn2+ only.
  uint8_t imm_gens = kGenAll;
};

struct InstDesc {
  Opcode op;
  std::string_view ident;    // C++ identifier (unique)
  std::string_view mnemonic; // assembly mnemonic (unique per engine)
  uint16_t opcode;           // encoded value
  uint8_t engines;           // engine mask
  uint8_t gens;              // generation mask
  CostClass cost;
  std::string_view summary;
  std::span<const OperandDesc> operands;
};

std::span<const InstDesc> inst_table();
const InstDesc& desc(Opcode op);
// Lookup by encoded opcode (nullptr if unknown) and by (mnemonic, engine).
const InstDesc* find_by_opcode(uint16_t code);
const InstDesc* find_by_mnemonic(std::string_view mnemonic, Engine engine);
// All rows with this mnemonic (any engine), e.g. for "instruction not on engine X" errors.
std::vector<const InstDesc*> find_all_by_mnemonic(std::string_view mnemonic);

// ---- access patterns --------------------------------------------------------------------------
struct FreeDim {
  int32_t stride = 0; // elements (may be 0 = broadcast, or negative)
  uint32_t count = 1;
  bool operator==(const FreeDim&) const = default;
};

enum class DynKind : uint8_t { none = 0, reg = 1, vec = 2 };

// SBUF tile holding one integer index per partition (vector-offset DMA).
struct VecIndex {
  uint16_t part_start = 0;
  uint16_t part_count = 0;
  uint32_t offset = 0; // bytes within each partition
  DType dtype = DType::int32;
  bool operator==(const VecIndex&) const = default;
};

// The canonical operand: a partition range (SBUF/PSUM) or a strided row dimension (HBM),
// a byte offset, and up to 4 free dims of [stride, count] in elements, outer -> inner.
// Element (p, i0..i3) lives at byte
//   on chip: partition part_start + p, offset + sum(i_k * stride_k) * dtype_bytes
//   hbm:     offset + (p * part_stride + sum(i_k * stride_k)) * dtype_bytes
// plus a dynamic offset of value * dyn_mult elements (value from a register, or per row
// from the vector index tile), value checked against [0, dyn_limit).
struct AccessPattern {
  MemSpace space = MemSpace::none;
  DType dtype = DType::fp32;
  uint8_t ndims = 1;
  uint16_t part_start = 0;
  uint16_t part_count = 1;
  int64_t part_stride = 0; // hbm only
  uint64_t offset = 0;
  std::array<FreeDim, kMaxFreeDims> dims{};
  DynKind dyn = DynKind::none;
  uint8_t dyn_reg = 0;
  int64_t dyn_mult = 0;
  uint32_t dyn_limit = 0;
  VecIndex vidx{};

  // Saturating at UINT64_MAX: a hand-written pattern of 4 dims of 2^32 - 1 must not wrap to
  // a small count that matches another operand (the interpreter caps real accesses far lower).
  uint64_t free_elems() const {
    uint64_t n = 1;
    for (int k = 0; k < ndims && k < kMaxFreeDims; ++k)
      if (__builtin_mul_overflow(n, dims[k].count, &n)) return UINT64_MAX;
    return n;
  }
  uint64_t elems() const {
    uint64_t n;
    return __builtin_mul_overflow(free_elems(), part_count, &n) ? UINT64_MAX : n;
  }
  bool operator==(const AccessPattern&) const = default;
};

struct AffinePattern {
  uint8_t n = 0;
  std::array<std::array<int32_t, 2>, 4> d{}; // [step, num]
  bool operator==(const AffinePattern&) const = default;
};

struct ShuffleMask {
  std::array<uint8_t, 32> v{};
  bool operator==(const ShuffleMask&) const = default;
};

// Which of an Operand's overlapping payloads is live: ap (every kind but Pattern and Mask,
// at its default where unused), pat (Pattern) or mask (Mask).
enum class Payload : uint8_t { ap = 0, pat = 1, mask = 2 };

// One operand of a decoded instruction. Which fields matter follows the descriptor kind:
//   Dst/Src: ap (present=false for an absent optional AP)
//   Scalar: is_ap ? ap : f          RegOrImm: is_reg ? i (register) : i (immediate)
//   ImmF: f    ImmI/Bool/Enum/Reg/Queue/Sem/Label/Group: i    Pattern: pat    Mask: mask
// ap, pat and mask share storage (an operand is 104 bytes, not 184: a module holds 10^4..10^5
// of them); `payload` says which is live. A Pattern or Mask operand starts with set_pat() or
// set_mask() (default_operand and the decoder do), then its pat or mask is written as usual.
struct Operand {
  bool present = true;
  bool is_ap = false;
  bool is_reg = false;
  Payload payload = Payload::ap;
  float f = 0.0f;
  int64_t i = 0;
  union {
    AccessPattern ap;
    AffinePattern pat;
    ShuffleMask mask;
  };
  Operand() : ap() {}
  // Makes pat (mask) the live payload, all zero.
  AffinePattern& set_pat() {
    pat = AffinePattern{};
    payload = Payload::pat;
    return pat;
  }
  ShuffleMask& set_mask() {
    mask = ShuffleMask{};
    payload = Payload::mask;
    return mask;
  }
  bool operator==(const Operand& o) const; // compares only the fields the flags make live
};
static_assert(sizeof(Operand) == 104 && std::is_trivially_copyable_v<Operand>);

struct Wait {
  uint16_t sem = 0;
  WaitCmp cmp = WaitCmp::ge;
  uint32_t value = 0;
  bool operator==(const Wait&) const = default;
};
struct Signal {
  uint16_t sem = 0;
  uint32_t delta = 1; // sem += delta when the instruction (or its DMA) completes
  bool operator==(const Signal&) const = default;
};
inline constexpr int kMaxWaits = 8;
inline constexpr int kMaxSignals = 8;

struct Inst {
  Opcode op = Opcode::nop;
  Engine engine = Engine::sp;
  // Inline up to the usual counts (compiled kernels wait on at most 4 semaphores per
  // instruction and signal one): no allocation of their own for most instructions.
  boost::container::small_vector<Wait, 4> waits;
  boost::container::small_vector<Signal, 1> signals;
  std::vector<Operand> ops; // exactly desc(op).operands.size(), table order
  Inst() = default;
  Inst(const Inst&) = default;
  Inst& operator=(const Inst&) = default;
  // noexcept, which Boost does not infer for these elements: a module's streams grow by moving
  // instructions, and a vector copies on growth what it cannot move without throwing. Moving a
  // small vector of trivially copyable elements cannot throw.
  Inst(Inst&&) noexcept = default;
  Inst& operator=(Inst&&) noexcept = default;
  bool operator==(const Inst&) const = default;
};
static_assert(std::is_nothrow_move_constructible_v<Inst>);

// The start-partition rule of the compute engines' SBUF/PSUM accesses (docs/machine.md "Start
// partitions"): an access of more than 64 partitions starts at 0, of 33..64 at 0 or 64, of at most
// 32 at a multiple of 32. It applies to every access-pattern operand of an instruction of a compute
// cost class (not DMA, collectives or the sequencer's ld/st). Returns why an access breaks it.
bool start_partition_rule_applies(const InstDesc& d);
std::optional<std::string> start_partition_error(uint32_t part_start, uint32_t part_count);

// An instruction with every operand at its default (required ones zero/empty).
Inst make_inst(Opcode op, Engine engine);
// Default value of an optional operand (parsed from default_text).
Operand default_operand(const OperandDesc& d);
bool is_default(const OperandDesc& d, const Operand& o);

} // namespace nisa
