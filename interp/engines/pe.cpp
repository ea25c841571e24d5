// Tensor engine (PE) semantics: matmul and transpose (docs/machine.md "Matmul and PSUM
// accumulation").
//
// matmul numerics: every output element is a chain of fused multiply-adds in k order,
// c = fma(s[k][m], v[k][n], c) for k = 0..K-1 starting from +0, then one fp32 add into PSUM
// when accumulating. The SIMD kernels below compute exactly that chain per lane, so results
// are bit-identical on every host whichever path runs.
//
// PSUM accumulation flags (CoreState::psum_written, one per 4-byte word): a matmul sets
// them; acc=auto overwrites words whose flag is clear and adds to words whose flag is set;
// any non-matmul write into PSUM clears them (ew::note_psum_write), so the next auto matmul
// there starts a new accumulation group.
#pragma GCC optimize("O3")
#include <immintrin.h>

#include <cmath>

#include "interp/core/host_pool.h"
#include "interp/core/target.h"
#include "interp/engines/elementwise.h"
#include "interp/engines/engines.h"

namespace nisa::interp {
using namespace ew;

namespace {

constexpr int kRowBlock = 4; // output rows per micro-kernel step
constexpr int kColPad = 16;  // moving/out rows padded to this many floats

// c[Mp][Np] = s[K][Mp]^T x v[K][Np]; Mp % 4 == 0, Np % 16 == 0.
// Output rows [m0, m1) (multiples of kRowBlock) only: host threads split a matmul by rows.
// v's rows are ldv floats apart (np when packed; a PSUM/SBUF partition stride when read in
// place).
__attribute__((target("avx512f"))) void mm_avx512(const float* s, int mp, const float* v, int np,
                                                  int k_n, float* c, int m0, int m1, size_t ldv) {
  for (int m = m0; m < m1; m += kRowBlock) {
    int n = 0;
    for (; n + 64 <= np; n += 64) {
      __m512 acc[4][4];
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i)
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) acc[i][j] = _mm512_setzero_ps();
      for (int k = 0; k < k_n; ++k) {
        const float* vr = v + size_t(k) * ldv + n;
        const float* sr = s + size_t(k) * mp + m;
        __m512 b[4];
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) b[j] = _mm512_loadu_ps(vr + 16 * j);
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i) {
          const __m512 a = _mm512_set1_ps(sr[i]);
#pragma GCC unroll 4
          for (int j = 0; j < 4; ++j) acc[i][j] = _mm512_fmadd_ps(a, b[j], acc[i][j]);
        }
      }
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i)
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j)
          _mm512_storeu_ps(c + size_t(m + i) * np + n + 16 * j, acc[i][j]);
    }
    for (; n < np; n += 16) {
      __m512 acc[4];
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) acc[i] = _mm512_setzero_ps();
      for (int k = 0; k < k_n; ++k) {
        const __m512 b = _mm512_loadu_ps(v + size_t(k) * ldv + n);
        const float* sr = s + size_t(k) * mp + m;
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i) acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(sr[i]), b, acc[i]);
      }
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) _mm512_storeu_ps(c + size_t(m + i) * np + n, acc[i]);
    }
  }
}

// Output rows [m0, m1) one at a time (the rows of a last block beyond M: a 1-row matmul, as
// depthwise_conv1d's per-channel one, computed 4x by the 4-row blocks); the same fma chain per
// element as mm_avx512.
__attribute__((target("avx512f"))) void mm_rows_avx512(const float* s, int mp, const float* v,
                                                       int np, int k_n, float* c, int m0, int m1,
                                                       size_t ldv) {
  for (int m = m0; m < m1; ++m) {
    int n = 0;
    for (; n + 128 <= np; n += 128) {
      __m512 acc[8];
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) acc[j] = _mm512_setzero_ps();
      for (int k = 0; k < k_n; ++k) {
        const float* vr = v + size_t(k) * ldv + n;
        const __m512 a = _mm512_set1_ps(s[size_t(k) * mp + m]);
#pragma GCC unroll 8
        for (int j = 0; j < 8; ++j)
          acc[j] = _mm512_fmadd_ps(a, _mm512_loadu_ps(vr + 16 * j), acc[j]);
      }
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) _mm512_storeu_ps(c + size_t(m) * np + n + 16 * j, acc[j]);
    }
    for (; n < np; n += 16) {
      __m512 acc = _mm512_setzero_ps();
      for (int k = 0; k < k_n; ++k)
        acc = _mm512_fmadd_ps(_mm512_set1_ps(s[size_t(k) * mp + m]),
                              _mm512_loadu_ps(v + size_t(k) * ldv + n), acc);
      _mm512_storeu_ps(c + size_t(m) * np + n, acc);
    }
  }
}

