// The vector kernels of issue 16 (interp/simd/simd.h): every level the host has gives the
// same bits as the scalar level and as an independent plain-loop reference from the
// definitions, on seeded inputs with NaN (several payloads), +-inf, -0.0 / +0.0, ties,
// denormals and lengths that are not multiples of the vector width.
// This file: activation exp and the other functions, iota runs, DMA dtype conversion, the level
// override.
#include "simd_common.h"

namespace nisa::interp::test {
namespace {

// ---- activation exp -----------------------------------------------------------------------------
// Distance in fp32 ulps (finite or infinite values of one sign ordered by their bits).
int64_t ulps(float a, float b) {
  auto key = [](float f) {
    const int64_t u = f32_bits(f);
    return u & 0x80000000 ? -(u & 0x7fffffff) : u;
  };
  return std::llabs(key(a) - key(b));
}

TEST(Simd, ExpWithinOneUlpOfStdExpOverASweep) {
  // Every 61st fp32 value from -104 to 89 (about 17 million), against std::exp in double.
  int64_t worst = 0, differ = 0, total = 0;
  const uint32_t neg_lo = f32_bits(-104.0f), pos_hi = f32_bits(89.0f);
  auto check = [&](float x) {
    const float want = static_cast<float>(std::exp(static_cast<double>(x)));
    const float got = simd::exp_f32(x);
    const int64_t u = ulps(got, want);
    worst = std::max(worst, u);
    differ += u != 0;
    ++total;
  };
  for (uint32_t u = 0x80000000u; u <= neg_lo; u += 61) check(bits_f32(u));
  for (uint32_t u = 0; u <= pos_hi; u += 61) check(bits_f32(u));
  EXPECT_LE(worst, 1) << differ << " of " << total << " differ";
  EXPECT_LT(differ, total / 1000) << "worst " << worst; // nearly always the same rounding
  RecordProperty("exp_ulps_worst", int(worst));
  RecordProperty("exp_ulps_differ", int(differ));
  std::printf(
      "exp sweep: %lld of %lld values differ from (float)std::exp(double), worst %lld ulp\n",
      (long long)differ, (long long)total, (long long)worst);
  // Limits and specials.
  EXPECT_EQ(simd::exp_f32(-INFINITY), 0.0f);
  EXPECT_EQ(simd::exp_f32(INFINITY), INFINITY);
  EXPECT_EQ(simd::exp_f32(89.0f), INFINITY);
  EXPECT_EQ(simd::exp_f32(-104.0f), 0.0f);
  EXPECT_EQ(simd::exp_f32(0.0f), 1.0f);
  EXPECT_EQ(simd::exp_f32(-0.0f), 1.0f);
  EXPECT_TRUE(std::isnan(simd::exp_f32(NAN)));
  EXPECT_LE(ulps(simd::exp_f32(88.72283f), static_cast<float>(std::exp(double(88.72283f)))), 1);
}

TEST(Simd, ExpRowEveryLevelBitIdentical) {
  for (uint64_t n : kLengths) {
    std::vector<float> x = nasty_row(n, 14000 + uint32_t(n), true);
    for (size_t i = 0; i < x.size(); i += 5) x[i] *= 12.0f; // reach the overflow / underflow ends
    for (float scale : {1.0f, -0.75f})
      for (float bias : {0.0f, 0.5f}) {
        std::vector<uint32_t> want(n);
        for (uint64_t i = 0; i < n; ++i) want[i] = f32_bits(simd::exp_f32(x[i] * scale + bias));
        for (Level l : levels()) {
          std::vector<float> out(n);
          simd::exp_row(l, x.data(), n, scale, bias, out.data());
          for (uint64_t i = 0; i < n; ++i) {
            ASSERT_EQ(f32_bits(out[i]), want[i]) << simd::name(l) << " n=" << n << " x=" << x[i];
            const float a = x[i] * scale + bias; // and the math: within 1 ulp of std::exp
            if (std::isnan(a)) {
              ASSERT_TRUE(std::isnan(out[i]));
              continue;
            }
            ASSERT_LE(ulps(out[i], static_cast<float>(std::exp(static_cast<double>(a)))), 1) << a;
          }
        }
      }
  }
}

// ---- the other activation functions (simd_math.cpp) ------------------------------------------
using simd::MathFn;
struct MathCase {
  MathFn f;
  const char* name;
  float lo, hi; // swept range
};
const MathCase kMath[] = {
    {MathFn::log, "log", 0.0f, 3.0e38f},
    {MathFn::sqrt, "sqrt", 0.0f, 3.0e38f},
    {MathFn::rsqrt, "rsqrt", 0.0f, 3.0e38f},
    {MathFn::reciprocal, "reciprocal", -3.0e38f, 3.0e38f},
    {MathFn::tanh, "tanh", -20.0f, 20.0f},
    {MathFn::sigmoid, "sigmoid", -80.0f, 80.0f},
    {MathFn::gelu_apprx_tanh, "gelu_apprx_tanh", -9.0f, 20.0f},
    {MathFn::gelu_apprx_sigmoid, "gelu_apprx_sigmoid", -50.0f, 50.0f},
    {MathFn::gelu_apprx_sigmoid_dx, "gelu_apprx_sigmoid_dx", -50.0f, 50.0f},
    {MathFn::silu, "silu", -80.0f, 80.0f},
    {MathFn::silu_dx, "silu_dx", -80.0f, 80.0f},
    {MathFn::softplus, "softplus", -80.0f, 80.0f},
    {MathFn::mish, "mish", -80.0f, 80.0f},
    {MathFn::erf_dx, "erf_dx", -9.0f, 9.0f},
    {MathFn::gelu, "gelu", -3.0e38f, 3.0e38f},
    {MathFn::gelu_dx, "gelu_dx", -3.0e38f, 3.0e38f},
    {MathFn::erf, "erf", -3.0e38f, 3.0e38f},
    {MathFn::arctan, "arctan", -3.0e38f, 3.0e38f},
    {MathFn::sin, "sin", -3.0e38f, 3.0e38f},
};

// The textbook formula in long double, rounded once to fp32.
float math_reference(MathFn f, float xf) {
  using L = long double;
  const L x = xf;
  auto sig = [](L v) { return 1.0L / (1.0L + std::exp(-v)); };
  auto sp = [](L v) { return std::max(v, 0.0L) + std::log1p(std::exp(-std::fabs(v))); };
  L r = 0;
  switch (f) {
  case MathFn::log: r = std::log(x); break;
  case MathFn::sqrt: r = std::sqrt(x); break;
  case MathFn::rsqrt: r = 1.0L / std::sqrt(x); break;
  case MathFn::reciprocal: r = 1.0L / x; break;
  case MathFn::tanh: r = std::tanh(x); break;
  case MathFn::sigmoid: r = sig(x); break;
  case MathFn::gelu_apprx_tanh: // 0.5 x (1 + tanh z) without the cancellation of 1 + tanh z
    r = x / (1 + std::exp(-2 * std::sqrt(2 / std::numbers::pi_v<L>) * (x + 0.044715L * x * x * x)));
    break;
  case MathFn::gelu_apprx_sigmoid: r = x * sig(1.702L * x); break;
  case MathFn::gelu_apprx_sigmoid_dx: {
    const L g = sig(1.702L * x);
    r = g * (1 + 1.702L * x * (1 - g));
    break;
  }
  case MathFn::silu: r = x * sig(x); break;
  case MathFn::silu_dx: r = sig(x) * (1 + x * (1 - sig(x))); break;
  case MathFn::softplus: r = sp(x); break;
  case MathFn::mish: r = x * std::tanh(sp(x)); break;
  case MathFn::erf_dx: r = 2 / std::sqrt(std::numbers::pi_v<L>) * std::exp(-x * x); break;
  // 0.5 x (1 + erf(x / sqrt 2)) = 0.5 x erfc(-x / sqrt 2): no cancellation for negative x
  case MathFn::gelu: r = 0.5L * x * std::erfc(-x / std::sqrt(2.0L)); break;
  case MathFn::gelu_dx:
    r = 0.5L * std::erfc(-x / std::sqrt(2.0L)) +
        x / std::sqrt(2 * std::numbers::pi_v<L>) * std::exp(-0.5L * x * x);
    break;
  case MathFn::erf: r = std::erf(x); break;
  case MathFn::arctan: r = std::atan(x); break;
  case MathFn::sin: r = std::sin(x); break;
  }
  return static_cast<float>(r);
}

// What activation computed before these vector forms: the formula in double through libm.
float math_libm(MathFn f, float xf) {
  const double x = xf;
  auto sig = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  auto sp = [](double v) { return std::max(v, 0.0) + std::log1p(std::exp(-std::fabs(v))); };
  double r = 0;
  switch (f) {
  case MathFn::log: r = std::log(x); break;
  case MathFn::sqrt: r = std::sqrt(x); break;
  case MathFn::rsqrt: r = 1.0 / std::sqrt(x); break;
  case MathFn::reciprocal: r = 1.0 / x; break;
  case MathFn::tanh: r = std::tanh(x); break;
  case MathFn::sigmoid: r = sig(x); break;
  case MathFn::gelu_apprx_tanh:
    r = 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
    break;
  case MathFn::gelu_apprx_sigmoid: r = x * sig(1.702 * x); break;
  case MathFn::gelu_apprx_sigmoid_dx: {
    const double g = sig(1.702 * x);
    r = g * (1.0 + 1.702 * x * (1.0 - g));
    break;
  }
  case MathFn::silu: r = x * sig(x); break;
  case MathFn::silu_dx: {
    const double g = sig(x);
    r = g * (1.0 + x * (1.0 - g));
    break;
  }
  case MathFn::softplus: r = sp(x); break;
  case MathFn::mish: r = x * std::tanh(sp(x)); break;
  case MathFn::erf_dx: r = 2.0 / std::sqrt(std::numbers::pi) * std::exp(-x * x); break;
  case MathFn::gelu: r = 0.5 * x * (1.0 + std::erf(x * 0.70710678118654752440)); break;
  case MathFn::gelu_dx:
    r = 0.5 * (1.0 + std::erf(x * 0.70710678118654752440)) +
        x * 0.39894228040143267794 * std::exp(-0.5 * x * x);
    break;
  case MathFn::erf: r = std::erf(x); break;
  case MathFn::arctan: r = std::atan(x); break;
  case MathFn::sin: r = std::sin(x); break;
  }
  return static_cast<float>(r);
}

TEST(Simd, MathFunctionsWithinOneUlpOfTheirFormulaOverASweep) {
  // About 200k fp32 values per sign of each range (every k-th bit pattern), against the formula
  // in long double rounded to fp32.
  for (const MathCase& c : kMath) {
    int64_t worst = 0, differ = 0, total = 0, libm_worst = 0, libm_differ = 0;
    auto sweep = [&](uint32_t from, uint32_t to) { // bit patterns [from, to], one sign
      const uint32_t step = std::max<uint32_t>(1, (to - from) / 200000);
      for (uint32_t u = from; u <= to && u >= from; u += step) {
        const float x = bits_f32(u);
        const float got = simd::math_f32(c.f, x), want = math_reference(c.f, x);
        if (std::isnan(want)) {
          ASSERT_TRUE(std::isnan(got)) << c.name << " x=" << x;
          continue;
        }
        const int64_t d = ulps(got, want);
        ASSERT_LE(d, 1) << c.name << " x=" << x << " got " << got << " want " << want;
        worst = std::max(worst, d);
        differ += d != 0;
        ++total;
        const int64_t dl = ulps(got, math_libm(c.f, x)); // reported, not asserted
        libm_worst = std::max(libm_worst, dl);
        libm_differ += dl != 0;
      }
    };
    if (c.hi > 0) sweep(c.lo > 0 ? f32_bits(c.lo) : 0u, f32_bits(c.hi));
    if (c.lo < 0) sweep(0x80000000u, f32_bits(c.lo));
    std::printf("%s: of %lld values, %lld differ from the long-double formula (worst %lld ulp), "
                "%lld from the libm formula in double (worst %lld ulp)\n",
                c.name, (long long)total, (long long)differ, (long long)worst,
                (long long)libm_differ, (long long)libm_worst);
    EXPECT_LT(differ, total / 100) << c.name;
  }
  // Limits and specials (the scalar definition).
  EXPECT_EQ(simd::math_f32(MathFn::log, 0.0f), -INFINITY);
  EXPECT_EQ(simd::math_f32(MathFn::log, INFINITY), INFINITY);
  EXPECT_EQ(simd::math_f32(MathFn::log, 1.0f), 0.0f);
  EXPECT_TRUE(std::isnan(simd::math_f32(MathFn::log, -1.0f)));
  EXPECT_EQ(simd::math_f32(MathFn::log, bits_f32(1u)), static_cast<float>(std::log(0x1p-149)));
  EXPECT_EQ(f32_bits(simd::math_f32(MathFn::tanh, -0.0f)), f32_bits(-0.0f));
  EXPECT_EQ(simd::math_f32(MathFn::tanh, INFINITY), 1.0f);
  EXPECT_EQ(simd::math_f32(MathFn::tanh, -INFINITY), -1.0f);
  EXPECT_EQ(simd::math_f32(MathFn::sigmoid, -INFINITY), 0.0f);
  EXPECT_EQ(simd::math_f32(MathFn::sigmoid, INFINITY), 1.0f);
  EXPECT_EQ(simd::math_f32(MathFn::softplus, 100.0f), 100.0f);
  EXPECT_EQ(simd::math_f32(MathFn::rsqrt, 0.0f), INFINITY);
  EXPECT_EQ(simd::math_f32(MathFn::reciprocal, -0.0f), -INFINITY);
  EXPECT_EQ(simd::math_f32(MathFn::gelu_apprx_tanh, 0.0f), 0.0f);
  EXPECT_EQ(simd::math_f32(MathFn::silu_dx, 0.0f), 0.5f);
  // Every fp32 value of the narrow ranges where the new forms are delicate: gelu_dx around its
  // root (x ~ -0.7518, where Phi(x) and x phi(x) cancel), sin around multiples of pi / 2 up
  // to 2^28 and above it (the exact reduction), erf / gelu around the 0.75 switch.
  auto dense = [&](MathFn f, float from, float to) {
    int64_t n = 0;
    for (float x = from; x <= to; x = std::nextafter(x, INFINITY), ++n) {
      const float got = simd::math_f32(f, x), want = math_reference(f, x);
      ASSERT_LE(ulps(got, want), 1) << int(f) << " x=" << x << " got " << got << " want " << want;
    }
    EXPECT_GT(n, 1000);
  };
  auto around = [&](MathFn f, float c) { // 3000 fp32 values either side of c
    dense(f, bits_f32(f32_bits(c) - 3000), bits_f32(f32_bits(c) + 3000));
  };
  dense(MathFn::gelu_dx, -0.7530f, -0.7505f);
  dense(MathFn::gelu_dx, -1.0610f, -1.0600f);
  dense(MathFn::gelu_dx, 1.0600f, 1.0610f);
  dense(MathFn::erf, 0.7495f, 0.7505f);
  dense(MathFn::gelu, -1.0610f, -1.0600f);
  for (double m : {1.0, 2.0, 3.0, 1e3, 12345.0, 1e6, 1e8}) around(MathFn::sin, float(m * M_PI_2));
  around(MathFn::sin, 0x1p28f);
  std::mt19937 g(8);
  std::uniform_int_distribution<uint32_t> big(f32_bits(0x1p28f), f32_bits(3.0e38f));
  for (int i = 0; i < 100000; ++i) { // the exact reduction over the whole range
    const float x = bits_f32(big(g) | (i & 1 ? 0x80000000u : 0u));
    ASSERT_LE(ulps(simd::math_f32(MathFn::sin, x), math_reference(MathFn::sin, x)), 1) << x;
  }
  // Limits of the new forms (gelu_dx: the limits 1 and 0; the libm formula gave NaN = inf * 0).
  EXPECT_EQ(simd::math_f32(MathFn::gelu_dx, INFINITY), 1.0f);
  EXPECT_EQ(simd::math_f32(MathFn::gelu_dx, -INFINITY), 0.0f);
  EXPECT_EQ(simd::math_f32(MathFn::gelu, INFINITY), INFINITY);
  EXPECT_EQ(f32_bits(simd::math_f32(MathFn::gelu, -INFINITY)), f32_bits(-0.0f)); // the formula: NaN
  EXPECT_EQ(simd::math_f32(MathFn::gelu, -1e30f), 0.0f);
  EXPECT_EQ(simd::math_f32(MathFn::erf, INFINITY), 1.0f);
  EXPECT_EQ(simd::math_f32(MathFn::erf, -INFINITY), -1.0f);
  EXPECT_EQ(simd::math_f32(MathFn::arctan, INFINITY), static_cast<float>(M_PI_2));
  EXPECT_EQ(simd::math_f32(MathFn::arctan, -INFINITY), -static_cast<float>(M_PI_2));
  EXPECT_TRUE(std::isnan(simd::math_f32(MathFn::sin, INFINITY)));
  EXPECT_TRUE(std::isnan(simd::math_f32(MathFn::sin, -INFINITY)));
  for (MathFn f : {MathFn::gelu, MathFn::erf, MathFn::arctan, MathFn::sin}) {
    EXPECT_EQ(f32_bits(simd::math_f32(f, -0.0f)), f32_bits(-0.0f)) << int(f);
    EXPECT_EQ(f32_bits(simd::math_f32(f, bits_f32(0x80000001u))),
              f32_bits(math_reference(f, bits_f32(0x80000001u))))
        << int(f);
  }
  EXPECT_EQ(simd::math_f32(MathFn::gelu_dx, 0.0f), 0.5f);
  const float nan = bits_f32(0x7fa00001u); // signalling: comes back quieted, payload kept
  for (const MathCase& c : kMath)
    EXPECT_EQ(f32_bits(simd::math_f32(c.f, nan)), 0x7fe00001u) << c.name;
}

TEST(Simd, MathRowEveryLevelBitIdentical) {
  for (const MathCase& c : kMath)
    for (uint64_t n : kLengths) {
      std::vector<float> x = nasty_row(n, 15000 + uint32_t(n), true);
      for (size_t i = 0; i < x.size(); i += 7) x[i] *= 20.0f; // the saturating ends
      for (size_t i = 3; i < x.size(); i += 11) x[i] = std::fabs(x[i]) * 1e-30f;
      for (size_t i = 5; i < x.size(); i += 13) x[i] *= 3e28f; // sin's exact reduction, huge args
      for (float scale : {1.0f, -0.75f})
        for (float bias : {0.0f, 0.5f}) {
          std::vector<uint32_t> want(n);
          for (uint64_t i = 0; i < n; ++i)
            want[i] = f32_bits(simd::math_f32(c.f, x[i] * scale + bias));
          for (Level l : levels()) {
            std::vector<float> out(n);
            simd::math_row(l, c.f, x.data(), n, scale, bias, out.data());
            for (uint64_t i = 0; i < n; ++i)
              ASSERT_EQ(f32_bits(out[i]), want[i])
                  << c.name << " " << simd::name(l) << " n=" << n << " x=" << x[i];
          }
        }
    }
}

// ---- iota runs ---------------------------------------------------------------------------------
TEST(Simd, IotaRunEveryLevelMatchesTheSequence) {
  // Wrapping int32 arithmetic and fp32 rounding of large values (above 2^24: ties to even).
  const uint32_t starts[] = {0u, 7u, 0x7ffffff0u, 0xfffffff9u, 16777213u, 0x80000000u};
  const int32_t steps[] = {1, -3, 1 << 20, 5, 0};
  for (uint32_t v0 : starts)
    for (int32_t st : steps)
      for (uint64_t n : kLengths) {
        std::vector<int32_t> wi(n);
        std::vector<uint32_t> wf(n);
        for (uint64_t j = 0; j < n; ++j) {
          const auto v = int32_t(v0 + uint32_t(j) * uint32_t(st)); // wraps
          wi[j] = v;
          wf[j] = f32_bits(static_cast<float>(static_cast<double>(v))); // exact, then one rounding
        }
        for (Level l : levels()) {
          std::vector<uint8_t> out(n * 4 + 1);
          ASSERT_TRUE(simd::iota_run(l, DType::int32, out.data() + 1, v0, uint32_t(st), n));
          for (uint64_t j = 0; j < n; ++j) {
            int32_t got;
            std::memcpy(&got, out.data() + 1 + 4 * j, 4);
            ASSERT_EQ(got, wi[j]) << simd::name(l) << " j=" << j;
          }
          ASSERT_TRUE(simd::iota_run(l, DType::fp32, out.data(), v0, uint32_t(st), n));
          for (uint64_t j = 0; j < n; ++j) {
            uint32_t got;
            std::memcpy(&got, out.data() + 4 * j, 4);
            ASSERT_EQ(got, wf[j]) << simd::name(l) << " j=" << j;
          }
          EXPECT_FALSE(simd::iota_run(l, DType::bf16, out.data(), v0, 1, n));
        }
      }
}

// ---- DMA dtype conversion ---------------------------------------------------------------------
TEST(Simd, ConvertRowFp32Bf16EveryLevelMatchesElementwiseRounding) {
  for (uint64_t n : kLengths) {
    std::vector<float> x = nasty_row(n, 15000 + uint32_t(n), true);
    for (size_t i = 0; i < x.size(); i += 4) // rounding ties and carries of bf16 (low half 0x8000)
      x[i] = bits_f32((f32_bits(x[i]) & 0xffff0000u) | (i % 8 == 0 ? 0x8000u : 0x7fffu));
    std::vector<uint16_t> want(n);
    std::vector<float> back(n);
    for (uint64_t i = 0; i < n; ++i) { // the rounding from the definition: RNE, NaN kept quiet
      const uint32_t u = f32_bits(x[i]);
      want[i] = (u & 0x7fffffffu) > 0x7f800000u ? uint16_t((u >> 16) | 0x40)
                                                : uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
      back[i] = bits_f32(uint32_t(want[i]) << 16);
    }
    for (Level l : levels()) {
      std::vector<uint16_t> h(n);
      ASSERT_TRUE(simd::convert_row(l, DType::fp32, reinterpret_cast<const uint8_t*>(x.data()),
                                    DType::bf16, reinterpret_cast<uint8_t*>(h.data()), n));
      for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(h[i], want[i]) << simd::name(l) << " " << x[i];
      std::vector<float> f(n);
      ASSERT_TRUE(simd::convert_row(l, DType::bf16, reinterpret_cast<const uint8_t*>(h.data()),
                                    DType::fp32, reinterpret_cast<uint8_t*>(f.data()), n));
      for (uint64_t i = 0; i < n; ++i)
        ASSERT_EQ(f32_bits(f[i]), f32_bits(back[i])) << simd::name(l);
    }
  }
  uint8_t b[4] = {};
  EXPECT_FALSE(simd::convert_row(Level::scalar, DType::fp16, b, DType::fp32, b + 2, 0));
}

// A DMA copy fp32 -> bf16 between HBM and SBUF (the row path) equals element-wise rounding.
TEST(Simd, DmaCopyConvertsRowsAtEveryLevel) {
  LevelGuard guard;
  const uint32_t P = 24, F = 301;
  const auto x = nasty_row(P * F, 16000, true);
  for (Level l : levels()) {
    ASSERT_TRUE(simd::set_level(l));
    Bench b;
    const AccessPattern src = Bench::tile(MemSpace::hbm, DType::fp32, 0, P, 0, F);
    AccessPattern h = src;
    h.part_stride = F;
    b.put(h, x);
    Inst in = make(Opcode::dma, Engine::sp);
    in.ops[1].present = in.ops[1].is_ap = true;
    in.ops[1].ap = Bench::sb(DType::bf16, P, F, 512);
    in.ops[2].present = in.ops[2].is_ap = true;
    in.ops[2].ap = h;
    sem_dma(b.cx, in);
    const auto got = b.get(Bench::sb(DType::bf16, P, F, 512));
    for (size_t i = 0; i < x.size(); ++i) {
      uint8_t h[2]; // the element-wise conversion of the Cursor path
      store_from_f32(DType::bf16, h, x[i]);
      const float want = load_as_f32(DType::bf16, h);
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(got[i]));
        continue;
      }
      ASSERT_EQ(f32_bits(got[i]), f32_bits(want)) << simd::name(l) << " at " << i;
    }
  }
}

TEST(Simd, LevelOverride) {
  LevelGuard guard;
  EXPECT_TRUE(simd::supported(Level::scalar));
  EXPECT_TRUE(simd::set_level(Level::scalar));
  EXPECT_EQ(simd::level(), Level::scalar);
  EXPECT_EQ(simd::set_level(Level::avx512), simd::supported(Level::avx512));
  EXPECT_STREQ(simd::name(Level::avx2), "avx2");
}

} // namespace
} // namespace nisa::interp::test
