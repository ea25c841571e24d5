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

#include "interp/engines/simd.h"

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
// fp32 rows (BF = false) or bf16 rows widened in registers (BF = true: x holds 2 bytes per
// element; the values are those of the converted row, so the results are too).
template <bool BF> NISA_AVX512 inline __m512 load16(const void* x, uint64_t i) {
  if constexpr (BF)
    return _mm512_castsi512_ps(
        _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(
                              static_cast<const uint8_t*>(x) + 2 * i))),
                          16));
  else
    return _mm512_loadu_ps(static_cast<const float*>(x) + i);
}
template <bool BF> inline float elem(const void* x, uint64_t i) {
  if constexpr (BF) {
    uint16_t h;
    std::memcpy(&h, static_cast<const uint8_t*>(x) + 2 * i, 2);
    const uint32_t u = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  } else {
    return static_cast<const float*>(x)[i];
  }
}

template <bool BF> NISA_AVX512 bool max8_two_pass_512(const void* x, uint64_t n, float out[8]) {
  if (n < 512) return false;
  __m512 lm[4];
  for (int k = 0; k < 4; ++k) lm[k] = load16<BF>(x, 16 * k);
  __mmask16 nan = 0;
  uint64_t i = 0;
  for (; i + 64 <= n; i += 64)
    for (int k = 0; k < 4; ++k) {
      const __m512 v = load16<BF>(x, i + 16 * k);
      nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
      lm[k] = _mm512_max_ps(lm[k], v);
    }
  for (; i < n; ++i) nan |= elem<BF>(x, i) != elem<BF>(x, i);
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
    uint64_t m = 0;
    for (int b = 0; b < 4; ++b) {
      const __m512 v = load16<BF>(x, i + 16 * b);
      const uint64_t k =
          strict ? _mm512_cmp_ps_mask(v, t, _CMP_GT_OQ) : _mm512_cmp_ps_mask(v, t, _CMP_GE_OQ);
      m |= k << (16 * b);
    }
    for (; m; m &= m - 1) top8_add_finite(top, filled, elem<BF>(x, i + __builtin_ctzll(m)));
  }
  for (; i < n; ++i) {
    const float v = elem<BF>(x, i);
    if (strict ? v > t0 : v >= t0) top8_add_finite(top, filled, v);
  }
  if (strict) top8_finish_strict(top, filled, t0);
  top8_out(top, filled, out);
  return true;
}
NISA_AVX512 bool max8_two_pass_avx512(const float* x, uint64_t n, float out[8]) {
  return max8_two_pass_512<false>(x, n, out);
}
NISA_AVX512 bool max8_bf16_avx512(const uint8_t* x, uint64_t n, float out[8]) {
  return max8_two_pass_512<true>(x, n, out);
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

// Candidates: not (x <= 8th), i.e. x > 8th or unordered (NaN either side). Four blocks are
// tested per step so the common no-candidate case costs one branch per 64 elements.
NISA_AVX512 void max8_avx512(const float* x, uint64_t n, float out[8]) {
  if (max8_two_pass_avx512(x, n, out)) return;
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

NISA_AVX2 void max8_avx2(const float* x, uint64_t n, float out[8]) {
  if (max8_two_pass_avx2(x, n, out)) return;
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

NISA_AVX512 inline uint64_t eq64_avx512(const float* x, __m512 v) {
  const uint64_t m0 = _mm512_cmp_ps_mask(_mm512_loadu_ps(x), v, _CMP_EQ_OQ);
  const uint64_t m1 = _mm512_cmp_ps_mask(_mm512_loadu_ps(x + 16), v, _CMP_EQ_OQ);
  const uint64_t m2 = _mm512_cmp_ps_mask(_mm512_loadu_ps(x + 32), v, _CMP_EQ_OQ);
  const uint64_t m3 = _mm512_cmp_ps_mask(_mm512_loadu_ps(x + 48), v, _CMP_EQ_OQ);
  return m0 | m1 << 16 | m2 << 32 | m3 << 48;
}
NISA_AVX2 inline uint64_t eq64_avx2(const float* x, __m256 v) {
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
    uint64_t m = EQ(x + i, vv);                                                                    \
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
#undef NISA_NTH_EQUAL_BODY

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
    uint64_t m = 0;
    for (int b = 0; b < 4; ++b) {
      const __m512 v = _mm512_loadu_ps(x + i + 16 * b);
      m |= uint64_t(
               _mm512_mask_cmp_ps_mask(_mm512_cmp_ps_mask(v, vl, _CMP_GE_OQ), v, vh, _CMP_LE_OQ))
           << (16 * b);
    }
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
    uint32_t m = 0;
    for (int b = 0; b < 4; ++b) {
      const __m256 v = _mm256_loadu_ps(x + i + 8 * b);
      const __m256 in =
          _mm256_and_ps(_mm256_cmp_ps(v, vl, _CMP_GE_OQ), _mm256_cmp_ps(v, vh, _CMP_LE_OQ));
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

void max8_row(Level l, const float* x, uint64_t n, float out[8]) {
  switch (l) {
  case Level::avx512: return max8_avx512(x, n, out);
  case Level::avx2: return max8_avx2(x, n, out);
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

bool max8_bf16_row(Level l, const uint8_t* x, uint64_t n, float out[8]) {
  return l == Level::avx512 && max8_bf16_avx512(x, n, out);
}

bool reduce_maxmin_bf16_row(Level l, bool is_max, const uint8_t* x, uint64_t n, float* out) {
  return l == Level::avx512 && maxmin_bf16_avx512(is_max, x, n, out);
}

} // namespace nisa::interp::simd