__attribute__((target("avx2,fma"))) void mm_avx2(const float* s, int mp, const float* v, int np,
                                                 int k_n, float* c, int m0, int m1, size_t ldv) {
  for (int m = m0; m < m1; m += kRowBlock)
    for (int n = 0; n < np; n += 16) {
      __m256 acc[4][2];
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
      for (int k = 0; k < k_n; ++k) {
        const float* vr = v + size_t(k) * ldv + n;
        const __m256 b0 = _mm256_loadu_ps(vr), b1 = _mm256_loadu_ps(vr + 8);
        const float* sr = s + size_t(k) * mp + m;
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i) {
          const __m256 a = _mm256_set1_ps(sr[i]);
          acc[i][0] = _mm256_fmadd_ps(a, b0, acc[i][0]);
          acc[i][1] = _mm256_fmadd_ps(a, b1, acc[i][1]);
        }
      }
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) {
        _mm256_storeu_ps(c + size_t(m + i) * np + n, acc[i][0]);
        _mm256_storeu_ps(c + size_t(m + i) * np + n + 8, acc[i][1]);
      }
    }
}

void mm_scalar(const float* s, int mp, const float* v, int np, int k_n, float* c, int m0, int m1,
               size_t ldv) {
  for (int m = m0; m < m1; ++m)
    for (int n = 0; n < np; ++n) {
      float acc = 0.0f;
      for (int k = 0; k < k_n; ++k)
        acc = std::fma(s[size_t(k) * mp + m], v[size_t(k) * ldv + n], acc);
      c[size_t(m) * np + n] = acc;
    }
}

int round_up(int x, int a) { return (x + a - 1) / a * a; }

// Loads rows of a view as fp32 into a [parts][width] buffer (zero padded).
std::vector<float> padded_rows(const View& v, int width) {
  std::vector<float> out(size_t(v.parts) * width, 0.0f);
  for (uint32_t p = 0; p < v.parts; ++p) load_row(v, p, out.data() + size_t(p) * width);
  return out;
}
// The same into a reused buffer (a matmul's operands: no allocation, and no page faults of a
// fresh 256 KiB block, per instruction); only the padding is zeroed.
const float* padded_rows_into(const View& v, int width, std::vector<float>& out) {
  const size_t w = size_t(width), n = v.free_elems;
  if (out.size() < size_t(v.parts) * w) out.resize(size_t(v.parts) * w);
  if (fp32_direct(v) && n == 1) { // a column (a 1-row matmul's stationary): no call per row
    const float* q = reinterpret_cast<const float*>(v.base);
    const int64_t ld = v.pstride / int64_t(sizeof(float)); // (may be negative in HBM)
    for (uint32_t p = 0; p < v.parts; ++p) {
      float* r = out.data() + size_t(p) * w;
      r[0] = q[int64_t(p) * ld];
      std::fill(r + 1, r + w, 0.0f);
    }
    return out.data();
  }
  if (fp32_direct(v)) { // rows a partition stride apart: all their loads in flight at once
    for (uint32_t p = 0; p < v.parts; ++p) {
      float* r = out.data() + size_t(p) * w;
      std::memcpy(r, v.row(p), n * sizeof(float));
      if (w > n) std::fill(r + n, r + w, 0.0f);
    }
    return out.data();
  }
  for (uint32_t p = 0; p < v.parts; ++p) {
    float* r = out.data() + size_t(p) * w;
    load_row(v, p, r);
    if (w > n) std::fill(r + n, r + w, 0.0f);
  }
  return out.data();
}

// Word index in psum_written of the byte at q (host words: the flags follow psum_stride).
size_t psum_word(const ExecCtx& cx, const uint8_t* q) { return size_t(q - cx.state->psum) / 4; }

// One fp32 PSUM row: overwrite, add, or (auto) add where a matmul already wrote.
void write_psum_row(float* out, uint8_t* flags, const float* r, uint64_t n, AccMode acc) {
  if (acc == AccMode::overwrite) {
    std::memcpy(out, r, n * sizeof(float));
  } else if (acc == AccMode::accumulate) {
    for (uint64_t j = 0; j < n; ++j) out[j] += r[j];
  } else {
    for (uint64_t j = 0; j < n; ++j) out[j] = flags[j] ? out[j] + r[j] : r[j];
  }
  std::memset(flags, 1, n);
}

