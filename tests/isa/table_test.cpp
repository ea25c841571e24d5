// Checks of the instruction table itself (isa/insts.def) and of the enumerations.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <set>
#include <string>

#include "isa/encode.h"
#include "isa/isa.h"

namespace nisa {
namespace {

TEST(Table, OpcodesDoNotCollide) {
  std::map<uint16_t, std::string_view> seen;
  for (const auto& d : inst_table()) {
    auto [it, fresh] = seen.emplace(d.opcode, d.ident);
    EXPECT_TRUE(fresh) << d.ident << " and " << it->second << " share opcode " << d.opcode;
    EXPECT_NE(d.opcode, 0) << d.ident << ": opcode 0 is reserved";
    EXPECT_EQ(find_by_opcode(d.opcode), &d);
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(kNumOpcodes));
}

TEST(Table, RowsAreInOpcodeEnumOrder) {
  int k = 0;
  for (const auto& d : inst_table()) {
    EXPECT_EQ(static_cast<int>(d.op), k) << d.ident;
    EXPECT_EQ(&desc(d.op), &d);
    ++k;
  }
}

TEST(Table, IdentsAndMnemonicEnginePairsAreUnique) {
  std::set<std::string_view> idents;
  std::set<std::pair<std::string_view, int>> pairs;
  for (const auto& d : inst_table()) {
    EXPECT_TRUE(idents.insert(d.ident).second) << "duplicate ident " << d.ident;
    for (int e = 0; e < kNumEngines; ++e) {
      if (!(d.engines & (1u << e))) continue;
      EXPECT_TRUE(pairs.insert({d.mnemonic, e}).second)
          << d.mnemonic << " defined twice on engine " << name_of(Engine(e));
      EXPECT_EQ(find_by_mnemonic(d.mnemonic, Engine(e)), &d);
    }
  }
}

TEST(Table, EveryRowHasAnEngineAGenerationAndASummary) {
  for (const auto& d : inst_table()) {
    EXPECT_NE(d.engines & 0x3f, 0) << d.ident;
    EXPECT_EQ(d.engines & ~0x3f, 0) << d.ident << ": engine bit beyond cc";
    EXPECT_NE(d.gens & kGenAll, 0) << d.ident;
    EXPECT_EQ(d.gens & ~kGenAll, 0) << d.ident;
    EXPECT_FALSE(d.summary.empty()) << d.ident;
    EXPECT_FALSE(d.mnemonic.empty()) << d.ident;
  }
}

TEST(Table, OperandNamesAreUniqueAndSpacesSet) {
  for (const auto& d : inst_table()) {
    std::set<std::string_view> names;
    for (const auto& o : d.operands) {
      EXPECT_TRUE(names.insert(o.name).second) << d.ident << ": operand " << o.name << " twice";
      const bool is_ap =
          o.kind == OperandKind::Dst || o.kind == OperandKind::Src || o.kind == OperandKind::Scalar;
      EXPECT_EQ(o.spaces != 0, is_ap) << d.ident << "." << o.name << ": spaces vs kind";
      // A generation limit only makes sense on an operand that can stay at its default.
      EXPECT_TRUE(o.gens == kGenAll || o.optional) << d.ident << "." << o.name;
    }
  }
}

// Defaults parse with an independent parser, agree with default_operand, and pass the check.
TEST(Table, EveryOperandDefaultParses) {
  for (const auto& d : inst_table()) {
    for (const auto& o : d.operands) {
      if (!o.optional || o.default_text.empty()) continue;
      const std::string text(o.default_text);
      const Operand def = default_operand(o);
      char* end = nullptr;
      switch (o.kind) {
      case OperandKind::ImmF:
      case OperandKind::Scalar: {
        const float f = std::strtof(text.c_str(), &end);
        EXPECT_EQ(*end, '\0') << d.ident << "." << o.name << " default '" << text << "'";
        EXPECT_EQ(def.f, f) << d.ident << "." << o.name;
        break;
      }
      case OperandKind::ImmI:
      case OperandKind::Bool: {
        const long long v = std::strtoll(text.c_str(), &end, 10);
        EXPECT_EQ(*end, '\0') << d.ident << "." << o.name << " default '" << text << "'";
        EXPECT_EQ(def.i, v) << d.ident << "." << o.name;
        break;
      }
      case OperandKind::Enum: {
        auto v = enum_parse(o.enum_type, text);
        ASSERT_TRUE(v.has_value()) << d.ident << "." << o.name << " default '" << text << "'";
        EXPECT_EQ(def.i, *v);
        break;
      }
      default: ADD_FAILURE() << d.ident << "." << o.name << ": a default on a kind without one";
      }
      EXPECT_TRUE(is_default(o, def));
    }
  }
}

TEST(Table, EveryEnumValuePrintsAndParsesBack){
#define NISA_CHECK_ENUM(T)                                                                         \
  {                                                                                                \
    std::set<std::string_view> names;                                                              \
    std::set<int> values;                                                                          \
    for (const auto& m : enum_members(EnumType::T)) {                                              \
      EXPECT_TRUE(names.insert(m.name).second) << #T << " name " << m.name << " twice";            \
      EXPECT_TRUE(values.insert(m.value).second) << #T << " value " << int(m.value) << " twice";   \
      EXPECT_EQ(enum_name(EnumType::T, m.value), m.name);                                          \
      EXPECT_EQ(enum_parse(EnumType::T, m.name), m.value);                                         \
      EXPECT_EQ(name_of(static_cast<T>(m.value)), m.name);                                         \
    }                                                                                              \
    EXPECT_FALSE(enum_parse(EnumType::T, "no_such_name").has_value());                             \
    EXPECT_EQ(enum_type_name(EnumType::T), #T);                                                    \
  }
    NISA_ENUM_TYPES(NISA_CHECK_ENUM)
#undef NISA_CHECK_ENUM
}

TEST(Table, CollectiveKindsKeepTheSeedNumbers) {
  EXPECT_EQ(static_cast<int>(CollKind::send_recv), 0);
  EXPECT_EQ(static_cast<int>(CollKind::send_recv_cce), 1);
  EXPECT_EQ(static_cast<int>(CollKind::all_reduce), 2);
  EXPECT_EQ(static_cast<int>(CollKind::all_gather), 4);
  EXPECT_EQ(static_cast<int>(CollKind::permute_implicit), 9);
}

TEST(Table, EveryDTypePrintsAndParsesBack) {
  for (int k = 0; k < kNumDTypes; ++k) {
    const auto t = static_cast<DType>(k);
    EXPECT_EQ(parse_dtype(dtype_name(t)), t);
    EXPECT_TRUE(dtype_bytes(t) == 1 || dtype_bytes(t) == 2 || dtype_bytes(t) == 4);
  }
  EXPECT_FALSE(parse_dtype("fp64").has_value());
}

// make_inst gives every optional operand its default; those defaults must pass the check
// once the required operands are filled in (here: with the smallest valid values).
TEST(Table, DefaultsOfEveryRowPassTheCheck) {
  for (const auto& d : inst_table()) {
    Inst in = make_inst(d.op, Engine(__builtin_ctz(d.engines)));
    for (size_t k = 0; k < d.operands.size(); ++k) {
      const auto& o = d.operands[k];
      if (o.optional) continue;
      if (o.kind == OperandKind::Dst || o.kind == OperandKind::Src) {
        in.ops[k].ap.space = (o.spaces & kSpaceS)   ? MemSpace::sbuf
                             : (o.spaces & kSpaceH) ? MemSpace::hbm
                                                    : MemSpace::psum;
      } else if (o.kind == OperandKind::Pattern) {
        in.ops[k].pat.n = 1;
        in.ops[k].pat.d[0] = {1, 1};
      } else if (o.kind == OperandKind::Enum) {
        in.ops[k].i = enum_members(o.enum_type)[0].value;
      }
    }
    EXPECT_EQ(check_inst(in), std::nullopt) << d.ident;
  }
}

} // namespace
} // namespace nisa
