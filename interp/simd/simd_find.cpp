// find_index8 and match_replace8 of an fp32 or a bf16 row: the scalar forms, the per-slot
// scans, and at AVX-512 and AVX2 the one-pass forms (the candidates inside the range of the
// slot values). The bf16 keys and the loads are in simd_search_common.h.
#pragma GCC optimize("O3")
// GCC 12 reports the intrinsics' internal _mm512_undefined_*() as maybe-uninitialized at O3.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized" // the same at -O0 (Debug, ASan)
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "interp/simd/simd.h"
#include "interp/simd/simd_search_common.h"

namespace nisa::interp::simd {

namespace {

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

} // namespace

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

} // namespace nisa::interp::simd