// Transpose mode (gen3+): dst[m][n] = stationary[k(n)][m] bit for bit, where k(n) is the row
// holding the single 1 of moving column n (moving is the identity or a permutation).
void transpose_mode(ExecCtx& cx, const Inst& in, const View& d, const View& st, const View& mv) {
  const int n_cols = static_cast<int>(mv.free_elems);
  const std::vector<float> v = padded_rows(mv, n_cols);
  std::vector<int> src_k(n_cols, -1);
  for (int n = 0; n < n_cols; ++n)
    for (uint32_t k = 0; k < mv.parts; ++k) {
      const float x = v[size_t(k) * n_cols + n];
      if (x == 0.0f) continue;
      if (x != 1.0f || src_k[n] >= 0)
        fault(in, nisa::op::matmul::moving,
              fmt::format("transpose mode needs a 0/1 matrix with one 1 per column; "
                          "column {} differs",
                          n));
      src_k[n] = static_cast<int>(k);
    }
  const std::vector<uint8_t> s = gather_bits(st);
  const size_t eb = dtype_bytes(st.dtype);
  std::vector<uint8_t> row(n_cols * eb);
  for (uint32_t m = 0; m < d.parts; ++m) {
    for (int n = 0; n < n_cols; ++n) {
      if (src_k[n] < 0)
        std::memset(row.data() + n * eb, 0, eb);
      else
        std::memcpy(row.data() + n * eb, s.data() + (size_t(src_k[n]) * st.free_elems + m) * eb,
                    eb);
    }
    scatter_bits_row(d, m, row.data());
    if (!cx.state->psum_written.empty())
      for_each_elem(d, m, [&](uint8_t* q) { cx.state->psum_written[psum_word(cx, q)] = 1; });
  }
}

} // namespace

void sem_matmul(ExecCtx& cx, const Inst& in) {
  require_legal(cx, in);
  const AccMode acc = enum_operand<AccMode>(in, nisa::op::matmul::acc);
  const View d = operand_view(cx, in, nisa::op::matmul::dst, Access::write);
  const View st = operand_view(cx, in, nisa::op::matmul::stationary, Access::read);
  const View mv = operand_view(cx, in, nisa::op::matmul::moving, Access::read);
  const uint32_t K = st.parts;
  const uint64_t M = st.free_elems, N = mv.free_elems;
  if (matmul_limits(cx.target, d.dtype).one_psum_bank) {
    // Byte offset within the partition after any dynamic offset.
    const uint64_t first = uint64_t(d.base - cx.state->psum) % cx.state->psum_stride;
    const uint64_t last = first + N * dtype_bytes(d.dtype) - 1;
    if (!d.contiguous() || first / kPsumBankBytes != last / kPsumBankBytes)
      fault(in, nisa::op::matmul::dst,
            fmt::format("bytes {}..{} must be contiguous within one 2 KiB psum bank", first, last));
  }
  if (flag(in, nisa::op::matmul::transpose) && matmul_limits(cx.target, d.dtype).transpose_mode)
    return transpose_mode(cx, in, d, st, mv);

  const int mp = round_up(static_cast<int>(M), kRowBlock),
            np = round_up(static_cast<int>(N), kColPad);
  // Operand buffers reused per host thread (this one: the matmul's own thread).
  thread_local std::vector<float> s_buf, v_buf, c_buf;
  const float* s = padded_rows_into(st, mp, s_buf);
  // An aligned fp32 moving operand is read in place (its rows a partition stride apart): no
  // conversion copy. Rows not a whole 16 floats are read on past their end into the padded
  // columns (whose results are dropped) only on chip, where every row is followed by at least
  // kHostPartPad host bytes of its partition (core/target.h).
  const auto on_chip = [&](const uint8_t* q) {
    const CoreState* cs = cx.state;
    return (cs->sbuf && q >= cs->sbuf && q < cs->sbuf + kNumPartitions * cs->sbuf_stride) ||
           (cs->psum && q >= cs->psum && q < cs->psum + kNumPartitions * cs->psum_stride);
  };
  static_assert(kHostPartPad >= kColPad * sizeof(float));
  const bool direct = fp32_direct(mv) && mv.pstride >= 0 &&
                      (int64_t(N) == np || (mv.parts > 0 && on_chip(mv.base)));
  const float* v =
      direct ? reinterpret_cast<const float*>(mv.base) : padded_rows_into(mv, np, v_buf);
  const size_t ldv = direct ? size_t(mv.pstride) / 4 : size_t(np);
  if (c_buf.size() < size_t(mp) * np) c_buf.resize(size_t(mp) * np);
  float* c = c_buf.data();
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  // Row blocks are independent: large matmuls are split over the host threads.
  for_row_ranges(cx.pool, uint32_t(mp / kRowBlock), uint64_t(kRowBlock) * np * K,
                 [&](uint32_t b0, uint32_t b1) {
                   const int m0 = int(b0) * kRowBlock, m1 = int(b1) * kRowBlock, k = int(K);
                   const int mf = std::min(m1, int(M) / kRowBlock * kRowBlock);
                   if (avx512 && mf < m1) { // a last block of fewer than 4 real rows
                     if (m0 < mf) mm_avx512(s, mp, v, np, k, c, m0, mf, ldv);
                     mm_rows_avx512(s, mp, v, np, k, c, std::max(m0, mf), int(M), ldv);
                   } else if (avx512)
                     mm_avx512(s, mp, v, np, k, c, m0, m1, ldv);
                   else if (avx2)
                     mm_avx2(s, mp, v, np, k, c, m0, m1, ldv);
                   else
                     mm_scalar(s, mp, v, np, k, c, m0, m1, ldv);
                 });

  std::vector<uint8_t>& flags = cx.state->psum_written;
  if (d.dtype == DType::fp32 && d.contiguous() && !flags.empty() &&
      reinterpret_cast<uintptr_t>(d.base) % 4 == 0) {
    // One pass per row over the floats and their flags.
    for (uint32_t m = 0; m < M; ++m)
      write_psum_row(reinterpret_cast<float*>(d.row(m)), &flags[psum_word(cx, d.row(m))],
                     c + size_t(m) * np, N, acc);
    return;
  }
  // acc=auto decides per element from the flags as they were before this matmul: a 2-byte
  // (bf16) dst has two elements per flagged word, and the first one's write must not make the
  // second one add onto memory no matmul wrote.
  thread_local std::vector<uint8_t> adds;
  adds.resize(N);
  for (uint32_t m = 0; m < M; ++m) {
    const float* r = c + size_t(m) * np;
    uint64_t n = 0;
    for_each_elem(d, m, [&](uint8_t* q) {
      adds[n++] = acc == AccMode::accumulate ||
                  (acc == AccMode::auto_ && !flags.empty() && flags[psum_word(cx, q)]);
    });
    n = 0;
    for_each_elem(d, m, [&](uint8_t* q) {
      const float x = adds[n] ? load_as_f32(d.dtype, q) + r[n] : r[n];
      store_from_f32(d.dtype, q, x);
      if (!flags.empty()) flags[psum_word(cx, q)] = 1;
      ++n;
    });
  }
}

