// Vector forms of the activation functions other than exp (simd.h math_f32 / math_row).
//
// Each function is written once, as a template over the operations of a "vector of doubles"
// (scalar double, __m256d, __m512d), and evaluated in double from the fp32 argument, then
// rounded to fp32. The three forms therefore run the same IEEE operations (mul, add, sub,
// div, sqrt, fused multiply-adds where written (O::fma; no contraction: -ffp-contract=off),
// compares and selects; no libm) and give the same bits at every level; the scalar form is the
// definition (act.cpp calls it). The scalar form is compiled twice: for FMA3 (chosen at run
// time where the host has it) and for the baseline, where Sd::fma calls libm's fma, which is
// correctly rounded: the same bits.
//
// Building blocks, in double:
// - exp (of x <= 0 only: every user's argument is): clamp at -708, k = round(x / ln 2) by
//   the 1.5 * 2^52 shifter, r = x - k ln2_hi - k ln2_lo (|r| <= ln2 / 2), e^r - 1 = r * q(r)
//   with q a degree-6 Chebyshev interpolant of (e^r - 1) / r (relative error < 2^-31), 2^k
//   through the exponent bits. e^x = s + s (e^r - 1) and e^x - 1 = s (e^r - 1) + (s - 1) (no
//   cancellation for small x; tanh clamps its argument to +-40).
// - log: x = 2^e m with m in [0.75, 1.5), log m = f P(f) with f = m - 1 (exact) and P a
//   degree-10 interpolant of log(1 + f) / f (relative error < 2^-30; no division); log(1 + y)
//   for y in [0, 1] (softplus) likewise by its own degree-10 interpolant.
// Relative errors below 2^-30, far under an fp32 half ulp (2^-24): the fp32 results equal
// those of the formulas except where the exact value lies within ~2^-6 ulp of a rounding
// boundary (tests/semantics/simd_test.cpp sweeps measure it; 1 ulp at most).
// - erf / gelu / gelu_dx: z E(z^2) below |z| = 0.75, erfc(z) = e^-z^2 R(1 / (z + 3)) above
//   (gelu through erfc for negative x: relative accuracy kept); gelu_dx by its Taylor series
//   below |x| = 1.06 (it has a root at -0.7518, where its two terms cancel).
// - sin: Cody-Waite by pi / 2 in three doubles (the first step exact) below 2^28, Payne-Hanek
//   (the scalar reduce_huge, in 128-bit integers) at and above; arctan: a three-way reduction
//   to |t| <= tan(pi / 8), one division. Interpolants from Chebyshev nodes
//   (scripts/math_interpolants.py recomputes them; the sweep tests of
//   tests/semantics/simd_test.cpp check the bounds).
// rsqrt: y0 = 1.0f / sqrtf(x) in fp32 (exact IEEE operations: the same bits everywhere),
// then one Newton step in double (relative error ~2^-44).
// sqrt and reciprocal are the fp32 instructions (sqrtps, divps) in every form: rounding the
// double result to fp32 gives the same bits (double has more than 2 * 24 + 2 bits, so the
// double rounding is innocuous for +, -, *, / and sqrt), at fp32 speed.
// NaN arguments give the argument quieted (a + a in fp32), as exp does.
#pragma GCC optimize("O3")
// GCC 12 reports the intrinsics' internal _mm512_undefined_*() as (maybe-)uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized" // the same at -O0 (Debug, ASan)
#include <immintrin.h>

#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "interp/simd/simd.h"

