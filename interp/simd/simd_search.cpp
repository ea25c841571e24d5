// Vector forms of the DVE search instructions (max8, find_index8, match_replace8) and of the
// max / min row fold of tensor_reduce. Each vector form tests 16 (AVX-512) or 8 (AVX2)
// elements at once for "could this element matter" and hands the few that could to the
// same scalar step as the scalar form, in index order: the results are the scalar form's,
// bit for bit (values are copied, never recomputed).
#pragma GCC optimize("O3")
// GCC 12 reports the intrinsics' internal _mm512_undefined_*() as maybe-uninitialized at O3.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized" // the same at -O0 (Debug, ASan)
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "interp/simd/simd.h"

namespace nisa::interp::simd {

namespace {

// Total order for max8: NaN above +inf, otherwise numeric.
inline bool ranks_above(float a, float b) {
  if (a != a) return b == b;
  if (b != b) return false;
  return a > b;
}

// One element into the descending top-8: enters only if it ranks strictly above the 8th, so
// among equal values the earlier ones stay (index order).
inline void top8_insert(float top[8], float v) {
  if (!ranks_above(v, top[7])) return;
  int k = 7;
  while (k > 0 && ranks_above(v, top[k - 1])) {
    top[k] = top[k - 1];
    --k;
  }
  top[k] = v;
}

// The first min(n, 8) elements sorted; returns how many.
inline uint64_t top8_fill(const float* x, uint64_t n, float top[8]) {
  const uint64_t filled = std::min<uint64_t>(n, 8);
  for (uint64_t i = 0; i < filled; ++i) {
    uint64_t k = i;
    while (k > 0 && ranks_above(x[i], top[k - 1])) {
      top[k] = top[k - 1];
      --k;
    }
    top[k] = x[i];
  }
  return filled;
}

inline void top8_out(const float top[8], uint64_t filled, float out[8]) {
  for (uint64_t i = 0; i < 8; ++i) out[i] = i < filled ? top[i] : -INFINITY;
}

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

// One element into a top list that may not be full yet (the fill of top8_fill, then
// top8_insert).
inline void top8_add(float top[8], uint64_t& filled, float v) {
  if (filled == 8) return top8_insert(top, v);
  uint64_t k = filled++;
  while (k > 0 && ranks_above(v, top[k - 1])) {
    top[k] = top[k - 1];
    --k;
  }
  top[k] = v;
}

// top8_add for a row known to hold no NaN (the same result: ranks_above is a > b there).
inline void top8_add_finite(float top[8], uint64_t& filled, float v) {
  if (filled == 8 && !(v > top[7])) return;
  uint64_t k = filled == 8 ? 7 : filled++;
  while (k > 0 && v > top[k - 1]) {
    top[k] = top[k - 1];
    --k;
  }
  top[k] = v;
}

// The 8th largest of k subset maxima: 8 elements of the row are >= it. The subsets are the
// lanes of the running maxima (index mod 64 / mod 32): one streaming pass, no horizontal
// reductions, and runs of large values (the rows of the folded top-K methods hold sorted
// runs) spread over all lanes, so the threshold lands near the row's 8th largest.
inline float eighth_largest(float* mx, int k) {
  std::partial_sort(mx, mx + 8, mx + k, [](float a, float b) { return a > b; });
  return mx[7];
}

// After the candidates x > t0 (strict): fewer than 8 means the rest of the top 8 are elements
// equal to t0, whose bits are t0's (t0 is neither NaN nor a zero: callers check).
inline void top8_finish_strict(float top[8], uint64_t& filled, float t0) {
  while (filled < 8) top8_add_finite(top, filled, t0);
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
// Bitonic sort of 16 floats, descending (no NaN: callers check). min / max return one of their
// operands, so every output is an input bit for bit except that equal zeros (-0, +0) may come
// out with the other zero's sign; sel16_fix_zeros puts them back.
constexpr uint16_t bitonic_take_min(int k, int j) {
  uint16_t m = 0;
  for (int i = 0; i < 16; ++i)
    if (((i & j) != 0) != ((i & k) != 0)) m = uint16_t(m | 1u << i);
  return m;
}
// Lane i ^ J of v: in-lane and 128-bit-block shuffles (short latency; the stages form one
// dependency chain).
template <int J> NISA_AVX512 inline __m512 xor_lanes(__m512 v) {
  if constexpr (J == 1) return _mm512_permute_ps(v, 0xb1);
  if constexpr (J == 2) return _mm512_permute_ps(v, 0x4e);
  if constexpr (J == 4) return _mm512_shuffle_f32x4(v, v, 0xb1);
  return _mm512_shuffle_f32x4(v, v, 0x4e);
}
template <int K, int J> NISA_AVX512 inline __m512 bitonic_stage(__m512 v, __m512i) {
  const __m512 p = xor_lanes<J>(v);
  constexpr __mmask16 kMin = bitonic_take_min(K, J);
  return _mm512_mask_blend_ps(kMin, _mm512_max_ps(v, p), _mm512_min_ps(v, p));
}
NISA_AVX512 inline __m512 sort16_desc(__m512 v) {
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  v = bitonic_stage<2, 1>(v, iota);
  v = bitonic_stage<4, 2>(v, iota);
  v = bitonic_stage<4, 1>(v, iota);
  v = bitonic_stage<8, 4>(v, iota);
  v = bitonic_stage<8, 2>(v, iota);
  v = bitonic_stage<8, 1>(v, iota);
  v = bitonic_stage<16, 8>(v, iota);
  v = bitonic_stage<16, 4>(v, iota);
  v = bitonic_stage<16, 2>(v, iota);
  return bitonic_stage<16, 1>(v, iota);
}

// Candidates of a NaN-free row in index order (c[0..nc)), every element not among them
// ranking below 8 others (pad: the value standing for "8 elements at least this", see
// max8_lanes_avx512): the descending stable top 8. The candidates go 16, then 8 at a time
// through the sort with the top 8 so far in lanes 0..7; the zeros among the final 8 are then
// the first zeros of c in index order (a stable sort keeps equal values in index order, and
// the only equal values with different bits are -0 and +0).
NISA_AVX2 inline void max8_select_avx2(const float* c, int nc, float pad, float out[8]);
NISA_AVX512 inline void max8_select_avx512(const float* c, int nc, float pad, float out[8]) {
  // At most 8 candidates (the common case: ties put the rest at the threshold): the 8-lane
  // network, 6 stages instead of 10.
  if (nc <= 8) return max8_select_avx2(c, nc, pad, out);
  const __m512 p = _mm512_set1_ps(pad);
  __m512 top = sort16_desc(_mm512_mask_loadu_ps(p, __mmask16((1u << std::min(nc, 16)) - 1), c));
  for (int k = 16; k < nc; k += 8) {
    const __mmask8 m = __mmask8((1u << std::min(nc - k, 8)) - 1);
    const __m256 more = _mm256_mask_loadu_ps(_mm512_castps512_ps256(p), m, c + k);
    top = sort16_desc(_mm512_insertf32x8(top, more, 1));
  }
  const __mmask16 z = _mm512_cmp_ps_mask(top, _mm512_setzero_ps(), _CMP_EQ_OQ) & 0xff;
  if (z) {
    alignas(32) float zs[8] = {};
    const int want = __builtin_popcount(z);
    for (int k = 0, got = 0; k < nc && got < want; ++k)
      if (c[k] == 0.0f) zs[got++] = c[k];
    top = _mm512_mask_expand_ps(top, z, _mm512_castps256_ps512(_mm256_load_ps(zs)));
  }
  _mm256_storeu_ps(out, _mm512_castps512_ps256(top));
}

constexpr int kMax8Cand = 128;
// Rows of at most this many bytes prefetch the caller's next row (two of them fit in L1 with
// room to spare; a longer row would evict its own second half).
constexpr uint64_t kPrefetchRowMax = 8192;

NISA_AVX512 inline __m512 ld512f(const float* x) {
  __m512 v = _mm512_loadu_ps(x);
  asm("" : "+v"(v)); // one load per vector (see ld512)
  return v;
}
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

// ---- the same at AVX2: 8-lane bitonic sorts, top 8 of two sorted vectors by one merge ------
template <int J> NISA_AVX2 inline __m256 xor_lanes8(__m256 v) {
  if constexpr (J == 1) return _mm256_permute_ps(v, 0xb1);
  if constexpr (J == 2) return _mm256_permute_ps(v, 0x4e);
  return _mm256_permute2f128_ps(v, v, 1);
}
template <int K, int J> NISA_AVX2 inline __m256 bitonic_stage8(__m256 v) {
  const __m256 p = xor_lanes8<J>(v);
  constexpr int kMin = bitonic_take_min(K, J) & 0xff;
  return _mm256_blend_ps(_mm256_max_ps(v, p), _mm256_min_ps(v, p), kMin);
}
NISA_AVX2 inline __m256 sort8_desc(__m256 v) {
  v = bitonic_stage8<2, 1>(v);
  v = bitonic_stage8<4, 2>(v);
  v = bitonic_stage8<4, 1>(v);
  v = bitonic_stage8<8, 4>(v);
  v = bitonic_stage8<8, 2>(v);
  return bitonic_stage8<8, 1>(v);
}
// The top 8 of a and b (each sorted descending), sorted descending: max(a, reversed b) holds
// them as a bitonic sequence, which three stages sort.
NISA_AVX2 inline __m256 top8_merge_desc(__m256 a, __m256 b) {
  const __m256 r = _mm256_permutevar8x32_ps(b, _mm256_setr_epi32(7, 6, 5, 4, 3, 2, 1, 0));
  __m256 v = _mm256_max_ps(a, r);
  v = bitonic_stage8<8, 4>(v);
  v = bitonic_stage8<8, 2>(v);
  return bitonic_stage8<8, 1>(v);
}
// Up to 8 floats from c (k of them), the rest pad.
NISA_AVX2 inline __m256 load8_pad(const float* c, int k, __m256 pad) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(std::min(k, 8)), lane);
  return _mm256_blendv_ps(pad, _mm256_maskload_ps(c, m), _mm256_castsi256_ps(m));
}
// max8_select_avx512 at AVX2.
NISA_AVX2 inline void max8_select_avx2(const float* c, int nc, float pad, float out[8]) {
  const __m256 p = _mm256_set1_ps(pad);
  __m256 top = sort8_desc(load8_pad(c, nc, p));
  for (int k = 8; k < nc; k += 8)
    top = top8_merge_desc(top, sort8_desc(load8_pad(c + k, nc - k, p)));
  alignas(32) float o[8];
  _mm256_store_ps(o, top);
  const __m256 z = _mm256_cmp_ps(top, _mm256_setzero_ps(), _CMP_EQ_OQ);
  if (!_mm256_testz_ps(z, z)) { // the zeros in index order (see max8_select_avx512)
    for (int k = 0, j = 0; k < nc && j < 8; ++k) {
      if (c[k] != 0.0f) continue;
      while (j < 8 && o[j] != 0.0f) ++j;
      if (j < 8) o[j++] = c[k];
    }
  }
  std::memcpy(out, o, sizeof o);
}

NISA_AVX2 inline __m256 ld256f(const float* x) {
  __m256 v = _mm256_loadu_ps(x);
  asm("" : "+x"(v)); // see ld512
  return v;
}
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

// ---- find_index8 / match_replace8 -------------------------------------------------------------
// Position of the (skip+1)-th element equal (fp32 ==: -0 matches +0, NaN matches nothing) to
// v at or after `from`, or -1.
inline int64_t nth_equal_scalar(const float* x, uint64_t from, uint64_t n, float v, int skip) {
  for (uint64_t k = from; k < n; ++k)
    if (x[k] == v && skip-- == 0) return int64_t(k);
  return -1;
}

NISA_AVX512 inline uint64_t eq64_avx512(const float* x, uint64_t i, __m512 v) {
  x += i;
  const uint64_t m0 = _mm512_cmp_ps_mask(_mm512_loadu_ps(x), v, _CMP_EQ_OQ);
  const uint64_t m1 = _mm512_cmp_ps_mask(_mm512_loadu_ps(x + 16), v, _CMP_EQ_OQ);
  const uint64_t m2 = _mm512_cmp_ps_mask(_mm512_loadu_ps(x + 32), v, _CMP_EQ_OQ);
  const uint64_t m3 = _mm512_cmp_ps_mask(_mm512_loadu_ps(x + 48), v, _CMP_EQ_OQ);
  return m0 | m1 << 16 | m2 << 32 | m3 << 48;
}
NISA_AVX2 inline uint64_t eq64_avx2(const float* x, uint64_t i, __m256 v) {
  x += i;
  uint64_t m = 0;
  for (int b = 0; b < 8; ++b)
    m |= uint64_t(
             uint32_t(_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + 8 * b), v, _CMP_EQ_OQ))))
         << (8 * b);
  return m;
}

