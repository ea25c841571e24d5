// Run-time choice of the vector kernels of the instruction semantics (issue 16).
//
// The host is probed once (__builtin_cpu_supports); NISA_SIMD=avx512|avx2|scalar in the
// environment, or set_level(), picks a lower level for tests and benches. Every kernel has
// the three forms and they give bit-identical results: the vector forms only skip work the
// scalar form would find to be a no-op, or run the same IEEE operations in the same order
// per element (across partitions rather than along a row where the order matters).
// The kernels are compiled with function-level target attributes, so the binary still runs
// on a host without AVX-512.
#pragma once
#include <cstdint>

#include "isa/dtype.h"

namespace nisa::interp::simd {

enum class Level : uint8_t { scalar, avx2, avx512 };

// The level the kernels use now.
Level level();
// The best level the host supports.
Level best();
bool supported(Level l);
// Chooses the level (false, unchanged, when the host lacks it). Not for concurrent use with
// running instructions: tests and benches call it between runs.
bool set_level(Level l);
const char* name(Level l);

// Target strings of the kernel functions (GCC / clang function attributes).
#define NISA_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,bmi,bmi2,popcnt")))
#define NISA_AVX2 __attribute__((target("avx2,fma,bmi,bmi2,popcnt")))

} // namespace nisa::interp::simd

// ---- kernels at an explicit level (ew::max8_row etc. call them at level()) -------------------
namespace nisa::interp::simd {
// See ew::max8_row, ew::find_index8_row, ew::match_replace8_row (elementwise.h).
// next (optional): the row the caller reads after this one, as many bytes; the vector forms
// prefetch it into L1 while their second pass reads this row from L1 (short rows only).
void max8_row(Level l, const float* x, uint64_t n, float out[8], const void* next = nullptr);
// max8 of a contiguous bf16 row (x: its bytes, 2 per element, any alignment), read as bf16
// (compares on the 16-bit patterns): the result of max8_row on the converted row. false
// (nothing written) when this form declines (a NaN, fewer than 256 elements, the scalar
// level): convert and use max8_row.
bool max8_bf16_row(Level l, const uint8_t* x, uint64_t n, float out[8], const void* next = nullptr);
void find_index8_row(Level l, const float* data, uint64_t n, const float vals[8], int64_t out[8]);
void match_replace8_row(Level l, const float* data, uint64_t n, const float vals[8],
                        int64_t out[8]);
// The same for a contiguous bf16 data row (2 bytes per element, any alignment), read as bf16:
// the results of find_index8_row / match_replace8_row on the converted row. false (nothing
// written) at the scalar level: convert and use those.
bool find_index8_bf16_row(Level l, const uint8_t* data, uint64_t n, const float vals[8],
                          int64_t out[8]);
bool match_replace8_bf16_row(Level l, const uint8_t* data, uint64_t n, const float vals[8],
                             int64_t out[8]);
// fp32 max (is_max) or min of x[0..n), n >= 1, exactly as the sequential fmax_nan / fmin_nan
// fold of tensor_reduce: false when only the sequential fold can tell (a NaN, or a zero
// result whose sign depends on which zero came last); the caller then folds.
bool reduce_maxmin_row(Level l, bool is_max, const float* x, uint64_t n, float* out);
// The same for a contiguous bf16 row (x: its bytes, 2 per element, any alignment), widened in
// registers; false also when the level has no bf16 form (AVX-512 only): convert and use the
// fp32 form.
bool reduce_maxmin_bf16_row(Level l, bool is_max, const uint8_t* x, uint64_t n, float* out);
} // namespace nisa::interp::simd