namespace nisa::interp::simd {

namespace {

#define NISA_AI __attribute__((always_inline)) inline

// ---- the operations, three ways ----------------------------------------------------------
struct Sd { // scalar
  using V = double;
  using M = bool;
  static NISA_AI V set(double c) { return c; }
  static NISA_AI V add(V a, V b) { return a + b; }
  static NISA_AI V sub(V a, V b) { return a - b; }
  static NISA_AI V mul(V a, V b) { return a * b; }
  static NISA_AI V div(V a, V b) { return a / b; }
  static NISA_AI V fma(V a, V b, V c) { return __builtin_fma(a, b, c); } // a * b + c, fused
  static NISA_AI V sqrt(V a) { return __builtin_sqrt(a); }
  // 1.0f / sqrtf of a (an fp32 value), in fp32, as a double
  static NISA_AI V rsqrt32(V a) { return double(1.0f / __builtin_sqrtf(float(a))); }
  // 1.0f / (float)a in fp32 (a in the fp32 normal range), as a double
  static NISA_AI V rcp32(V a) { return double(1.0f / float(a)); }
  // minpd / maxpd: the second operand when either is NaN
  static NISA_AI V min(V a, V b) { return a < b ? a : b; }
  static NISA_AI V max(V a, V b) { return a > b ? a : b; }
  // whether bit b (a power of 2) of a's representation is set
  static NISA_AI M bit(V a, uint64_t b) { return (bits(a) & b) != 0; }
  static NISA_AI bool any(M m) { return m; }
  static NISA_AI bool all(M m) { return m; }
  static NISA_AI M lt(V a, V b) { return a < b; }
  static NISA_AI M eq(V a, V b) { return a == b; }
  static NISA_AI V sel(M m, V a, V b) { return m ? a : b; }
  static NISA_AI V abs(V a) { return __builtin_fabs(a); }
  static NISA_AI uint64_t bits(V a) {
    uint64_t u;
    std::memcpy(&u, &a, 8);
    return u;
  }
  static NISA_AI V from(uint64_t u) {
    V a;
    std::memcpy(&a, &u, 8);
    return a;
  }
  // 2^k from t = k + 1.5 * 2^52 (k in the low bits of t)
  static NISA_AI V pow2(V t) { return from((bits(t) + 1023) << 52); }
  // x > 0 finite normal: x = 2^e m with m in [0.75, 1.5) (vgetmantpd's interval), e as a
  // double (other x: unspecified)
  static NISA_AI void split(V x, V& m, V& e) {
    const uint64_t u = bits(x);
    m = from((u & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull);
    e = from((u >> 52) | 0x4330000000000000ull) - (4503599627370496.0 + 1023.0);
    if (m >= 1.5) m *= 0.5, e += 1.0;
  }
};

struct S2 { // AVX2
  using V = __m256d;
  using M = __m256d;
  static NISA_AVX2 NISA_AI V set(double c) { return _mm256_set1_pd(c); }
  static NISA_AVX2 NISA_AI V add(V a, V b) { return _mm256_add_pd(a, b); }
  static NISA_AVX2 NISA_AI V sub(V a, V b) { return _mm256_sub_pd(a, b); }
  static NISA_AVX2 NISA_AI V mul(V a, V b) { return _mm256_mul_pd(a, b); }
  static NISA_AVX2 NISA_AI V div(V a, V b) { return _mm256_div_pd(a, b); }
  static NISA_AVX2 NISA_AI V fma(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
  static NISA_AVX2 NISA_AI V sqrt(V a) { return _mm256_sqrt_pd(a); }
  static NISA_AVX2 NISA_AI V rsqrt32(V a) {
    return _mm256_cvtps_pd(_mm_div_ps(_mm_set1_ps(1.0f), _mm_sqrt_ps(_mm256_cvtpd_ps(a))));
  }
  static NISA_AVX2 NISA_AI V rcp32(V a) {
    return _mm256_cvtps_pd(_mm_div_ps(_mm_set1_ps(1.0f), _mm256_cvtpd_ps(a)));
  }
  static NISA_AVX2 NISA_AI V min(V a, V b) { return _mm256_min_pd(a, b); }
  static NISA_AVX2 NISA_AI V max(V a, V b) { return _mm256_max_pd(a, b); }
  static NISA_AVX2 NISA_AI M bit(V a, uint64_t b) {
    const __m256i m = _mm256_set1_epi64x(int64_t(b));
    return _mm256_castsi256_pd(_mm256_cmpeq_epi64(_mm256_and_si256(_mm256_castpd_si256(a), m), m));
  }
  static NISA_AVX2 NISA_AI bool any(M m) { return _mm256_movemask_pd(m) != 0; }
  static NISA_AVX2 NISA_AI bool all(M m) { return _mm256_movemask_pd(m) == 0xF; }
  static NISA_AVX2 NISA_AI M lt(V a, V b) { return _mm256_cmp_pd(a, b, _CMP_LT_OQ); }
  static NISA_AVX2 NISA_AI M eq(V a, V b) { return _mm256_cmp_pd(a, b, _CMP_EQ_OQ); }
  static NISA_AVX2 NISA_AI V sel(M m, V a, V b) { return _mm256_blendv_pd(b, a, m); }
  static NISA_AVX2 NISA_AI V abs(V a) {
    return _mm256_and_pd(a, _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFFll)));
  }
  static NISA_AVX2 NISA_AI V pow2(V t) {
    return _mm256_castsi256_pd(
        _mm256_slli_epi64(_mm256_add_epi64(_mm256_castpd_si256(t), _mm256_set1_epi64x(1023)), 52));
  }
  static NISA_AVX2 NISA_AI void split(V x, V& m, V& e) {
    const __m256i u = _mm256_castpd_si256(x);
    m = _mm256_castsi256_pd(
        _mm256_or_si256(_mm256_and_si256(u, _mm256_set1_epi64x(0x000FFFFFFFFFFFFFll)),
                        _mm256_set1_epi64x(0x3FF0000000000000ll)));
    e = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(
                          _mm256_srli_epi64(u, 52), _mm256_set1_epi64x(0x4330000000000000ll))),
                      _mm256_set1_pd(4503599627370496.0 + 1023.0));
    const __m256d big = _mm256_cmp_pd(m, _mm256_set1_pd(1.5), _CMP_GE_OQ);
    m = _mm256_blendv_pd(m, _mm256_mul_pd(m, _mm256_set1_pd(0.5)), big);
    e = _mm256_add_pd(e, _mm256_and_pd(big, _mm256_set1_pd(1.0)));
  }
};