// Applies the taken list to a 64-lane block mask at i: those positions never count.
inline uint64_t drop_taken(uint64_t m, uint64_t i, const int64_t* taken, int ntaken) {
  for (int t = 0; t < ntaken; ++t)
    if (taken[t] >= int64_t(i) && taken[t] < int64_t(i + 64))
      m &= ~(uint64_t{1} << (taken[t] - int64_t(i)));
  return m;
}
// Elements from `from` on, one by one (the tail of the vector forms).
inline int64_t nth_equal_tail(const float* x, uint64_t from, uint64_t n, float v, int skip,
                              const int64_t* taken, int ntaken) {
  for (uint64_t i = from; i < n; ++i) {
    if (!(x[i] == v)) continue;
    bool is_taken = false;
    for (int t = 0; t < ntaken; ++t) is_taken |= taken[t] == int64_t(i);
    if (!is_taken && skip-- == 0) return int64_t(i);
  }
  return -1;
}

// Position of the (skip+1)-th element equal to v (fp32 ==: -0 matches +0, NaN matches
// nothing) that is not listed in `taken` (ntaken entries, -1 allowed), or -1.
#define NISA_NTH_EQUAL_BODY(EQ)                                                                    \
  uint64_t i = 0;                                                                                  \
  for (; i + 64 <= n; i += 64) {                                                                   \
    uint64_t m = EQ(x, i, vv);                                                                     \
    if (!m) continue;                                                                              \
    m = drop_taken(m, i, taken, ntaken);                                                           \
    const int c = __builtin_popcountll(m);                                                         \
    if (c <= skip) {                                                                               \
      skip -= c;                                                                                   \
      continue;                                                                                    \
    }                                                                                              \
    for (; skip > 0; --skip) m &= m - 1;                                                           \
    return int64_t(i + __builtin_ctzll(m));                                                        \
  }                                                                                                \
  return nth_equal_tail(x, i, n, v, skip, taken, ntaken);

NISA_AVX512 int64_t nth_equal_avx512(const float* x, uint64_t n, float v, int skip,
                                     const int64_t* taken, int ntaken) {
  const __m512 vv = _mm512_set1_ps(v);
  NISA_NTH_EQUAL_BODY(eq64_avx512)
}
NISA_AVX2 int64_t nth_equal_avx2(const float* x, uint64_t n, float v, int skip,
                                 const int64_t* taken, int ntaken) {
  const __m256 vv = _mm256_set1_ps(v);
  NISA_NTH_EQUAL_BODY(eq64_avx2)
}

// j-th slot: skip as many matches as earlier slots ask for the same value.
inline int dup_rank(const float vals[8], int j) {
  int rank = 0;
  for (int i = 0; i < j; ++i) rank += vals[i] == vals[j];
  return rank;
}

void find_index8_scalar(const float* data, uint64_t n, const float vals[8], int64_t out[8]) {
  for (int j = 0; j < 8; ++j) out[j] = nth_equal_scalar(data, 0, n, vals[j], dup_rank(vals, j));
}
// ---- one-pass form: only elements inside [min, max] of the slot values can match ------------
// (fp32 ordered compares: -0 and +0 are both inside a range holding either; NaN never is.)
// When the values are a row's top 8 (a topk step), a dozen positions qualify and one pass
// over the row replaces the 8 per-slot scans; too many candidates fall back to those.
constexpr int kMaxCand = 256;

// The range of the non-NaN slot values; false when every slot is NaN (nothing can match).
inline bool slot_range(const float vals[8], float* lo, float* hi) {
  bool any = false;
  for (int j = 0; j < 8; ++j) {
    if (vals[j] != vals[j]) continue;
    *lo = any && *lo < vals[j] ? *lo : vals[j];
    *hi = any && *hi > vals[j] ? *hi : vals[j];
    any = true;
  }
  return any;
}

