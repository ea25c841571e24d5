// Operands: an operand's value lowered to the Operand of its kind in the instruction table
// (isa/insts.def), and the table's shape rules (isa/legality.h).
#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "asm/assembler_util.h"
#include "asm/eval.h"
#include "asm/instructions.h"
#include "asm/labels.h"
#include "asm/symbols.h"
#include "isa/encode.h"
#include "isa/legality.h"

namespace nisa::nasm {
using namespace detail;

namespace {

constexpr std::pair<std::string_view, std::string_view> kAluAliases[] = {
    {"mul", "multiply"},     {"sub", "subtract"},    {"eq", "equal"},      {"ne", "not_equal"},
    {"ge", "greater_equal"}, {"gt", "greater"},      {"le", "less_equal"}, {"lt", "less"},
    {"pow", "power"},        {"and", "bitwise_and"}, {"or", "bitwise_or"}, {"xor", "bitwise_xor"},
    {"shl", "left_shift"},   {"shr", "right_shift"}};

std::string_view alu_alias(std::string_view n) {
  for (auto [a, full] : kAluAliases)
    if (a == n) return full;
  return n;
}

// The did-you-mean of an enumerated operand value: the type's names (and AluOp's aliases).
std::string enum_value_did_you_mean(EnumType t, std::string_view w) {
  std::vector<std::string> names = enum_names(t);
  if (t == EnumType::AluOp)
    for (auto [a, full] : kAluAliases) names.emplace_back(a);
  return did_you_mean(w, names);
}

std::optional<int> prefixed_index(std::string_view s, char prefix, int limit) {
  if (s.size() < 2 || s.size() > 4 || s[0] != prefix) return std::nullopt;
  if (s.size() > 2 && s[1] == '0') return std::nullopt;
  int v = 0;
  for (size_t k = 1; k < s.size(); ++k) {
    if (s[k] < '0' || s[k] > '9') return std::nullopt;
    v = v * 10 + (s[k] - '0');
  }
  return v < limit ? std::optional<int>(v) : std::nullopt;
}

} // namespace

std::string_view Operands::plain_name(uint32_t e) const {
  const Node& n = src_.node(e);
  if (n.kind != NodeKind::Name) return {};
  const std::string_view s = src_.file().text(n);
  if (sym_.lookup_node(e, s) || is_literal_name(s)) return {};
  return s;
}

bool Operands::convert_name(const OperandDesc& od, std::string_view n, Operand& o) const {
  std::optional<int> r;
  switch (od.kind) {
  case OperandKind::Enum:
    r = enum_parse(od.enum_type, od.enum_type == EnumType::AluOp ? alu_alias(n) : n);
    break;
  case OperandKind::Queue: r = prefixed_index(n, 'q', kNumDmaQueues); break;
  case OperandKind::Reg:
  case OperandKind::RegOrImm:
    r = prefixed_index(n, 'r', kNumRegs);
    o.is_reg = r && od.kind == OperandKind::RegOrImm;
    break;
  default: break;
  }
  if (r) o.i = *r;
  return r.has_value();
}

Operand Operands::convert(const InstDesc& d, size_t k, uint32_t e, Engine eng, uint32_t inst_index,
                          bool& raw) {
  const OperandDesc& od = d.operands[k];
  Operand o;
  auto space_error = [&] {
    std::string allowed;
    for (MemSpace s : {MemSpace::hbm, MemSpace::sbuf, MemSpace::psum})
      if (od.spaces & space_bit(s))
        allowed += (allowed.empty() ? "" : " or ") + std::string(name_of(s));
    src_.fail_at(e, fmt::format("operand '{}' of {}.{} cannot be in {} (allowed: {})", od.name,
                                name_of(eng), d.mnemonic, name_of(o.ap.space), allowed));
  };
  auto check_space = [&] { // inline: only the error is a call
    if (!(od.spaces & space_bit(o.ap.space))) space_error();
  };
  const bool mem = od.kind == OperandKind::Dst || od.kind == OperandKind::Src;
  if (mem && src_.node(e).kind == NodeKind::Index) {
    // A slice: what eval() and Slices::to_ap give, without a Value (the usual case lowered in
    // place).
    if (!sl_.planned_index(e, o.ap)) o.ap = sl_.lower_index(e, nullptr);
    raw = false;
    check_space();
    return o;
  }
  if (mem && src_.node(e).kind == NodeKind::Call && src_.file().text(src_.node(e)) == "ap") {
    // ap(...): what eval() (a call of ap is never an integer: no try_int) and to_ap give,
    // without a Value.
    o.ap = sl_.raw_pattern(e);
    raw = true;
    check_space();
    return o;
  }
  if (od.kind == OperandKind::Enum || od.kind == OperandKind::Queue ||
      od.kind == OperandKind::Reg || od.kind == OperandKind::RegOrImm)
    if (const std::string_view n = plain_name(e); !n.empty())
      if (convert_name(od, n, o)) return o;
  Value v = ev_.eval(e);
  auto as_int = [&](int64_t lo, int64_t hi) {
    if (v.kind == Value::Float && v.f == std::floor(v.f) && std::abs(v.f) < 9e18)
      v = Value::of_int(static_cast<int64_t>(v.f));
    if (v.kind != Value::Int) {
      ev_.need_num(v, e);
      src_.fail_at(e, fmt::format("operand '{}' must be an integer, not {}", od.name, v.str()));
    }
    if (v.i < lo || v.i > hi)
      src_.fail_at(e, fmt::format("operand '{}' = {} is outside [{}, {}]", od.name, v.i, lo, hi));
    return v.i;
  };
  auto name_of_value = [&](const char* what) {
    if (v.kind != Value::Name)
      src_.fail_at(e, fmt::format("operand '{}' must be {}, not {}", od.name, what, v.str()));
    return v.s;
  };
  switch (od.kind) {
  case OperandKind::Dst:
  case OperandKind::Src: {
    o.ap = sl_.to_ap(v, e, raw);
    check_space();
    return o;
  }
  case OperandKind::Scalar:
    if (v.is_num()) {
      o.f = static_cast<float>(v.num());
      return o;
    }
    o.is_ap = true;
    o.ap = sl_.to_ap(v, e, raw);
    if (!(od.spaces & space_bit(o.ap.space)))
      src_.fail_at(e, fmt::format("operand '{}' cannot be in {}", od.name, name_of(o.ap.space)));
    return o;
  case OperandKind::ImmF:
    ev_.need_num(v, e);
    o.f = static_cast<float>(v.num());
    return o;
  case OperandKind::ImmI: o.i = as_int(INT32_MIN, INT32_MAX); return o;
  case OperandKind::Bool: o.i = as_int(0, 1); return o;
  case OperandKind::Enum: {
    std::string n = name_of_value("a name");
    if (od.enum_type == EnumType::AluOp) n = std::string(alu_alias(n));
    auto ev = enum_parse(od.enum_type, n);
    if (!ev)
      src_.fail_at(e,
                   fmt::format("unknown {} '{}' for operand '{}'{}", enum_type_name(od.enum_type),
                               v.s, od.name, enum_value_did_you_mean(od.enum_type, v.s)));
    o.i = *ev;
    return o;
  }
  case OperandKind::Reg:
  case OperandKind::RegOrImm: {
    if (v.kind == Value::Name) {
      auto r = prefixed_index(v.s, 'r', kNumRegs);
      if (!r) src_.fail_at(e, fmt::format("'{}' is not a register (r0..r{})", v.s, kNumRegs - 1));
      o.is_reg = od.kind == OperandKind::RegOrImm;
      o.i = *r;
      return o;
    }
    if (od.kind == OperandKind::Reg)
      src_.fail_at(e,
                   fmt::format("operand '{}' must be a register r0..r{}", od.name, kNumRegs - 1));
    o.i = as_int(INT32_MIN, INT32_MAX);
    return o;
  }
  case OperandKind::Queue: {
    auto q = v.kind == Value::Name ? prefixed_index(v.s, 'q', kNumDmaQueues) : std::nullopt;
    if (!q)
      src_.fail_at(e, fmt::format("operand '{}' must be a DMA queue q0..q{}, not {}", od.name,
                                  kNumDmaQueues - 1, v.str()));
    o.i = *q;
    return o;
  }
  case OperandKind::Sem: o.i = sym_.sem_index(name_of_value("a semaphore"), e); return o;
  case OperandKind::Group: {
    o.i = sym_.group_index(name_of_value("a replica group"), e);
    return o;
  }
  case OperandKind::Label:
    if (v.kind == Value::Int) {
      o.i = as_int(0, UINT32_MAX);
      return o;
    }
    labels_.add_fixup(
        {eng, inst_index, static_cast<uint32_t>(k), name_of_value("a label"), src_.loc_of(e)});
    return o;
  case OperandKind::Pattern: {
    const char* msg = "a pattern is a list of 1 to 4 [step, num] pairs";
    if (v.kind != Value::List || v.list.size() > 4) src_.fail_at(e, msg);
    o.set_pat().n = static_cast<uint8_t>(v.list.size());
    for (size_t j = 0; j < v.list.size(); ++j) {
      const Value& p = v.list[j];
      if (p.kind != Value::List || p.list.size() != 2 || p.list[0].kind != Value::Int ||
          p.list[1].kind != Value::Int || p.list[0].i < INT32_MIN || p.list[0].i > INT32_MAX ||
          p.list[1].i < INT32_MIN || p.list[1].i > INT32_MAX)
        src_.fail_at(e, msg);
      o.pat.d[j] = {static_cast<int32_t>(p.list[0].i), static_cast<int32_t>(p.list[1].i)};
    }
    return o;
  }
  case OperandKind::Mask: {
    if (v.kind != Value::List || v.list.size() != 32)
      src_.fail_at(e, "a mask is a list of 32 partition indices (255 = keep)");
    o.set_mask();
    for (size_t j = 0; j < 32; ++j) {
      if (v.list[j].kind != Value::Int || v.list[j].i < 0 || v.list[j].i > 255)
        src_.fail_at(e, "mask entries are integers in [0, 255]");
      o.mask.v[j] = static_cast<uint8_t>(v.list[j].i);
    }
    return o;
  }
  }
  src_.fail_at(e, "unsupported operand kind");
}

// The static rules of isa/legality.h (the generation rules were checked as the operands were
// converted, with messages that say where each operand exists). Operands written as raw
// ap(...) are exempt: they are exactly what the disassembler printed.
void Operands::check_shapes(const Inst& in, uint64_t raw, const uint32_t* where,
                            Loc inst_loc) const {
  const auto e = shape_error(in, mod_.target, raw);
  if (!e) return;
  const bool at_operand = e->operand >= 0 && where[e->operand] != kNone;
  fail(at_operand ? src_.loc_of(where[e->operand]) : inst_loc, legality_text(in, *e));
}

} // namespace nisa::nasm
