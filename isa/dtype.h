// Storage data types and their conversions to and from fp32.
// Engines compute in fp32 and round to the destination dtype on every write
// (round-to-nearest-even; see docs/machine.md "Numerics").
#pragma once
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace nisa {

// X(ident, name, bytes, is_float, is_signed)
#define NISA_DTYPES(X)                                                                             \
  X(fp32, "fp32", 4, true, true)                                                                   \
  X(bf16, "bf16", 2, true, true)                                                                   \
  X(fp16, "fp16", 2, true, true)                                                                   \
  X(fp8e4m3, "fp8e4m3", 1, true, true)                                                             \
  X(fp8e5m2, "fp8e5m2", 1, true, true)                                                             \
  X(int8, "int8", 1, false, true)                                                                  \
  X(uint8, "uint8", 1, false, false)                                                               \
  X(int16, "int16", 2, false, true)                                                                \
  X(uint16, "uint16", 2, false, false)                                                             \
  X(int32, "int32", 4, false, true)                                                                \
  X(uint32, "uint32", 4, false, false)

enum class DType : uint8_t {
#define X(id, name, bytes, isf, iss) id,
  NISA_DTYPES(X)
#undef X
};
inline constexpr int kNumDTypes = 0
#define X(id, name, bytes, isf, iss) +1
    NISA_DTYPES(X)
#undef X
    ;

struct DTypeInfo {
  std::string_view name;
  uint8_t bytes;
  bool is_float;
  bool is_signed;
};
inline constexpr DTypeInfo kDTypeInfo[] = {
#define X(id, name, bytes, isf, iss) {name, bytes, isf, iss},
    NISA_DTYPES(X)
#undef X
};
constexpr const DTypeInfo& info(DType t) { return kDTypeInfo[static_cast<int>(t)]; }
constexpr int dtype_bytes(DType t) { return info(t).bytes; }
constexpr std::string_view dtype_name(DType t) { return info(t).name; }
std::optional<DType> parse_dtype(std::string_view s);

// ---- scalar conversions (bit-exact, RNE) --------------------------------------------------
inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// fp32 -> bf16, round to nearest even; NaN stays (quiet) NaN; overflow rounds to inf.
inline uint16_t f32_to_bf16(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
inline float bf16_to_f32(uint16_t h) { return bits_f32(static_cast<uint32_t>(h) << 16); }
uint16_t f32_to_fp16(float f);
float fp16_to_f32(uint16_t h);
// fp8 e4m3 (IEEE-style: bias 7, exponent 15 = inf/NaN, max finite 240); saturates finite
// overflow to +-240 (the Neuron FP8_EXP4 convention), RNE otherwise.
uint8_t f32_to_fp8e4m3(float f);
float fp8e4m3_to_f32(uint8_t b);
// fp8 e5m2 (bias 15, max finite 57344); RNE, overflow to inf (IEEE).
uint8_t f32_to_fp8e5m2(float f);
float fp8e5m2_to_f32(uint8_t b);
// fp32 -> integer: round to nearest even, saturate to the range; NaN -> 0.
int64_t f32_to_int_rne_sat(float f, int64_t lo, int64_t hi);

// Read one element of dtype t at p as fp32 (integers convert exactly up to 2^24).
float load_as_f32(DType t, const void* p);
// Write fp32 value v to p as dtype t with the rounding rules above.
void store_from_f32(DType t, void* p, float v);
// Integer view for bitwise ops: raw bits of integer dtypes, sign-extended for signed types.
int64_t load_as_int(DType t, const void* p);
void store_from_int(DType t, void* p, int64_t v); // truncates to width (bit pattern)

} // namespace nisa
