// Scalar engine (ACT) semantics: activation = func(src * scale + bias) with the engine's
// reduce registers (docs/machine.md "Activation functions", "ACT reduce registers"). The hardware
// evaluates the functions with piecewise polynomials; we evaluate the defining formulas in double,
// rounded to fp32, which is what the reference tests of the seeds compare against. exp (simd.h
// exp_f32) and the functions of simd::MathFn (all but copy, relu, square, abs and sign;
// simd_math.cpp) have their own double algorithms (fma, short interpolants, no libm), one per
// function in all vector forms, so every level gives the same bits, within 1 fp32 ulp of the
// formula in long double. The formulas (tests/semantics/act_test.cpp evaluates them in long
// double):
//   sigmoid = 1 / (1 + e^-x); silu = x sigmoid(x); silu_dx = s (1 + x (1 - s)), s = sigmoid(x);
//   softplus = max(x, 0) + log1p(e^-|x|); mish = x tanh(softplus(x));
//   gelu = x Phi(x); gelu_dx = Phi(x) + x phi(x) (Phi, phi: the normal cdf / pdf);
//   gelu_apprx_tanh = 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)));
//   gelu_apprx_sigmoid = x sigmoid(1.702 x); its dx = s (1 + 1.702 x (1 - s));
//   erf_dx = 2 / sqrt(pi) e^-x^2; log, sqrt, rsqrt, reciprocal, tanh, erf, sin, arctan.
// Where they differ at the edges: gelu and gelu_dx go through erfc for negative x (0.5 x (1 +
// erf z) loses its digits to cancellation below about x = -5), gelu_dx(+-inf) is its limit
// 1 / 0 (the formula gives inf * 0 = NaN), a NaN argument gives it quieted.
#include <cmath>

#include "interp/core/host_pool.h"
#include "interp/engines/elementwise.h"
#include "interp/engines/engines.h"
#include "interp/simd/simd.h"

