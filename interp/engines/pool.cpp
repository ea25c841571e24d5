// GpSimd (POOL) semantics: iota, affine_select, n_gather (docs/machine.md "Vector and GpSimd
// instructions"). copy, tensor_scalar, tensor_tensor and memset on POOL share dve.cpp's functions;
// the "never PSUM" rule is enforced for every POOL operand by ew::operand_view. O3: vectorise the
// typed iota row stores.
#pragma GCC optimize("O3")
#include <algorithm>
#include <limits>

#include "interp/engines/elementwise.h"
#include "interp/engines/engines.h"
#include "interp/simd/simd.h"

namespace nisa::interp {
using namespace ew;

namespace {

// Affine values offset + p * pmul + sum(step_k * i_k) of row p, row-major over the pattern,
// in int32 arithmetic (wrapping).
void affine_row(const AffinePattern& pat, int32_t offset, int32_t pmul, uint32_t p,
                std::vector<int32_t>& out) {
  int32_t step[4] = {0, 0, 0, 0}, num[4] = {1, 1, 1, 1};
  for (int k = 0; k < pat.n; ++k) { // pad at the outer end so slot 3 is the innermost
    step[4 - pat.n + k] = pat.d[k][0];
    num[4 - pat.n + k] = pat.d[k][1];
  }
  const uint32_t base = uint32_t(offset) + uint32_t(p) * uint32_t(pmul);
  size_t j = 0;
  for (int32_t a = 0; a < num[0]; ++a)
    for (int32_t b = 0; b < num[1]; ++b)
      for (int32_t c = 0; c < num[2]; ++c) {
        uint32_t v = base + uint32_t(a) * uint32_t(step[0]) + uint32_t(b) * uint32_t(step[1]) +
                     uint32_t(c) * uint32_t(step[2]);
        for (int32_t e = 0; e < num[3]; ++e, v += uint32_t(step[3])) out[j++] = int32_t(v);
      }
}

// (1..4 pairs of num >= 1, covering dst: require_legal.)
uint64_t pattern_elems(const AffinePattern& pat) {
  uint64_t n = 1;
  for (int k = 0; k < pat.n; ++k) n *= uint64_t(pat.d[k][1]);
  return n;
}

// An int32 value into dtype t: exact into int dtypes (saturating narrower ones), through
// fp32 into float dtypes.
void store_int_value(DType t, uint8_t* p, int32_t v) {
  if (info(t).is_float) return store_from_f32(t, p, static_cast<float>(v));
  const int bits = dtype_bytes(t) * 8;
  int64_t lo = 0, hi = (int64_t{1} << bits) - 1;
  if (info(t).is_signed) {
    lo = -(int64_t{1} << (bits - 1));
    hi = (int64_t{1} << (bits - 1)) - 1;
  }
  store_from_int(t, p, std::clamp<int64_t>(v, lo, hi));
}

// store_int_value over a contiguous row, dtype known at compile time (the same conversions).
template <DType T> void store_int_row(uint8_t* out, const int32_t* v, uint64_t n) {
  using S = typename Traits<T>::S;
  if constexpr (info(T).is_float) {
    for (uint64_t j = 0; j < n; ++j) st<S>(out + j * sizeof(S), Traits<T>::from(float(v[j])));
  } else {
    constexpr int64_t lo = std::numeric_limits<S>::min(), hi = std::numeric_limits<S>::max();
    for (uint64_t j = 0; j < n; ++j)
      st<S>(out + j * sizeof(S), S(std::clamp<int64_t>(v[j], lo, hi)));
  }
}

} // namespace

void sem_iota(ExecCtx& cx, const Inst& in) {
  require_legal(cx, in);
  const AffinePattern& pat = operand(in, nisa::op::iota::pattern).pat;
  const View d = operand_view(cx, in, nisa::op::iota::dst, Access::write);
  const uint64_t n = pattern_elems(pat);
  const auto offset = static_cast<int32_t>(operand(in, nisa::op::iota::offset).i);
  const auto pmul = static_cast<int32_t>(operand(in, nisa::op::iota::pmul).i);
  // int32 / fp32 contiguous rows: each innermost run of the pattern written straight from
  // its arithmetic sequence by the vector kernels (the same values as below).
  if (d.contiguous() && (d.dtype == DType::int32 || d.dtype == DType::fp32)) {
    int32_t step[4] = {0, 0, 0, 0}, num[4] = {1, 1, 1, 1};
    for (int k = 0; k < pat.n; ++k) {
      step[4 - pat.n + k] = pat.d[k][0];
      num[4 - pat.n + k] = pat.d[k][1];
    }
    const simd::Level lv = simd::level();
    for (uint32_t p = 0; p < d.parts; ++p) {
      const uint32_t base = uint32_t(offset) + uint32_t(p) * uint32_t(pmul);
      uint8_t* out = d.row(p);
      for (int32_t a = 0; a < num[0]; ++a)
        for (int32_t b = 0; b < num[1]; ++b)
          for (int32_t c = 0; c < num[2]; ++c) {
            const uint32_t v = base + uint32_t(a) * uint32_t(step[0]) +
                               uint32_t(b) * uint32_t(step[1]) + uint32_t(c) * uint32_t(step[2]);
            simd::iota_run(lv, d.dtype, out, v, uint32_t(step[3]), uint64_t(num[3]));
            out += uint64_t(num[3]) * 4;
          }
    }
    return;
  }
  std::vector<int32_t> vals(n);
  for (uint32_t p = 0; p < d.parts; ++p) {
    affine_row(pat, offset, pmul, p, vals);
    const int32_t* v = vals.data();
    if (d.contiguous()) { // one dtype switch per row, then a loop the compiler vectorises
      with_dtype(d.dtype, [&](auto t) { store_int_row<decltype(t)::value>(d.row(p), v, n); });
      continue;
    }
    for_each_elem(d, p, [&](uint8_t* q) { store_int_value(d.dtype, q, *v++); });
  }
}

void sem_affine_select(ExecCtx& cx, const Inst& in) {
  const AffinePattern& pat = operand(in, nisa::op::affine_select::pattern).pat;
  const AluOp cmp = enum_operand<AluOp>(in, nisa::op::affine_select::cmp);
  require_legal(cx, in);
  const View d = operand_view(cx, in, nisa::op::affine_select::dst, Access::write);
  const View t = operand_view(cx, in, nisa::op::affine_select::on_true, Access::read);
  const uint64_t n = pattern_elems(pat);
  const auto offset = static_cast<int32_t>(operand(in, nisa::op::affine_select::offset).i);
  const auto pmul = static_cast<int32_t>(operand(in, nisa::op::affine_select::pmul).i);
  uint8_t off_bytes[4];
  store_from_f32(d.dtype, off_bytes, operand(in, nisa::op::affine_select::on_false).f);
  const size_t eb = dtype_bytes(d.dtype);
  // on_true is read whole first (it may be dst); equal dtypes copy bits, else via fp32.
  const bool bits = d.dtype == t.dtype;
  const std::vector<uint8_t> tb = bits ? gather_bits(t) : std::vector<uint8_t>{};
  std::vector<float> tf;
  if (!bits) {
    tf.resize(t.parts * n);
    for (uint32_t p = 0; p < t.parts; ++p) load_row(t, p, tf.data() + p * n);
  }
  std::vector<int32_t> vals(n);
  std::vector<uint8_t> keep(n);
  for (uint32_t p = 0; p < d.parts; ++p) {
    affine_row(pat, offset, pmul, p, vals);
    with_int_alu(cmp, [&](auto o) {
      for (uint64_t j = 0; j < n; ++j) keep[j] = alu_i<decltype(o)::value>(vals[j], 0, 32) != 0;
    });
    uint64_t j = 0;
    for_each_elem(d, p, [&](uint8_t* q) {
      if (!keep[j])
        std::memcpy(q, off_bytes, eb);
      else if (bits)
        std::memcpy(q, tb.data() + (p * n + j) * eb, eb);
      else
        store_from_f32(d.dtype, q, tf[p * n + j]);
      ++j;
    });
  }
}

namespace {
// The bytes [lo, hi) the rows of a contiguous view cover.
std::pair<const uint8_t*, const uint8_t*> row_span(const View& v) {
  const uint8_t *lo = v.row(0), *hi = lo;
  for (uint32_t p = 1; p < v.parts; ++p) {
    lo = std::min<const uint8_t*>(lo, v.row(p));
    hi = std::max<const uint8_t*>(hi, v.row(p));
  }
  return {lo, hi + v.free_elems * uint64_t(dtype_bytes(v.dtype))};
}

// n_gather of 4-byte elements by 32-bit indices, all rows contiguous, dst apart from data: a
// row's indices checked first (the fault, and what is written before it, as the general path),
// then the bits copied straight from data's row (topk's index gathers: 6% of topk_cascaded
// in the general path's per-element loads and copies).
bool gather_direct(const Inst& in, const View& d, const View& data, const View& idx) {
  if (dtype_bytes(d.dtype) != 4 || dtype_bytes(data.dtype) != 4 ||
      (idx.dtype != DType::uint32 && idx.dtype != DType::int32) || !d.contiguous() ||
      !data.contiguous() || !idx.contiguous() || !d.row_skip.empty() || !data.row_skip.empty() ||
      !idx.row_skip.empty() || d.parts == 0 || d.free_elems != idx.free_elems ||
      data.parts != d.parts || idx.parts != d.parts)
    return false;
  const auto [d0, d1] = row_span(d);
  const auto [s0, s1] = row_span(data);
  if (d0 < s1 && s0 < d1) return false;
  const uint64_t f = data.free_elems, n = idx.free_elems;
  const bool sign = idx.dtype == DType::int32;
  for (uint32_t p = 0; p < d.parts; ++p) {
    const uint8_t* ir = idx.row(p);
    for (uint64_t j = 0; j < n; ++j) {
      uint32_t u;
      std::memcpy(&u, ir + 4 * j, 4);
      const int64_t ix = sign ? int64_t(int32_t(u)) : int64_t(u);
      if (ix < 0 || uint64_t(ix) >= f)
        fault(in, nisa::op::n_gather::idx,
              fmt::format("[{}, {}] = {} is outside [0, {})", p, j, ix, f));
    }
    const uint8_t* sr = data.row(p);
    uint8_t* dr = d.row(p);
    for (uint64_t j = 0; j < n; ++j) {
      uint32_t u;
      std::memcpy(&u, ir + 4 * j, 4);
      std::memcpy(dr + 4 * j, sr + 4 * uint64_t(u), 4);
    }
  }
  return true;
}
} // namespace

void sem_n_gather(ExecCtx& cx, const Inst& in) {
  require_legal(cx, in);
  const View d = operand_view(cx, in, nisa::op::n_gather::dst, Access::write);
  const View data = operand_view(cx, in, nisa::op::n_gather::data, Access::read);
  const View idx = operand_view(cx, in, nisa::op::n_gather::idx, Access::read);
  if (gather_direct(in, d, data, idx)) return;
  const std::vector<uint8_t> src = gather_bits(data); // read first: dst may alias
  std::vector<int64_t> ix(idx.free_elems);
  const size_t eb = dtype_bytes(d.dtype);
  const uint64_t f = data.free_elems;
  std::vector<uint8_t> row(d.free_elems * eb);
  for (uint32_t p = 0; p < d.parts; ++p) {
    load_row_int(idx, p, ix.data());
    for (uint64_t j = 0; j < ix.size(); ++j) {
      if (ix[j] < 0 || uint64_t(ix[j]) >= f)
        fault(in, nisa::op::n_gather::idx,
              fmt::format("[{}, {}] = {} is outside [0, {})", p, j, ix[j], f));
      std::memcpy(row.data() + j * eb, src.data() + (p * f + ix[j]) * eb, eb);
    }
    scatter_bits_row(d, p, row.data());
  }
}

} // namespace nisa::interp
