// max8 of an fp32 row: the scalar form, and at AVX-512 and AVX2 the two-pass forms (lane
// maxima, a threshold, the candidates sorted) with the insertion forms they fall back to. The
// shared steps and the sorting networks are in simd_search_common.h.
#pragma GCC optimize("O3")
// GCC 12 reports the intrinsics' internal _mm512_undefined_*() as maybe-uninitialized at O3.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized" // the same at -O0 (Debug, ASan)
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "interp/simd/simd.h"
#include "interp/simd/simd_search_common.h"

namespace nisa::interp::simd {

namespace {

void max8_scalar(const float* x, uint64_t n, float out[8]) {
  float top[8];
  const uint64_t filled = top8_fill(x, n, top);
  for (uint64_t i = filled; i < n; ++i) {
    const float v = x[i];
    if (v <= top[7]) continue; // the common case; NaN falls through to the exact test
    top8_insert(top, v);
  }
  top8_out(top, filled, out);
}

// The 8th largest of k subset maxima: 8 elements of the row are >= it. The subsets are the
// lanes of the running maxima (index mod 64 / mod 32): one streaming pass, no horizontal
// reductions, and runs of large values (the rows of the folded top-K methods hold sorted
// runs) spread over all lanes, so the threshold lands near the row's 8th largest.
inline float eighth_largest(float* mx, int k) {
  std::partial_sort(mx, mx + 8, mx + k, [](float a, float b) { return a > b; });
  return mx[7];
}

// Two passes for rows without NaN (false, nothing written, when there is one): the maxima
// of 8 disjoint segments are 8 elements >= t0 (their minimum), so an element below t0 has 8
// elements ranking strictly above it and cannot be in the top 8. The second pass feeds only
// the elements >= t0 (typically a dozen), in index order, to the insertion: the same stable
// top 8 as inserting every element, without the ~8 ln(n/8) insertions a single pass makes
// while its threshold is still low.
NISA_AVX512 bool max8_two_pass_avx512(const float* x, uint64_t n, float out[8]) {
  if (n < 512) return false;
  __m512 lm[4];
  for (int k = 0; k < 4; ++k) lm[k] = _mm512_loadu_ps(x + 16 * k);
  // NaN test in the vector domain: the largest |x| bit pattern (a NaN's is > 0x7f800000), an
  // and + an unsigned max per vector; a compare mask per vector moved to a general register
  // each step was a quarter of the time on 2048-element rows.
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff);
  __m512i amax = _mm512_setzero_si512();
  uint64_t i = 0;
  for (; i + 64 <= n; i += 64)
    for (int k = 0; k < 4; ++k) {
      const __m512 v = _mm512_loadu_ps(x + i + 16 * k);
      amax = _mm512_max_epu32(amax, _mm512_and_si512(_mm512_castps_si512(v), abs_mask));
      lm[k] = _mm512_max_ps(lm[k], v);
    }
  bool nan = _mm512_cmpgt_epu32_mask(amax, _mm512_set1_epi32(0x7f800000)) != 0;
  for (; i < n; ++i) nan |= x[i] != x[i];
  if (nan) return false;
  float mx[64];
  for (int k = 0; k < 4; ++k) _mm512_storeu_ps(mx + 16 * k, lm[k]);
  const float t0 = eighth_largest(mx, 64);
  // Strict (x > t0) unless t0 is a zero: equal zeros differ in sign, so their order matters.
  const bool strict = t0 != 0.0f;
  float top[8];
  uint64_t filled = 0;
  const __m512 t = _mm512_set1_ps(t0);
  i = 0;
  for (; i + 64 <= n; i += 64) {
    __m512 v[4];
    for (int b = 0; b < 4; ++b) v[b] = _mm512_loadu_ps(x + i + 16 * b);
    // One compare of the 4 blocks' maximum first: most steps hold no candidate (no NaN here).
    const __m512 hi = _mm512_max_ps(_mm512_max_ps(v[0], v[1]), _mm512_max_ps(v[2], v[3]));
    if ((strict ? _mm512_cmp_ps_mask(hi, t, _CMP_GT_OQ) : _mm512_cmp_ps_mask(hi, t, _CMP_GE_OQ)) ==
        0)
      continue;
    uint64_t m = 0;
    for (int b = 0; b < 4; ++b) {
      const uint64_t k = strict ? _mm512_cmp_ps_mask(v[b], t, _CMP_GT_OQ)
                                : _mm512_cmp_ps_mask(v[b], t, _CMP_GE_OQ);
      m |= k << (16 * b);
    }
    for (; m; m &= m - 1) top8_add_finite(top, filled, x[i + __builtin_ctzll(m)]);
  }
  for (; i < n; ++i) {
    const float v = x[i];
    if (strict ? v > t0 : v >= t0) top8_add_finite(top, filled, v);
  }
  if (strict) top8_finish_strict(top, filled, t0);
  top8_out(top, filled, out);
  return true;
}

NISA_AVX2 bool max8_two_pass_avx2(const float* x, uint64_t n, float out[8]) {
  if (n < 512) return false;
  __m256 lm[4];
  for (int k = 0; k < 4; ++k) lm[k] = _mm256_loadu_ps(x + 8 * k);
  __m256 nan = _mm256_setzero_ps();
  uint64_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int k = 0; k < 4; ++k) {
      const __m256 v = _mm256_loadu_ps(x + i + 8 * k);
      nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
      lm[k] = _mm256_max_ps(lm[k], v);
    }
  bool any_nan = _mm256_movemask_ps(nan) != 0;
  for (; i < n; ++i) any_nan |= x[i] != x[i];
  if (any_nan) return false;
  float mx[32];
  for (int k = 0; k < 4; ++k) _mm256_storeu_ps(mx + 8 * k, lm[k]);
  const float t0 = eighth_largest(mx, 32);
  const bool strict = t0 != 0.0f; // see max8_two_pass_avx512
  float top[8];
  uint64_t filled = 0;
  const __m256 t = _mm256_set1_ps(t0);
  i = 0;
  for (; i + 32 <= n; i += 32) {
    uint32_t m = 0;
    for (int b = 0; b < 4; ++b) {
      const __m256 v = _mm256_loadu_ps(x + i + 8 * b);
      const __m256 c = strict ? _mm256_cmp_ps(v, t, _CMP_GT_OQ) : _mm256_cmp_ps(v, t, _CMP_GE_OQ);
      m |= uint32_t(_mm256_movemask_ps(c)) << (8 * b);
    }
    for (; m; m &= m - 1) top8_add_finite(top, filled, x[i + __builtin_ctz(m)]);
  }
  for (; i < n; ++i)
    if (strict ? x[i] > t0 : x[i] >= t0) top8_add_finite(top, filled, x[i]);
  if (strict) top8_finish_strict(top, filled, t0);
  top8_out(top, filled, out);
  return true;
}

