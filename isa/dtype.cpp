// Conversions between the storage dtypes and fp32 (see isa/dtype.h).
//
// All narrowing float conversions share one routine over a "minifloat" format
// (exponent bits, mantissa bits): round to nearest, ties to even, with gradual underflow.
// They differ only in what happens above the largest finite value: fp16 and e5m2 go to
// infinity (IEEE), e4m3 saturates to +-240 (Neuron's FP8_EXP4 convention).
#include "isa/dtype.h"

#include <array>
#include <bit>
#include <cmath>

namespace nisa {
namespace {

struct MiniFormat {
  int ebits;
  int mbits;
  bool saturate; // finite overflow -> max finite (else inf)
};
constexpr MiniFormat kFp16{5, 10, false};
constexpr MiniFormat kE4m3{4, 3, true};
constexpr MiniFormat kE5m2{5, 2, false};

// Shift right by s (>= 1) rounding to nearest, ties to even.
constexpr uint64_t shift_rne(uint64_t v, int s) {
  if (s >= 64) return 0;
  uint64_t half = uint64_t{1} << (s - 1);
  uint64_t rem = v & ((uint64_t{1} << s) - 1);
  uint64_t q = v >> s;
  if (rem > half || (rem == half && (q & 1))) ++q;
  return q;
}

// fp32 -> minifloat bits (sign in the top bit of the 1 + ebits + mbits wide result).
constexpr uint32_t to_mini(float f, MiniFormat m) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (u >> 31) << (m.ebits + m.mbits);
  const uint32_t mag = u & 0x7fffffffu;
  const uint32_t exp_all = (1u << m.ebits) - 1;
  const uint32_t inf = exp_all << m.mbits;
  if (mag > 0x7f800000u) return sign | inf | (1u << (m.mbits - 1)); // quiet NaN
  if (mag == 0x7f800000u) return sign | inf;
  const int bias = (1 << (m.ebits - 1)) - 1;
  const int e = static_cast<int>(mag >> 23) - 127; // unbiased (denormal fp32: -127)
  const int emin = 1 - bias;
  uint64_t r;
  if (e < emin) {
    // Subnormal result: count units of the smallest subnormal 2^(emin - mbits).
    uint64_t mant = (mag & 0x7fffffu) | (e == -127 ? 0u : 0x800000u);
    int eff_e = e == -127 ? -126 : e;
    int s = (emin - m.mbits) - (eff_e - 23);
    r = shift_rne(mant, s); // a carry into the exponent field is the right answer
  } else {
    // Normal: rebias, then drop the extra mantissa bits; carries propagate into the exponent.
    uint64_t v = (static_cast<uint64_t>(e + bias) << 23) | (mag & 0x7fffffu);
    r = shift_rne(v, 23 - m.mbits);
  }
  if (r >= inf) {
    const uint32_t max_finite = m.saturate ? inf - 1 : inf;
    return sign | max_finite;
  }
  return sign | static_cast<uint32_t>(r);
}

// minifloat bits -> fp32 (exact: every minifloat value is an fp32 value).
constexpr float from_mini(uint32_t b, MiniFormat m) {
  const bool neg = (b >> (m.ebits + m.mbits)) & 1;
  const uint32_t e = (b >> m.mbits) & ((1u << m.ebits) - 1);
  const uint32_t mant = b & ((1u << m.mbits) - 1);
  const int bias = (1 << (m.ebits - 1)) - 1;
  uint32_t out;
  if (e == (1u << m.ebits) - 1) {
    out = mant ? 0x7fc00000u | (mant << (23 - m.mbits)) : 0x7f800000u;
  } else if (e == 0) {
    if (mant == 0) {
      out = 0;
    } else { // normalise: value = mant * 2^(1 - bias - mbits)
      int shift = 0;
      uint32_t mm = mant;
      while (!(mm & (1u << m.mbits))) {
        mm <<= 1;
        ++shift;
      }
      int exp32 = 1 - bias - shift + 127;
      out = (static_cast<uint32_t>(exp32) << 23) | ((mm & ((1u << m.mbits) - 1)) << (23 - m.mbits));
    }
  } else {
    out = ((e - bias + 127) << 23) | (mant << (23 - m.mbits));
  }
  return std::bit_cast<float>(out | (neg ? 0x80000000u : 0u));
}

template <size_t N> constexpr std::array<float, N> decode_table(MiniFormat m) {
  std::array<float, N> t{};
  for (size_t i = 0; i < N; ++i) t[i] = from_mini(static_cast<uint32_t>(i), m);
  return t;
}
constexpr auto kE4m3Table = decode_table<256>(kE4m3);
constexpr auto kE5m2Table = decode_table<256>(kE5m2);

template <class T> T load(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <class T> void store(void* p, T v) { std::memcpy(p, &v, sizeof(T)); }

int64_t int_lo(DType t) {
  switch (t) {
  case DType::int8: return INT8_MIN;
  case DType::int16: return INT16_MIN;
  case DType::int32: return INT32_MIN;
  default: return 0;
  }
}
int64_t int_hi(DType t) {
  switch (t) {
  case DType::int8: return INT8_MAX;
  case DType::uint8: return UINT8_MAX;
  case DType::int16: return INT16_MAX;
  case DType::uint16: return UINT16_MAX;
  case DType::int32: return INT32_MAX;
  default: return UINT32_MAX;
  }
}

} // namespace

uint16_t f32_to_fp16(float f) { return static_cast<uint16_t>(to_mini(f, kFp16)); }
float fp16_to_f32(uint16_t h) {
  // Exponent field 1..30 maps directly; the rest (zero, subnormal, inf, NaN) takes the
  // general path.
  const uint32_t e = (h >> 10) & 0x1f;
  if (e != 0 && e != 0x1f)
    return bits_f32((static_cast<uint32_t>(h & 0x8000) << 16) | ((e + 112) << 23) |
                    (static_cast<uint32_t>(h & 0x3ff) << 13));
  return from_mini(h, kFp16);
}
uint8_t f32_to_fp8e4m3(float f) { return static_cast<uint8_t>(to_mini(f, kE4m3)); }
float fp8e4m3_to_f32(uint8_t b) { return kE4m3Table[b]; }
uint8_t f32_to_fp8e5m2(float f) { return static_cast<uint8_t>(to_mini(f, kE5m2)); }
float fp8e5m2_to_f32(uint8_t b) { return kE5m2Table[b]; }

int64_t f32_to_int_rne_sat(float f, int64_t lo, int64_t hi) {
  if (std::isnan(f)) return 0;
  const double d = f; // exact
  if (d <= static_cast<double>(lo)) return lo;
  if (d >= static_cast<double>(hi)) return hi;
  double fl = std::floor(d);
  const double frac = d - fl; // exact: |d| < 2^63 and d has <= 24 significant bits
  if (frac > 0.5 || (frac == 0.5 && std::fmod(fl, 2.0) != 0.0)) fl += 1.0;
  const auto r = static_cast<int64_t>(fl);
  return r < lo ? lo : r > hi ? hi : r;
}

float load_as_f32(DType t, const void* p) {
  switch (t) {
  case DType::fp32: return load<float>(p);
  case DType::bf16: return bf16_to_f32(load<uint16_t>(p));
  case DType::fp16: return fp16_to_f32(load<uint16_t>(p));
  case DType::fp8e4m3: return fp8e4m3_to_f32(load<uint8_t>(p));
  case DType::fp8e5m2: return fp8e5m2_to_f32(load<uint8_t>(p));
  case DType::int8: return static_cast<float>(load<int8_t>(p));
  case DType::uint8: return static_cast<float>(load<uint8_t>(p));
  case DType::int16: return static_cast<float>(load<int16_t>(p));
  case DType::uint16: return static_cast<float>(load<uint16_t>(p));
  case DType::int32: return static_cast<float>(load<int32_t>(p));
  case DType::uint32: return static_cast<float>(load<uint32_t>(p));
  }
  return 0.0f;
}

void store_from_f32(DType t, void* p, float v) {
  switch (t) {
  case DType::fp32: store(p, v); return;
  case DType::bf16: store(p, f32_to_bf16(v)); return;
  case DType::fp16: store(p, f32_to_fp16(v)); return;
  case DType::fp8e4m3: store(p, f32_to_fp8e4m3(v)); return;
  case DType::fp8e5m2: store(p, f32_to_fp8e5m2(v)); return;
  default: store_from_int(t, p, f32_to_int_rne_sat(v, int_lo(t), int_hi(t))); return;
  }
}

int64_t load_as_int(DType t, const void* p) {
  switch (t) {
  case DType::int8: return load<int8_t>(p);
  case DType::int16: return load<int16_t>(p);
  case DType::int32: return load<int32_t>(p);
  case DType::uint8:
  case DType::fp8e4m3:
  case DType::fp8e5m2: return load<uint8_t>(p);
  case DType::uint16:
  case DType::bf16:
  case DType::fp16: return load<uint16_t>(p);
  case DType::uint32:
  case DType::fp32: return load<uint32_t>(p);
  }
  return 0;
}

void store_from_int(DType t, void* p, int64_t v) {
  switch (dtype_bytes(t)) {
  case 1: store(p, static_cast<uint8_t>(v)); return;
  case 2: store(p, static_cast<uint16_t>(v)); return;
  default: store(p, static_cast<uint32_t>(v)); return;
  }
}

} // namespace nisa
