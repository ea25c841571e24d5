#include "isa/enums.h"

#include <array>

#include "isa/dtype.h"

namespace nisa {
namespace {
#define NISA_MEMBER(id, name, value) EnumMember{name, value},
#define NISA_MEMBERS(T) constexpr EnumMember k##T[] = {NISA_ENUM_##T(NISA_MEMBER)};
NISA_ENUM_TYPES(NISA_MEMBERS)
#undef NISA_MEMBERS
#undef NISA_MEMBER

struct TypeRow {
  std::string_view name;
  std::span<const EnumMember> members;
};
constexpr TypeRow kTypes[] = {
#define NISA_ROW(T) {#T, k##T},
    NISA_ENUM_TYPES(NISA_ROW)
#undef NISA_ROW
};
} // namespace

std::span<const EnumMember> enum_members(EnumType t) { return kTypes[static_cast<int>(t)].members; }
std::string_view enum_type_name(EnumType t) { return kTypes[static_cast<int>(t)].name; }

std::string_view enum_name(EnumType t, uint8_t value) {
  for (const auto& m : enum_members(t))
    if (m.value == value) return m.name;
  return {};
}

std::optional<uint8_t> enum_parse(EnumType t, std::string_view name) {
  for (const auto& m : enum_members(t))
    if (m.name == name) return m.value;
  return std::nullopt;
}

std::optional<DType> parse_dtype(std::string_view s) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (kDTypeInfo[i].name == s) return static_cast<DType>(i);
  return std::nullopt;
}

} // namespace nisa
