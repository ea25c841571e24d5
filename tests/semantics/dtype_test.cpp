// Numerics of isa/dtype.h against a reference built from the format definitions alone:
// every code's value is computed in long double from (sign, exponent, mantissa), and
// rounding picks the nearest code by exact comparison, ties to the even code.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "isa/dtype.h"

namespace nisa {
namespace {

struct Format {
  const char* name;
  int ebits, mbits;
  bool saturate; // finite overflow -> max finite
  std::function<uint32_t(float)> encode;
  std::function<float(uint32_t)> decode;
};

// Value of a non-negative finite code (exponent field all-ones is inf/NaN in all formats).
long double code_value(const Format& f, uint32_t code) {
  const uint32_t e = code >> f.mbits, m = code & ((1u << f.mbits) - 1);
  const int bias = (1 << (f.ebits - 1)) - 1;
  if (e == 0) return std::ldexp(static_cast<long double>(m), 1 - bias - f.mbits);
  return std::ldexp(1.0L + std::ldexp(static_cast<long double>(m), -f.mbits), int(e) - bias);
}
uint32_t max_code(const Format& f) { return ((((1u << f.ebits) - 1) << f.mbits)) - 1; }
uint32_t inf_code(const Format& f) { return ((1u << f.ebits) - 1) << f.mbits; }
uint32_t sign_bit(const Format& f) { return 1u << (f.ebits + f.mbits); }

std::vector<long double> value_table(const Format& f) {
  std::vector<long double> t;
  for (uint32_t c = 0; c <= max_code(f); ++c) t.push_back(code_value(f, c));
  return t;
}

// Reference rounding of a non-NaN float.
uint32_t ref_round(const Format& f, const std::vector<long double>& t, float x) {
  const uint32_t sign = std::signbit(x) ? sign_bit(f) : 0;
  const long double a = std::fabs(static_cast<long double>(x));
  if (std::isinf(x)) return sign | inf_code(f);
  const uint32_t top = max_code(f);
  // Virtual code after the largest finite: the value it would have with an unbounded exponent.
  const long double beyond = t[top] + (t[top] - t[top - 1]);
  uint32_t code;
  if (a >= beyond) {
    code = top + 1;
  } else {
    auto it = std::upper_bound(t.begin(), t.end(), a);
    uint32_t hi = static_cast<uint32_t>(it - t.begin()); // first code above a (may be top + 1)
    uint32_t lo = hi - 1;
    const long double vhi = hi > top ? beyond : t[hi];
    const long double dl = a - t[lo], dh = vhi - a;
    code = dl < dh ? lo : dh < dl ? hi : (lo % 2 == 0 ? lo : hi);
  }
  if (code > top) code = f.saturate ? top : inf_code(f);
  return sign | code;
}

std::vector<Format> formats() {
  return {
      {"bf16", 8, 7, false, [](float x) { return f32_to_bf16(x); },
       [](uint32_t c) { return bf16_to_f32(static_cast<uint16_t>(c)); }},
      {"fp16", 5, 10, false, [](float x) { return f32_to_fp16(x); },
       [](uint32_t c) { return fp16_to_f32(static_cast<uint16_t>(c)); }},
      {"fp8e4m3", 4, 3, true, [](float x) { return f32_to_fp8e4m3(x); },
       [](uint32_t c) { return fp8e4m3_to_f32(static_cast<uint8_t>(c)); }},
      {"fp8e5m2", 5, 2, false, [](float x) { return f32_to_fp8e5m2(x); },
       [](uint32_t c) { return fp8e5m2_to_f32(static_cast<uint8_t>(c)); }},
  };
}

bool is_nan_code(const Format& f, uint32_t c) {
  const uint32_t mag = c & (sign_bit(f) - 1);
  return mag > inf_code(f);
}

TEST(DType, EveryCodeDecodesToItsDefinedValueAndRoundTrips) {
  for (const Format& f : formats()) {
    SCOPED_TRACE(f.name);
    const uint32_t n = sign_bit(f) << 1;
    for (uint32_t c = 0; c < n; ++c) {
      const float x = f.decode(c);
      const uint32_t mag = c & (sign_bit(f) - 1);
      if (is_nan_code(f, c)) {
        EXPECT_TRUE(std::isnan(x)) << c;
        EXPECT_TRUE(is_nan_code(f, f.encode(x))) << c;
        continue;
      }
      const long double want = mag == inf_code(f) ? INFINITY : code_value(f, mag);
      ASSERT_EQ(static_cast<long double>(std::fabs(x)), want) << "code " << c;
      ASSERT_EQ(std::signbit(x), (c & sign_bit(f)) != 0) << "code " << c;
      ASSERT_EQ(f.encode(x), c) << "code " << c;
    }
  }
}

TEST(DType, MaxFiniteValues) {
  EXPECT_EQ(fp8e4m3_to_f32(0x77), 240.0f);
  EXPECT_EQ(fp8e5m2_to_f32(0x7b), 57344.0f);
  EXPECT_EQ(fp16_to_f32(0x7bff), 65504.0f);
  EXPECT_TRUE(std::isinf(fp8e4m3_to_f32(0x78)));
}

// Midpoints between neighbouring codes (ties), and the floats just either side of them.
TEST(DType, RoundingAtEveryMidpointMatchesReference) {
  for (const Format& f : formats()) {
    SCOPED_TRACE(f.name);
    const auto t = value_table(f);
    const uint32_t top = max_code(f);
    for (uint32_t c = 0; c + 1 <= top; ++c) {
      const float mid = static_cast<float>((t[c] + t[c + 1]) / 2);
      ASSERT_EQ(static_cast<long double>(mid), (t[c] + t[c + 1]) / 2) << "midpoint not exact";
      for (float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)})
        for (float s : {x, -x}) ASSERT_EQ(f.encode(s), ref_round(f, t, s)) << "x = " << s;
    }
    EXPECT_EQ(f.encode(static_cast<float>((t[0] + t[1]) / 2)), 0u) << "tie to even at zero";
  }
}