// ---- max8, AVX-512: lane maxima, a threshold from a sorting network, candidates, one sort ----
// (the networks and max8_select_avx512 / _avx2: simd_search_common.h)
// The scalar end [i, n) of a max8 second pass (both levels): its candidates join c; false on
// a NaN or past kMax8Cand candidates (the row is declined).
template <bool Strict>
inline bool max8_tail(const float* x, uint64_t i, uint64_t n, float t0, float* c, int& nc) {
  for (; i < n; ++i) {
    const float v = x[i];
    if (v != v) return false;
    if (Strict ? !(v <= t0) : !(v < t0)) {
      if (nc == kMax8Cand) return false;
      c[nc++] = v;
    }
  }
  return true;
}
// Candidates of the second pass: not (x <= t), or not (x < t) (NaN either way).
template <bool Strict> NISA_AVX512 inline __mmask16 cand16(__m512 v, __m512 t) {
  return Strict ? _mm512_cmp_ps_mask(v, t, _CMP_NLE_UQ) : _mm512_cmp_ps_mask(v, t, _CMP_NLT_UQ);
}
// The second pass of max8_lanes_avx512 (Strict: x > t0, else x >= t0), prefetching `next`
// (a row of as many bytes, read next by the caller) into L1 at the rate it reads x, so the
// next row's first pass finds it there: this pass and the selection read only L1, and the
// transfer of the next row overlaps them.
template <bool Strict>
NISA_AVX512 bool max8_pass2_avx512(const float* x, uint64_t n, float t0, const void* next,
                                   float out[8]) {
  const __m512 t = _mm512_set1_ps(t0);
  alignas(64) float c[kMax8Cand];
  int nc = 0;
  __mmask16 nan = 0;
  const char* pf = static_cast<const char*>(next);
  uint64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    if (pf)
      for (int b = 0; b < 256; b += 64) _mm_prefetch(pf + 4 * i + b, _MM_HINT_T0);
    const __m512 v0 = ld512f(x + i), v1 = ld512f(x + i + 16);
    const __m512 v2 = ld512f(x + i + 32), v3 = ld512f(x + i + 48);
    const __mmask16 m0 = cand16<Strict>(v0, t), m1 = cand16<Strict>(v1, t);
    const __mmask16 m2 = cand16<Strict>(v2, t), m3 = cand16<Strict>(v3, t);
    if (_kortestz_mask16_u8(_kor_mask16(m0, m1), _kor_mask16(m2, m3))) continue;
    nan |= _mm512_cmp_ps_mask(v0, v1, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(v2, v3, _CMP_UNORD_Q);
    uint64_t m = _cvtmask64_u64(_mm512_kunpackd(_mm512_kunpackw(m3, m2), _mm512_kunpackw(m1, m0)));
    if (nc + __builtin_popcountll(m) > kMax8Cand) return false;
    for (; m; m &= m - 1) c[nc++] = x[i + __builtin_ctzll(m)];
  }
  if (!max8_tail<Strict>(x, i, n, t0, c, nc) || nan) return false;
  max8_select_avx512(c, nc, Strict ? t0 : -INFINITY, out);
  return true;
}
// Two passes over a row (the second from L1): the lane maxima (16 lanes: index mod 16, so a
// run of large values spreads over all of them) are the maxima of 16 disjoint subsets, so 8
// elements are >= the 8th largest of them, t0, and an element below t0 ranks below 8 others.
// The second pass collects x > t0 (strict: elements equal to t0 have t0's bits, and they fill
// the top 8 when fewer than 8 are above it) or, when t0 is a zero, x >= t0 (the zeros' order
// matters). NaN: max_ps(v, acc) keeps acc when v is NaN, so the maxima skip NaNs (a lane
// starting on one stays NaN: declined); the second pass compares unordered-true, so every
// NaN of the row is a candidate and the row is declined. False (nothing written) on a NaN or
// more than kMax8Cand candidates. next: see max8_pass2_avx512.
NISA_AVX512 bool max8_lanes_avx512(const float* x, uint64_t n, float out[8], const void* next) {
  if (n < 64) return false;
  if (4 * n > kPrefetchRowMax) next = nullptr;
  __m512 a0 = ld512f(x), a1 = ld512f(x + 16), a2 = ld512f(x + 32), a3 = ld512f(x + 48);
  uint64_t i = 64;
  for (; i + 64 <= n; i += 64) {
    a0 = _mm512_max_ps(ld512f(x + i), a0), a1 = _mm512_max_ps(ld512f(x + i + 16), a1);
    a2 = _mm512_max_ps(ld512f(x + i + 32), a2), a3 = _mm512_max_ps(ld512f(x + i + 48), a3);
  }
  for (; i < n; i += 16) { // the tail, masked: lanes past n keep their maxima
    const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - i)) - 1);
    a0 = _mm512_mask_max_ps(a0, m, _mm512_maskz_loadu_ps(m, x + i), a0);
  }
  const __m512 lanes = _mm512_max_ps(_mm512_max_ps(a0, a1), _mm512_max_ps(a2, a3));
  if (_mm512_cmp_ps_mask(lanes, lanes, _CMP_UNORD_Q)) return false;
  alignas(64) float s[16];
  _mm512_store_ps(s, sort16_desc(lanes));
  const float t0 = s[7];
  return t0 != 0.0f ? max8_pass2_avx512<true>(x, n, t0, next, out)
                    : max8_pass2_avx512<false>(x, n, t0, next, out);
}

