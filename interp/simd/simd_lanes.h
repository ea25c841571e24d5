// Shared parts of the lane kernels (simd_lanes.cpp and the 16-row kernels of
// simd_lanes16.inc, compiled once per target in simd_lanes16_avx512.cpp / _avx2.cpp).
#pragma once
#include <cstring>

#include "interp/simd/simd.h"

namespace nisa::interp::simd::lanes {

// A NaN operand propagates by an explicit rule, the x86 one for a + b: a's NaN if a is NaN,
// else b's (quieted by adding it to itself). Compilers treat + and * as commutative, so
// without the rule which of two NaN payloads survives would depend on code generation.
// max / min are ew::fmax_nan / fmin_nan (a + b when either is NaN) under the same rule.
inline float s_op(LaneOp o, float a, float b) {
  if (a != a) return a + a;
  if (b != b) return b + b;
  switch (o) {
  case LaneOp::add: return a + b;
  case LaneOp::subtract: return a - b;
  case LaneOp::multiply: return a * b;
  case LaneOp::max: return a > b ? a : b;
  case LaneOp::min: return a < b ? a : b;
  }
  return a;
}

// ---- rows of fp32 or bf16 elements (the 16-row kernels, simd_lanes16.inc)
inline float ld_t(LaneType t, const void* p, uint64_t i) {
  if (t == LaneType::f32) return static_cast<const float*>(p)[i];
  uint16_t h;
  std::memcpy(&h, static_cast<const uint8_t*>(p) + 2 * i, 2);
  return bf16_to_f32(h);
}
inline void st_t(LaneType t, void* p, uint64_t i, float v) {
  if (t == LaneType::f32) {
    static_cast<float*>(p)[i] = v;
    return;
  }
  const uint16_t h = f32_to_bf16(v);
  std::memcpy(static_cast<uint8_t*>(p) + 2 * i, &h, 2);
}
// The scalar recurrence of one row from column `from` with state r (any row types).
inline void scan_tail_t(LaneType t0, const void* d0, LaneType t1, const void* d1, LaneType to,
                        void* out, uint64_t from, uint64_t n, float r, LaneOp op0, LaneOp op1,
                        bool rev0, bool rev1) {
  for (uint64_t i = from; i < n; ++i) {
    const float a = ld_t(t0, d0, i), b = ld_t(t1, d1, i);
    const float t = rev0 ? s_op(op0, r, a) : s_op(op0, a, r);
    r = rev1 ? s_op(op1, b, t) : s_op(op1, t, b);
    st_t(to, out, i, r);
  }
}

// Groups of 16 rows (simd_lanes16.inc); r0: the first row not done yet, advanced.
#define NISA_LANES16_DECL                                                                          \
  void fold16_rows(LaneType t, const void* const* x, float* acc, uint32_t nrows, uint64_t n,       \
                   LaneOp op, uint32_t& r0);                                                       \
  void scan16_rows(LaneType t0, const void* const* d0, LaneType t1, const void* const* d1,         \
                   LaneType to, void* const* out, const float* init, uint32_t nrows, uint64_t n,   \
                   LaneOp op0, LaneOp op1, bool rev0, bool rev1, uint32_t& r0);
namespace l512 {
NISA_LANES16_DECL
}
namespace l2 {
NISA_LANES16_DECL
}
#undef NISA_LANES16_DECL

} // namespace nisa::interp::simd::lanes