TEST(DType, RoundingOfRandomFloatsMatchesReference) {
  std::mt19937 g(1234);
  for (const Format& f : formats()) {
    SCOPED_TRACE(f.name);
    const auto t = value_table(f);
    for (int i = 0; i < 200000; ++i) {
      // Random bit patterns concentrated on the format's exponent range.
      const int bias = (1 << (f.ebits - 1)) - 1;
      const int e = int(g() % uint32_t(2 * bias + f.mbits + 8)) - bias - f.mbits - 4;
      const float x =
          std::ldexp(1.0f + float(g() & 0x7fffff) / 8388608.0f, e) * ((g() & 1) ? -1.0f : 1.0f);
      ASSERT_EQ(f.encode(x), ref_round(f, t, x)) << "x = " << x;
    }
  }
}

TEST(DType, OverflowSaturatesOrGoesToInfinity) {
  EXPECT_EQ(fp8e4m3_to_f32(f32_to_fp8e4m3(1000.0f)), 240.0f);
  EXPECT_EQ(fp8e4m3_to_f32(f32_to_fp8e4m3(-3.4e38f)), -240.0f);
  EXPECT_EQ(fp8e4m3_to_f32(f32_to_fp8e4m3(247.9f)), 240.0f);
  EXPECT_TRUE(std::isinf(fp8e4m3_to_f32(f32_to_fp8e4m3(INFINITY))));
  EXPECT_TRUE(std::isinf(fp8e5m2_to_f32(f32_to_fp8e5m2(61440.0f)))); // tie above max -> inf
  EXPECT_EQ(fp8e5m2_to_f32(f32_to_fp8e5m2(61439.0f)), 57344.0f);
  EXPECT_TRUE(std::isinf(fp16_to_f32(f32_to_fp16(65520.0f))));
  EXPECT_EQ(fp16_to_f32(f32_to_fp16(65519.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(bf16_to_f32(f32_to_bf16(-3.4028235e38f)))); // FP32_MIN -> -inf
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(-9948.0f)),
            -9920.0f); // docs/machine.md "Data types and rounding"
  EXPECT_EQ(fp16_to_f32(f32_to_fp16(-9948.0f)), -9952.0f);
}

TEST(DType, NanStaysNan) {
  const float qnan = std::numeric_limits<float>::quiet_NaN();
  const float snan = std::bit_cast<float>(0x7f800001u);
  for (float x : {qnan, -qnan, snan}) {
    EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(x))));
    EXPECT_TRUE(std::isnan(fp16_to_f32(f32_to_fp16(x))));
    EXPECT_TRUE(std::isnan(fp8e4m3_to_f32(f32_to_fp8e4m3(x))));
    EXPECT_TRUE(std::isnan(fp8e5m2_to_f32(f32_to_fp8e5m2(x))));
  }
}