// Ascending positions of x[i] in [lo, hi]; false when more than kMaxCand.
NISA_AVX512 bool candidates_avx512(const float* x, uint64_t n, float lo, float hi, uint32_t* c,
                                   int* nc) {
  const __m512 vl = _mm512_set1_ps(lo), vh = _mm512_set1_ps(hi);
  int k = 0;
  uint64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    __m512 v[4];
    for (int b = 0; b < 4; ++b) v[b] = ld512f(x + i + 16 * b);
    // One compare finds most blocks without a candidate (all below lo: when the slots are the
    // row's top 8, every block but a few). max_ps drops a NaN first operand (never a
    // candidate) and returns a NaN second one, which the unordered-true compare keeps.
    const __m512 top = _mm512_max_ps(_mm512_max_ps(v[0], v[1]), _mm512_max_ps(v[2], v[3]));
    if (!_mm512_cmp_ps_mask(top, vl, _CMP_NLT_UQ)) continue;
    __mmask16 in[4];
    for (int b = 0; b < 4; ++b)
      in[b] =
          _mm512_mask_cmp_ps_mask(_mm512_cmp_ps_mask(v[b], vl, _CMP_GE_OQ), v[b], vh, _CMP_LE_OQ);
    uint64_t m = _cvtmask64_u64(
        _mm512_kunpackd(_mm512_kunpackw(in[3], in[2]), _mm512_kunpackw(in[1], in[0])));
    if (!m) continue;
    if (k + __builtin_popcountll(m) > kMaxCand) return false;
    for (; m; m &= m - 1) c[k++] = uint32_t(i + __builtin_ctzll(m));
  }
  for (; i < n; ++i)
    if (x[i] >= lo && x[i] <= hi) {
      if (k == kMaxCand) return false;
      c[k++] = uint32_t(i);
    }
  *nc = k;
  return true;
}
NISA_AVX2 bool candidates_avx2(const float* x, uint64_t n, float lo, float hi, uint32_t* c,
                               int* nc) {
  const __m256 vl = _mm256_set1_ps(lo), vh = _mm256_set1_ps(hi);
  int k = 0;
  uint64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256 v[4];
    for (int b = 0; b < 4; ++b) v[b] = ld256f(x + i + 8 * b);
    const __m256 top = _mm256_max_ps(_mm256_max_ps(v[0], v[1]), _mm256_max_ps(v[2], v[3]));
    const __m256 maybe = _mm256_cmp_ps(top, vl, _CMP_NLT_UQ); // see candidates_avx512
    if (_mm256_testz_ps(maybe, maybe)) continue;
    uint32_t m = 0;
    for (int b = 0; b < 4; ++b) {
      const __m256 in =
          _mm256_and_ps(_mm256_cmp_ps(v[b], vl, _CMP_GE_OQ), _mm256_cmp_ps(v[b], vh, _CMP_LE_OQ));
      m |= uint32_t(_mm256_movemask_ps(in)) << (8 * b);
    }
    if (!m) continue;
    if (k + __builtin_popcount(m) > kMaxCand) return false;
    for (; m; m &= m - 1) c[k++] = uint32_t(i + __builtin_ctz(m));
  }
  for (; i < n; ++i)
    if (x[i] >= lo && x[i] <= hi) {
      if (k == kMaxCand) return false;
      c[k++] = uint32_t(i);
    }
  *nc = k;
  return true;
}

// find_index8 / match_replace8 restricted to the candidate positions (same rules, same
// order: the positions left out equal no slot value).
inline void find_index8_on(const float* data, const uint32_t* c, int nc, const float vals[8],
                           int64_t out[8]) {
  for (int j = 0; j < 8; ++j) {
    int skip = dup_rank(vals, j);
    out[j] = -1;
    for (int k = 0; k < nc; ++k)
      if (data[c[k]] == vals[j] && skip-- == 0) {
        out[j] = c[k];
        break;
      }
  }
}
inline void match_replace8_on(const float* data, const uint32_t* c, int nc, const float vals[8],
                              int64_t out[8]) {
  for (int j = 7; j >= 0; --j) {
    out[j] = -1;
    for (int k = 0; k < nc; ++k) {
      if (data[c[k]] != vals[j]) continue;
      bool taken = false;
      for (int i = j + 1; i < 8; ++i) taken |= out[i] == int64_t(c[k]);
      if (taken) continue;
      out[j] = c[k];
      break;
    }
  }
}

// Candidates at level L, or false (fall back to the per-slot scans).
#define NISA_CANDIDATES(FN)                                                                        \
  float lo = 0, hi = 0;                                                                            \
  uint32_t c[kMaxCand];                                                                            \
  int nc = 0;                                                                                      \
  if (!slot_range(vals, &lo, &hi)) {                                                               \
    for (int j = 0; j < 8; ++j) out[j] = -1;                                                       \
    return;                                                                                        \
  }                                                                                                \
  const bool few = FN(data, n, lo, hi, c, &nc);

NISA_AVX512 void find_index8_avx512(const float* data, uint64_t n, const float vals[8],
                                    int64_t out[8]) {
  NISA_CANDIDATES(candidates_avx512)
  if (few) return find_index8_on(data, c, nc, vals, out);
  for (int j = 0; j < 8; ++j)
    out[j] = nth_equal_avx512(data, n, vals[j], dup_rank(vals, j), nullptr, 0);
}
NISA_AVX2 void find_index8_avx2(const float* data, uint64_t n, const float vals[8],
                                int64_t out[8]) {
  NISA_CANDIDATES(candidates_avx2)
  if (few) return find_index8_on(data, c, nc, vals, out);
  for (int j = 0; j < 8; ++j)
    out[j] = nth_equal_avx2(data, n, vals[j], dup_rank(vals, j), nullptr, 0);
}

// Slots 7..0, each taking the first position equal to its value that no later slot took.
void match_replace8_scalar(const float* data, uint64_t n, const float vals[8], int64_t out[8]) {
  for (int j = 7; j >= 0; --j) {
    out[j] = -1;
    for (uint64_t k = 0; k < n; ++k) {
      if (data[k] != vals[j]) continue;
      bool taken = false;
      for (int i = j + 1; i < 8; ++i) taken |= out[i] == static_cast<int64_t>(k);
      if (taken) continue;
      out[j] = static_cast<int64_t>(k);
      break;
    }
  }
}
NISA_AVX512 void match_replace8_avx512(const float* data, uint64_t n, const float vals[8],
                                       int64_t out[8]) {
  NISA_CANDIDATES(candidates_avx512)
  if (few) return match_replace8_on(data, c, nc, vals, out);
  for (int j = 7; j >= 0; --j) out[j] = nth_equal_avx512(data, n, vals[j], 0, out + j + 1, 7 - j);
}
NISA_AVX2 void match_replace8_avx2(const float* data, uint64_t n, const float vals[8],
                                   int64_t out[8]) {
  NISA_CANDIDATES(candidates_avx2)
  if (few) return match_replace8_on(data, c, nc, vals, out);
  for (int j = 7; j >= 0; --j) out[j] = nth_equal_avx2(data, n, vals[j], 0, out + j + 1, 7 - j);
}

