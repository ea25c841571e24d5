// The max / min row fold of tensor_reduce, fp32 and bf16 rows, at AVX-512 and AVX2: the lanes
// find the extreme value, and the cases whose bits depend on the order of the fold (a NaN, a
// zero) go back to the sequential fold.
#pragma GCC optimize("O3")
// GCC 12 reports the intrinsics' internal _mm512_undefined_*() as maybe-uninitialized at O3.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized" // the same at -O0 (Debug, ASan)
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "interp/simd/simd.h"

namespace nisa::interp::simd {

namespace {

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

bool reduce_maxmin_row(Level l, bool is_max, const float* x, uint64_t n, float* out) {
  switch (l) {
  case Level::avx512: return maxmin_avx512(is_max, x, n, out);
  case Level::avx2: return maxmin_avx2(is_max, x, n, out);
  case Level::scalar: break;
  }
  return maxmin_scalar(is_max, x, n, out);
}

bool reduce_maxmin_bf16_row(Level l, bool is_max, const uint8_t* x, uint64_t n, float* out) {
  return l == Level::avx512 && maxmin_bf16_avx512(is_max, x, n, out);
}

} // namespace nisa::interp::simd
