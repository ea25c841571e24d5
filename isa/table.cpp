// Builds the descriptor table from isa/insts.def, and the lookups over it.
#include <array>
#include <bit>
#include <string>
#include <unordered_map>

#include "isa/isa.h"
#include "isa/legality.h"

namespace nisa {
namespace {

template <class... T> constexpr std::array<OperandDesc, sizeof...(T)> make_ops(T... t) {
  return {t...};
}

// Names used by the table columns (see the legend at the top of insts.def).
constexpr uint8_t H = kSpaceH, S = kSpaceS, P = kSpaceP, HS = H | S, SP = S | P;
[[maybe_unused]] constexpr uint8_t G2 = kGen2, G3 = kGen3, G4 = kGen4, GALL = kGenAll;
constexpr uint8_t PE = 1 << 0, ACT = 1 << 1, DVE = 1 << 2, POOL = 1 << 3, CC = 1 << 5, ANY = 0x3f;
using K = OperandKind;
constexpr bool required(std::string_view d) { return d.empty(); }

#define D(n, sp)                                                                                   \
  OperandDesc { #n, K::Dst, EnumType::Engine, sp, false, "", GALL }
#define S(n, sp)                                                                                   \
  OperandDesc { #n, K::Src, EnumType::Engine, sp, false, "", GALL }
#define DO(n, sp, g)                                                                               \
  OperandDesc { #n, K::Dst, EnumType::Engine, sp, true, "", g }
#define SO(n, sp)                                                                                  \
  OperandDesc { #n, K::Src, EnumType::Engine, sp, true, "", GALL }
#define SC(n, sp, d)                                                                               \
  OperandDesc { #n, K::Scalar, EnumType::Engine, sp, true, d, GALL }
#define SCI(n, sp, d, g)                                                                           \
  OperandDesc { #n, K::Scalar, EnumType::Engine, sp, true, d, GALL, g }
#define F(n, d)                                                                                    \
  OperandDesc { #n, K::ImmF, EnumType::Engine, 0, !required(d), d, GALL }
#define I(n, d)                                                                                    \
  OperandDesc { #n, K::ImmI, EnumType::Engine, 0, !required(d), d, GALL }
#define B(n, d)                                                                                    \
  OperandDesc { #n, K::Bool, EnumType::Engine, 0, true, d, GALL }
#define E(n, T, d)                                                                                 \
  OperandDesc { #n, K::Enum, EnumType::T, 0, !required(d), d, GALL }
#define R(n)                                                                                       \
  OperandDesc { #n, K::Reg, EnumType::Engine, 0, false, "", GALL }
#define RI(n)                                                                                      \
  OperandDesc { #n, K::RegOrImm, EnumType::Engine, 0, false, "", GALL }
#define Q(n)                                                                                       \
  OperandDesc { #n, K::Queue, EnumType::Engine, 0, false, "", GALL }
#define SEM(n)                                                                                     \
  OperandDesc { #n, K::Sem, EnumType::Engine, 0, false, "", GALL }
#define L(n)                                                                                       \
  OperandDesc { #n, K::Label, EnumType::Engine, 0, false, "", GALL }
#define PAT(n)                                                                                     \
  OperandDesc { #n, K::Pattern, EnumType::Engine, 0, false, "", GALL }
#define MASK(n)                                                                                    \
  OperandDesc { #n, K::Mask, EnumType::Engine, 0, false, "", GALL }
#define GRP(n)                                                                                     \
  OperandDesc { #n, K::Group, EnumType::Engine, 0, false, "", GALL }

#define INST(id, mn, code, eng, gens, cost, doc, ...)                                              \
  constexpr auto ops_##id = make_ops(__VA_ARGS__);
#include "isa/insts.def"
#undef INST

constexpr InstDesc kTable[] = {
#define INST(id, mn, code, eng, gens, cost, doc, ...)                                              \
  InstDesc{Opcode::id, #id, mn, code, eng, gens, CostClass::cost, doc, ops_##id},
#include "isa/insts.def"
#undef INST
};
static_assert(std::size(kTable) == kNumOpcodes);

#include "isa/insts_operands_undef.inc"

struct Index {
  std::unordered_map<uint16_t, const InstDesc*> by_code;
  std::unordered_multimap<std::string_view, const InstDesc*> by_mnemonic;
  Index() {
    for (const auto& d : kTable) {
      by_code.emplace(d.opcode, &d);
      by_mnemonic.emplace(d.mnemonic, &d);
    }
  }
};
const Index& index() {
  static const Index idx;
  return idx;
}

} // namespace

std::span<const InstDesc> inst_table() { return kTable; }
const InstDesc& desc(Opcode op) { return kTable[static_cast<int>(op)]; }

const InstDesc* find_by_opcode(uint16_t code) {
  auto it = index().by_code.find(code);
  return it == index().by_code.end() ? nullptr : it->second;
}

const InstDesc* find_by_mnemonic(std::string_view mnemonic, Engine engine) {
  auto [b, e] = index().by_mnemonic.equal_range(mnemonic);
  for (auto it = b; it != e; ++it)
    if (it->second->engines & engine_bit(engine)) return it->second;
  return nullptr;
}

std::vector<const InstDesc*> find_all_by_mnemonic(std::string_view mnemonic) {
  std::vector<const InstDesc*> out;
  auto [b, e] = index().by_mnemonic.equal_range(mnemonic);
  for (auto it = b; it != e; ++it) out.push_back(it->second);
  return out;
}

std::string_view operand_kind_name(OperandKind k) {
  switch (k) {
  case K::Dst: return "dst-ap";
  case K::Src: return "src-ap";
  case K::Scalar: return "scalar";
  case K::ImmF: return "float";
  case K::ImmI: return "int";
  case K::Bool: return "bool";
  case K::Enum: return "enum";
  case K::Reg: return "reg";
  case K::RegOrImm: return "reg-or-int";
  case K::Queue: return "queue";
  case K::Sem: return "sem";
  case K::Label: return "label";
  case K::Pattern: return "pattern";
  case K::Mask: return "mask";
  case K::Group: return "group";
  }
  return "?";
}

std::string_view cost_class_name(CostClass c) {
  switch (c) {
#define X(n)                                                                                       \
  case CostClass::n: return #n;
    NISA_COST_CLASSES(X)
#undef X
  }
  return "?";
}

Operand default_operand(const OperandDesc& d) {
  Operand o;
  switch (d.kind) {
  case K::Dst:
  case K::Src: o.present = !d.optional; break;
  case K::Scalar:
  case K::ImmF: o.f = d.default_text.empty() ? 0.0f : std::stof(std::string(d.default_text)); break;
  case K::ImmI:
  case K::Bool: o.i = d.default_text.empty() ? 0 : std::stoll(std::string(d.default_text)); break;
  case K::Enum:
    if (!d.default_text.empty()) o.i = *enum_parse(d.enum_type, d.default_text);
    break;
  case K::Pattern: o.set_pat(); break;
  case K::Mask: o.set_mask(); break;
  default: break;
  }
  return o;
}

bool start_partition_rule_applies(const InstDesc& d) {
  switch (d.cost) {
  case CostClass::ctrl:
  case CostClass::dma_xfer:
  case CostClass::cc: return false;
  default: return true;
  }
}

std::optional<std::string> start_partition_error(uint32_t s, uint32_t n) {
  if (start_partition_ok(s, n)) return std::nullopt;
  const char* allowed = n > 64 ? "0" : n > 32 ? "0 or 64" : "0, 32, 64 or 96";
  return "starts at partition " + std::to_string(s) + ", but an access of " + std::to_string(n) +
         " partitions must start at partition " + allowed;
}

bool is_default(const OperandDesc& d, const Operand& o) {
  if (!d.optional) return false;
  return o == default_operand(d);
}

Inst make_inst(Opcode op, Engine engine) {
  Inst in;
  in.op = op;
  in.engine = engine;
  for (const auto& d : desc(op).operands) in.ops.push_back(default_operand(d));
  return in;
}

bool Operand::operator==(const Operand& o) const {
  if (present != o.present || is_ap != o.is_ap || is_reg != o.is_reg) return false;
  if (!present) return true;
  if (payload != o.payload) return false;
  // Compare i, f and the live payload: unused ones stay at their defaults in well-formed
  // records. Floats by bit pattern: a NaN immediate equals itself (round trips compare records).
  if (i != o.i || std::bit_cast<uint32_t>(f) != std::bit_cast<uint32_t>(o.f)) return false;
  switch (payload) {
  case Payload::pat: return pat == o.pat;
  case Payload::mask: return mask == o.mask;
  default: return ap == o.ap;
  }
}

} // namespace nisa