// ---- bf16 rows: the search in the int16 domain --------------------------------------------------
// A bf16 element's bits h as an int16 key in the order of the values: h when the sign bit is
// clear, h ^ 0x7fff when it is set. -0 (key -1) sits just below +0 (key 0); the NaNs lie
// outside the keys of [-inf, +inf] (positive ones above +inf's 0x7f80, negative ones below
// -inf's). The map is its own inverse. Compares on keys, or on the raw bits where one compare
// does it, test 32 (AVX-512) or 16 (AVX2) elements per instruction without widening; the
// elements that could matter go, widened to fp32 (exact), to the same steps as the fp32 forms,
// in index order, so the results are those of the fp32 forms on the converted row.
inline int16_t bf16_key(uint16_t h) { return int16_t(h & 0x8000 ? h ^ 0x7fff : h); }
inline uint16_t bf16_bits(const uint8_t* x, uint64_t i) {
  uint16_t h;
  std::memcpy(&h, x + 2 * i, 2);
  return h;
}
inline float bf16_float(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline bool bf16_nan(uint16_t h) { return (h & 0x7fff) > 0x7f80; }

// ---- max8 of a bf16 row: two passes (see max8_two_pass_512) ---------------------------------
// Pass 1 keeps, per lane (index mod 64, folded to index mod 32), the signed maximum, the
// unsigned minimum and the unsigned maximum of the raw bits. A lane's largest value is its
// signed maximum when that has the sign bit clear (a value >= +0), else its unsigned minimum
// (every element negative: the one nearest zero). NaN: a signed maximum above 0x7f80 (a
// positive NaN) or an unsigned maximum above 0xff80 (a negative one).
// The 8th largest lane key tk has 8 elements at or above it. Pass 2 takes, in index order:
//   tk > 0:        raw >s tk                        (x > t0, strict; then fill with t0)
//   tk = 0 or -1:  raw <=u 0x8000                   (x >= 0: both zeros, their order matters)
//   tk < -1:       raw <u (tk ^ 0x7fff)             (x > t0, strict; then fill with t0)
// Elements left out have a key below tk (strictly below t0 when t0 is not a zero), so 8
// elements rank above them.
constexpr uint64_t kBf16Max8Min = 256;

// Pass-2 predicate on raw bits: signed greater than T (Gt) or unsigned less than T.
struct Bf16Sel {
  bool gt;
  uint16_t t;
  bool strict;
  float t0;
};
inline bool bf16_sel(const Bf16Sel& s, uint16_t h) {
  return s.gt ? int16_t(h) > int16_t(s.t) : h < s.t;
}
inline Bf16Sel bf16_select(int16_t tk) {
  const float t0 = bf16_float(uint16_t(bf16_key(uint16_t(tk))));
  if (tk > 0) return {true, uint16_t(tk), true, t0};
  if (tk >= -1) return {false, 0x8001, false, t0};
  return {false, uint16_t(uint16_t(tk) ^ 0x7fff), true, t0};
}
// Lane keys (32 lanes, index mod 32) plus the tail elements from i on into their lanes; false
// on a NaN.
// (raw: the signed maxima of the raw bits instead of the keys, see max8_bf16_avx512.)
inline bool bf16_tail_lanes(const uint8_t* x, uint64_t i, uint64_t n, int16_t k[32], bool raw) {
  for (; i < n; ++i) {
    const uint16_t h = bf16_bits(x, i);
    if (bf16_nan(h)) return false;
    k[i % 32] = std::max(k[i % 32], raw ? int16_t(h) : bf16_key(h));
  }
  return true;
}
inline void bf16_candidates_tail(const uint8_t* x, uint64_t i, uint64_t n, const Bf16Sel& s,
                                 float top[8], uint64_t& filled) {
  for (; i < n; ++i) {
    const uint16_t h = bf16_bits(x, i);
    if (bf16_sel(s, h)) top8_add_finite(top, filled, bf16_float(h));
  }
}
inline void bf16_max8_finish(const Bf16Sel& s, float top[8], uint64_t filled, float out[8]) {
  if (s.strict) top8_finish_strict(top, filled, s.t0);
  top8_out(top, filled, out);
}

// The 8th largest of 16 of the lane keys: the 32 lanes (index mod 32) folded to 16 (index mod
// 16, the maxima of 16 disjoint subsets: 8 elements have a key at or above the result), by a
// bitonic network on the 16 int16 lanes of one ymm (one-cycle shuffles, min / max and blends
// but for the 128-bit swap: about half the latency of the fp32 network on widened keys).
template <int J> NISA_AVX2 inline __m256i xor_lanes16(__m256i v) {
  if constexpr (J == 1)
    return _mm256_shuffle_epi8(v, _mm256_setr_epi8(2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12,
                                                   13, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15,
                                                   12, 13));
  if constexpr (J == 2) return _mm256_shuffle_epi32(v, 0xb1);
  if constexpr (J == 4) return _mm256_shuffle_epi32(v, 0x4e);
  return _mm256_permute2x128_si256(v, v, 1);
}
template <int K, int J> NISA_AVX2 inline __m256i bitonic_stage16(__m256i v) {
  constexpr uint16_t kMin = bitonic_take_min(K, J);
  const __m256i take_min =
      _mm256_setr_epi16(-(kMin >> 0 & 1), -(kMin >> 1 & 1), -(kMin >> 2 & 1), -(kMin >> 3 & 1),
                        -(kMin >> 4 & 1), -(kMin >> 5 & 1), -(kMin >> 6 & 1), -(kMin >> 7 & 1),
                        -(kMin >> 8 & 1), -(kMin >> 9 & 1), -(kMin >> 10 & 1), -(kMin >> 11 & 1),
                        -(kMin >> 12 & 1), -(kMin >> 13 & 1), -(kMin >> 14 & 1), -(kMin >> 15 & 1));
  const __m256i p = xor_lanes16<J>(v);
  return _mm256_blendv_epi8(_mm256_max_epi16(v, p), _mm256_min_epi16(v, p), take_min);
}
NISA_AVX2 inline int16_t eighth_largest_key16(__m256i h) {
  h = bitonic_stage16<2, 1>(h);
  h = bitonic_stage16<4, 2>(h);
  h = bitonic_stage16<4, 1>(h);
  h = bitonic_stage16<8, 4>(h);
  h = bitonic_stage16<8, 2>(h);
  h = bitonic_stage16<8, 1>(h);
  h = bitonic_stage16<16, 8>(h);
  h = bitonic_stage16<16, 4>(h);
  h = bitonic_stage16<16, 2>(h);
  h = bitonic_stage16<16, 1>(h);
  return int16_t(_mm256_extract_epi16(h, 7));
}
NISA_AVX512 int16_t eighth_largest_key_avx512(__m512i c) {
  return eighth_largest_key16(
      _mm256_max_epi16(_mm512_castsi512_si256(c), _mm512_extracti64x4_epi64(c, 1)));
}
NISA_AVX2 int16_t eighth_largest_key_avx2(__m256i c0, __m256i c1) {
  return eighth_largest_key16(_mm256_max_epi16(c0, c1));
}

// One load per vector: GCC otherwise folds the load into each operation that uses it (three
// loads of the same bytes in pass 1 of max8, which then runs at the load ports' rate).
NISA_AVX512 inline __m512i ld512(const uint8_t* x, uint64_t i) {
  __m512i v = _mm512_loadu_si512(x + 2 * i);
  asm("" : "+v"(v));
  return v;
}
NISA_AVX512 inline __m512i lane_keys_avx512(__m512i smax, __m512i umin) {
  return _mm512_mask_mov_epi16(smax, _mm512_movepi16_mask(smax),
                               _mm512_xor_si512(umin, _mm512_set1_epi16(0x7fff)));
}

// Pass 1 first keeps only the signed maxima (and the NaN test): lanes holding a value >= +0
// have their maximum there (its bits are its key). When 8 lanes do (the 8th largest signed
// maximum is >= 0), the lanes without one rank below and that is the threshold; otherwise a
// second pass takes every lane's maximum (the unsigned minima too).
NISA_AVX512 inline __m512i lanes_with_tail_avx512(__m512i c, const uint8_t* x, uint64_t i,
                                                  uint64_t n, bool raw, bool* ok) {
  *ok = true;
  if (i == n) return c;
  alignas(64) int16_t k[32];
  _mm512_store_si512(k, c);
  *ok = bf16_tail_lanes(x, i, n, k, raw);
  return _mm512_load_si512(k);
}
// Pass 2 of max8_bf16_avx512 into a candidate list and max8_select_avx512 (Gt: sel.gt),
// prefetching `next` as max8_pass2_avx512 does; false when the candidates are more than
// kMax8Cand (the insertion form then takes the row).
template <bool Gt>
NISA_AVX512 bool max8_bf16_collect_avx512(const uint8_t* x, uint64_t n, const Bf16Sel& sel,
                                          const void* next, float out[8]) {
  const __m512i t = _mm512_set1_epi16(int16_t(sel.t));
  alignas(64) float c[kMax8Cand];
  int nc = 0;
  const char* pf = static_cast<const char*>(next);
  uint64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    if (pf) _mm_prefetch(pf + 2 * i, _MM_HINT_T0), _mm_prefetch(pf + 2 * i + 64, _MM_HINT_T0);
    const __m512i v0 = ld512(x, i), v1 = ld512(x, i + 32);
    if (Gt ? !_mm512_cmpgt_epi16_mask(_mm512_max_epi16(v0, v1), t)
           : !_mm512_cmplt_epu16_mask(_mm512_min_epu16(v0, v1), t))
      continue;
    const __mmask32 m0 = Gt ? _mm512_cmpgt_epi16_mask(v0, t) : _mm512_cmplt_epu16_mask(v0, t);
    const __mmask32 m1 = Gt ? _mm512_cmpgt_epi16_mask(v1, t) : _mm512_cmplt_epu16_mask(v1, t);
    uint64_t m = _cvtmask64_u64(_mm512_kunpackd(m1, m0));
    if (nc + __builtin_popcountll(m) > kMax8Cand) return false;
    for (; m; m &= m - 1) c[nc++] = bf16_float(bf16_bits(x, i + __builtin_ctzll(m)));
  }
  for (; i < n; ++i) {
    const uint16_t h = bf16_bits(x, i);
    if (!bf16_sel(sel, h)) continue;
    if (nc == kMax8Cand) return false;
    c[nc++] = bf16_float(h);
  }
  max8_select_avx512(c, nc, sel.strict ? sel.t0 : -INFINITY, out);
  return true;
}
NISA_AVX512 bool max8_bf16_avx512(const uint8_t* x, uint64_t n, float out[8], const void* next) {
  if (n < kBf16Max8Min) return false;
  __m512i s0 = ld512(x, 0), s1 = ld512(x, 32), h = _mm512_max_epu16(s0, s1);
  uint64_t i = 64;
  for (; i + 64 <= n; i += 64) {
    const __m512i v0 = ld512(x, i), v1 = ld512(x, i + 32);
    s0 = _mm512_max_epi16(s0, v0), s1 = _mm512_max_epi16(s1, v1);
    h = _mm512_max_epu16(h, _mm512_max_epu16(v0, v1));
  }
  if (_mm512_cmpgt_epi16_mask(_mm512_max_epi16(s0, s1), _mm512_set1_epi16(0x7f80)) ||
      _mm512_cmpgt_epu16_mask(h, _mm512_set1_epi16(int16_t(0xff80))))
    return false;
  bool ok;
  __m512i c = lanes_with_tail_avx512(_mm512_max_epi16(s0, s1), x, i, n, true, &ok);
  if (!ok) return false;
  int16_t tk = eighth_largest_key_avx512(c);
  if (tk < 0) {
    __m512i u0 = ld512(x, 0), u1 = ld512(x, 32);
    s0 = u0, s1 = u1;
    for (i = 64; i + 64 <= n; i += 64) {
      const __m512i v0 = ld512(x, i), v1 = ld512(x, i + 32);
      s0 = _mm512_max_epi16(s0, v0), s1 = _mm512_max_epi16(s1, v1);
      u0 = _mm512_min_epu16(u0, v0), u1 = _mm512_min_epu16(u1, v1);
    }
    c = _mm512_max_epi16(lane_keys_avx512(s0, u0), lane_keys_avx512(s1, u1));
    tk = eighth_largest_key_avx512(lanes_with_tail_avx512(c, x, i, n, false, &ok));
  }
  const Bf16Sel sel = bf16_select(tk);
  if (2 * n > kPrefetchRowMax) next = nullptr;
  if (sel.gt ? max8_bf16_collect_avx512<true>(x, n, sel, next, out)
             : max8_bf16_collect_avx512<false>(x, n, sel, next, out))
    return true;
  const __m512i t = _mm512_set1_epi16(int16_t(sel.t));
  float top[8];
  uint64_t filled = 0;
  i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512i v0 = ld512(x, i), v1 = ld512(x, i + 32);
    // One compare finds the blocks without a candidate (the common case).
    if (sel.gt ? !_mm512_cmpgt_epi16_mask(_mm512_max_epi16(v0, v1), t)
               : !_mm512_cmplt_epu16_mask(_mm512_min_epu16(v0, v1), t))
      continue;
    const __mmask32 m0 = sel.gt ? _mm512_cmpgt_epi16_mask(v0, t) : _mm512_cmplt_epu16_mask(v0, t);
    const __mmask32 m1 = sel.gt ? _mm512_cmpgt_epi16_mask(v1, t) : _mm512_cmplt_epu16_mask(v1, t);
    uint64_t m = _cvtmask64_u64(_mm512_kunpackd(m1, m0));
    for (; m; m &= m - 1)
      top8_add_finite(top, filled, bf16_float(bf16_bits(x, i + __builtin_ctzll(m))));
  }
  bf16_candidates_tail(x, i, n, sel, top, filled);
  bf16_max8_finish(sel, top, filled, out);
  return true;
}

