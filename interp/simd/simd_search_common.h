// The steps shared by the search kernels (simd_max8.cpp, simd_max8_bf16.cpp, simd_find.cpp),
// the vector forms of the DVE search instructions (max8, find_index8, match_replace8). Each
// vector form tests 16 (AVX-512) or 8 (AVX2) elements at once for "could this element matter"
// and hands the few that could to the same scalar step as the scalar form, in index order: the
// results are the scalar form's, bit for bit (values are copied, never recomputed).
//
// Internal to those files, and written as when they were one (simd_search.cpp): everything
// here is inline with internal linkage (an unnamed namespace), so each file inlines its own
// copies into its loops. Include it after the file's #pragma GCC optimize("O3"), which applies
// to these functions as to the kernels calling them.
#pragma once
#include <immintrin.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "interp/simd/simd.h"

namespace nisa::interp::simd {

namespace {

// ---- the top 8 in index order: the scalar steps -----------------------------------------------
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

// After the candidates x > t0 (strict): fewer than 8 means the rest of the top 8 are elements
// equal to t0, whose bits are t0's (t0 is neither NaN nor a zero: callers check).
inline void top8_finish_strict(float top[8], uint64_t& filled, float t0) {
  while (filled < 8) top8_add_finite(top, filled, t0);
}

// ---- the top 8 of a candidate list: sorting networks (max8, fp32 and bf16) --------------------
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
// room to spare; a longer row would evict its own second half): 8 KiB, or a third of the L1
// data cache where it has 48 KiB or more (sysconf), so that the 4096-element fp32 windows of
// the folded top-K (16 KiB rows) prefetch there too (max8 on [128, 4096] fp32: 65 -> 55 us on
// the Xeon VM of issue 36).
inline const uint64_t kPrefetchRowMax = [] {
  const long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE);
  return l1 >= 49152 ? uint64_t(l1) / 3 : uint64_t(8192);
}();

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

// ---- loads --------------------------------------------------------------------------------------
// One load per vector: GCC otherwise folds the load into each operation that uses it (three
// loads of the same bytes in pass 1 of max8, which then runs at the load ports' rate).
NISA_AVX512 inline __m512i ld512(const uint8_t* x, uint64_t i) {
  __m512i v = _mm512_loadu_si512(x + 2 * i);
  asm("" : "+v"(v));
  return v;
}
NISA_AVX512 inline __m512 ld512f(const float* x) {
  __m512 v = _mm512_loadu_ps(x);
  asm("" : "+v"(v)); // one load per vector (see ld512)
  return v;
}
NISA_AVX2 inline __m256i ld256(const uint8_t* x, uint64_t i) {
  __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 2 * i));
  asm("" : "+x"(v)); // see ld512
  return v;
}
NISA_AVX2 inline __m256 ld256f(const float* x) {
  __m256 v = _mm256_loadu_ps(x);
  asm("" : "+x"(v)); // see ld512
  return v;
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
// 32 compare results (lanes 0 / -1 of 16 bits: a = elements 0..15, b = 16..31) as a bit mask.
NISA_AVX2 inline uint32_t mask32_epi16(__m256i a, __m256i b) {
  return uint32_t(_mm256_movemask_epi8(_mm256_permute4x64_epi64(_mm256_packs_epi16(a, b), 0xD8)));
}

} // namespace

} // namespace nisa::interp::simd