// ---- across-partition kernels (the recurrence runs along the row; lanes are rows) ----------
namespace nisa::interp::simd {
// Operators of the lane kernels below: add, subtract, multiply, max, min (fmax_nan /
// fmin_nan). lane_op_ok tells whether an AluOp (as its integer value) is one of them.
enum class LaneOp : uint8_t { add, subtract, multiply, max, min };

// Rows rows[0..nrows) of n elements each: out[r][i] = op1(op0(d0[r][i], acc), d1[r][i])
// (rev0 / rev1 swap the operands), acc starting at init[r]; the scalar order per row, so
// bit-identical to ew::scan_row at every level. Any nrows (groups of 8 / 16 rows inside).
void scan_rows(Level l, const float* const* d0, const float* const* d1, float* const* out,
               const float* init, uint32_t nrows, uint64_t n, LaneOp op0, LaneOp op1, bool rev0,
               bool rev1);
// acc[r] = x[r][0]; acc[r] = op(acc[r], x[r][k]) for k = 1..n-1 (n >= 1): the sequential fold
// of tensor_reduce, rows in lanes.
void fold_rows(Level l, const float* const* x, float* acc, uint32_t nrows, uint64_t n, LaneOp op);
// The same for rows of fp32 or bf16 elements (bf16: 2 bytes each, any alignment; fp32 rows
// 4-byte aligned), each operand of its own type; bf16 outputs round to nearest even as
// f32_to_bf16. fp32 and bf16 rows go straight into the lanes (widened in registers): the
// results are those of converting the rows to fp32, running the fp32 form and rounding.
enum class LaneType : uint8_t { f32, bf16 };
void scan_rows_t(Level l, LaneType t0, const void* const* d0, LaneType t1, const void* const* d1,
                 LaneType to, void* const* out, const float* init, uint32_t nrows, uint64_t n,
                 LaneOp op0, LaneOp op1, bool rev0, bool rev1);
void fold_rows_t(Level l, LaneType t, const void* const* x, float* acc, uint32_t nrows, uint64_t n,
                 LaneOp op);
} // namespace nisa::interp::simd

// ---- activation --------------------------------------------------------------------------
namespace nisa::interp::simd {
// e^x rounded to fp32, evaluated in double by one algorithm in all three forms (range
// reduction by ln 2, a degree-9 Taylor polynomial, scaling by 2^k through the exponent
// bits), so every level gives the same bits; within 1 fp32 ulp of (float)std::exp(double).
float exp_f32(float x);
// out[i] = exp_f32(x[i] * scale + bias) (the affine part in fp32, no fma).
void exp_row(Level l, const float* x, uint64_t n, float scale, float bias, float* out);
// The other activation functions with vector forms (simd_math.cpp): each evaluated in double
// from the fp32 argument by one algorithm in all three forms (own exp / log / erfc / sin
// kernels with fused multiply-adds, no libm but for the baseline scalar form's fma), rounded
// to fp32; a NaN argument gives it quieted. math_f32 is the scalar definition.
enum class MathFn : uint8_t {
  log,
  sqrt,
  rsqrt,
  reciprocal,
  tanh,
  sigmoid,
  gelu_apprx_tanh,
  gelu_apprx_sigmoid,
  gelu_apprx_sigmoid_dx,
  silu,
  silu_dx,
  softplus,
  mish,
  erf_dx,
  gelu,
  gelu_dx,
  erf,
  arctan,
  sin
};
float math_f32(MathFn f, float x);
// out[i] = math_f32(f, x[i] * scale + bias) (the affine part in fp32, no fma).
void math_row(Level l, MathFn f, const float* x, uint64_t n, float scale, float bias, float* out);
} // namespace nisa::interp::simd

// ---- dtype conversion of contiguous rows (DMA copies) -----------------------------------------
namespace nisa::interp::simd {
// n elements from src (dtype s) to dst (dtype d) with the rounding of store_from_f32
// (isa/dtype.h): fp32 -> bf16 and bf16 -> fp32 only; false (nothing written) for other pairs.
// The forms are the same integer operations per element, so every level gives the same bits.
// src and dst must not overlap.
bool convert_row(Level l, DType s, const uint8_t* src, DType d, uint8_t* dst, uint64_t n);
// iota: n values v0 + j * step (int32 wrapping arithmetic) into a contiguous run of dtype d,
// int32 or fp32 (int -> fp32 rounding to nearest even); false (nothing written) otherwise.
// The compiler vectorises the same loop per target. out must be 4-byte addressable (any
// alignment).
bool iota_run(Level l, DType d, uint8_t* out, uint32_t v0, uint32_t step, uint64_t n);
} // namespace nisa::interp::simd
