#include "cli/isa_formats.h"

#include <algorithm>
#include <set>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "asm/token.h"
#include "isa/dtype.h"
#include "isa/enums.h"
#include "isa/formulas.h"
#include "isa/isa.h"

namespace nisa::cli {
namespace {
using nlohmann::ordered_json;

std::vector<std::string> engine_names(uint8_t mask) {
  std::vector<std::string> v;
  for (int e = 0; e < kNumEngines; ++e)
    if (mask & (1u << e)) v.emplace_back(name_of(Engine(e)));
  return v;
}

std::vector<std::string> gen_names(uint8_t mask) {
  std::vector<std::string> v;
  for (const auto& m : enum_members(EnumType::Target))
    if (mask & gen_bit(static_cast<Target>(m.value))) v.emplace_back(m.name);
  return v;
}

std::vector<std::string> space_names(uint8_t mask) {
  std::vector<std::string> v;
  for (MemSpace sp : {MemSpace::hbm, MemSpace::sbuf, MemSpace::psum})
    if (mask & space_bit(sp)) v.emplace_back(name_of(sp));
  return v;
}

// The directives: the keyword tokens of the grammar spelled ".name".
std::vector<std::string> directives() {
  std::vector<std::string> v;
#define NISA_DIRECTIVE(id, spelling)                                                               \
  if (std::string_view(spelling).size() > 1 && spelling[0] == '.' && spelling[1] != '.')           \
    v.emplace_back(spelling);
  NISA_FIXED_TOKENS(NISA_DIRECTIVE)
#undef NISA_DIRECTIVE
  return v;
}

// An alternation pattern of words, longest first (TextMate takes the first alternative).
std::string alternation(std::set<std::string> words) {
  std::vector<std::string> v(words.begin(), words.end());
  std::stable_sort(v.begin(), v.end(),
                   [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  std::string s;
  for (const auto& w : v) {
    if (!s.empty()) s += '|';
    for (char c : w) {
      if (std::string_view(".+*?()[]{}|^$\\").find(c) != std::string_view::npos) s += '\\';
      s += c;
    }
  }
  return s;
}

// isa/formulas.def: an activation function's formula and note, an ALU operator's fold as a
// tensor_reduce operator.
void add_formulas(EnumType t, uint8_t value, ordered_json& j) {
  if (t == EnumType::ActFunc) {
    const ActFormula f = act_formula(static_cast<ActFunc>(value));
    j["formula"] = f.formula;
    if (!f.note.empty()) j["note"] = f.note;
  }
  if (t == EnumType::AluOp)
    if (auto r = reduce_rule(static_cast<AluOp>(value)); !r.empty()) j["reduce"] = r;
}

} // namespace

std::string isa_json(std::span<const InstDesc* const> only) {
  ordered_json doc;
  doc["schema"] = "nisa-isa/1";
  ordered_json insts = ordered_json::array();
  std::vector<const InstDesc*> shown(only.begin(), only.end());
  if (shown.empty())
    for (const InstDesc& d : inst_table()) shown.push_back(&d);
  for (const InstDesc* dp : shown) {
    const InstDesc& d = *dp;
    ordered_json j;
    j["mnemonic"] = d.mnemonic;
    j["ident"] = d.ident;
    j["opcode"] = d.opcode;
    j["engines"] = engine_names(d.engines);
    j["generations"] = gen_names(d.gens);
    j["cost_class"] = cost_class_name(d.cost);
    j["summary"] = d.summary;
    ordered_json ops = ordered_json::array();
    for (const OperandDesc& o : d.operands) {
      ordered_json oj;
      oj["name"] = o.name;
      oj["kind"] = operand_kind_name(o.kind);
      if (o.kind == OperandKind::Enum) oj["enum"] = enum_type_name(o.enum_type);
      if (o.spaces) oj["spaces"] = space_names(o.spaces);
      oj["optional"] = o.optional;
      if (o.optional) oj["default"] = o.default_text;
      oj["generations"] = gen_names(o.gens);
      ops.push_back(std::move(oj));
    }
    j["operands"] = std::move(ops);
    insts.push_back(std::move(j));
  }
  doc["instructions"] = std::move(insts);
  ordered_json enums = ordered_json::object();
#define NISA_ENUM_JSON(T)                                                                          \
  {                                                                                                \
    ordered_json e = ordered_json::array();                                                        \
    for (const auto& m : enum_members(EnumType::T)) {                                              \
      e.push_back({{"name", m.name}, {"value", m.value}});                                         \
      add_formulas(EnumType::T, m.value, e.back());                                                \
    }                                                                                              \
    enums[#T] = std::move(e);                                                                      \
  }
  NISA_ENUM_TYPES(NISA_ENUM_JSON)
#undef NISA_ENUM_JSON
  doc["enums"] = std::move(enums);
  ordered_json dts = ordered_json::array();
  for (int k = 0; k < kNumDTypes; ++k) {
    const auto& i = kDTypeInfo[k];
    dts.push_back({{"name", i.name},
                   {"value", k},
                   {"bytes", i.bytes},
                   {"float", i.is_float},
                   {"signed", i.is_signed}});
  }
  doc["dtypes"] = std::move(dts);
  doc["directives"] = directives();
  return doc.dump(1) + "\n";
}

std::string tmlanguage_json() {
  std::set<std::string> mnemonics, engines, operands, enum_words, dtypes;
  for (const InstDesc& d : inst_table()) {
    mnemonics.emplace(d.mnemonic);
    for (const OperandDesc& o : d.operands) operands.emplace(o.name);
  }
  for (int e = 0; e < kNumEngines; ++e) engines.emplace(name_of(Engine(e)));
#define NISA_ENUM_WORDS(T)                                                                         \
  if (EnumType::T != EnumType::Engine)                                                             \
    for (const auto& m : enum_members(EnumType::T)) enum_words.emplace(m.name);
  NISA_ENUM_TYPES(NISA_ENUM_WORDS)
#undef NISA_ENUM_WORDS
  for (int k = 0; k < kNumDTypes; ++k) dtypes.emplace(kDTypeInfo[k].name);
  std::set<std::string> dirs;
  for (const auto& d : directives()) dirs.insert(d.substr(1));
  ordered_json g;
  g["$schema"] = "https://raw.githubusercontent.com/martinring/tmlanguage/master/tmlanguage.json";
  g["name"] = "nisa assembly";
  g["scopeName"] = "source.nasm";
  g["fileTypes"] = {"nasm", "inc"};
  g["comment"] = "Generated by `nisa isa --format tmlanguage` from isa/insts.def and the "
                 "assembler's keywords. Do not edit: regenerate (docs/editors.md).";
  auto word = [](const std::string& alt) { return "\\b(?:" + alt + ")\\b"; };
  ordered_json pats = ordered_json::array();
  pats.push_back({{"name", "comment.line.semicolon.nasm"}, {"match", ";.*$"}});
  pats.push_back({{"name", "comment.line.double-slash.nasm"}, {"match", "//.*$"}});
  pats.push_back(
      {{"name", "string.quoted.double.nasm"},
       {"begin", "\""},
       {"end", "\""},
       {"patterns", {{{"name", "constant.character.escape.nasm"}, {"match", "\\\\."}}}}});
  pats.push_back({{"name", "keyword.control.directive.nasm"},
                  {"match", "(?<![\\w.])\\.(?:" + alternation(dirs) + ")\\b"}});
  // engine.mnemonic: the engine and the instruction get their own scopes.
  pats.push_back(
      {{"match", "\\b(" + alternation(engines) + ")(\\.)(" + alternation(mnemonics) + ")\\b"},
       {"captures",
        {{"1", {{"name", "support.class.engine.nasm"}}},
         {"2", {{"name", "punctuation.accessor.nasm"}}},
         {"3", {{"name", "keyword.other.instruction.nasm"}}}}}});
  pats.push_back({{"name", "invalid.illegal.instruction.nasm"},
                  {"match", "\\b(?:" + alternation(engines) + ")\\.\\w+\\b"}});
  pats.push_back({{"match", "(@)(wait|signal)\\b"},
                  {"captures",
                   {{"1", {{"name", "punctuation.definition.annotation.nasm"}}},
                    {"2", {{"name", "keyword.control.sync.nasm"}}}}}});
  pats.push_back({{"match", "\\b(" + alternation(operands) + ")\\s*(=)(?!=)"},
                  {"captures",
                   {{"1", {{"name", "variable.parameter.operand.nasm"}}},
                    {"2", {{"name", "keyword.operator.assignment.nasm"}}}}}});
  pats.push_back({{"name", "entity.name.label.nasm"}, {"match", "^\\s*\\.?[A-Za-z_]\\w*:(?!\\S)"}});
  pats.push_back({{"name", "storage.type.dtype.nasm"}, {"match", word(alternation(dtypes))}});
  pats.push_back({{"name", "variable.language.register.nasm"}, {"match", "\\b(?:r\\d+|q\\d+)\\b"}});
  pats.push_back(
      {{"name", "support.constant.enum.nasm"}, {"match", word(alternation(enum_words))}});
  pats.push_back(
      {{"name", "constant.numeric.nasm"},
       {"match", "\\b(?:0x[0-9A-Fa-f_]+|0b[01_]+|\\d[\\d_]*(?:\\.\\d*)?(?:[eE][+-]?\\d+)?"
                 ")\\b"}});
  pats.push_back({{"name", "keyword.operator.nasm"},
                  {"match", "<<|>>|<=|>=|==|!=|&&|\\|\\||\\+=|[-+*/%<>=!~&^|]"}});
  g["patterns"] = std::move(pats);
  return g.dump(2) + "\n";
}

} // namespace nisa::cli
