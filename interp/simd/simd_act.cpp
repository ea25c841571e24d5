// Vector form of activation exp (see simd.h exp_f32): the scalar and vector forms run the same
// double-precision operations (mul and add, no fma, no libm), so results are bit-identical at
// every level.
#pragma GCC optimize("O3")
// GCC 12 reports the intrinsics' internal _mm512_undefined_*() as (maybe-)uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized" // the same at -O0 (Debug, ASan)
#include <immintrin.h>

#include <cstring>

#include "interp/simd/simd.h"

namespace nisa::interp::simd {

namespace {
// x clamped to [kLo, kHi] still gives 0 / inf after the fp32 rounding (e^-110 < 2^-150,
// e^100 > 2^128), and keeps 2^k a normal double.
constexpr double kLo = -110.0, kHi = 100.0;
constexpr double kInvLn2 = 1.4426950408889634074;
constexpr double kLn2Hi = 6.93147180369123816490e-01; // fdlibm: k * hi is exact for |k| < 2^11
constexpr double kLn2Lo = 1.90821492927058770002e-10;
constexpr double kShifter = 6755399441055744.0; // 1.5 * 2^52: x + s - s rounds x to an integer
// 1/j! for j = 9 .. 2 (Horner order); the remainder on |r| <= ln2/2 is below 2^-36
// relative, far under an fp32 half ulp (2^-24): the fp32 rounding hides it nearly always.
constexpr int kTerms = 8;
constexpr double kC[kTerms] = {1.0 / 362880, 1.0 / 40320, 1.0 / 5040, 1.0 / 720,
                               1.0 / 120,    1.0 / 24,    1.0 / 6,    0.5};
} // namespace

float exp_f32(float xf) {
  if (xf != xf) return xf + xf; // NaN: quieted, payload kept (as std::exp did)
  double x = xf;
  x = x < kLo ? kLo : x;
  x = x > kHi ? kHi : x;
  const double t = x * kInvLn2 + kShifter;
  const double kd = t - kShifter;
  const double r = (x - kd * kLn2Hi) - kd * kLn2Lo;
  double p = kC[0];
  for (int j = 1; j < kTerms; ++j) p = p * r + kC[j];
  p = p * r + 1.0;
  p = p * r + 1.0;
  uint64_t tb;
  std::memcpy(&tb, &t, 8);
  const uint64_t sb = (tb + 1023) << 52; // the low bits of t hold k
  double s;
  std::memcpy(&s, &sb, 8);
  return static_cast<float>(p * s);
}

namespace {

void exp_scalar(const float* x, uint64_t n, float scale, float bias, float* out) {
  for (uint64_t i = 0; i < n; ++i) {
    const float a = x[i] * scale;
    out[i] = exp_f32(a + bias);
  }
}

// kV vectors of doubles at once: the Horner chain is latency-bound, independent chains
// interleave.
template <int kV> NISA_AVX512 inline void exp_pd512(__m512d* v) {
  __m512d t[kV], r[kV], p[kV];
#pragma GCC unroll 8
  for (int k = 0; k < kV; ++k) {
    const __m512d x = _mm512_min_pd(_mm512_max_pd(v[k], _mm512_set1_pd(kLo)), _mm512_set1_pd(kHi));
    t[k] = _mm512_add_pd(_mm512_mul_pd(x, _mm512_set1_pd(kInvLn2)), _mm512_set1_pd(kShifter));
    const __m512d kd = _mm512_sub_pd(t[k], _mm512_set1_pd(kShifter));
    r[k] = _mm512_sub_pd(_mm512_sub_pd(x, _mm512_mul_pd(kd, _mm512_set1_pd(kLn2Hi))),
                         _mm512_mul_pd(kd, _mm512_set1_pd(kLn2Lo)));
    p[k] = _mm512_set1_pd(kC[0]);
  }
#pragma GCC unroll 8
  for (int j = 1; j < kTerms; ++j)
#pragma GCC unroll 8
    for (int k = 0; k < kV; ++k)
      p[k] = _mm512_add_pd(_mm512_mul_pd(p[k], r[k]), _mm512_set1_pd(kC[j]));
#pragma GCC unroll 8
  for (int k = 0; k < kV; ++k) {
    p[k] = _mm512_add_pd(_mm512_mul_pd(p[k], r[k]), _mm512_set1_pd(1.0));
    p[k] = _mm512_add_pd(_mm512_mul_pd(p[k], r[k]), _mm512_set1_pd(1.0));
    const __m512i sb =
        _mm512_slli_epi64(_mm512_add_epi64(_mm512_castpd_si512(t[k]), _mm512_set1_epi64(1023)), 52);
    v[k] = _mm512_mul_pd(p[k], _mm512_castsi512_pd(sb));
  }
}

NISA_AVX512 inline __m256 lo_half(__m512 a) { return _mm512_castps512_ps256(a); }
NISA_AVX512 inline __m256 hi_half(__m512 a) {
  return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1));
}
NISA_AVX512 inline __m512 join(__m256 lo, __m256 hi) {
  return _mm512_castpd_ps(
      _mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(lo)), _mm256_castps_pd(hi), 1));
}