TEST(DType, Fp32ToIntRoundsHalfToEvenAndSaturates) {
  EXPECT_EQ(f32_to_int_rne_sat(0.5f, INT32_MIN, INT32_MAX), 0);
  EXPECT_EQ(f32_to_int_rne_sat(1.5f, INT32_MIN, INT32_MAX), 2);
  EXPECT_EQ(f32_to_int_rne_sat(2.5f, INT32_MIN, INT32_MAX), 2);
  EXPECT_EQ(f32_to_int_rne_sat(-2.5f, INT32_MIN, INT32_MAX), -2);
  EXPECT_EQ(f32_to_int_rne_sat(-3.5f, INT32_MIN, INT32_MAX), -4);
  EXPECT_EQ(f32_to_int_rne_sat(2.5000002f, INT32_MIN, INT32_MAX), 3);
  EXPECT_EQ(f32_to_int_rne_sat(127.5f, INT8_MIN, INT8_MAX), 127);
  EXPECT_EQ(f32_to_int_rne_sat(-200.0f, INT8_MIN, INT8_MAX), -128);
  EXPECT_EQ(f32_to_int_rne_sat(-3.0f, 0, UINT8_MAX), 0);
  EXPECT_EQ(f32_to_int_rne_sat(3e9f, INT32_MIN, INT32_MAX), INT32_MAX);
  EXPECT_EQ(f32_to_int_rne_sat(3e9f, 0, UINT32_MAX), 3000000000LL);
  EXPECT_EQ(f32_to_int_rne_sat(5e9f, 0, UINT32_MAX), UINT32_MAX);
  EXPECT_EQ(f32_to_int_rne_sat(-INFINITY, INT16_MIN, INT16_MAX), INT16_MIN);
  EXPECT_EQ(f32_to_int_rne_sat(NAN, INT32_MIN, INT32_MAX), 0);
  // Random: against halves counted exactly in double.
  std::mt19937 g(7);
  std::uniform_real_distribution<float> d(-70000.0f, 70000.0f);
  for (int i = 0; i < 100000; ++i) {
    float x = d(g);
    if (i % 3 == 0) x = std::round(x) + 0.5f; // many exact ties
    const double fl = std::floor(double(x)), fr = double(x) - fl;
    double r = fr < 0.5 ? fl : fr > 0.5 ? fl + 1 : (std::fmod(fl, 2.0) == 0 ? fl : fl + 1);
    r = std::clamp(r, double(INT16_MIN), double(INT16_MAX));
    ASSERT_EQ(f32_to_int_rne_sat(x, INT16_MIN, INT16_MAX), static_cast<int64_t>(r)) << x;
  }
}

TEST(DType, LoadStoreEveryDtype) {
  struct Case {
    DType t;
    float in, out;
  };
  const Case cases[] = {
      {DType::fp32, 1.1f, 1.1f},
      {DType::bf16, 1.00390625f, 1.0f}, // tie -> even
      {DType::bf16, 1.01171875f, 1.015625f},
      {DType::fp16, 1.00048828125f, 1.0f},
      {DType::fp8e4m3, 300.0f, 240.0f},
      {DType::fp8e5m2, 0.3f, 0.3125f},
      {DType::int8, -128.7f, -128.0f},
      {DType::uint8, 255.5f, 255.0f},
      {DType::int16, 2.5f, 2.0f},
      {DType::uint16, -1.0f, 0.0f},
      {DType::int32, 16777217.0f, 16777216.0f},
      {DType::uint32, 3.5f, 4.0f},
  };
  for (const Case& c : cases) {
    uint8_t buf[4] = {};
    store_from_f32(c.t, buf, c.in);
    EXPECT_EQ(load_as_f32(c.t, buf), c.out) << dtype_name(c.t);
  }
  uint8_t b[4];
  store_from_int(DType::int8, b, 0x1ff);
  EXPECT_EQ(load_as_int(DType::int8, b), -1); // truncated to 0xff, sign-extended
  EXPECT_EQ(load_as_int(DType::uint8, b), 255);
  store_from_int(DType::int16, b, -2);
  EXPECT_EQ(load_as_int(DType::int16, b), -2);
  EXPECT_EQ(load_as_int(DType::uint16, b), 0xfffe);
  store_from_int(DType::uint32, b, -1);
  EXPECT_EQ(load_as_int(DType::uint32, b), 0xffffffffLL);
  EXPECT_EQ(load_as_int(DType::int32, b), -1);
  store_from_f32(DType::fp32, b, -0.0f);
  EXPECT_EQ(load_as_int(DType::fp32, b), 0x80000000LL); // float raw bits
}

} // namespace
} // namespace nisa
