// Enum classes generated from isa/enums.def, plus generic name <-> value lookup.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "isa/enums.def"

namespace nisa {

#define NISA_DEFINE_ENUM(T) enum class T : uint8_t { NISA_ENUM_##T(NISA_ENUM_MEMBER) };
#define NISA_ENUM_MEMBER(id, name, value) id = value,
NISA_ENUM_TYPES(NISA_DEFINE_ENUM)
#undef NISA_ENUM_MEMBER
#undef NISA_DEFINE_ENUM

// One id per enum type, used by operand descriptors.
enum class EnumType : uint8_t {
#define NISA_ENUM_TYPE_ID(T) T,
  NISA_ENUM_TYPES(NISA_ENUM_TYPE_ID)
#undef NISA_ENUM_TYPE_ID
};

struct EnumMember {
  std::string_view name;
  uint8_t value;
};
// All members of an enum type, in declaration order.
std::span<const EnumMember> enum_members(EnumType t);
std::string_view enum_type_name(EnumType t);
// Name of a value, or "" if the value is not a member (decoder uses this to validate).
std::string_view enum_name(EnumType t, uint8_t value);
std::optional<uint8_t> enum_parse(EnumType t, std::string_view name);

template <class E> constexpr EnumType enum_type_of();
#define NISA_ENUM_TYPE_OF(T)                                                                       \
  template <> constexpr EnumType enum_type_of<T>() { return EnumType::T; }
NISA_ENUM_TYPES(NISA_ENUM_TYPE_OF)
#undef NISA_ENUM_TYPE_OF

template <class E> std::string_view name_of(E e) {
  return enum_name(enum_type_of<E>(), static_cast<uint8_t>(e));
}

inline constexpr int kNumEngines = 6;    // pe act dve pool sp cc
inline constexpr int kNumDmaQueues = 16; // per core
inline constexpr int kNumCcChannels =
    4; // collective channels per core (docs/machine.md "Collective channels")
inline constexpr int kNumRegs = 64;    // per engine sequencer
inline constexpr int kMaxFreeDims = 4; // free-dim [stride, count] pairs of an access pattern
inline constexpr int kNumPartitions = 128;

} // namespace nisa