struct S5 { // AVX-512
  using V = __m512d;
  using M = __mmask8;
  static NISA_AVX512 NISA_AI V set(double c) { return _mm512_set1_pd(c); }
  static NISA_AVX512 NISA_AI V add(V a, V b) { return _mm512_add_pd(a, b); }
  static NISA_AVX512 NISA_AI V sub(V a, V b) { return _mm512_sub_pd(a, b); }
  static NISA_AVX512 NISA_AI V mul(V a, V b) { return _mm512_mul_pd(a, b); }
  static NISA_AVX512 NISA_AI V div(V a, V b) { return _mm512_div_pd(a, b); }
  static NISA_AVX512 NISA_AI V fma(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
  static NISA_AVX512 NISA_AI V sqrt(V a) { return _mm512_sqrt_pd(a); }
  static NISA_AVX512 NISA_AI V rsqrt32(V a) {
    return _mm512_cvtps_pd(_mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_sqrt_ps(_mm512_cvtpd_ps(a))));
  }
  static NISA_AVX512 NISA_AI V rcp32(V a) {
    return _mm512_cvtps_pd(_mm256_div_ps(_mm256_set1_ps(1.0f), _mm512_cvtpd_ps(a)));
  }
  static NISA_AVX512 NISA_AI V min(V a, V b) { return _mm512_min_pd(a, b); }
  static NISA_AVX512 NISA_AI V max(V a, V b) { return _mm512_max_pd(a, b); }
  static NISA_AVX512 NISA_AI M bit(V a, uint64_t b) {
    return _mm512_test_epi64_mask(_mm512_castpd_si512(a), _mm512_set1_epi64(int64_t(b)));
  }
  static NISA_AVX512 NISA_AI bool any(M m) { return m != 0; }
  static NISA_AVX512 NISA_AI bool all(M m) { return m == 0xFF; }
  static NISA_AVX512 NISA_AI M lt(V a, V b) { return _mm512_cmp_pd_mask(a, b, _CMP_LT_OQ); }
  static NISA_AVX512 NISA_AI M eq(V a, V b) { return _mm512_cmp_pd_mask(a, b, _CMP_EQ_OQ); }
  static NISA_AVX512 NISA_AI V sel(M m, V a, V b) { return _mm512_mask_blend_pd(m, b, a); }
  static NISA_AVX512 NISA_AI V abs(V a) {
    return _mm512_castsi512_pd(
        _mm512_and_si512(_mm512_castpd_si512(a), _mm512_set1_epi64(0x7FFFFFFFFFFFFFFFll)));
  }
  static NISA_AVX512 NISA_AI V pow2(V t) {
    return _mm512_castsi512_pd(
        _mm512_slli_epi64(_mm512_add_epi64(_mm512_castpd_si512(t), _mm512_set1_epi64(1023)), 52));
  }
  static NISA_AVX512 NISA_AI void split(V x, V& m, V& e) {
    m = _mm512_getmant_pd(x, _MM_MANT_NORM_p75_1p5, _MM_MANT_SIGN_zero);
    e = _mm512_getexp_pd(x);
    e = _mm512_mask_add_pd(e, _mm512_cmp_pd_mask(m, _mm512_set1_pd(1.0), _CMP_LT_OQ), e,
                           _mm512_set1_pd(1.0));
  }
};