NISA_AVX2 inline __m256i ld256(const uint8_t* x, uint64_t i) {
  __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 2 * i));
  asm("" : "+x"(v)); // see ld512
  return v;
}
NISA_AVX2 inline __m256i lane_keys_avx2(__m256i smax, __m256i umin) {
  return _mm256_blendv_epi8(smax, _mm256_xor_si256(umin, _mm256_set1_epi16(0x7fff)),
                            _mm256_srai_epi16(smax, 15));
}
// 32 compare results (lanes 0 / -1 of 16 bits: a = elements 0..15, b = 16..31) as a bit mask.
NISA_AVX2 inline uint32_t mask32_epi16(__m256i a, __m256i b) {
  return uint32_t(_mm256_movemask_epi8(_mm256_permute4x64_epi64(_mm256_packs_epi16(a, b), 0xD8)));
}

// 32 lanes in two vectors, plus the tail elements from i on (see lanes_with_tail_avx512).
NISA_AVX2 inline void lanes_with_tail_avx2(__m256i* c0, __m256i* c1, const uint8_t* x, uint64_t i,
                                           uint64_t n, bool raw, bool* ok) {
  *ok = true;
  if (i == n) return;
  alignas(32) int16_t k[32];
  _mm256_store_si256(reinterpret_cast<__m256i*>(k), *c0);
  _mm256_store_si256(reinterpret_cast<__m256i*>(k + 16), *c1);
  *ok = bf16_tail_lanes(x, i, n, k, raw);
  *c0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(k));
  *c1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(k + 16));
}
// max8_bf16_collect_avx512 at AVX2 (unsigned x < T as signed (T ^ 0x8000) > (x ^ 0x8000)).
template <bool Gt>
NISA_AVX2 bool max8_bf16_collect_avx2(const uint8_t* x, uint64_t n, const Bf16Sel& sel,
                                      const void* next, float out[8]) {
  const __m256i flip = _mm256_set1_epi16(Gt ? 0 : int16_t(0x8000));
  const __m256i t = _mm256_xor_si256(_mm256_set1_epi16(int16_t(sel.t)), flip);
  alignas(32) float c[kMax8Cand];
  int nc = 0;
  const char* pf = static_cast<const char*>(next);
  uint64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    if (pf) _mm_prefetch(pf + 2 * i, _MM_HINT_T0), _mm_prefetch(pf + 2 * i + 64, _MM_HINT_T0);
    __m256i v[4];
    for (int b = 0; b < 4; ++b) v[b] = ld256(x, i + 16 * b);
    const __m256i e =
        Gt ? _mm256_max_epi16(_mm256_max_epi16(v[0], v[1]), _mm256_max_epi16(v[2], v[3]))
           : _mm256_min_epu16(_mm256_min_epu16(v[0], v[1]), _mm256_min_epu16(v[2], v[3]));
    const __m256i ef = _mm256_xor_si256(e, flip);
    const __m256i any = Gt ? _mm256_cmpgt_epi16(ef, t) : _mm256_cmpgt_epi16(t, ef);
    if (_mm256_testz_si256(any, any)) continue;
    __m256i cm[4];
    for (int b = 0; b < 4; ++b) {
      const __m256i vf = _mm256_xor_si256(v[b], flip);
      cm[b] = Gt ? _mm256_cmpgt_epi16(vf, t) : _mm256_cmpgt_epi16(t, vf);
    }
    uint64_t m = uint64_t(mask32_epi16(cm[0], cm[1])) | uint64_t(mask32_epi16(cm[2], cm[3])) << 32;
    if (nc + __builtin_popcountll(m) > kMax8Cand) return false;
    for (; m; m &= m - 1) c[nc++] = bf16_float(bf16_bits(x, i + __builtin_ctzll(m)));
  }
  for (; i < n; ++i) {
    const uint16_t h = bf16_bits(x, i);
    if (!bf16_sel(sel, h)) continue;
    if (nc == kMax8Cand) return false;
    c[nc++] = bf16_float(h);
  }
  max8_select_avx2(c, nc, sel.strict ? sel.t0 : -INFINITY, out);
  return true;
}
NISA_AVX2 bool max8_bf16_avx2(const uint8_t* x, uint64_t n, float out[8], const void* next) {
  if (n < kBf16Max8Min) return false;
  __m256i s0 = ld256(x, 0), s1 = ld256(x, 16), h = _mm256_max_epu16(s0, s1);
  uint64_t i = 32;
  for (; i + 32 <= n; i += 32) {
    const __m256i v0 = ld256(x, i), v1 = ld256(x, i + 16);
    s0 = _mm256_max_epi16(s0, v0), s1 = _mm256_max_epi16(s1, v1);
    h = _mm256_max_epu16(h, _mm256_max_epu16(v0, v1));
  }
  // NaN: signed maximum above 0x7f80, or unsigned maximum above 0xff80 (max_epu16 with 0xff80
  // changes it).
  const __m256i sm = _mm256_max_epi16(s0, s1);
  const __m256i ff80 = _mm256_set1_epi16(int16_t(0xff80));
  if (!_mm256_testz_si256(_mm256_cmpgt_epi16(sm, _mm256_set1_epi16(0x7f80)),
                          _mm256_set1_epi8(-1)) ||
      !_mm256_testc_si256(_mm256_cmpeq_epi16(_mm256_max_epu16(h, ff80), ff80),
                          _mm256_set1_epi8(-1)))
    return false;
  bool ok;
  __m256i c0 = s0, c1 = s1;
  lanes_with_tail_avx2(&c0, &c1, x, i, n, true, &ok);
  if (!ok) return false;
  int16_t tk = eighth_largest_key_avx2(c0, c1);
  if (tk < 0) { // see max8_bf16_avx512
    __m256i u0 = ld256(x, 0), u1 = ld256(x, 16);
    s0 = u0, s1 = u1;
    for (i = 32; i + 32 <= n; i += 32) {
      const __m256i v0 = ld256(x, i), v1 = ld256(x, i + 16);
      s0 = _mm256_max_epi16(s0, v0), s1 = _mm256_max_epi16(s1, v1);
      u0 = _mm256_min_epu16(u0, v0), u1 = _mm256_min_epu16(u1, v1);
    }
    c0 = lane_keys_avx2(s0, u0), c1 = lane_keys_avx2(s1, u1);
    lanes_with_tail_avx2(&c0, &c1, x, i, n, false, &ok);
    tk = eighth_largest_key_avx2(c0, c1);
  }
  const Bf16Sel sel = bf16_select(tk);
  if (2 * n > kPrefetchRowMax) next = nullptr;
  if (sel.gt ? max8_bf16_collect_avx2<true>(x, n, sel, next, out)
             : max8_bf16_collect_avx2<false>(x, n, sel, next, out))
    return true;
  // Unsigned x < T as signed (T ^ 0x8000) > (x ^ 0x8000).
  const __m256i flip = _mm256_set1_epi16(sel.gt ? 0 : int16_t(0x8000));
  const __m256i t = _mm256_xor_si256(_mm256_set1_epi16(int16_t(sel.t)), flip);
  float top[8];
  uint64_t filled = 0;
  i = 0;
  for (; i + 64 <= n; i += 64) {
    __m256i v[4];
    for (int b = 0; b < 4; ++b) v[b] = ld256(x, i + 16 * b);
    // One compare finds the blocks without a candidate: of the signed maximum (gt), or of the
    // unsigned minimum.
    const __m256i e =
        sel.gt ? _mm256_max_epi16(_mm256_max_epi16(v[0], v[1]), _mm256_max_epi16(v[2], v[3]))
               : _mm256_min_epu16(_mm256_min_epu16(v[0], v[1]), _mm256_min_epu16(v[2], v[3]));
    const __m256i ef = _mm256_xor_si256(e, flip);
    const __m256i any = sel.gt ? _mm256_cmpgt_epi16(ef, t) : _mm256_cmpgt_epi16(t, ef);
    if (_mm256_testz_si256(any, any)) continue;
    __m256i c[4];
    for (int b = 0; b < 4; ++b) {
      const __m256i vf = _mm256_xor_si256(v[b], flip);
      c[b] = sel.gt ? _mm256_cmpgt_epi16(vf, t) : _mm256_cmpgt_epi16(t, vf);
    }
    uint64_t m = uint64_t(mask32_epi16(c[0], c[1])) | uint64_t(mask32_epi16(c[2], c[3])) << 32;
    for (; m; m &= m - 1)
      top8_add_finite(top, filled, bf16_float(bf16_bits(x, i + __builtin_ctzll(m))));
  }
  bf16_candidates_tail(x, i, n, sel, top, filled);
  bf16_max8_finish(sel, top, filled, out);
  return true;
}