// ---- the same at AVX2 -----------------------------------------------------------------------
// max8_lanes_avx512 at AVX2 (lanes: index mod 32, folded to 16 lanes).
template <bool Strict> NISA_AVX2 inline __m256 cand8(__m256 v, __m256 t) {
  return Strict ? _mm256_cmp_ps(v, t, _CMP_NLE_UQ) : _mm256_cmp_ps(v, t, _CMP_NLT_UQ);
}
// max8_pass2_avx512 at AVX2.
template <bool Strict>
NISA_AVX2 bool max8_pass2_avx2(const float* x, uint64_t n, float t0, const void* next,
                               float out[8]) {
  const __m256 t = _mm256_set1_ps(t0);
  alignas(32) float c[kMax8Cand];
  int nc = 0;
  bool nan = false;
  const char* pf = static_cast<const char*>(next);
  uint64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    if (pf)
      for (int b = 0; b < 128; b += 64) _mm_prefetch(pf + 4 * i + b, _MM_HINT_T0);
    const __m256 v0 = ld256f(x + i), v1 = ld256f(x + i + 8);
    const __m256 v2 = ld256f(x + i + 16), v3 = ld256f(x + i + 24);
    const __m256 m0 = cand8<Strict>(v0, t), m1 = cand8<Strict>(v1, t);
    const __m256 m2 = cand8<Strict>(v2, t), m3 = cand8<Strict>(v3, t);
    const __m256 any = _mm256_or_ps(_mm256_or_ps(m0, m1), _mm256_or_ps(m2, m3));
    if (_mm256_testz_ps(any, any)) continue;
    const __m256 un =
        _mm256_or_ps(_mm256_cmp_ps(v0, v1, _CMP_UNORD_Q), _mm256_cmp_ps(v2, v3, _CMP_UNORD_Q));
    nan |= !_mm256_testz_ps(un, un);
    uint32_t m = uint32_t(_mm256_movemask_ps(m0)) | uint32_t(_mm256_movemask_ps(m1)) << 8 |
                 uint32_t(_mm256_movemask_ps(m2)) << 16 | uint32_t(_mm256_movemask_ps(m3)) << 24;
    if (nc + __builtin_popcount(m) > kMax8Cand) return false;
    for (; m; m &= m - 1) c[nc++] = x[i + __builtin_ctz(m)];
  }
  if (!max8_tail<Strict>(x, i, n, t0, c, nc) || nan) return false;
  max8_select_avx2(c, nc, Strict ? t0 : -INFINITY, out);
  return true;
}
NISA_AVX2 bool max8_lanes_avx2(const float* x, uint64_t n, float out[8], const void* next) {
  if (n < 32) return false;
  if (4 * n > kPrefetchRowMax) next = nullptr;
  __m256 a0 = ld256f(x), a1 = ld256f(x + 8), a2 = ld256f(x + 16), a3 = ld256f(x + 24);
  uint64_t i = 32;
  for (; i + 32 <= n; i += 32) {
    a0 = _mm256_max_ps(ld256f(x + i), a0), a1 = _mm256_max_ps(ld256f(x + i + 8), a1);
    a2 = _mm256_max_ps(ld256f(x + i + 16), a2), a3 = _mm256_max_ps(ld256f(x + i + 24), a3);
  }
  alignas(32) float l[32];
  _mm256_store_ps(l, a0), _mm256_store_ps(l + 8, a1);
  _mm256_store_ps(l + 16, a2), _mm256_store_ps(l + 24, a3);
  for (; i < n; ++i) l[i % 32] = x[i] > l[i % 32] ? x[i] : l[i % 32]; // NaN: skipped, as above
  const __m256 h0 = _mm256_max_ps(_mm256_load_ps(l), _mm256_load_ps(l + 8));
  const __m256 h1 = _mm256_max_ps(_mm256_load_ps(l + 16), _mm256_load_ps(l + 24));
  const __m256 un =
      _mm256_or_ps(_mm256_cmp_ps(h0, h0, _CMP_UNORD_Q), _mm256_cmp_ps(h1, h1, _CMP_UNORD_Q));
  if (!_mm256_testz_ps(un, un)) return false;
  alignas(32) float s[8];
  _mm256_store_ps(s, top8_merge_desc(sort8_desc(h0), sort8_desc(h1)));
  const float t0 = s[7];
  return t0 != 0.0f ? max8_pass2_avx2<true>(x, n, t0, next, out)
                    : max8_pass2_avx2<false>(x, n, t0, next, out);
}