// ---- the functions, once (simd_math_fns.inc, per target) ----------------------------------
constexpr double kInvLn2 = 1.4426950408889634074;
constexpr double kLn2Hi = 6.93147180369123816490e-01; // fdlibm: k * hi exact for |k| < 2^11
constexpr double kLn2Lo = 1.90821492927058770002e-10;
constexpr double kShifter = 6755399441055744.0; // 1.5 * 2^52
constexpr double kExpMax = 708.0;
constexpr double kInf = __builtin_inf();

// sin: below kSinHuge the vector forms reduce by Cody-Waite (O::fma, exact first step); at and
// above it (and for inf) sin_huge, the scalar exact reduction, in every form.
constexpr double kSinHuge = 268435456.0; // 2^28
// The bits of 2 / pi after the binary point, from the first (fdlibm's table, 320 bits).
constexpr uint64_t kTwoOverPi[5] = {0xA2F9836E4E441529ull, 0xFC2757D1F534DDC0ull,
                                    0xDB6295993C439041ull, 0xFE5163ABDEBBC561ull,
                                    0xB7246E3A424DD2E0ull};
uint64_t two_over_pi_bits(int s) { // the 64 bits from bit s (1 = the first)
  const int w = (s - 1) / 64, o = (s - 1) % 64;
  return o ? (kTwoOverPi[w] << o) | (kTwoOverPi[w + 1] >> (64 - o)) : kTwoOverPi[w];
}
// Payne-Hanek for an fp32 x = M 2^E with 2^28 <= |x| < 2^128 (E in [5, 104]): y = |x| 2 / pi
// mod 4 as a 128-bit fixed-point number (2 integer bits) from the 192 bits of 2 / pi that
// matter (the earlier ones give multiples of 4; truncation < 2^-100), then the quadrant and
// r = (y - round(y)) pi / 2 in double.
void reduce_huge(float x, double& r, uint64_t& q) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  const uint64_t m = (u & 0x7FFFFFu) | 0x800000u;
  const int e = int((u >> 23) & 0xFF) - 150;
  using U = unsigned __int128;
  const int s = e - 1;
  const U p0 = U(m) * two_over_pi_bits(s), p1 = U(m) * two_over_pi_bits(s + 64),
          p2 = U(m) * two_over_pi_bits(s + 128);
  const U y = (p0 << 64) + p1 + (p2 >> 64);   // (|x| 2 / pi mod 4) * 2^126
  const U f = y << 2;                         // the fraction * 2^128
  q = uint64_t(y >> 126) + (f >> 127);        // round to nearest: f >= 1/2 counts up
  const auto hi = int64_t(uint64_t(f >> 64)); // f - 1 when f >= 1/2: in [-1/2, 1/2)
  const double fd = double(hi) * 0x1p-64 + double(uint64_t(f)) * 0x1p-128;
  r = __builtin_fma(fd, 1.5707963267948966, fd * 6.123233995736766e-17);
}

namespace fs { // the scalar form on a host without FMA3 (Sd::fma calls libm's fma)
#include "interp/simd/simd_math_fns.inc"
} // namespace fs
#pragma GCC push_options
#pragma GCC target("fma")
namespace fsf { // the scalar form with the fma instruction: the same bits
#include "interp/simd/simd_math_fns.inc"
} // namespace fsf
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx2,fma,bmi,bmi2,popcnt")
namespace f2 {
#include "interp/simd/simd_math_fns.inc"
} // namespace f2
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,bmi,bmi2,popcnt")
namespace f5 {
#include "interp/simd/simd_math_fns.inc"
} // namespace f5
#pragma GCC pop_options

// Whether the host has FMA3 (every AVX2 / AVX-512 host has): the scalar form then runs fsf.
// (Before this initialiser runs, the baseline form: the same bits.) NISA_SCALAR_NO_FMA in the
// environment picks the baseline form on any host (tests: it must give the same bits).
const bool kHostFma = [] {
  __builtin_cpu_init();
  return __builtin_cpu_supports("fma") != 0 && std::getenv("NISA_SCALAR_NO_FMA") == nullptr;
}();

