// Vector form of activation exp (see simd.h exp_f32): the scalar and vector forms run the same
// double-precision operations (mul and add, no fma, no libm), so results are bit-identical at
// every level.
#pragma GCC optimize("O3")
// GCC 12 reports the intrinsics' internal _mm512_undefined_*() as maybe-uninitialized at O3.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

#include "interp/engines/simd.h"

namespace nisa::interp::simd {

namespace {
// x clamped to [kLo, kHi] still gives 0 / inf after the fp32 rounding (e^-110 < 2^-150,
// e^100 > 2^128), and keeps 2^k a normal double.
constexpr double kLo = -110.0, kHi = 100.0;
constexpr double kInvLn2 = 1.4426950408889634074;
constexpr double kLn2Hi = 6.93147180369123816490e-01; // fdlibm: k * hi is exact for |k| < 2^11
constexpr double kLn2Lo = 1.90821492927058770002e-10;
constexpr double kShifter = 6755399441055744.0; // 1.5 * 2^52: x + s - s rounds x to an integer
// 1/j! for j = 11 .. 2 (Horner order); the remainder on |r| <= ln2/2 is below 2^-55 relative.
constexpr double kC[] = {1.0 / 39916800, 1.0 / 3628800, 1.0 / 362880, 1.0 / 40320, 1.0 / 5040,
                         1.0 / 720,      1.0 / 120,     1.0 / 24,     1.0 / 6,     0.5};
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
  for (int j = 1; j < 10; ++j) p = p * r + kC[j];
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

NISA_AVX512 inline __m512d exp_pd512(__m512d x) {
  x = _mm512_min_pd(_mm512_max_pd(x, _mm512_set1_pd(kLo)), _mm512_set1_pd(kHi));
  const __m512d t =
      _mm512_add_pd(_mm512_mul_pd(x, _mm512_set1_pd(kInvLn2)), _mm512_set1_pd(kShifter));
  const __m512d kd = _mm512_sub_pd(t, _mm512_set1_pd(kShifter));
  const __m512d r = _mm512_sub_pd(_mm512_sub_pd(x, _mm512_mul_pd(kd, _mm512_set1_pd(kLn2Hi))),
                                  _mm512_mul_pd(kd, _mm512_set1_pd(kLn2Lo)));
  __m512d p = _mm512_set1_pd(kC[0]);
  for (int j = 1; j < 10; ++j) p = _mm512_add_pd(_mm512_mul_pd(p, r), _mm512_set1_pd(kC[j]));
  p = _mm512_add_pd(_mm512_mul_pd(p, r), _mm512_set1_pd(1.0));
  p = _mm512_add_pd(_mm512_mul_pd(p, r), _mm512_set1_pd(1.0));
  const __m512i sb =
      _mm512_slli_epi64(_mm512_add_epi64(_mm512_castpd_si512(t), _mm512_set1_epi64(1023)), 52);
  return _mm512_mul_pd(p, _mm512_castsi512_pd(sb));
}

NISA_AVX512 void exp_avx512(const float* x, uint64_t n, float scale, float bias, float* out) {
  const __m512 vs = _mm512_set1_ps(scale), vb = _mm512_set1_ps(bias);
  uint64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 a = _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(x + i), vs), vb);
    const __m512d lo = exp_pd512(_mm512_cvtps_pd(_mm512_castps512_ps256(a)));
    const __m512d hi = exp_pd512(
        _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1))));
    __m512 r = _mm512_castps256_ps512(_mm512_cvtpd_ps(lo));
    r = _mm512_castpd_ps(
        _mm512_insertf64x4(_mm512_castps_pd(r), _mm256_castps_pd(_mm512_cvtpd_ps(hi)), 1));
    // NaN lanes: a + a, as exp_f32 (the clamp would have lost them).
    r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q), _mm512_add_ps(a, a));
    _mm512_storeu_ps(out + i, r);
  }
  exp_scalar(x + i, n - i, scale, bias, out + i);
}

NISA_AVX2 inline __m256d exp_pd256(__m256d x) {
  x = _mm256_min_pd(_mm256_max_pd(x, _mm256_set1_pd(kLo)), _mm256_set1_pd(kHi));
  const __m256d t =
      _mm256_add_pd(_mm256_mul_pd(x, _mm256_set1_pd(kInvLn2)), _mm256_set1_pd(kShifter));
  const __m256d kd = _mm256_sub_pd(t, _mm256_set1_pd(kShifter));
  const __m256d r = _mm256_sub_pd(_mm256_sub_pd(x, _mm256_mul_pd(kd, _mm256_set1_pd(kLn2Hi))),
                                  _mm256_mul_pd(kd, _mm256_set1_pd(kLn2Lo)));
  __m256d p = _mm256_set1_pd(kC[0]);
  for (int j = 1; j < 10; ++j) p = _mm256_add_pd(_mm256_mul_pd(p, r), _mm256_set1_pd(kC[j]));
  p = _mm256_add_pd(_mm256_mul_pd(p, r), _mm256_set1_pd(1.0));
  p = _mm256_add_pd(_mm256_mul_pd(p, r), _mm256_set1_pd(1.0));
  const __m256i sb =
      _mm256_slli_epi64(_mm256_add_epi64(_mm256_castpd_si256(t), _mm256_set1_epi64x(1023)), 52);
  return _mm256_mul_pd(p, _mm256_castsi256_pd(sb));
}

NISA_AVX2 void exp_avx2(const float* x, uint64_t n, float scale, float bias, float* out) {
  const __m256 vs = _mm256_set1_ps(scale), vb = _mm256_set1_ps(bias);
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 a = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), vs), vb);
    const __m128 alo = _mm256_castps256_ps128(a), ahi = _mm256_extractf128_ps(a, 1);
    __m128 lo = _mm256_cvtpd_ps(exp_pd256(_mm256_cvtps_pd(alo)));
    __m128 hi = _mm256_cvtpd_ps(exp_pd256(_mm256_cvtps_pd(ahi)));
    const __m128 nlo = _mm_cmpunord_ps(alo, alo), nhi = _mm_cmpunord_ps(ahi, ahi);
    lo = _mm_blendv_ps(lo, _mm_add_ps(alo, alo), nlo);
    hi = _mm_blendv_ps(hi, _mm_add_ps(ahi, ahi), nhi);
    _mm256_storeu_ps(out + i, _mm256_set_m128(hi, lo));
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