// Candidates: not (x <= 8th), i.e. x > 8th or unordered (NaN either side). Four blocks are
// tested per step so the common no-candidate case costs one branch per 64 elements.
NISA_AVX512 void max8_avx512(const float* x, uint64_t n, float out[8], const void* next) {
  if (max8_lanes_avx512(x, n, out, next) || max8_two_pass_avx512(x, n, out)) return;
  float top[8];
  const uint64_t filled = top8_fill(x, n, top);
  uint64_t i = filled;
  for (; i + 64 <= n; i += 64) {
    const __m512 t = _mm512_set1_ps(top[7]);
    const __mmask16 m0 = _mm512_cmp_ps_mask(_mm512_loadu_ps(x + i), t, _CMP_NLE_UQ);
    const __mmask16 m1 = _mm512_cmp_ps_mask(_mm512_loadu_ps(x + i + 16), t, _CMP_NLE_UQ);
    const __mmask16 m2 = _mm512_cmp_ps_mask(_mm512_loadu_ps(x + i + 32), t, _CMP_NLE_UQ);
    const __mmask16 m3 = _mm512_cmp_ps_mask(_mm512_loadu_ps(x + i + 48), t, _CMP_NLE_UQ);
    uint64_t m = uint64_t(m0) | uint64_t(m1) << 16 | uint64_t(m2) << 32 | uint64_t(m3) << 48;
    for (; m; m &= m - 1) top8_insert(top, x[i + __builtin_ctzll(m)]);
  }
  for (; i + 16 <= n; i += 16) {
    uint32_t m = _mm512_cmp_ps_mask(_mm512_loadu_ps(x + i), _mm512_set1_ps(top[7]), _CMP_NLE_UQ);
    for (; m; m &= m - 1) top8_insert(top, x[i + __builtin_ctz(m)]);
  }
  for (; i < n; ++i) top8_insert(top, x[i]);
  top8_out(top, filled, out);
}