bool ew::matmul_f32_with(MatmulKernel k, const float* s, int m_n, const float* v, int n_n, int k_n,
                         float* c, int m0, int m1) {
  if (m1 < 0) m1 = m_n;
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  switch (k) {
  case MatmulKernel::avx512:
    if (!avx512) return false;
    mm_avx512(s, m_n, v, n_n, k_n, c, m0, m1, size_t(n_n));
    return true;
  case MatmulKernel::avx2:
    if (!avx2) return false;
    mm_avx2(s, m_n, v, n_n, k_n, c, m0, m1, size_t(n_n));
    return true;
  case MatmulKernel::scalar: mm_scalar(s, m_n, v, n_n, k_n, c, m0, m1, size_t(n_n)); return true;
  }
  return false;
}

void ew::matmul_f32(const float* s, int m_n, const float* v, int n_n, int k_n, float* c, int m0,
                    int m1) {
  for (MatmulKernel k : {MatmulKernel::avx512, MatmulKernel::avx2, MatmulKernel::scalar})
    if (matmul_f32_with(k, s, m_n, v, n_n, k_n, c, m0, m1)) return;
}

void sem_pe_transpose(ExecCtx& cx, const Inst& in) {
  require_legal(cx, in);
  const View d = operand_view(cx, in, nisa::op::pe_transpose::dst, Access::write);
  const View s = operand_view(cx, in, nisa::op::pe_transpose::src, Access::read);
  const std::vector<uint8_t> all = gather_bits(s);
  const size_t eb = dtype_bytes(s.dtype);
  std::vector<uint8_t> row(s.parts * eb);
  for (uint32_t f = 0; f < d.parts; ++f) {
    for (uint32_t p = 0; p < s.parts; ++p)
      std::memcpy(row.data() + p * eb, all.data() + (size_t(p) * s.free_elems + f) * eb, eb);
    scatter_bits_row(d, f, row.data());
    if (!cx.state->psum_written.empty()) // an overwriting PE write, like a matmul
      for_each_elem(d, f, [&](uint8_t* q) { cx.state->psum_written[psum_word(cx, q)] = 1; });
  }
}

} // namespace nisa::interp