template <MathFn F> float scalar_base(float a) {
  if (a != a) return a + a;
  if constexpr (F == MathFn::sqrt) return __builtin_sqrtf(a);
  if constexpr (F == MathFn::reciprocal) return 1.0f / a;
  return static_cast<float>(fs::eval<Sd>(F, double(a)));
}
template <MathFn F> __attribute__((target("fma"))) float scalar_fma(float a) {
  if (a != a) return a + a;
  if constexpr (F == MathFn::sqrt) return __builtin_sqrtf(a);
  if constexpr (F == MathFn::reciprocal) return 1.0f / a;
  return static_cast<float>(fsf::eval<Sd>(F, double(a)));
}
template <MathFn F> float scalar_one(float a) {
  return kHostFma ? scalar_fma<F>(a) : scalar_base<F>(a);
}

template <MathFn F>
__attribute__((target("fma"))) void row_fma(const float* x, uint64_t n, float scale, float bias,
                                            float* out) {
  for (uint64_t i = 0; i < n; ++i) {
    const float a = x[i] * scale;
    out[i] = scalar_fma<F>(a + bias);
  }
}
template <MathFn F>
void row_scalar(const float* x, uint64_t n, float scale, float bias, float* out) {
  if (kHostFma) return row_fma<F>(x, n, scale, bias, out);
  for (uint64_t i = 0; i < n; ++i) {
    const float a = x[i] * scale;
    out[i] = scalar_base<F>(a + bias);
  }
}

NISA_AVX512 NISA_AI __m256 lo_half(__m512 a) { return _mm512_castps512_ps256(a); }
NISA_AVX512 NISA_AI __m256 hi_half(__m512 a) {
  return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1));
}
NISA_AVX512 NISA_AI __m512 join(__m256 lo, __m256 hi) {
  return _mm512_castpd_ps(
      _mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(lo)), _mm256_castps_pd(hi), 1));
}

// sin: the lanes at and above kSinHuge (and inf) take the scalar form (its exact reduction).
NISA_AVX512 void huge_lanes16(__m512 a, float* out) {
  const __mmask16 m =
      _mm512_cmp_ps_mask(_mm512_abs_ps(a), _mm512_set1_ps(float(kSinHuge)), _CMP_GE_OQ);
  if (__builtin_expect(m == 0, 1)) return;
  alignas(64) float v[16];
  _mm512_store_ps(v, a);
  for (int j = 0; j < 16; ++j)
    if (m >> j & 1) out[j] = scalar_one<MathFn::sin>(v[j]);
}
NISA_AVX2 void huge_lanes8(__m256 a, float* out) {
  const __m256 abs = _mm256_and_ps(a, _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF)));
  const int m = _mm256_movemask_ps(_mm256_cmp_ps(abs, _mm256_set1_ps(float(kSinHuge)), _CMP_GE_OQ));
  if (__builtin_expect(m == 0, 1)) return;
  alignas(32) float v[8];
  _mm256_store_ps(v, a);
  for (int j = 0; j < 8; ++j)
    if (m >> j & 1) out[j] = scalar_one<MathFn::sin>(v[j]);
}

// Two blocks of 16 floats (4 double vectors) per step: the polynomial chains are
// latency-bound, independent ones interleave.
template <MathFn F>
NISA_AVX512 void row_avx512(const float* x, uint64_t n, float scale, float bias, float* out) {
  const __m512 vs = _mm512_set1_ps(scale), vb = _mm512_set1_ps(bias);
  constexpr int kF = 2;
  uint64_t i = 0;
  if constexpr (F == MathFn::sqrt || F == MathFn::reciprocal) {
    for (; i + 16 <= n; i += 16) {
      const __m512 a = _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(x + i), vs), vb);
      __m512 r = F == MathFn::sqrt ? _mm512_sqrt_ps(a) : _mm512_div_ps(_mm512_set1_ps(1.0f), a);
      r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q), _mm512_add_ps(a, a));
      _mm512_storeu_ps(out + i, r);
    }
    return row_scalar<F>(x + i, n - i, scale, bias, out + i);
  }
  for (; i + 16 * kF <= n; i += 16 * kF) {
    __m512 a[kF];
    __m512d d[2 * kF];
#pragma GCC unroll 4
    for (int f = 0; f < kF; ++f) {
      a[f] = _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(x + i + 16 * f), vs), vb);
      d[2 * f] = _mm512_cvtps_pd(lo_half(a[f]));
      d[2 * f + 1] = _mm512_cvtps_pd(hi_half(a[f]));
    }
    f5::eval4<S5>(F, d);