// ---- find_index8 / match_replace8 of a bf16 row ---------------------------------------------
// [klo, khi]: the keys of the bf16 values in [lo, hi] (lo <= hi, neither NaN), with both zeros
// when either is inside. key32 is the same map on fp32 bits: monotone, and key32 >> 16 of a
// bf16 value is its key, so key32(f) >> 16 is the key of the greatest bf16 value <= f.
inline float bf16_of_key(int k) { return bf16_float(uint16_t(bf16_key(uint16_t(k)))); }
inline void bf16_key_range(float lo, float hi, int16_t* klo, int16_t* khi) {
  auto key32 = [](float f) {
    int32_t u;
    std::memcpy(&u, &f, 4);
    return u < 0 ? u ^ 0x7fffffff : u;
  };
  int l = key32(lo) >> 16, h = key32(hi) >> 16;
  if (bf16_of_key(l) < lo) ++l; // the least bf16 value >= lo
  if (l == 0) l = -1;           // +0: -0 equals it
  if (h == -1) h = 0;           // -0: +0 equals it
  *klo = int16_t(l), *khi = int16_t(h);
}
// The range test as one unsigned compare, (u - base) <=u span, on u = the raw bits when the
// range lies on one side of zero (keys >= 0 are the bits; keys < 0 are the bits ^ 0x7fff, an
// unsigned interval of the bits in reverse), else on u = the key. Neither interval wraps, so
// the difference is exact.
struct Bf16Span {
  bool keys;
  uint16_t base, span;
};
inline Bf16Span bf16_span(int16_t klo, int16_t khi) {
  if (klo >= 0) return {false, uint16_t(klo), uint16_t(khi - klo)};
  if (khi < 0) return {false, uint16_t(uint16_t(khi) ^ 0x7fff), uint16_t(khi - klo)};
  return {true, uint16_t(klo), uint16_t(khi - klo)};
}

// (u - base) per lane, u as above (K: keys).
template <bool K> NISA_AVX512 inline __m512i off512(__m512i v, __m512i base) {
  if constexpr (K) // key = v ^ (sign(v) & 0x7fff)
    v = _mm512_ternarylogic_epi32(v, _mm512_srai_epi16(v, 15), _mm512_set1_epi16(0x7fff), 0x78);
  return _mm512_sub_epi16(v, base);
}
// Ascending positions in the range; false when more than kMaxCand.
template <bool K>
NISA_AVX512 bool candidates_bf16_512(const uint8_t* x, uint64_t n, int16_t klo, int16_t khi,
                                     const Bf16Span& r, uint32_t* c, int* nc) {
  const __m512i base = _mm512_set1_epi16(int16_t(r.base)),
                span = _mm512_set1_epi16(int16_t(r.span));
  int k = 0;
  uint64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512i t0 = off512<K>(ld512(x, i), base), t1 = off512<K>(ld512(x, i + 32), base);
    if (!_mm512_cmple_epu16_mask(_mm512_min_epu16(t0, t1), span)) continue; // none in the block
    uint64_t m = _cvtmask64_u64(
        _mm512_kunpackd(_mm512_cmple_epu16_mask(t1, span), _mm512_cmple_epu16_mask(t0, span)));
    if (k + __builtin_popcountll(m) > kMaxCand) return false;
    for (; m; m &= m - 1) c[k++] = uint32_t(i + __builtin_ctzll(m));
  }
  for (; i < n; ++i) {
    const int16_t key = bf16_key(bf16_bits(x, i));
    if (key >= klo && key <= khi) {
      if (k == kMaxCand) return false;
      c[k++] = uint32_t(i);
    }
  }
  *nc = k;
  return true;
}
NISA_AVX512 bool candidates_bf16_avx512(const uint8_t* x, uint64_t n, float lo, float hi,
                                        uint32_t* c, int* nc) {
  int16_t klo, khi;
  bf16_key_range(lo, hi, &klo, &khi);
  const Bf16Span r = bf16_span(klo, khi);
  return r.keys ? candidates_bf16_512<true>(x, n, klo, khi, r, c, nc)
                : candidates_bf16_512<false>(x, n, klo, khi, r, c, nc);
}

// AVX2: t <=u span as max_epu16(t, span) == span.
template <bool K> NISA_AVX2 inline __m256i off256(__m256i v, __m256i base) {
  if constexpr (K)
    v = _mm256_xor_si256(v, _mm256_and_si256(_mm256_srai_epi16(v, 15), _mm256_set1_epi16(0x7fff)));
  return _mm256_sub_epi16(v, base);
}
template <bool K>
NISA_AVX2 bool candidates_bf16_256(const uint8_t* x, uint64_t n, int16_t klo, int16_t khi,
                                   const Bf16Span& r, uint32_t* c, int* nc) {
  const __m256i base = _mm256_set1_epi16(int16_t(r.base)),
                span = _mm256_set1_epi16(int16_t(r.span));
  int k = 0;
  uint64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    __m256i t[4], in[4];
    for (int j = 0; j < 4; ++j) t[j] = off256<K>(ld256(x, i + 16 * j), base);
    const __m256i u = _mm256_min_epu16(_mm256_min_epu16(t[0], t[1]), _mm256_min_epu16(t[2], t[3]));
    const __m256i any = _mm256_cmpeq_epi16(_mm256_max_epu16(u, span), span);
    if (_mm256_testz_si256(any, any)) continue; // none in the block
    for (int j = 0; j < 4; ++j) in[j] = _mm256_cmpeq_epi16(_mm256_max_epu16(t[j], span), span);
    uint64_t m = uint64_t(mask32_epi16(in[0], in[1])) | uint64_t(mask32_epi16(in[2], in[3])) << 32;
    if (k + __builtin_popcountll(m) > kMaxCand) return false;
    for (; m; m &= m - 1) c[k++] = uint32_t(i + __builtin_ctzll(m));
  }
  for (; i < n; ++i) {
    const int16_t key = bf16_key(bf16_bits(x, i));
    if (key >= klo && key <= khi) {
      if (k == kMaxCand) return false;
      c[k++] = uint32_t(i);
    }
  }
  *nc = k;
  return true;
}
NISA_AVX2 bool candidates_bf16_avx2(const uint8_t* x, uint64_t n, float lo, float hi, uint32_t* c,
                                    int* nc) {
  int16_t klo, khi;
  bf16_key_range(lo, hi, &klo, &khi);
  const Bf16Span r = bf16_span(klo, khi);
  return r.keys ? candidates_bf16_256<true>(x, n, klo, khi, r, c, nc)
                : candidates_bf16_256<false>(x, n, klo, khi, r, c, nc);
}

