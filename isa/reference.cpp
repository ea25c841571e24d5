// Renders the instruction table and the enumerations as a reference document.
#include "isa/reference.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "isa/formulas.h"
#include "isa/isa.h"

namespace nisa {
namespace {

std::string engines_text(uint8_t mask) {
  std::string s;
  for (int e = 0; e < kNumEngines; ++e)
    if (mask & (1u << e)) s += (s.empty() ? "" : ", ") + std::string(name_of(Engine(e)));
  return s;
}

std::string gens_text(uint8_t mask) {
  std::string s;
  for (const auto& m : enum_members(EnumType::Target))
    if (mask & gen_bit(static_cast<Target>(m.value)))
      s += fmt::format("{}{} (gen{})", s.empty() ? "" : ", ", m.name, m.value);
  return s;
}

std::string spaces_text(uint8_t mask) {
  std::string s;
  for (MemSpace sp : {MemSpace::hbm, MemSpace::sbuf, MemSpace::psum})
    if (mask & space_bit(sp)) s += (s.empty() ? "" : ", ") + std::string(name_of(sp));
  return s;
}

// What values the operand takes: memory spaces, enum type or range.
std::string operand_domain(const OperandDesc& d) {
  switch (d.kind) {
  case OperandKind::Dst:
  case OperandKind::Src: return spaces_text(d.spaces);
  case OperandKind::Scalar: return "fp32 or [P,1] in " + spaces_text(d.spaces);
  case OperandKind::Enum: return std::string(enum_type_name(d.enum_type));
  case OperandKind::Reg: return "r0..r63";
  case OperandKind::RegOrImm: return "r0..r63 or int32";
  case OperandKind::Queue: return "q0..q15";
  case OperandKind::Bool: return "0, 1";
  case OperandKind::ImmI: return "int32";
  case OperandKind::ImmF: return "fp32";
  case OperandKind::Sem: return ".sem name";
  case OperandKind::Group: return ".group name";
  case OperandKind::Label: return "label";
  case OperandKind::Pattern: return "[[step, num], ...] (1..4 pairs)";
  case OperandKind::Mask: return "32 x (0..31 or 255)";
  }
  return "";
}

std::string operand_default(const OperandDesc& d) {
  if (!d.optional) return "required";
  if (d.kind == OperandKind::Dst || d.kind == OperandKind::Src) return "absent";
  return std::string(d.default_text);
}

// Markdown table cells must not contain a bare '|'.
std::string cell(std::string s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

// The operators of tensor_reduce (isa/formulas.def), as a table and as text.
void reduce_rules_md(std::string& out) {
  out += fmt::format("{}\n\n| op | dst (the fold of x[0..n)) |\n|---|---|\n", kReduceCommon);
  for (const auto& m : enum_members(EnumType::AluOp))
    if (auto r = reduce_rule(static_cast<AluOp>(m.value)); !r.empty())
      out += fmt::format("| `{}` | {} |\n", m.name, cell(std::string(r)));
  out += fmt::format("\n{}\n\n", kReduceNegate);
}

void reduce_rules_text(std::string& out) {
  out += fmt::format("  {}\n", kReduceCommon);
  for (const auto& m : enum_members(EnumType::AluOp))
    if (auto r = reduce_rule(static_cast<AluOp>(m.value)); !r.empty())
      out += fmt::format("    op={:<12} {}\n", m.name, r);
  out += fmt::format("  {}\n", kReduceNegate);
}

void instruction_md(std::string& out, const InstDesc& d) {
  out += fmt::format("### `{}` ({})\n\n{}\n\n", d.mnemonic, d.ident, d.summary);
  out += fmt::format("- opcode: `0x{:04x}`\n- engines: {}\n- generations: {}\n- cost class: "
                     "`{}`\n\n",
                     d.opcode, engines_text(d.engines), gens_text(d.gens), cost_class_name(d.cost));
  if (d.operands.empty()) {
    out += "No operands.\n\n";
    return;
  }
  out += "| # | operand | kind | values | default | generations |\n";
  out += "|---|---|---|---|---|---|\n";
  for (size_t k = 0; k < d.operands.size(); ++k) {
    const auto& o = d.operands[k];
    out += fmt::format("| {} | `{}` | {} | {} | {} | {} |\n", k, o.name, operand_kind_name(o.kind),
                       cell(operand_domain(o)), cell(operand_default(o)),
                       (o.gens == kGenAll ? std::string("all") : gens_text(o.gens)) +
                           (o.imm_gens == kGenAll ? std::string()
                                                  : "; an immediate other than the default: " +
                                                        gens_text(o.imm_gens)));
  }
  out += "\n";
  if (d.op == Opcode::tensor_reduce) reduce_rules_md(out);
  if (d.op == Opcode::activation)
    out += "func: the functions and their formulas are in \"ActFunc\" under Enumerations.\n\n";
}

void instruction_text(std::string& out, const InstDesc& d) {
  out += fmt::format("{} ({})  opcode 0x{:04x}\n  {}\n", d.mnemonic, d.ident, d.opcode, d.summary);
  out += fmt::format("  engines: {}\n  generations: {}\n  cost class: {}\n",
                     engines_text(d.engines), gens_text(d.gens), cost_class_name(d.cost));
  for (size_t k = 0; k < d.operands.size(); ++k) {
    const auto& o = d.operands[k];
    out += fmt::format("  {:2} {:<12} {:<10} {:<34} {}{}{}\n", k, o.name, operand_kind_name(o.kind),
                       operand_domain(o), operand_default(o),
                       o.gens == kGenAll ? "" : " (non-default only on " + gens_text(o.gens) + ")",
                       o.imm_gens == kGenAll
                           ? ""
                           : " (a non-default immediate only on " + gens_text(o.imm_gens) + ")");
  }
  if (d.op == Opcode::tensor_reduce) reduce_rules_text(out);
  if (d.op == Opcode::activation) out += "  func: the formulas are under ActFunc (ENUMERATIONS)\n";
  out += "\n";
}

// The enumerations a reference shows: every one (a full reference), or those the shown
// instructions' operands take.
struct EnumSet {
  bool all = true;
  std::vector<EnumType> types;
  bool has(EnumType t) const {
    return all || std::find(types.begin(), types.end(), t) != types.end();
  }
};

EnumSet enums_of(std::span<const InstDesc* const> shown) {
  EnumSet s{false, {}};
  for (const InstDesc* d : shown)
    for (const auto& o : d->operands)
      if (o.kind == OperandKind::Enum && !s.has(o.enum_type)) s.types.push_back(o.enum_type);
  return s;
}

// The activation functions with their formulas (isa/formulas.def).
void act_funcs_md(std::string& out) {
  out += fmt::format("### ActFunc\n\n{}\n\n| name | value | f(x) | notes |\n|---|---|---|---|\n",
                     kActApply);
  for (const auto& m : enum_members(EnumType::ActFunc)) {
    const ActFormula f = act_formula(static_cast<ActFunc>(m.value));
    out += fmt::format("| `{}` | {} | `{}` | {} |\n", m.name, m.value, cell(std::string(f.formula)),
                       cell(std::string(f.note)));
  }
  out += "\n";
}

void act_funcs_text(std::string& out) {
  out += fmt::format("  {}\n", kActApply);
  for (const auto& m : enum_members(EnumType::ActFunc)) {
    const ActFormula f = act_formula(static_cast<ActFunc>(m.value));
    out += fmt::format("    {:<22} = {}{}\n", m.name, f.formula,
                       f.note.empty() ? "" : fmt::format("  ({})", f.note));
  }
}

void enums_md(std::string& out, const EnumSet& shown) {
  out += "## Enumerations\n\nEncoded as one byte holding the value.\n\n";
#define NISA_ENUM_SECTION(T)                                                                       \
  if (EnumType::T == EnumType::ActFunc && shown.has(EnumType::T)) {                                \
    act_funcs_md(out);                                                                             \
  } else if (shown.has(EnumType::T)) {                                                             \
    out += "### " #T "\n\n| name | value |\n|---|---|\n";                                          \
    for (const auto& m : enum_members(EnumType::T))                                                \
      out += fmt::format("| `{}` | {} |\n", cell(std::string(m.name)), m.value);                   \
    out += "\n";                                                                                   \
  }
  NISA_ENUM_TYPES(NISA_ENUM_SECTION)
#undef NISA_ENUM_SECTION
  if (!shown.all) return;
  out += "### DType\n\n| name | value | bytes | float | signed |\n|---|---|---|---|---|\n";
  for (int k = 0; k < kNumDTypes; ++k) {
    const auto& i = kDTypeInfo[k];
    out += fmt::format("| `{}` | {} | {} | {} | {} |\n", i.name, k, i.bytes,
                       i.is_float ? "yes" : "no", i.is_signed ? "yes" : "no");
  }
  out += "\n";
}

void enums_text(std::string& out, const EnumSet& shown) {
  out += "ENUMERATIONS (one byte each)\n\n";
#define NISA_ENUM_SECTION(T)                                                                       \
  if (shown.has(EnumType::T)) {                                                                    \
    out += #T ":";                                                                                 \
    for (const auto& m : enum_members(EnumType::T)) out += fmt::format(" {}={}", m.name, m.value); \
    out += "\n";                                                                                   \
    if (EnumType::T == EnumType::ActFunc) act_funcs_text(out);                                     \
  }
  NISA_ENUM_TYPES(NISA_ENUM_SECTION)
#undef NISA_ENUM_SECTION
  if (!shown.all) return;
  out += "DType:";
  for (int k = 0; k < kNumDTypes; ++k)
    out += fmt::format(" {}={}({}B)", kDTypeInfo[k].name, k, kDTypeInfo[k].bytes);
  out += "\n";
}

std::string reference_md() {
  std::string out = "# nisa instruction reference\n\n"
                    "<!-- Generated by `nisa isa --format md` from isa/insts.def and "
                    "isa/formulas.def. Do not edit: "
                    "regenerate with `nisa isa --format md > docs/isa.md`. -->\n\n"
                    "Instructions are written `engine.mnemonic operands... [@wait(...)] "
                    "[@signal(...)]`; operands are positional in the order below or named "
                    "(`name=value`). Optional operands may be left out. The binary encoding is "
                    "described in [encoding.md](encoding.md).\n\n";
  out += "## Summary\n\n| mnemonic | engines | opcode | cost class | generations |\n"
         "|---|---|---|---|---|\n";
  for (const auto& d : inst_table())
    out +=
        fmt::format("| `{}` | {} | `0x{:04x}` | `{}` | {} |\n", d.mnemonic, engines_text(d.engines),
                    d.opcode, cost_class_name(d.cost), gens_text(d.gens));
  out += "\n## Instructions\n\n";
  for (const auto& d : inst_table()) instruction_md(out, d);
  out += "## Operand kinds\n\n| kind | meaning |\n|---|---|\n"
         "| dst-ap / src-ap | access pattern written / read |\n"
         "| scalar | fp32 immediate or a per-partition [P,1] access pattern |\n"
         "| float / int | fp32 / int32 immediate |\n"
         "| bool | 0 or 1 |\n"
         "| enum | a name from the enumeration shown |\n"
         "| reg / reg-or-int | register r0..r63 / register or int32 immediate |\n"
         "| queue | DMA queue q0..q15 |\n"
         "| sem / group | a declared semaphore / replica group |\n"
         "| label | branch target in the same engine's stream |\n"
         "| pattern | affine pattern, 1..4 [step, num] pairs, outer to inner |\n"
         "| mask | 32 partition indices within a quadrant, 255 = keep |\n\n";
  enums_md(out, EnumSet{});
  return out;
}

std::string reference_text() {
  std::string out = "NISA INSTRUCTION REFERENCE (from isa/insts.def)\n\n";
  for (const auto& d : inst_table()) instruction_text(out, d);
  enums_text(out, EnumSet{});
  return out;
}

// The reference of some instructions: their sections, then the enumerations they take (md or
// text).
std::string selected(std::span<const InstDesc* const> shown, bool markdown) {
  std::string out;
  for (const InstDesc* d : shown) (markdown ? instruction_md : instruction_text)(out, *d);
  const EnumSet e = enums_of(shown);
  if (!e.types.empty()) (markdown ? enums_md : enums_text)(out, e);
  return out;
}

// Encoded size bounds of an access pattern: 24-byte fixed part, 8 bytes per free dim, then
// 13 bytes for a register offset or 21 for a vector offset.
constexpr int kApMin = 24 + 8, kApMax = 24 + 4 * 8 + 21;

struct FieldLayout {
  std::string text;
  int min, max;
};

FieldLayout operand_layout(const OperandDesc& d) {
  switch (d.kind) {
  case OperandKind::Dst:
  case OperandKind::Src:
    if (d.optional) return {"AP or u8 0 (absent)", 1, kApMax};
    return {"AP", kApMin, kApMax};
  case OperandKind::Scalar: return {"u8 tag, f32 (tag 0) or AP (tag 1)", 5, 1 + kApMax};
  case OperandKind::ImmF: return {"f32", 4, 4};
  case OperandKind::ImmI: return {"i32", 4, 4};
  case OperandKind::Bool: return {"u8 0/1", 1, 1};
  case OperandKind::Enum: return {"u8 " + std::string(enum_type_name(d.enum_type)), 1, 1};
  case OperandKind::Reg: return {"u8 register", 1, 1};
  case OperandKind::RegOrImm: return {"u8 tag (0 imm, 1 reg), i32", 5, 5};
  case OperandKind::Queue: return {"u8 queue", 1, 1};
  case OperandKind::Sem: return {"u16 semaphore index", 2, 2};
  case OperandKind::Label: return {"u32 instruction index", 4, 4};
  case OperandKind::Pattern: return {"u8 n, n x (i32 step, i32 num)", 9, 33};
  case OperandKind::Mask: return {"32 x u8", 32, 32};
  case OperandKind::Group: return {"u16 replica-group index", 2, 2};
  }
  return {"?", 0, 0};
}

constexpr int kSyncMax = 8 * 8 + 8 * 8;

} // namespace

SizeBounds encoded_size_bounds(const InstDesc& d) {
  SizeBounds b{8, 8 + kSyncMax};
  for (const auto& o : d.operands) {
    const FieldLayout f = operand_layout(o);
    b.min += f.min;
    b.max += f.max;
  }
  return b;
}

std::string encoding_reference(std::span<const InstDesc* const> only) {
  std::string out = "| opcode | mnemonic | operand fields after the header and sync block | "
                    "min bytes | max bytes |\n|---|---|---|---|---|\n";
  std::vector<const InstDesc*> all;
  if (only.empty())
    for (const auto& d : inst_table()) all.push_back(&d);
  for (const InstDesc* dp : only.empty() ? std::span<const InstDesc* const>(all) : only) {
    const InstDesc& d = *dp;
    std::string fields;
    for (const auto& o : d.operands)
      fields +=
          fmt::format("{}`{}`: {}", fields.empty() ? "" : "; ", o.name, operand_layout(o).text);
    const SizeBounds b = encoded_size_bounds(d);
    out += fmt::format("| `0x{:04x}` | `{}` ({}) | {} | {} | {} |\n", d.opcode, d.mnemonic,
                       engines_text(d.engines), fields.empty() ? "none" : fields, b.min, b.max);
  }
  return out;
}

std::string isa_reference(bool markdown, std::span<const InstDesc* const> only) {
  if (!only.empty()) return selected(only, markdown);
  return markdown ? reference_md() : reference_text();
}

} // namespace nisa