#pragma GCC unroll 4
    for (int f = 0; f < kF; ++f) {
      __m512 r = join(_mm512_cvtpd_ps(d[2 * f]), _mm512_cvtpd_ps(d[2 * f + 1]));
      r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(a[f], a[f], _CMP_UNORD_Q),
                             _mm512_add_ps(a[f], a[f]));
      _mm512_storeu_ps(out + i + 16 * f, r);
      if constexpr (F == MathFn::sin) huge_lanes16(a[f], out + i + 16 * f);
    }
  }
  for (; i + 16 <= n; i += 16) {
    const __m512 a = _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(x + i), vs), vb);
    const __m512d lo = f5::eval<S5>(F, _mm512_cvtps_pd(lo_half(a)));
    const __m512d hi = f5::eval<S5>(F, _mm512_cvtps_pd(hi_half(a)));
    __m512 r = join(_mm512_cvtpd_ps(lo), _mm512_cvtpd_ps(hi));
    r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q), _mm512_add_ps(a, a));
    _mm512_storeu_ps(out + i, r);
    if constexpr (F == MathFn::sin) huge_lanes16(a, out + i);
  }
  row_scalar<F>(x + i, n - i, scale, bias, out + i);
}

template <MathFn F>
NISA_AVX2 void row_avx2(const float* x, uint64_t n, float scale, float bias, float* out) {
  const __m256 vs = _mm256_set1_ps(scale), vb = _mm256_set1_ps(bias);
  uint64_t i = 0;
  if constexpr (F == MathFn::sqrt || F == MathFn::reciprocal) {
    for (; i + 8 <= n; i += 8) {
      const __m256 a = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), vs), vb);
      __m256 r = F == MathFn::sqrt ? _mm256_sqrt_ps(a) : _mm256_div_ps(_mm256_set1_ps(1.0f), a);
      r = _mm256_blendv_ps(r, _mm256_add_ps(a, a), _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
      _mm256_storeu_ps(out + i, r);
    }
    return row_scalar<F>(x + i, n - i, scale, bias, out + i);
  }
  for (; i + 8 <= n; i += 8) {
    const __m256 a = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), vs), vb);
    const __m128 alo = _mm256_castps256_ps128(a), ahi = _mm256_extractf128_ps(a, 1);
    __m128 lo = _mm256_cvtpd_ps(f2::eval<S2>(F, _mm256_cvtps_pd(alo)));
    __m128 hi = _mm256_cvtpd_ps(f2::eval<S2>(F, _mm256_cvtps_pd(ahi)));
    lo = _mm_blendv_ps(lo, _mm_add_ps(alo, alo), _mm_cmpunord_ps(alo, alo));
    hi = _mm_blendv_ps(hi, _mm_add_ps(ahi, ahi), _mm_cmpunord_ps(ahi, ahi));
    _mm256_storeu_ps(out + i, _mm256_set_m128(hi, lo));
    if constexpr (F == MathFn::sin) huge_lanes8(a, out + i);
  }
  row_scalar<F>(x + i, n - i, scale, bias, out + i);
}

template <class G> void with_fn(MathFn f, G&& g) {
  switch (f) {
#define NISA_FN(id)                                                                                \
  case MathFn::id: g(std::integral_constant<MathFn, MathFn::id>{}); return;
    NISA_FN(log)
    NISA_FN(sqrt)
    NISA_FN(rsqrt)
    NISA_FN(reciprocal)
    NISA_FN(tanh)
    NISA_FN(sigmoid)
    NISA_FN(gelu_apprx_tanh)
    NISA_FN(gelu_apprx_sigmoid)
    NISA_FN(gelu_apprx_sigmoid_dx)
    NISA_FN(silu)
    NISA_FN(silu_dx)
    NISA_FN(softplus)
    NISA_FN(mish)
    NISA_FN(erf_dx)
    NISA_FN(gelu)
    NISA_FN(gelu_dx)
    NISA_FN(erf)
    NISA_FN(arctan)
    NISA_FN(sin)
#undef NISA_FN
  }
}

} // namespace

float math_f32(MathFn f, float x) {
  float r = x;
  with_fn(f, [&](auto fc) { r = scalar_one<decltype(fc)::value>(x); });
  return r;
}

void math_row(Level l, MathFn f, const float* x, uint64_t n, float scale, float bias, float* out) {
  with_fn(f, [&](auto fc) {
    constexpr MathFn F = decltype(fc)::value;
    switch (l) {
    case Level::avx512: return row_avx512<F>(x, n, scale, bias, out);
    case Level::avx2: return row_avx2<F>(x, n, scale, bias, out);
    case Level::scalar: return row_scalar<F>(x, n, scale, bias, out);
    }
  });
}

} // namespace nisa::interp::simd
