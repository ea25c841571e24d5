// Across-partition vector kernels: scan and the sequential reduce fold keep their per-row
// order (the recurrence is sequential along the free axis), so they put rows in the lanes of
// ymm registers instead, stepped one column at a time. Each lane runs exactly the scalar
// sequence of IEEE operations of its row, so results are bit-identical at every level.
// The main kernels are the 16-row groups of simd_lanes16.inc (fp32 or bf16 rows, in-lane
// transposes); this file keeps the 8-row kernels (8x8 blocks loaded row-wise, transposed,
// transposed back) for the fp32 rows a 16-row group leaves over, the scalar forms, and the
// entry points.
#pragma GCC optimize("O3")
// GCC 12 reports the intrinsics' internal _mm512_undefined_*() as maybe-uninitialized at O3.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized" // the same at -O0 (Debug, ASan)
#include <immintrin.h>

#include <cstring>
#include <vector>

#include "interp/simd/simd_lanes.h"

namespace nisa::interp::simd {

using namespace lanes;

namespace {

// add / subtract / multiply are one instruction whose operand order is pinned by inline asm:
// for a NaN operand the x86 rule (src1's NaN if it is NaN, else src2's, quieted) is exactly
// the explicit rule of s_op, so no blends sit on the latency-bound chain. max / min need them.
template <LaneOp O>
NISA_AVX2 __attribute__((always_inline)) inline __m256 v_op(__m256 a, __m256 b) {
  __m256 r;
  if constexpr (O == LaneOp::add) {
    asm("vaddps %2, %1, %0" : "=v"(r) : "v"(a), "v"(b));
    return r;
  } else if constexpr (O == LaneOp::subtract) {
    asm("vsubps %2, %1, %0" : "=v"(r) : "v"(a), "v"(b));
    return r;
  } else if constexpr (O == LaneOp::multiply) {
    asm("vmulps %2, %1, %0" : "=v"(r) : "v"(a), "v"(b));
    return r;
  } else {
    if constexpr (O == LaneOp::max)
      r = _mm256_blendv_ps(b, a, _mm256_cmp_ps(a, b, _CMP_GT_OQ));
    else
      r = _mm256_blendv_ps(b, a, _mm256_cmp_ps(a, b, _CMP_LT_OQ));
    r = _mm256_blendv_ps(r, _mm256_add_ps(b, b), _mm256_cmp_ps(b, b, _CMP_UNORD_Q));
    return _mm256_blendv_ps(r, _mm256_add_ps(a, a), _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
  }
}

NISA_AVX2 __attribute__((always_inline)) inline void transpose8(__m256 r[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
  r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
  r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
  r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
  r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
  r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
  r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
  r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

// Columns [0, n8) of G groups of 8 rows (n8 % 8 == 0); acc holds each lane's state. Each
// group's block is written out in turn (its registers are free again for the next group);
// the G chains are independent, so the out-of-order core overlaps them.
template <LaneOp O0, LaneOp O1, int G>
NISA_AVX2 inline void scan_block(const float* const* d0, const float* const* d1, float* const* out,
                                 uint64_t n8, bool rev0, bool rev1, __m256 acc[G]) {
  for (uint64_t i = 0; i < n8; i += 8) {
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      __m256 a[8], b[8];
      for (int k = 0; k < 8; ++k) {
        a[k] = _mm256_loadu_ps(d0[8 * g + k] + i);
        b[k] = _mm256_loadu_ps(d1[8 * g + k] + i);
      }
      transpose8(a);
      transpose8(b);
      __m256 r = acc[g];
      for (int j = 0; j < 8; ++j) {
        const __m256 t = rev0 ? v_op<O0>(r, a[j]) : v_op<O0>(a[j], r);
        r = rev1 ? v_op<O1>(b[j], t) : v_op<O1>(t, b[j]);
        a[j] = r;
      }
      acc[g] = r;
      transpose8(a);
      for (int k = 0; k < 8; ++k) _mm256_storeu_ps(out[8 * g + k] + i, a[k]);
    }
  }
}

// The scalar recurrence of one row from column `from` with state r.
inline void scan_tail(const float* d0, const float* d1, float* out, uint64_t from, uint64_t n,
                      float r, LaneOp op0, LaneOp op1, bool rev0, bool rev1) {
  for (uint64_t i = from; i < n; ++i) {
    const float t = rev0 ? s_op(op0, r, d0[i]) : s_op(op0, d0[i], r);
    r = rev1 ? s_op(op1, d1[i], t) : s_op(op1, t, d1[i]);
    out[i] = r;
  }
}

// Rows that alias (an in-place scan: out row == input row) are fine: a block reads its
// 8 columns of every row before it writes them.
template <int G, LaneOp O0, LaneOp O1>
NISA_AVX2 inline void scan_groups(const float* const* d0, const float* const* d1, float* const* out,
                                  const float* init, uint32_t nrows, uint64_t n, bool rev0,
                                  bool rev1, uint32_t& r0) {
  const uint64_t n8 = n / 8 * 8;
  for (; r0 + 8 * G <= nrows; r0 += 8 * G) {
    __m256 acc[G];
    for (int g = 0; g < G; ++g) acc[g] = _mm256_loadu_ps(init + r0 + 8 * g);
    scan_block<O0, O1, G>(d0 + r0, d1 + r0, out + r0, n8, rev0, rev1, acc);
    alignas(32) float st[8 * G];
    for (int g = 0; g < G; ++g) _mm256_store_ps(st + 8 * g, acc[g]);
    for (int k = 0; k < 8 * G; ++k)
      scan_tail(d0[r0 + k], d1[r0 + k], out[r0 + k], n8, n, st[k], O0, O1, rev0, rev1);
  }
}

template <int G>
NISA_AVX2 inline void scan_dispatch(const float* const* d0, const float* const* d1,
                                    float* const* out, const float* init, uint32_t nrows,
                                    uint64_t n, LaneOp op0, LaneOp op1, bool rev0, bool rev1,
                                    uint32_t& r0) {
  switch (op0) {
#define NISA_O0(o0)                                                                                \
  case LaneOp::o0:                                                                                 \
    switch (op1) {                                                                                 \
    case LaneOp::add:                                                                              \
      return scan_groups<G, LaneOp::o0, LaneOp::add>(d0, d1, out, init, nrows, n, rev0, rev1, r0); \
    case LaneOp::subtract:                                                                         \
      return scan_groups<G, LaneOp::o0, LaneOp::subtract>(d0, d1, out, init, nrows, n, rev0, rev1, \
                                                          r0);                                     \
    case LaneOp::multiply:                                                                         \
      return scan_groups<G, LaneOp::o0, LaneOp::multiply>(d0, d1, out, init, nrows, n, rev0, rev1, \
                                                          r0);                                     \
    case LaneOp::max:                                                                              \
      return scan_groups<G, LaneOp::o0, LaneOp::max>(d0, d1, out, init, nrows, n, rev0, rev1, r0); \
    case LaneOp::min:                                                                              \
      return scan_groups<G, LaneOp::o0, LaneOp::min>(d0, d1, out, init, nrows, n, rev0, rev1, r0); \
    }                                                                                              \
    return;
    NISA_O0(add)
    NISA_O0(subtract)
    NISA_O0(multiply)
    NISA_O0(max)
    NISA_O0(min)
#undef NISA_O0
  }
}

NISA_AVX512 void scan_avx512(const float* const* d0, const float* const* d1, float* const* out,
                             const float* init, uint32_t nrows, uint64_t n, LaneOp op0, LaneOp op1,
                             bool rev0, bool rev1, uint32_t& r0) {

  scan_dispatch<2>(d0, d1, out, init, nrows, n, op0, op1, rev0, rev1, r0);
  scan_dispatch<1>(d0, d1, out, init, nrows, n, op0, op1, rev0, rev1, r0);
}
NISA_AVX2 void scan_avx2(const float* const* d0, const float* const* d1, float* const* out,
                         const float* init, uint32_t nrows, uint64_t n, LaneOp op0, LaneOp op1,
                         bool rev0, bool rev1, uint32_t& r0) {
  scan_dispatch<2>(d0, d1, out, init, nrows, n, op0, op1, rev0, rev1, r0);
  scan_dispatch<1>(d0, d1, out, init, nrows, n, op0, op1, rev0, rev1, r0);
}

// ---- fold
// ----------------------------------------------------------------------------------------
template <LaneOp O, int G>
NISA_AVX2 inline void fold_groups(const float* const* x, float* acc_out, uint32_t nrows, uint64_t n,
                                  uint32_t& r0) {
  // Columns 1..n-1 in blocks of 16 (a cache line per row) from column 1; the rest one by one.
  const uint64_t nb = (n - 1) / 16 * 16;
  for (; r0 + 8 * G <= nrows; r0 += 8 * G) {
    alignas(32) float st[8 * G];
    for (int k = 0; k < 8 * G; ++k) st[k] = x[r0 + k][0];
    __m256 acc[G];
    for (int g = 0; g < G; ++g) acc[g] = _mm256_load_ps(st + 8 * g);
    for (uint64_t i = 1; i < 1 + nb; i += 16) {
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) { // independent chains: overlapped out of order
        __m256 a[8], b[8];
        for (int k = 0; k < 8; ++k) {
          const float* row = x[r0 + 8 * g + k] + i;
          a[k] = _mm256_loadu_ps(row);
          b[k] = _mm256_loadu_ps(row + 8);
        }
        transpose8(a);
        transpose8(b);
        __m256 r = acc[g];
        for (int j = 0; j < 8; ++j) r = v_op<O>(r, a[j]);
        for (int j = 0; j < 8; ++j) r = v_op<O>(r, b[j]);
        acc[g] = r;
      }
    }
    for (int g = 0; g < G; ++g) _mm256_store_ps(st + 8 * g, acc[g]);
    for (int k = 0; k < 8 * G; ++k) {
      float r = st[k];
      for (uint64_t i = 1 + nb; i < n; ++i) r = s_op(O, r, x[r0 + k][i]);
      acc_out[r0 + k] = r;
    }
  }
}

template <int G>
NISA_AVX2 inline void fold_dispatch(const float* const* x, float* acc, uint32_t nrows, uint64_t n,
                                    LaneOp op, uint32_t& r0) {
  switch (op) {
  case LaneOp::add: return fold_groups<LaneOp::add, G>(x, acc, nrows, n, r0);
  case LaneOp::subtract: return fold_groups<LaneOp::subtract, G>(x, acc, nrows, n, r0);
  case LaneOp::multiply: return fold_groups<LaneOp::multiply, G>(x, acc, nrows, n, r0);
  case LaneOp::max: return fold_groups<LaneOp::max, G>(x, acc, nrows, n, r0);
  case LaneOp::min: return fold_groups<LaneOp::min, G>(x, acc, nrows, n, r0);
  }
}
NISA_AVX512 void fold_avx512(const float* const* x, float* acc, uint32_t nrows, uint64_t n,
                             LaneOp op, uint32_t& r0) {

  fold_dispatch<2>(x, acc, nrows, n, op, r0);
  fold_dispatch<1>(x, acc, nrows, n, op, r0);
}
NISA_AVX2 void fold_avx2(const float* const* x, float* acc, uint32_t nrows, uint64_t n, LaneOp op,
                         uint32_t& r0) {
  fold_dispatch<2>(x, acc, nrows, n, op, r0);
  fold_dispatch<1>(x, acc, nrows, n, op, r0);
}

} // namespace

void scan_rows_t(Level l, LaneType t0, const void* const* d0, LaneType t1, const void* const* d1,
                 LaneType to, void* const* out, const float* init, uint32_t nrows, uint64_t n,
                 LaneOp op0, LaneOp op1, bool rev0, bool rev1) {
  uint32_t r0 = 0;
  if (l == Level::avx512)
    lanes::l512::scan16_rows(t0, d0, t1, d1, to, out, init, nrows, n, op0, op1, rev0, rev1, r0);
  if (l == Level::avx2)
    lanes::l2::scan16_rows(t0, d0, t1, d1, to, out, init, nrows, n, op0, op1, rev0, rev1, r0);
  const bool f32 = t0 == LaneType::f32 && t1 == LaneType::f32 && to == LaneType::f32;
  if (l != Level::scalar && !f32 && nrows - r0 >= 8) {
    // Fewer than 16 rows left with a bf16 row: as fp32 rows through the fp32 kernels.
    const uint32_t k = nrows - r0;
    thread_local std::vector<float> buf;
    buf.resize(size_t(3) * k * n);
    std::vector<const void*> a(k), b(k);
    std::vector<void*> o(k);
    for (uint32_t r = 0; r < k; ++r) {
      float* fa = buf.data() + size_t(r) * n;
      float* fb = fa + size_t(k) * n;
      for (uint64_t i = 0; i < n; ++i) {
        fa[i] = ld_t(t0, d0[r0 + r], i);
        fb[i] = ld_t(t1, d1[r0 + r], i);
      }
      a[r] = fa;
      b[r] = fb;
      o[r] = fb + size_t(k) * n;
    }
    scan_rows_t(l, LaneType::f32, a.data(), LaneType::f32, b.data(), LaneType::f32, o.data(),
                init + r0, k, n, op0, op1, rev0, rev1);
    for (uint32_t r = 0; r < k; ++r)
      for (uint64_t i = 0; i < n; ++i) st_t(to, out[r0 + r], i, static_cast<float*>(o[r])[i]);
    return;
  }
  if (f32) {
    const float* const* f0 = reinterpret_cast<const float* const*>(d0);
    const float* const* f1 = reinterpret_cast<const float* const*>(d1);
    float* const* fo = reinterpret_cast<float* const*>(out);
    if (l == Level::avx512) scan_avx512(f0, f1, fo, init, nrows, n, op0, op1, rev0, rev1, r0);
    if (l == Level::avx2) scan_avx2(f0, f1, fo, init, nrows, n, op0, op1, rev0, rev1, r0);
  }
  for (; r0 < nrows; ++r0) // rows left over (and the scalar level)
    scan_tail_t(t0, d0[r0], t1, d1[r0], to, out[r0], 0, n, init[r0], op0, op1, rev0, rev1);
}

void fold_rows_t(Level l, LaneType t, const void* const* x, float* acc, uint32_t nrows, uint64_t n,
                 LaneOp op) {
  uint32_t r0 = 0;
  if (l == Level::avx512) lanes::l512::fold16_rows(t, x, acc, nrows, n, op, r0);
  if (l == Level::avx2) lanes::l2::fold16_rows(t, x, acc, nrows, n, op, r0);
  if (t == LaneType::f32) {
    const float* const* f = reinterpret_cast<const float* const*>(x);
    if (l == Level::avx512) fold_avx512(f, acc, nrows, n, op, r0);
    if (l == Level::avx2) fold_avx2(f, acc, nrows, n, op, r0);
  }
  for (; r0 < nrows; ++r0) { // rows left over (and the scalar level)
    float r = ld_t(t, x[r0], 0);
    for (uint64_t i = 1; i < n; ++i) r = s_op(op, r, ld_t(t, x[r0], i));
    acc[r0] = r;
  }
}

void scan_rows(Level l, const float* const* d0, const float* const* d1, float* const* out,
               const float* init, uint32_t nrows, uint64_t n, LaneOp op0, LaneOp op1, bool rev0,
               bool rev1) {
  scan_rows_t(l, LaneType::f32, reinterpret_cast<const void* const*>(d0), LaneType::f32,
              reinterpret_cast<const void* const*>(d1), LaneType::f32,
              reinterpret_cast<void* const*>(out), init, nrows, n, op0, op1, rev0, rev1);
}

void fold_rows(Level l, const float* const* x, float* acc, uint32_t nrows, uint64_t n, LaneOp op) {
  fold_rows_t(l, LaneType::f32, reinterpret_cast<const void* const*>(x), acc, nrows, n, op);
}

} // namespace nisa::interp::simd
