// Vector engine (DVE) semantics, plus the instructions DVE shares with ACT and POOL (copy,
// tensor_scalar, tensor_tensor, memset); the search instructions are in dve_search.cpp.
// Arithmetic runs in fp32 and rounds to the destination dtype; bitvec operators work on raw
// integers (docs/machine.md "Data types and rounding", "ALU operators"). Vectorise the row loops
// (the default -O2 cost model leaves loops of unknown length scalar).
#pragma GCC optimize("O3")
#include <algorithm>

#include "interp/core/host_pool.h"
#include "interp/core/target.h"
#include "interp/engines/elementwise.h"
#include "interp/engines/engines.h"
#include "interp/simd/simd.h"

namespace nisa::interp {
using namespace ew;

namespace {

bool all_int32(std::initializer_list<const View*> vs) {
  for (const View* v : vs)
    if (v->dtype != DType::int32 && v->dtype != DType::uint32) return false;
  return true;
}

// All rows of a view as raw integers, packed row after row.
std::vector<int64_t> int_rows(const View& v) {
  std::vector<int64_t> out(v.parts * v.free_elems);
  for (uint32_t p = 0; p < v.parts; ++p) load_row_int(v, p, out.data() + p * v.free_elems);
  return out;
}

template <class F> void int_rows_op(AluOp op, F&& f) {
  if (!with_int_alu(op, f))
    throw Fault(fmt::format("ALU operator {} has no integer form", name_of(op)));
}

// Integer path of tensor_tensor: bitvec operators, or GpSimd's exact int32 arithmetic.
// (Integer dtypes for bitvec operators: require_legal.)
void int_binary(AluOp op, const View& d, const View& a, const View& b) {
  const std::vector<int64_t> x = int_rows(a), y = int_rows(b); // read all, then write
  const uint64_t n = d.free_elems;
  const int bits = dtype_bytes(a.dtype) * 8;
  std::vector<int64_t> out(n);
  int_rows_op(op, [&](auto o) {
    for (uint32_t p = 0; p < d.parts; ++p) {
      for (uint64_t j = 0; j < n; ++j)
        out[j] = alu_i<decltype(o)::value>(x[p * n + j], y[p * n + j], bits);
      store_row_int(d, p, out.data());
    }
  });
}

// Row kernels take everything by value so the compiler knows the trip count and vectorises.
template <AluOp O> void binary_row(float* out, const float* x, const float* y, uint64_t n) {
  for (uint64_t j = 0; j < n; ++j) out[j] = alu<O>(x[j], y[j]);
}
template <AluOp O, DType T>
void fused_binary_row(uint8_t* out, const uint8_t* x, const uint8_t* y, uint64_t n) {
  using Tr = Traits<T>;
  using S = typename Tr::S;
  for (uint64_t j = 0; j < n; ++j)
    st<S>(out + j * sizeof(S),
          Tr::from(alu<O>(Tr::to(ld<S>(x + j * sizeof(S))), Tr::to(ld<S>(y + j * sizeof(S))))));
}

// Same dtype everywhere, contiguous rows, no cross-row aliasing: one fused loop per row
// (convert, operate, round).
template <DType T>
bool fused_binary(ExecCtx& cx, AluOp op, const View& d, const View& a, const View& b) {
  if (a.dtype != T || b.dtype != T || d.dtype != T) return false;
  if (!d.contiguous() || !a.contiguous() || !b.contiguous() || d.rows || a.rows || b.rows)
    return false;
  if (needs_snapshot(cx, d, a) || needs_snapshot(cx, d, b)) return false;
  with_alu(op, [&](auto oc) {
    for_row_ranges(cx.pool, d.parts, d.free_elems, [&](uint32_t p0, uint32_t p1) {
      for (uint32_t p = p0; p < p1; ++p)
        fused_binary_row<decltype(oc)::value, T>(d.row(p), a.row(p), b.row(p), d.free_elems);
    });
  });
  return true;
}

void float_binary(ExecCtx& cx, AluOp op, const View& d, const View& a, const View& b) {
  if (fused_binary<DType::fp32>(cx, op, d, a, b) || fused_binary<DType::bf16>(cx, op, d, a, b))
    return;
  const bool snap_a = needs_snapshot(cx, d, a), snap_b = needs_snapshot(cx, d, b);
  with_alu(op, [&](auto oc) {
    // Snapshots read every row before the first write: one range then.
    for_row_ranges(snap_a || snap_b ? nullptr : cx.pool, d.parts, d.free_elems,
                   [&](uint32_t p0, uint32_t p1) {
                     F32Rows ra(a, snap_a), rb(b, snap_b);
                     F32Out o(d);
                     for (uint32_t p = p0; p < p1; ++p) {
                       const float* x = ra.get(p);
                       const float* y = rb.get(p);
                       binary_row<decltype(oc)::value>(o.get(p), x, y, d.free_elems);
                       o.commit(p);
                     }
                   });
  });
}

// out[j] = x[j] op s (rev: s op x[j]); unary operators ignore s. out may equal x.
template <AluOp O> void scalar_pass(float* out, const float* x, uint64_t n, float s, bool rev) {
  if (rev && !is_unary(O))
    for (uint64_t j = 0; j < n; ++j) out[j] = alu<O>(s, x[j]);
  else
    for (uint64_t j = 0; j < n; ++j) out[j] = alu<O>(x[j], s);
}
void apply_scalar(AluOp op, float* out, const float* x, uint64_t n, float s, bool rev) {
  if (op == AluOp::bypass) {
    if (out != x) std::memmove(out, x, n * sizeof(float));
    return;
  }
  with_alu(op, [&](auto o) { scalar_pass<decltype(o)::value>(out, x, n, s, rev); });
}

void tensor_scalar_int(const View& d, const View& s, AluOp op0, const ScalarOp& s0, bool rev0,
                       AluOp op1, const ScalarOp& s1, bool rev1) {
  const std::vector<int64_t> x = int_rows(s);
  const uint64_t n = d.free_elems;
  const int bits = dtype_bytes(s.dtype) * 8;
  std::vector<int64_t> out(n);
  // One pass per operator: out = x op0 a, then out = out op1 b.
  auto pass = [&](AluOp op, const int64_t* in, int64_t s, bool rev) {
    int_rows_op(op, [&](auto o) {
      constexpr AluOp O = decltype(o)::value;
      if (rev && O != AluOp::bypass && !is_unary(O)) // unary and bypass act on the data
        for (uint64_t j = 0; j < n; ++j) out[j] = alu_i<O>(s, in[j], bits);
      else
        for (uint64_t j = 0; j < n; ++j) out[j] = alu_i<O>(in[j], s, bits);
    });
  };
  for (uint32_t p = 0; p < d.parts; ++p) {
    pass(op0, x.data() + p * n, s0.at_int(p), rev0);
    pass(op1, out.data(), s1.at_int(p), rev1);
    store_row_int(d, p, out.data());
  }
}

// Scan with both operators known at compile time: the loop holds no switch.
template <AluOp O0, AluOp O1>
void scan_t(const float* d0, const float* d1, uint64_t n, float r, bool rev0, bool rev1,
            float* out) {
  for (uint64_t i = 0; i < n; ++i) {
    const float t = rev0 ? alu<O0>(r, d0[i]) : alu<O0>(d0[i], r);
    r = rev1 ? alu<O1>(d1[i], t) : alu<O1>(t, d1[i]);
    out[i] = r;
  }
}
template <class F> bool with_scan_op(AluOp op, F&& f) {
  switch (op) {
  case AluOp::add: f(OpC<AluOp::add>{}); return true;
  case AluOp::subtract: f(OpC<AluOp::subtract>{}); return true;
  case AluOp::multiply: f(OpC<AluOp::multiply>{}); return true;
  case AluOp::max: f(OpC<AluOp::max>{}); return true;
  case AluOp::min: f(OpC<AluOp::min>{}); return true;
  default: return false;
  }
}

// Partitions per call of the lane kernels on converted rows (bounds the converted rows; rows
// read straight into the lanes go in one call a host thread).
constexpr uint32_t kChunk = 16;
// Floats from one converted row to the next in the lane kernels' buffers: n padded as the
// SBUF partition stride is (host_stride), or rows of 2^k floats (2048, 8192) map their columns
// to one L1 set and the 16 rows read in lockstep thrash it (bf16 add fold at 0.07-0.10 of
// streaming before, docs/performance.md "Row kernels against a streaming pass").
uint64_t conv_stride(uint64_t n) { return host_stride(n * sizeof(float)) / sizeof(float); }

// The operators the across-partition lane kernels run (simd_lanes.cpp).
bool lane_op(AluOp op, simd::LaneOp* out) {
  switch (op) {
  case AluOp::add: *out = simd::LaneOp::add; return true;
  case AluOp::subtract: *out = simd::LaneOp::subtract; return true;
  case AluOp::multiply: *out = simd::LaneOp::multiply; return true;
  case AluOp::max: *out = simd::LaneOp::max; return true;
  case AluOp::min: *out = simd::LaneOp::min; return true;
  default: return false;
  }
}

} // namespace

// ---- pure row algorithms ---------------------------------------------------------------------
namespace ew {

void scan_row(const float* d0, const float* d1, uint64_t n, float init, AluOp op0, AluOp op1,
              bool rev0, bool rev1, float* out) {
  bool done = false;
  with_scan_op(op0, [&](auto o0) {
    done = with_scan_op(op1, [&](auto o1) {
      scan_t<decltype(o0)::value, decltype(o1)::value>(d0, d1, n, init, rev0, rev1, out);
    });
  });
  if (done) return;
  float r = init; // other operators: generic per-element ALU
  for (uint64_t i = 0; i < n; ++i) {
    const float t = rev0 ? alu_f32(op0, r, d0[i]) : alu_f32(op0, d0[i], r);
    r = rev1 ? alu_f32(op1, d1[i], t) : alu_f32(op1, t, d1[i]);
    out[i] = r;
  }
}

} // namespace ew

// ---- shared with ACT / POOL ---------------------------------------------------------------------
namespace {
// dst, in0 and in1 of a two-input instruction (same shapes, not both inputs in PSUM:
// require_legal).
struct TwoInputs {
  View d, a, b;
};
TwoInputs two_input_views(ExecCtx& cx, const Inst& in, int dst, int in0, int in1) {
  TwoInputs t{operand_view(cx, in, dst, Access::write), operand_view(cx, in, in0, Access::read),
              operand_view(cx, in, in1, Access::read)};
  return t;
}

} // namespace

void sem_copy(ExecCtx& cx, const Inst& in) {
  require_legal(cx, in);
  const View d = operand_view(cx, in, nisa::op::copy::dst, Access::write);
  const View s = operand_view(cx, in, nisa::op::copy::src, Access::read);
  // ScalarE on trn1 always converts through fp32 (docs/machine.md "Data types and rounding").
  const bool bits = d.dtype == s.dtype && !(in.engine == Engine::act && cx.target == Target::trn1);
  if (bits) {
    if (needs_snapshot(cx, d, s)) {
      const std::vector<uint8_t> all = gather_bits(s);
      const size_t row = s.free_elems * dtype_bytes(s.dtype);
      for (uint32_t p = 0; p < d.parts; ++p) scatter_bits_row(d, p, all.data() + p * row);
    } else {
      for_row_ranges(cx.pool, d.parts, d.free_elems, [&](uint32_t p0, uint32_t p1) {
        for (uint32_t p = p0; p < p1; ++p) copy_row_bits(d, p, s, p);
      });
    }
  } else {
    const bool snap = needs_snapshot(cx, d, s);
    for_row_ranges(snap ? nullptr : cx.pool, d.parts, d.free_elems, [&](uint32_t p0, uint32_t p1) {
      F32Rows rs(s, snap);
      for (uint32_t p = p0; p < p1; ++p) store_row(d, p, rs.get(p));
    });
  }
  note_psum_write(cx, operand(in, nisa::op::copy::dst).ap);
}

void sem_tensor_scalar(ExecCtx& cx, const Inst& in) {
  const AluOp op0 = enum_operand<AluOp>(in, nisa::op::tensor_scalar::op0),
              op1 = enum_operand<AluOp>(in, nisa::op::tensor_scalar::op1);
  const bool rev0 = flag(in, nisa::op::tensor_scalar::rev0),
             rev1 = flag(in, nisa::op::tensor_scalar::rev1);
  require_legal(cx, in);
  const bool bitvec = is_bitvec(op0);
  const View d = operand_view(cx, in, nisa::op::tensor_scalar::dst, Access::write);
  const View s = operand_view(cx, in, nisa::op::tensor_scalar::src, Access::read);
  const ScalarOp s0 = scalar_operand(cx, in, nisa::op::tensor_scalar::operand0, d.parts);
  const ScalarOp s1 = scalar_operand(cx, in, nisa::op::tensor_scalar::operand1, d.parts);
  if (bitvec) {
    tensor_scalar_int(d, s, op0, s0, rev0, op1, s1, rev1);
  } else {
    const bool snap = needs_snapshot(cx, d, s);
    for_row_ranges(snap ? nullptr : cx.pool, d.parts, d.free_elems, [&](uint32_t p0, uint32_t p1) {
      F32Rows rs(s, snap);
      F32Out o(d);
      for (uint32_t p = p0; p < p1; ++p) {
        float* out = o.get(p);
        apply_scalar(op0, out, rs.get(p), d.free_elems, s0.at(p), rev0);
        apply_scalar(op1, out, out, d.free_elems, s1.at(p), rev1);
        o.commit(p);
      }
    });
  }
  note_psum_write(cx, operand(in, nisa::op::tensor_scalar::dst).ap);
}

void sem_tensor_tensor(ExecCtx& cx, const Inst& in) {
  const AluOp op = enum_operand<AluOp>(in, nisa::op::tensor_tensor::op);
  require_legal(cx, in);
  const auto [d, a, b] =
      two_input_views(cx, in, nisa::op::tensor_tensor::dst, nisa::op::tensor_tensor::in0,
                      nisa::op::tensor_tensor::in1);
  // GpSimd computes all-int32 operands exactly (results wrap modulo 2^32).
  const bool exact_int = op != AluOp::power && op != AluOp::abs_max && op != AluOp::abs_min;
  if (is_bitvec(op) || (in.engine == Engine::pool && exact_int && all_int32({&d, &a, &b})))
    int_binary(op, d, a, b);
  else
    float_binary(cx, op, d, a, b);
  note_psum_write(cx, operand(in, nisa::op::tensor_tensor::dst).ap);
}

namespace {
// n copies of the eb-byte pattern at dst (any alignment): the pattern written once, then the
// filled prefix copied onto what follows in blocks doubling up to 16 KiB (libc's memcpy from
// an L1-resident source: wide stores at about memset's speed; the element loop of 4-byte
// stores it replaces ran at a third of that).
void fill_pattern(uint8_t* dst, const uint8_t* pat, int eb, uint64_t n) {
  const uint64_t total = n * uint64_t(eb);
  if (total == 0) return;
  std::memcpy(dst, pat, size_t(eb));
  uint64_t have = uint64_t(eb);
  while (have < total) {
    const uint64_t k = std::min({have, total - have, uint64_t(16) << 10});
    std::memcpy(dst + have, dst, size_t(k)); // (k <= have: no overlap)
    have += k;
  }
}
} // namespace

void sem_memset(ExecCtx& cx, const Inst& in) {
  require_legal(cx, in);
  const View d = operand_view(cx, in, nisa::op::memset::dst, Access::write);
  uint8_t bytes[4];
  store_from_f32(d.dtype, bytes,
                 operand(in, nisa::op::memset::value).f); // converted once, then replicated
  const int eb = dtype_bytes(d.dtype);
  for (uint32_t p = 0; p < d.parts; ++p) {
    if (d.contiguous()) {
      fill_pattern(d.row(p), bytes, eb, d.free_elems);
      continue;
    }
    for_each_elem(d, p, [&](uint8_t* q) { std::memcpy(q, bytes, eb); });
  }
  note_psum_write(cx, operand(in, nisa::op::memset::dst).ap);
}

// ---- DVE only --------------------------------------------------------------------------------
void sem_scalar_tensor_tensor(ExecCtx& cx, const Inst& in) {
  const AluOp op0 = enum_operand<AluOp>(in, nisa::op::scalar_tensor_tensor::op0),
              op1 = enum_operand<AluOp>(in, nisa::op::scalar_tensor_tensor::op1);
  require_legal(cx, in);
  const bool rev0 = flag(in, nisa::op::scalar_tensor_tensor::rev0),
             rev1 = flag(in, nisa::op::scalar_tensor_tensor::rev1);
  const auto [d, a, b] =
      two_input_views(cx, in, nisa::op::scalar_tensor_tensor::dst,
                      nisa::op::scalar_tensor_tensor::in0, nisa::op::scalar_tensor_tensor::in1);
  const ScalarOp s0 = scalar_operand(cx, in, nisa::op::scalar_tensor_tensor::operand0, d.parts);
  // The first pass writes the dst row before in1 is read: in1 must not share dst's memory.
  const bool snap_a = needs_snapshot(cx, d, a), snap_b = views_overlap(cx, d, b);
  const uint64_t n = d.free_elems;
  const uint32_t parts = d.parts; // clang 14 cannot capture a structured binding
  const View &dv = d, &av = a, &bv = b;
  with_alu(op1, [&](auto oc) {
    constexpr AluOp O = decltype(oc)::value;
    for_row_ranges(snap_a || snap_b ? nullptr : cx.pool, parts, n, [&](uint32_t p0, uint32_t p1) {
      F32Rows ra(av, snap_a), rb(bv, snap_b);
      F32Out o(dv);
      for (uint32_t p = p0; p < p1; ++p) {
        float* out = o.get(p);
        apply_scalar(op0, out, ra.get(p), n, s0.at(p), rev0);
        const float* y = rb.get(p);
        if (rev1)
          binary_row<O>(out, y, out, n);
        else
          binary_row<O>(out, out, y, n);
        o.commit(p);
      }
    });
  });
  note_psum_write(cx, operand(in, nisa::op::scalar_tensor_tensor::dst).ap);
}

namespace {
// The lane kernels' folds of rows [p0, p1) (outer groups a row, acc[(p - p0) * outer + g])
// into dst, negated under the instruction's negate flag.
template <class Out>
void store_folds(Out& o, const float* acc, uint32_t p0, uint32_t p1, uint64_t outer, bool negate) {
  for (uint32_t p = p0; p < p1; ++p) {
    float* out = o.get(p);
    for (uint64_t g = 0; g < outer; ++g) {
      const float a = acc[(p - p0) * outer + g];
      out[g] = negate ? -a : a;
    }
    o.commit(p);
  }
}
} // namespace

void sem_tensor_reduce(ExecCtx& cx, const Inst& in) {
  const AluOp op = enum_operand<AluOp>(in, nisa::op::tensor_reduce::op);
  const bool negate = flag(in, nisa::op::tensor_reduce::negate);
  const int64_t axes = operand(in, nisa::op::tensor_reduce::axes).i;
  require_legal(cx, in); // axes, the operator and dst's shape
  const View d = operand_view(cx, in, nisa::op::tensor_reduce::dst, Access::write);
  const View s = operand_view(cx, in, nisa::op::tensor_reduce::src, Access::read);
  uint64_t inner = 1;
  for (int k = 4 - static_cast<int>(axes); k < 4; ++k) inner *= s.count[k];
  const uint64_t outer = s.free_elems / inner;
  if (is_bitvec(op)) {
    const std::vector<int64_t> x = int_rows(s);
    const int bits = dtype_bytes(s.dtype) * 8;
    std::vector<int64_t> out(outer);
    int_rows_op(op, [&](auto oc) {
      for (uint32_t p = 0; p < d.parts; ++p) {
        for (uint64_t o = 0; o < outer; ++o) {
          const int64_t* r = x.data() + (p * outer + o) * inner;
          int64_t acc = r[0];
          for (uint64_t k = 1; k < inner; ++k) acc = alu_i<decltype(oc)::value>(acc, r[k], bits);
          out[o] = negate ? -acc : acc;
        }
        store_row_int(d, p, out.data());
      }
    });
  } else {
    const simd::Level lv = simd::level();
    simd::LaneOp lop = simd::LaneOp::add;
    // add / multiply keep the sequential order: rows (partition x outer group) in lanes.
    // Every level takes this path (the scalar one too), so NaN payloads agree (simd_lanes.cpp).
    const bool lanes = (op == AluOp::add || op == AluOp::multiply) && inner >= 8 &&
                       uint64_t(s.parts) * outer >= 8 && lane_op(op, &lop);
    // fp32 or bf16 rows straight into the lanes (bf16 widened in registers), every row of a
    // host thread's range in one call (groups of 16 fp32 / 32 bf16 rows); otherwise converted
    // rows below.
    const bool bf16_rows = s.dtype == DType::bf16 && s.contiguous();
    if (lanes && (fp32_direct(s) || bf16_rows) && !views_overlap(cx, d, s)) {
      const simd::LaneType t = bf16_rows ? simd::LaneType::bf16 : simd::LaneType::f32;
      const uint64_t eb = dtype_bytes(s.dtype);
      for_row_ranges(cx.pool, s.parts, s.free_elems, [&](uint32_t p0, uint32_t p1) {
        std::vector<const void*> rows(size_t(p1 - p0) * outer);
        std::vector<float> acc(rows.size());
        for (uint32_t p = p0; p < p1; ++p)
          for (uint64_t g = 0; g < outer; ++g)
            rows[(p - p0) * outer + g] = s.row(p) + g * inner * eb;
        simd::fold_rows_t(lv, t, rows.data(), acc.data(), uint32_t(rows.size()), inner, lop);
        F32Out o(d);
        store_folds(o, acc.data(), p0, p1, outer, negate);
      });
      note_psum_write(cx, operand(in, nisa::op::tensor_reduce::dst).ap);
      return;
    }
    if (lanes) {
      F32Rows rs(s, views_overlap(cx, d, s));
      // kChunk partitions at a time: converted rows stay small and cache-resident; ranges of
      // chunks on the host threads (rs is only read: direct rows or a snapshot).
      const bool direct = fp32_direct(s) || views_overlap(cx, d, s);
      const uint32_t nchunks = (s.parts + kChunk - 1) / kChunk;
      for_row_ranges(
          cx.pool, nchunks, uint64_t(kChunk) * s.free_elems, [&](uint32_t c0, uint32_t c1) {
            thread_local std::vector<float> conv;
            std::vector<const float*> rows(size_t(kChunk) * outer);
            std::vector<float> acc(rows.size());
            F32Out o(d);
            for (uint32_t p0 = c0 * kChunk; p0 < std::min(s.parts, c1 * kChunk); p0 += kChunk) {
              const uint32_t p1 = std::min<uint32_t>(s.parts, p0 + kChunk);
              const uint64_t cs = conv_stride(s.free_elems);
              if (!direct) conv.resize(size_t(p1 - p0) * cs);
              for (uint32_t p = p0; p < p1; ++p) {
                const float* r = conv.data() + size_t(p - p0) * cs;
                if (direct)
                  r = rs.get(p);
                else
                  load_row(s, p, conv.data() + size_t(p - p0) * cs);
                for (uint64_t g = 0; g < outer; ++g) rows[(p - p0) * outer + g] = r + g * inner;
              }
              const uint32_t nr = uint32_t((p1 - p0) * outer);
              simd::fold_rows(lv, rows.data(), acc.data(), nr, inner, lop);
              store_folds(o, acc.data(), p0, p1, outer, negate);
            }
          });
      note_psum_write(cx, operand(in, nisa::op::tensor_reduce::dst).ap);
      return;
    }
    const bool snap = views_overlap(cx, d, s);
    // max / min of contiguous bf16 rows: the vector kernel reads the bf16 bytes (no fp32
    // copy of the row); a row it declines (NaN, zero maximum, no bf16 form) is converted
    // and folded as below, so the results are the same.
    if ((op == AluOp::max || op == AluOp::min) && s.dtype == DType::bf16 && s.contiguous() &&
        s.row_skip.empty() && !snap && lv == simd::Level::avx512) {
      const bool is_max = op == AluOp::max;
      for_row_ranges(cx.pool, d.parts, s.free_elems, [&](uint32_t p0, uint32_t p1) {
        std::vector<float> conv;
        F32Out o(d);
        for (uint32_t p = p0; p < p1; ++p) {
          float* out = o.get(p);
          for (uint64_t g = 0; g < outer; ++g) {
            const uint8_t* r = s.row(p) + g * inner * 2;
            float m;
            if (!simd::reduce_maxmin_bf16_row(lv, is_max, r, inner, &m)) {
              conv.resize(inner);
              simd::convert_row(lv, DType::bf16, r, DType::fp32,
                                reinterpret_cast<uint8_t*>(conv.data()), inner);
              m = conv[0]; // sequential fp32 accumulation
              for (uint64_t k = 1; k < inner; ++k)
                m = is_max ? alu<AluOp::max>(m, conv[k]) : alu<AluOp::min>(m, conv[k]);
            }
            out[g] = negate ? -m : m;
          }
          o.commit(p);
        }
      });
      note_psum_write(cx, operand(in, nisa::op::tensor_reduce::dst).ap);
      return;
    }
    with_alu(op, [&](auto oc) {
      constexpr AluOp O = decltype(oc)::value;
      for_row_ranges(snap ? nullptr : cx.pool, d.parts, s.free_elems,
                     [&](uint32_t p0, uint32_t p1) {
                       F32Rows rr(s, snap);
                       F32Out o(d);
                       for (uint32_t p = p0; p < p1; ++p) {
                         const float* x = rr.get(p);
                         float* out = o.get(p);
                         for (uint64_t g = 0; g < outer; ++g) {
                           const float* r = x + g * inner;
                           if constexpr (O == AluOp::max || O == AluOp::min) {
                             float m;
                             if (simd::reduce_maxmin_row(lv, O == AluOp::max, r, inner, &m)) {
                               out[g] = negate ? -m : m;
                               continue;
                             }
                           }
                           float acc = r[0]; // sequential fp32 accumulation
                           for (uint64_t k = 1; k < inner; ++k) acc = alu<O>(acc, r[k]);
                           out[g] = negate ? -acc : acc;
                         }
                         o.commit(p);
                       }
                     });
    });
  }
  note_psum_write(cx, operand(in, nisa::op::tensor_reduce::dst).ap);
}

namespace {
// dst[j] = src[j] where pred[j]'s raw bits are nonzero (xor reverse), a row at a time: the
// element's own value is stored back elsewhere (the same bytes), so the loop has no branch.
template <class E, class P>
void select_rows(const View& d, const View& s, const View& pr, bool reverse) {
  const uint64_t n = d.free_elems;
  for (uint32_t p = 0; p < d.parts; ++p) {
    uint8_t* o = d.row(p);
    const uint8_t *a = s.row(p), *c = pr.row(p);
    const E flip = reverse ? E(~E(0)) : E(0);
    for (uint64_t j = 0; j < n; ++j) { // (bit masks: the loop vectorises)
      const E take = E(E(0) - E(ld<P>(c + j * sizeof(P)) != 0)) ^ flip;
      st<E>(o + j * sizeof(E),
            E((ld<E>(a + j * sizeof(E)) & take) | (ld<E>(o + j * sizeof(E)) & E(~take))));
    }
  }
}
template <class E> void select_rows_by(const View& d, const View& s, const View& pr, bool rev) {
  switch (dtype_bytes(pr.dtype)) {
  case 1: return select_rows<E, uint8_t>(d, s, pr, rev);
  case 2: return select_rows<E, uint16_t>(d, s, pr, rev);
  default: return select_rows<E, uint32_t>(d, s, pr, rev);
  }
}
} // namespace

void sem_copy_predicated(ExecCtx& cx, const Inst& in) {
  require_legal(cx, in);
  const bool reverse = flag(in, nisa::op::copy_predicated::reverse);
  const View d = operand_view(cx, in, nisa::op::copy_predicated::dst, Access::write);
  const View s = operand_view(cx, in, nisa::op::copy_predicated::src, Access::read);
  const View pr = operand_view(cx, in, nisa::op::copy_predicated::pred, Access::read);
  // Contiguous rows of one shape, dst sharing no byte with a source (the top-K key maps): in
  // place, without the packed copies of both sources and the per-element walk below.
  const int eb0 = dtype_bytes(d.dtype);
  if ((eb0 == 2 || eb0 == 4) && dtype_bytes(s.dtype) == eb0 && dtype_bytes(pr.dtype) <= 4 &&
      d.parts == s.parts && d.parts == pr.parts && d.free_elems == s.free_elems &&
      d.free_elems == pr.free_elems && d.contiguous() && s.contiguous() && pr.contiguous() &&
      d.row_skip.empty() && s.row_skip.empty() && pr.row_skip.empty() && !views_overlap(cx, d, s) &&
      !views_overlap(cx, d, pr)) {
    if (eb0 == 2)
      select_rows_by<uint16_t>(d, s, pr, reverse);
    else
      select_rows_by<uint32_t>(d, s, pr, reverse);
    note_psum_write(cx, operand(in, nisa::op::copy_predicated::dst).ap);
    return;
  }
  // Sources are read whole before dst is written.
  const std::vector<uint8_t> src = gather_bits(s);
  const std::vector<int64_t> pred = int_rows(pr);
  const size_t eb = dtype_bytes(d.dtype);
  const uint64_t n = d.free_elems;
  for (uint32_t p = 0; p < d.parts; ++p) {
    uint64_t j = 0;
    for_each_elem(d, p, [&](uint8_t* q) {
      if ((pred[p * n + j] != 0) != reverse) std::memcpy(q, src.data() + (p * n + j) * eb, eb);
      ++j;
    });
  }
  note_psum_write(cx, operand(in, nisa::op::copy_predicated::dst).ap);
}

void sem_scan(ExecCtx& cx, const Inst& in) {
  const AluOp op0 = enum_operand<AluOp>(in, nisa::op::scan::op0),
              op1 = enum_operand<AluOp>(in, nisa::op::scan::op1);
  require_legal(cx, in);
  const auto [d, a, b] =
      two_input_views(cx, in, nisa::op::scan::dst, nisa::op::scan::in0, nisa::op::scan::in1);
  const ScalarOp init = scalar_operand(cx, in, nisa::op::scan::init, d.parts);
  const simd::Level lv = simd::level();
  simd::LaneOp l0 = simd::LaneOp::add, l1 = simd::LaneOp::add;
  if (lane_op(op0, &l0) && lane_op(op1, &l1)) {
    // Rows in lanes (simd_lanes.cpp), at every level (the scalar one runs the same NaN rule),
    // kChunk partitions at a time: every source row of a chunk is needed at once.
    const bool snap_a = needs_snapshot(cx, d, a), snap_b = needs_snapshot(cx, d, b);
    F32Rows ra(a, snap_a), rb(b, snap_b);
    const bool da = fp32_direct(a) || snap_a, db = fp32_direct(b) || snap_b;
    const uint64_t n = d.free_elems;
    const bool direct = fp32_direct(d);
    const bool rev0 = flag(in, nisa::op::scan::rev0), rev1 = flag(in, nisa::op::scan::rev1);
    // Rows of fp32 (memory or a snapshot) or contiguous bf16 (widened in registers, bf16
    // outputs rounded in registers): every row of a host thread's range in one call.
    auto bf16_rows = [](const View& v) { return v.dtype == DType::bf16 && v.contiguous(); };
    const bool typed_a = da || bf16_rows(a), typed_b = db || bf16_rows(b);
    if (typed_a && typed_b && (direct || bf16_rows(d))) {
      using simd::LaneType;
      const LaneType ta = da ? LaneType::f32 : LaneType::bf16;
      const LaneType tb = db ? LaneType::f32 : LaneType::bf16;
      const LaneType to = direct ? LaneType::f32 : LaneType::bf16;
      const View &dv = d, &av = a, &bv = b;
      for_row_ranges(cx.pool, d.parts, n, [&](uint32_t p0, uint32_t p1) {
        const uint32_t k = p1 - p0;
        std::vector<const void*> pa(k), pb(k);
        std::vector<void*> po(k);
        std::vector<float> iv(k);
        for (uint32_t p = p0; p < p1; ++p) {
          pa[p - p0] = da ? static_cast<const void*>(ra.get(p)) : av.row(p);
          pb[p - p0] = db ? static_cast<const void*>(rb.get(p)) : bv.row(p);
          po[p - p0] = dv.row(p);
          iv[p - p0] = init.at(p);
        }
        simd::scan_rows_t(lv, ta, pa.data(), tb, pb.data(), to, po.data(), iv.data(), k, n, l0, l1,
                          rev0, rev1);
      });
      note_psum_write(cx, operand(in, nisa::op::scan::dst).ap);
      return;
    }
    const uint32_t nchunks = (d.parts + kChunk - 1) / kChunk;
    const View &dv = d, &av = a, &bv = b; // (clang 14 cannot capture a structured binding)
    // Chunks are independent: ranges of them on the host threads (ra / rb only read).
    for_row_ranges(cx.pool, nchunks, uint64_t(kChunk) * n, [&](uint32_t c0, uint32_t c1) {
      thread_local std::vector<float> ca, cb, co;
      const uint32_t ch = std::min<uint32_t>(dv.parts, kChunk);
      const uint64_t cs = conv_stride(n);
      if (!da) ca.resize(size_t(ch) * cs);
      if (!db) cb.resize(size_t(ch) * cs);
      if (!direct) co.resize(size_t(ch) * cs);
      std::vector<float> iv(ch);
      std::vector<const float*> pa(ch), pb(ch);
      std::vector<float*> po(ch);
      for (uint32_t p0 = c0 * kChunk; p0 < std::min(dv.parts, c1 * kChunk); p0 += kChunk) {
        const uint32_t p1 = std::min<uint32_t>(dv.parts, p0 + kChunk);
        for (uint32_t p = p0; p < p1; ++p) {
          const uint32_t k = p - p0;
          if (da) {
            pa[k] = ra.get(p);
          } else {
            load_row(av, p, ca.data() + size_t(k) * cs);
            pa[k] = ca.data() + size_t(k) * cs;
          }
          if (db) {
            pb[k] = rb.get(p);
          } else {
            load_row(bv, p, cb.data() + size_t(k) * cs);
            pb[k] = cb.data() + size_t(k) * cs;
          }
          po[k] = direct ? reinterpret_cast<float*>(dv.row(p)) : co.data() + size_t(k) * cs;
          iv[k] = init.at(p);
        }
        simd::scan_rows(lv, pa.data(), pb.data(), po.data(), iv.data(), p1 - p0, n, l0, l1, rev0,
                        rev1);
        if (!direct)
          for (uint32_t p = p0; p < p1; ++p) store_row(dv, p, co.data() + size_t(p - p0) * cs);
      }
    });
    note_psum_write(cx, operand(in, nisa::op::scan::dst).ap);
    return;
  }
  F32Rows ra(a, needs_snapshot(cx, d, a)), rb(b, needs_snapshot(cx, d, b));
  F32Out o(d);
  for (uint32_t p = 0; p < d.parts; ++p) {
    scan_row(ra.get(p), rb.get(p), d.free_elems, init.at(p), op0, op1,
             flag(in, nisa::op::scan::rev0), flag(in, nisa::op::scan::rev1), o.get(p));
    o.commit(p);
  }
  note_psum_write(cx, operand(in, nisa::op::scan::dst).ap);
}

void sem_reciprocal(ExecCtx& cx, const Inst& in) {
  require_legal(cx, in);
  const View d = operand_view(cx, in, nisa::op::reciprocal::dst, Access::write);
  const View s = operand_view(cx, in, nisa::op::reciprocal::src, Access::read);
  F32Rows rs(s, needs_snapshot(cx, d, s));
  F32Out o(d);
  for (uint32_t p = 0; p < d.parts; ++p) {
    scalar_pass<AluOp::reciprocal>(o.get(p), rs.get(p), d.free_elems, 0.0f, false);
    o.commit(p);
  }
  note_psum_write(cx, operand(in, nisa::op::reciprocal::dst).ap);
}

void sem_dve_transpose(ExecCtx& cx, const Inst& in) {
  require_legal(cx, in); // one block of at most 32x32, or 32x32 blocks in whole quadrants
  const View d = operand_view(cx, in, nisa::op::dve_transpose::dst, Access::write);
  const View s = operand_view(cx, in, nisa::op::dve_transpose::src, Access::read);
  const bool one_block = s.parts <= 32 && s.free_elems <= 32;
  const uint32_t bp = one_block ? s.parts : 32, bf = one_block ? uint32_t(s.free_elems) : 32;
  const uint32_t blocks = s.parts / bp;
  const std::vector<uint8_t> all = gather_bits(s);
  const size_t eb = dtype_bytes(s.dtype);
  std::vector<uint8_t> row(bp * eb);
  for (uint32_t q = 0; q < blocks; ++q)
    for (uint32_t f = 0; f < bf; ++f) {
      for (uint32_t p = 0; p < bp; ++p)
        std::memcpy(row.data() + p * eb, all.data() + ((q * bp + p) * bf + f) * eb, eb);
      scatter_bits_row(d, q * bf + f, row.data());
    }
  note_psum_write(cx, operand(in, nisa::op::dve_transpose::dst).ap);
}

void sem_stream_shuffle(ExecCtx& cx, const Inst& in) {
  require_legal(cx, in); // dtypes, sizes and the mask's entries
  const View d = operand_view(cx, in, nisa::op::stream_shuffle::dst, Access::write);
  const View s = operand_view(cx, in, nisa::op::stream_shuffle::src, Access::read);
  const ShuffleMask& mask = operand(in, nisa::op::stream_shuffle::mask).mask;
  const std::vector<uint8_t> all = gather_bits(s); // in place is allowed: read first
  const size_t row = s.free_elems * dtype_bytes(s.dtype);
  for (uint32_t p = 0; p < d.parts; ++p) {
    const uint8_t m = mask.v[p % 32];
    if (m == 255) continue;
    const uint32_t sp = (p / 32) * 32 + m;
    scatter_bits_row(d, p, all.data() + sp * row);
  }
  note_psum_write(cx, operand(in, nisa::op::stream_shuffle::dst).ap);
}

} // namespace nisa::interp