// The per-slot scans of a bf16 row (when the candidates are too many): element h equals v
// (fp32 ==) iff (h & mask) == bits; false when no element can (v NaN, or not a bf16 value).
struct Bf16Eq {
  uint16_t mask, bits;
};
inline bool bf16_eq_of(float v, Bf16Eq* e) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  if (v != v || (u & 0xffff) != 0) return false;
  *e = v == 0.0f ? Bf16Eq{0x7fff, 0} : Bf16Eq{0xffff, uint16_t(u >> 16)};
  return true;
}
inline int64_t nth_equal_tail(const uint8_t* x, uint64_t from, uint64_t n, float v, int skip,
                              const int64_t* taken, int ntaken) {
  for (uint64_t i = from; i < n; ++i) {
    if (!(bf16_float(bf16_bits(x, i)) == v)) continue;
    bool is_taken = false;
    for (int t = 0; t < ntaken; ++t) is_taken |= taken[t] == int64_t(i);
    if (!is_taken && skip-- == 0) return int64_t(i);
  }
  return -1;
}
struct Bf16Eq512 {
  __m512i mask, bits;
};
NISA_AVX512 inline uint64_t eq64_bf16_avx512(const uint8_t* x, uint64_t i, const Bf16Eq512& e) {
  // The two 32-bit masks joined in a mask register (kunpackd), as the other bf16 kernels do:
  // in the Debug / ASan build (GCC 12, -O0 under this file's O3 pragma) `uint64_t m0 =
  // <__mmask32>` came back with junk in its upper half (0xbeffbeff00000000 seen), which made
  // find_index8 report a position whose value differs from the slot's.
  const __mmask32 m0 = _mm512_cmpeq_epi16_mask(_mm512_and_si512(ld512(x, i), e.mask), e.bits);
  const __mmask32 m1 = _mm512_cmpeq_epi16_mask(_mm512_and_si512(ld512(x, i + 32), e.mask), e.bits);
  return _cvtmask64_u64(_mm512_kunpackd(m1, m0));
}
struct Bf16Eq256 {
  __m256i mask, bits;
};
NISA_AVX2 inline uint64_t eq64_bf16_avx2(const uint8_t* x, uint64_t i, const Bf16Eq256& e) {
  __m256i c[4];
  for (int b = 0; b < 4; ++b)
    c[b] = _mm256_cmpeq_epi16(_mm256_and_si256(ld256(x, i + 16 * b), e.mask), e.bits);
  return uint64_t(mask32_epi16(c[0], c[1])) | uint64_t(mask32_epi16(c[2], c[3])) << 32;
}
NISA_AVX512 int64_t nth_equal_bf16_avx512(const uint8_t* x, uint64_t n, float v, int skip,
                                          const int64_t* taken, int ntaken) {
  Bf16Eq e;
  if (!bf16_eq_of(v, &e)) return -1;
  const Bf16Eq512 vv{_mm512_set1_epi16(int16_t(e.mask)), _mm512_set1_epi16(int16_t(e.bits))};
  NISA_NTH_EQUAL_BODY(eq64_bf16_avx512)
}
NISA_AVX2 int64_t nth_equal_bf16_avx2(const uint8_t* x, uint64_t n, float v, int skip,
                                      const int64_t* taken, int ntaken) {
  Bf16Eq e;
  if (!bf16_eq_of(v, &e)) return -1;
  const Bf16Eq256 vv{_mm256_set1_epi16(int16_t(e.mask)), _mm256_set1_epi16(int16_t(e.bits))};
  NISA_NTH_EQUAL_BODY(eq64_bf16_avx2)
}
#undef NISA_NTH_EQUAL_BODY

// find_index8 / match_replace8 on the candidates, the 8 slots in the lanes of one vector. Slot
// j takes the rank_j-th (from 0) position equal to its value, with rank_j the number of equal
// slots before it (find_index8: i < j) or after it (match_replace8: slots 7..0 each take the
// first match no later slot took, and positions equal to one slot value are equal to every
// slot value == it, so the r-th of them goes to the r-th such slot from the top). Per
// candidate: one compare with the 8 values, a blend; no branch on the data.
#define NISA_SLOTS_ON(ATTR, NAME)                                                                  \
  ATTR inline void NAME(const uint8_t* x, const uint32_t* c, int nc, const float vals[8],          \
                        bool later, int64_t out[8]) {                                              \
    const __m256 vs = _mm256_loadu_ps(vals);                                                       \
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);                                \
    __m256i rank = _mm256_setzero_si256();                                                         \
    for (int i = 0; i < 8; ++i) {                                                                  \
      const __m256i e =                                                                            \
          _mm256_castps_si256(_mm256_cmp_ps(vs, _mm256_set1_ps(vals[i]), _CMP_EQ_OQ));             \
      const __m256i side = later ? _mm256_cmpgt_epi32(_mm256_set1_epi32(i), lane)                  \
                                 : _mm256_cmpgt_epi32(lane, _mm256_set1_epi32(i));                 \
      rank = _mm256_sub_epi32(rank, _mm256_and_si256(e, side));                                    \
    }                                                                                              \
    __m256i seen = _mm256_setzero_si256(), pos = _mm256_set1_epi32(-1);                            \
    for (int k = 0; k < nc; ++k) {                                                                 \
      const __m256i e = _mm256_castps_si256(                                                       \
          _mm256_cmp_ps(vs, _mm256_set1_ps(bf16_float(bf16_bits(x, c[k]))), _CMP_EQ_OQ));          \
      pos = _mm256_blendv_epi8(pos, _mm256_set1_epi32(int32_t(c[k])),                              \
                               _mm256_and_si256(e, _mm256_cmpeq_epi32(seen, rank)));               \
      seen = _mm256_sub_epi32(seen, e);                                                            \
    }                                                                                              \
    alignas(32) int32_t o[8];                                                                      \
    _mm256_store_si256(reinterpret_cast<__m256i*>(o), pos);                                        \
    for (int j = 0; j < 8; ++j) out[j] = o[j];                                                     \
  }
NISA_SLOTS_ON(NISA_AVX512, slots_on_avx512)
NISA_SLOTS_ON(NISA_AVX2, slots_on_avx2)
#undef NISA_SLOTS_ON

// slot_range in one vector: the least and greatest non-NaN slot value (which zero a range
// ends on does not matter here: bf16_key_range takes both zeros in).
#define NISA_SLOT_RANGE_V(ATTR, NAME)                                                              \
  ATTR inline bool NAME(const float vals[8], float* lo, float* hi) {                               \
    const __m256 v = _mm256_loadu_ps(vals);                                                        \
    const __m256 ord = _mm256_cmp_ps(v, v, _CMP_ORD_Q);                                            \
    if (_mm256_movemask_ps(ord) == 0) return false;                                                \
    __m256 a = _mm256_blendv_ps(_mm256_set1_ps(INFINITY), v, ord);                                 \
    __m256 b = _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), v, ord);                                \
    a = _mm256_min_ps(a, _mm256_permute2f128_ps(a, a, 1));                                         \
    b = _mm256_max_ps(b, _mm256_permute2f128_ps(b, b, 1));                                         \
    a = _mm256_min_ps(a, _mm256_permute_ps(a, 0x4e));                                              \
    b = _mm256_max_ps(b, _mm256_permute_ps(b, 0x4e));                                              \
    a = _mm256_min_ps(a, _mm256_permute_ps(a, 0xb1));                                              \
    b = _mm256_max_ps(b, _mm256_permute_ps(b, 0xb1));                                              \
    *lo = _mm256_cvtss_f32(a);                                                                     \
    *hi = _mm256_cvtss_f32(b);                                                                     \
    return true;                                                                                   \
  }
NISA_SLOT_RANGE_V(NISA_AVX512, slot_range_avx512)
NISA_SLOT_RANGE_V(NISA_AVX2, slot_range_avx2)
#undef NISA_SLOT_RANGE_V
#define NISA_CANDIDATES_BF16(FN, RANGE)                                                            \
  float lo = 0, hi = 0;                                                                            \
  uint32_t c[kMaxCand];                                                                            \
  int nc = 0;                                                                                      \
  if (!RANGE(vals, &lo, &hi)) {                                                                    \
    for (int j = 0; j < 8; ++j) out[j] = -1;                                                       \
    return;                                                                                        \
  }                                                                                                \
  const bool few = FN(data, n, lo, hi, c, &nc);