NISA_AVX512 void exp_avx512(const float* x, uint64_t n, float scale, float bias, float* out) {
  const __m512 vs = _mm512_set1_ps(scale), vb = _mm512_set1_ps(bias);
  constexpr int kF = 4; // 4 x 16 floats per step: 8 double chains
  uint64_t i = 0;
  for (; i + 16 * kF <= n; i += 16 * kF) {
    __m512 a[kF];
    __m512d d[2 * kF];
#pragma GCC unroll 4
    for (int f = 0; f < kF; ++f) {
      a[f] = _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(x + i + 16 * f), vs), vb);
      d[2 * f] = _mm512_cvtps_pd(lo_half(a[f]));
      d[2 * f + 1] = _mm512_cvtps_pd(hi_half(a[f]));
    }
    exp_pd512<2 * kF>(d);
#pragma GCC unroll 4
    for (int f = 0; f < kF; ++f) {
      __m512 r = join(_mm512_cvtpd_ps(d[2 * f]), _mm512_cvtpd_ps(d[2 * f + 1]));
      // NaN lanes: a + a, as exp_f32 (the clamp would have lost them).
      r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(a[f], a[f], _CMP_UNORD_Q),
                             _mm512_add_ps(a[f], a[f]));
      _mm512_storeu_ps(out + i + 16 * f, r);
    }
  }
  exp_scalar(x + i, n - i, scale, bias, out + i);
}

template <int kV> NISA_AVX2 inline void exp_pd256(__m256d* v) {
  __m256d t[kV], r[kV], p[kV];
#pragma GCC unroll 8
  for (int k = 0; k < kV; ++k) {
    const __m256d x = _mm256_min_pd(_mm256_max_pd(v[k], _mm256_set1_pd(kLo)), _mm256_set1_pd(kHi));
    t[k] = _mm256_add_pd(_mm256_mul_pd(x, _mm256_set1_pd(kInvLn2)), _mm256_set1_pd(kShifter));
    const __m256d kd = _mm256_sub_pd(t[k], _mm256_set1_pd(kShifter));
    r[k] = _mm256_sub_pd(_mm256_sub_pd(x, _mm256_mul_pd(kd, _mm256_set1_pd(kLn2Hi))),
                         _mm256_mul_pd(kd, _mm256_set1_pd(kLn2Lo)));
    p[k] = _mm256_set1_pd(kC[0]);
  }
#pragma GCC unroll 8
  for (int j = 1; j < kTerms; ++j)
#pragma GCC unroll 8
    for (int k = 0; k < kV; ++k)
      p[k] = _mm256_add_pd(_mm256_mul_pd(p[k], r[k]), _mm256_set1_pd(kC[j]));
#pragma GCC unroll 8
  for (int k = 0; k < kV; ++k) {
    p[k] = _mm256_add_pd(_mm256_mul_pd(p[k], r[k]), _mm256_set1_pd(1.0));
    p[k] = _mm256_add_pd(_mm256_mul_pd(p[k], r[k]), _mm256_set1_pd(1.0));
    const __m256i sb = _mm256_slli_epi64(
        _mm256_add_epi64(_mm256_castpd_si256(t[k]), _mm256_set1_epi64x(1023)), 52);
    v[k] = _mm256_mul_pd(p[k], _mm256_castsi256_pd(sb));
  }
}

NISA_AVX2 void exp_avx2(const float* x, uint64_t n, float scale, float bias, float* out) {
  const __m256 vs = _mm256_set1_ps(scale), vb = _mm256_set1_ps(bias);
  constexpr int kF = 2; // 2 x 8 floats per step: 4 double chains
  uint64_t i = 0;
  for (; i + 8 * kF <= n; i += 8 * kF) {
    __m128 a[2 * kF];
    __m256d d[2 * kF];
#pragma GCC unroll 4
    for (int f = 0; f < kF; ++f) {
      const __m256 v = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i + 8 * f), vs), vb);
      a[2 * f] = _mm256_castps256_ps128(v);
      a[2 * f + 1] = _mm256_extractf128_ps(v, 1);
    }
#pragma GCC unroll 4
    for (int k = 0; k < 2 * kF; ++k) d[k] = _mm256_cvtps_pd(a[k]);
    exp_pd256<2 * kF>(d);
#pragma GCC unroll 4
    for (int f = 0; f < kF; ++f) {
      __m128 lo = _mm256_cvtpd_ps(d[2 * f]), hi = _mm256_cvtpd_ps(d[2 * f + 1]);
      const __m128 alo = a[2 * f], ahi = a[2 * f + 1];
      lo = _mm_blendv_ps(lo, _mm_add_ps(alo, alo), _mm_cmpunord_ps(alo, alo));
      hi = _mm_blendv_ps(hi, _mm_add_ps(ahi, ahi), _mm_cmpunord_ps(ahi, ahi));
      _mm256_storeu_ps(out + i + 8 * f, _mm256_set_m128(hi, lo));
    }
  }
  exp_scalar(x + i, n - i, scale, bias, out + i);
}

} // namespace

void exp_row(Level l, const float* x, uint64_t n, float scale, float bias, float* out) {
  switch (l) {
  case Level::avx512: return exp_avx512(x, n, scale, bias, out);
  case Level::avx2: return exp_avx2(x, n, scale, bias, out);
  case Level::scalar: break;
  }
  exp_scalar(x, n, scale, bias, out);
}

} // namespace nisa::interp::simd