namespace nisa::interp {
using namespace ew;

namespace {

// The functions with vector forms (simd_math.cpp, whose scalar form defines them).
constexpr bool math_of(ActFunc f, simd::MathFn* out) {
  using M = simd::MathFn;
  switch (f) {
  case ActFunc::log: *out = M::log; return true;
  case ActFunc::sqrt: *out = M::sqrt; return true;
  case ActFunc::rsqrt: *out = M::rsqrt; return true;
  case ActFunc::reciprocal: *out = M::reciprocal; return true;
  case ActFunc::tanh: *out = M::tanh; return true;
  case ActFunc::sigmoid: *out = M::sigmoid; return true;
  case ActFunc::gelu_apprx_tanh: *out = M::gelu_apprx_tanh; return true;
  case ActFunc::gelu_apprx_sigmoid: *out = M::gelu_apprx_sigmoid; return true;
  case ActFunc::gelu_apprx_sigmoid_dx: *out = M::gelu_apprx_sigmoid_dx; return true;
  case ActFunc::silu: *out = M::silu; return true;
  case ActFunc::silu_dx: *out = M::silu_dx; return true;
  case ActFunc::softplus: *out = M::softplus; return true;
  case ActFunc::mish: *out = M::mish; return true;
  case ActFunc::erf_dx: *out = M::erf_dx; return true;
  case ActFunc::gelu: *out = M::gelu; return true;
  case ActFunc::gelu_dx: *out = M::gelu_dx; return true;
  case ActFunc::erf: *out = M::erf; return true;
  case ActFunc::arctan: *out = M::arctan; return true;
  case ActFunc::sin: *out = M::sin; return true;
  default: return false;
  }
}
template <ActFunc F> constexpr simd::MathFn math_fn() {
  simd::MathFn m = simd::MathFn::log;
  math_of(F, &m);
  return m;
}
template <ActFunc F> constexpr bool has_math() {
  simd::MathFn m = simd::MathFn::log;
  return math_of(F, &m);
}

template <ActFunc F> double act_d(double x) {
  if constexpr (has_math<F>()) // x is an fp32 value here
    return simd::math_f32(math_fn<F>(), static_cast<float>(x));
  else if constexpr (F == ActFunc::copy)
    return x;
  else if constexpr (F == ActFunc::exp)
    return simd::exp_f32(static_cast<float>(x)); // x is an fp32 value here
  else if constexpr (F == ActFunc::relu)
    return x > 0 ? x : (x != x ? x : 0.0);
  else if constexpr (F == ActFunc::square)
    return x * x;
  else if constexpr (F == ActFunc::abs)
    return std::fabs(x);
  else {
    static_assert(F == ActFunc::sign, "an activation function without a definition");
    return x > 0 ? 1.0 : x < 0 ? -1.0 : x; // keeps +-0, NaN
  }
}

template <ActFunc F> using FnC = std::integral_constant<ActFunc, F>;
template <class G> void with_act(ActFunc f, G&& g) {
  switch (f) {
#define NISA_ACT_CASE(id, name, value)                                                             \
  case ActFunc::id: g(FnC<ActFunc::id>{}); return;
    NISA_ENUM_ActFunc(NISA_ACT_CASE)
#undef NISA_ACT_CASE
  }
  throw Fault(fmt::format("unknown activation function {}", static_cast<int>(f)));
}

} // namespace

namespace ew {
float act_fn(ActFunc f, float x) {
  float r = 0.0f;
  with_act(f, [&](auto fc) { r = static_cast<float>(act_d<decltype(fc)::value>(x)); });
  return r;
}

void act_row(ActFunc f, const float* x, uint64_t n, float scale, float bias, float* out) {
  if (f == ActFunc::exp) return simd::exp_row(simd::level(), x, n, scale, bias, out);
  simd::MathFn m = simd::MathFn::log;
  if (math_of(f, &m)) return simd::math_row(simd::level(), m, x, n, scale, bias, out);
  with_act(f, [&](auto fc) {
    constexpr ActFunc F = decltype(fc)::value;
    for (uint64_t i = 0; i < n; ++i) {
      const float a = x[i] * scale + bias; // the affine stage is fp32
      if constexpr (F == ActFunc::copy)
        out[i] = a;
      else
        out[i] = static_cast<float>(act_d<F>(a));
    }
  });
}
} // namespace ew

void sem_activation(ExecCtx& cx, const Inst& in) {
  const ActFunc func = enum_operand<ActFunc>(in, nisa::op::activation::func);
  const ReduceCmd cmd = enum_operand<ReduceCmd>(in, nisa::op::activation::reduce_cmd);
  require_legal(cx, in);
  const View d = operand_view(cx, in, nisa::op::activation::dst, Access::write);
  const View s = operand_view(cx, in, nisa::op::activation::src, Access::read);
  const ScalarOp scale = scalar_operand(cx, in, nisa::op::activation::scale, d.parts);
  const ScalarOp bias = scalar_operand(cx, in, nisa::op::activation::bias, d.parts);
  // Registers belong to the engine's lanes: lane = absolute dst partition.
  const uint32_t lane0 = operand(in, nisa::op::activation::dst).ap.part_start;
  if (cmd == ReduceCmd::reset || cmd == ReduceCmd::reset_reduce)
    for (uint32_t p = 0; p < d.parts; ++p) cx.state->act_acc[lane0 + p] = 0.0f;
  const bool accumulate = cmd == ReduceCmd::reduce || cmd == ReduceCmd::reset_reduce;

  // Rows (and their accumulators) are independent: ranges on the host threads.
  const bool snap = needs_snapshot(cx, d, s);
  for_row_ranges(snap ? nullptr : cx.pool, d.parts, d.free_elems, [&](uint32_t p0, uint32_t p1) {
    F32Rows rs(s, snap);
    F32Out o(d);
    for (uint32_t p = p0; p < p1; ++p) {
      float* out = o.get(p);
      act_row(func, rs.get(p), d.free_elems, scale.at(p), bias.at(p), out);
      if (accumulate) { // fp32 row sum of the function outputs, before rounding to dst
        float sum = 0.0f;
        for (uint64_t j = 0; j < d.free_elems; ++j) sum += out[j];
        cx.state->act_acc[lane0 + p] += sum;
      }
      o.commit(p);
    }
  });
  note_psum_write(cx, operand(in, nisa::op::activation::dst).ap);

  if (present(
          in,
          nisa::op::activation::reduce_res)) { // written after dst: if they alias, reduce_res wins
    const View r = operand_view(cx, in, nisa::op::activation::reduce_res,
                                Access::write); // [P, 1]: require_legal
    for (uint32_t p = 0; p < d.parts; ++p)
      store_from_f32(r.dtype, r.row(p), cx.state->act_acc[lane0 + p]);
    note_psum_write(cx, operand(in, nisa::op::activation::reduce_res).ap);
  }
}

} // namespace nisa::interp