NISA_AVX2 void max8_avx2(const float* x, uint64_t n, float out[8], const void* next) {
  if (max8_lanes_avx2(x, n, out, next) || max8_two_pass_avx2(x, n, out)) return;
  float top[8];
  const uint64_t filled = top8_fill(x, n, top);
  uint64_t i = filled;
  for (; i + 32 <= n; i += 32) {
    const __m256 t = _mm256_set1_ps(top[7]);
    const uint32_t m0 = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), t, _CMP_NLE_UQ));
    const uint32_t m1 =
        _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i + 8), t, _CMP_NLE_UQ));
    const uint32_t m2 =
        _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i + 16), t, _CMP_NLE_UQ));
    const uint32_t m3 =
        _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i + 24), t, _CMP_NLE_UQ));
    for (uint32_t m = m0 | m1 << 8 | m2 << 16 | m3 << 24; m; m &= m - 1)
      top8_insert(top, x[i + __builtin_ctz(m)]);
  }
  for (; i < n; ++i) top8_insert(top, x[i]);
  top8_out(top, filled, out);
}

} // namespace

void max8_row(Level l, const float* x, uint64_t n, float out[8], const void* next) {
  switch (l) {
  case Level::avx512: return max8_avx512(x, n, out, next);
  case Level::avx2: return max8_avx2(x, n, out, next);
  case Level::scalar: break;
  }
  max8_scalar(x, n, out);
}

} // namespace nisa::interp::simd