NISA_AVX512 void find_index8_bf16_avx512(const uint8_t* data, uint64_t n, const float vals[8],
                                         int64_t out[8]) {
  NISA_CANDIDATES_BF16(candidates_bf16_avx512, slot_range_avx512)
  if (few) return slots_on_avx512(data, c, nc, vals, false, out);
  for (int j = 0; j < 8; ++j)
    out[j] = nth_equal_bf16_avx512(data, n, vals[j], dup_rank(vals, j), nullptr, 0);
}
NISA_AVX2 void find_index8_bf16_avx2(const uint8_t* data, uint64_t n, const float vals[8],
                                     int64_t out[8]) {
  NISA_CANDIDATES_BF16(candidates_bf16_avx2, slot_range_avx2)
  if (few) return slots_on_avx2(data, c, nc, vals, false, out);
  for (int j = 0; j < 8; ++j)
    out[j] = nth_equal_bf16_avx2(data, n, vals[j], dup_rank(vals, j), nullptr, 0);
}
NISA_AVX512 void match_replace8_bf16_avx512(const uint8_t* data, uint64_t n, const float vals[8],
                                            int64_t out[8]) {
  NISA_CANDIDATES_BF16(candidates_bf16_avx512, slot_range_avx512)
  if (few) return slots_on_avx512(data, c, nc, vals, true, out);
  for (int j = 7; j >= 0; --j)
    out[j] = nth_equal_bf16_avx512(data, n, vals[j], 0, out + j + 1, 7 - j);
}
NISA_AVX2 void match_replace8_bf16_avx2(const uint8_t* data, uint64_t n, const float vals[8],
                                        int64_t out[8]) {
  NISA_CANDIDATES_BF16(candidates_bf16_avx2, slot_range_avx2)
  if (few) return slots_on_avx2(data, c, nc, vals, true, out);
  for (int j = 7; j >= 0; --j)
    out[j] = nth_equal_bf16_avx2(data, n, vals[j], 0, out + j + 1, 7 - j);
}
#undef NISA_CANDIDATES
#undef NISA_CANDIDATES_BF16

// ---- tensor_reduce max / min ------------------------------------------------------------------
// The sequential fold acc = fmax_nan(acc, x[k]) ends on a NaN sum if any element is NaN, and
// otherwise on the last element equal to the maximum M: that is M's own bits unless M is a
// zero (then +0 / -0 depends on order). Lanes find M; those two cases go back to the fold.
bool maxmin_scalar(bool is_max, const float* x, uint64_t n, float* out) {
  (void)is_max, (void)x, (void)n, (void)out;
  return false;
}

// Rows of fp32, or of bf16 widened in registers (bf16 -> fp32 is exact: the bits shifted up),
// so a bf16 row gets the same maxima as the fp32 kernel on the converted row, without the
// conversion pass.
struct F32Row {
  const float* x;
  NISA_AVX512 __m512 load(uint64_t i) const { return _mm512_loadu_ps(x + i); }
  float at(uint64_t i) const { return x[i]; }
};
struct Bf16Row {
  const uint8_t* x;
  NISA_AVX512 __m512 load(uint64_t i) const {
    return _mm512_castsi512_ps(_mm512_slli_epi32(
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 2 * i))),
        16));
  }
  float at(uint64_t i) const {
    uint16_t h;
    std::memcpy(&h, x + 2 * i, 2);
    const uint32_t u = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};

template <class Row>
NISA_AVX512 bool maxmin_row_avx512(bool is_max, const Row& x, uint64_t n, float* out) {
  if (n < 64) return false;
  __m512 a0 = x.load(0), a1 = a0, a2 = a0, a3 = a0;
  __mmask16 nan = 0;
  uint64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512 v0 = x.load(i), v1 = x.load(i + 16);
    const __m512 v2 = x.load(i + 32), v3 = x.load(i + 48);
    nan |= _mm512_cmp_ps_mask(v0, v1, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(v2, v3, _CMP_UNORD_Q);
    if (is_max) {
      a0 = _mm512_max_ps(a0, v0), a1 = _mm512_max_ps(a1, v1);
      a2 = _mm512_max_ps(a2, v2), a3 = _mm512_max_ps(a3, v3);
    } else {
      a0 = _mm512_min_ps(a0, v0), a1 = _mm512_min_ps(a1, v1);
      a2 = _mm512_min_ps(a2, v2), a3 = _mm512_min_ps(a3, v3);
    }
  }
  if (nan) return false;
  a0 = is_max ? _mm512_max_ps(_mm512_max_ps(a0, a1), _mm512_max_ps(a2, a3))
              : _mm512_min_ps(_mm512_min_ps(a0, a1), _mm512_min_ps(a2, a3));
  float m = is_max ? _mm512_reduce_max_ps(a0) : _mm512_reduce_min_ps(a0);
  for (; i < n; ++i) {
    const float v = x.at(i);
    if (v != v) return false;
    m = is_max ? std::max(m, v) : std::min(m, v);
  }
  if (m == 0.0f) return false;
  *out = m;
  return true;
}
NISA_AVX512 bool maxmin_avx512(bool is_max, const float* x, uint64_t n, float* out) {
  return maxmin_row_avx512(is_max, F32Row{x}, n, out);
}
NISA_AVX512 bool maxmin_bf16_avx512(bool is_max, const uint8_t* x, uint64_t n, float* out) {
  return maxmin_row_avx512(is_max, Bf16Row{x}, n, out);
}

NISA_AVX2 bool maxmin_avx2(bool is_max, const float* x, uint64_t n, float* out) {
  if (n < 32) return false;
  __m256 a0 = _mm256_loadu_ps(x), a1 = a0, a2 = a0, a3 = a0;
  __m256 nan = _mm256_setzero_ps();
  uint64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256 v0 = _mm256_loadu_ps(x + i), v1 = _mm256_loadu_ps(x + i + 8);
    const __m256 v2 = _mm256_loadu_ps(x + i + 16), v3 = _mm256_loadu_ps(x + i + 24);
    nan = _mm256_or_ps(nan, _mm256_or_ps(_mm256_cmp_ps(v0, v1, _CMP_UNORD_Q),
                                         _mm256_cmp_ps(v2, v3, _CMP_UNORD_Q)));
    if (is_max) {
      a0 = _mm256_max_ps(a0, v0), a1 = _mm256_max_ps(a1, v1);
      a2 = _mm256_max_ps(a2, v2), a3 = _mm256_max_ps(a3, v3);
    } else {
      a0 = _mm256_min_ps(a0, v0), a1 = _mm256_min_ps(a1, v1);
      a2 = _mm256_min_ps(a2, v2), a3 = _mm256_min_ps(a3, v3);
    }
  }
  if (_mm256_movemask_ps(nan)) return false;
  a0 = is_max ? _mm256_max_ps(_mm256_max_ps(a0, a1), _mm256_max_ps(a2, a3))
              : _mm256_min_ps(_mm256_min_ps(a0, a1), _mm256_min_ps(a2, a3));
  alignas(32) float l[8];
  _mm256_store_ps(l, a0);
  float m = l[0];
  for (int k = 1; k < 8; ++k) m = is_max ? std::max(m, l[k]) : std::min(m, l[k]);
  for (; i < n; ++i) {
    if (x[i] != x[i]) return false;
    m = is_max ? std::max(m, x[i]) : std::min(m, x[i]);
  }
  if (m == 0.0f) return false;
  *out = m;
  return true;
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

void find_index8_row(Level l, const float* data, uint64_t n, const float vals[8], int64_t out[8]) {
  switch (l) {
  case Level::avx512: return find_index8_avx512(data, n, vals, out);
  case Level::avx2: return find_index8_avx2(data, n, vals, out);
  case Level::scalar: break;
  }
  find_index8_scalar(data, n, vals, out);
}

void match_replace8_row(Level l, const float* data, uint64_t n, const float vals[8],
                        int64_t out[8]) {
  switch (l) {
  case Level::avx512: return match_replace8_avx512(data, n, vals, out);
  case Level::avx2: return match_replace8_avx2(data, n, vals, out);
  case Level::scalar: break;
  }
  match_replace8_scalar(data, n, vals, out);
}

bool reduce_maxmin_row(Level l, bool is_max, const float* x, uint64_t n, float* out) {
  switch (l) {
  case Level::avx512: return maxmin_avx512(is_max, x, n, out);
  case Level::avx2: return maxmin_avx2(is_max, x, n, out);
  case Level::scalar: break;
  }
  return maxmin_scalar(is_max, x, n, out);
}

bool max8_bf16_row(Level l, const uint8_t* x, uint64_t n, float out[8], const void* next) {
  switch (l) {
  case Level::avx512: return max8_bf16_avx512(x, n, out, next);
  case Level::avx2: return max8_bf16_avx2(x, n, out, next);
  case Level::scalar: break;
  }
  return false;
}

bool find_index8_bf16_row(Level l, const uint8_t* data, uint64_t n, const float vals[8],
                          int64_t out[8]) {
  switch (l) {
  case Level::avx512: return find_index8_bf16_avx512(data, n, vals, out), true;
  case Level::avx2: return find_index8_bf16_avx2(data, n, vals, out), true;
  case Level::scalar: break;
  }
  return false;
}

bool match_replace8_bf16_row(Level l, const uint8_t* data, uint64_t n, const float vals[8],
                             int64_t out[8]) {
  switch (l) {
  case Level::avx512: return match_replace8_bf16_avx512(data, n, vals, out), true;
  case Level::avx2: return match_replace8_bf16_avx2(data, n, vals, out), true;
  case Level::scalar: break;
  }
  return false;
}

bool reduce_maxmin_bf16_row(Level l, bool is_max, const uint8_t* x, uint64_t n, float* out) {
  return l == Level::avx512 && maxmin_bf16_avx512(is_max, x, n, out);
}

} // namespace nisa::interp::simd
