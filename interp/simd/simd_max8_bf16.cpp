// max8 of a bf16 row at AVX-512 and AVX2: the search in the int16 domain (the keys and the
// loads: simd_search_common.h), the candidates to the same selection as the fp32 forms
// (simd_max8.cpp), so the results are those of the fp32 forms on the converted row.
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

NISA_AVX2 inline __m256i lane_keys_avx2(__m256i smax, __m256i umin) {
  return _mm256_blendv_epi8(smax, _mm256_xor_si256(umin, _mm256_set1_epi16(0x7fff)),
                            _mm256_srai_epi16(smax, 15));
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

} // namespace

bool max8_bf16_row(Level l, const uint8_t* x, uint64_t n, float out[8], const void* next) {
  switch (l) {
  case Level::avx512: return max8_bf16_avx512(x, n, out, next);
  case Level::avx2: return max8_bf16_avx2(x, n, out, next);
  case Level::scalar: break;
  }
  return false;
}

} // namespace nisa::interp::simd
