// Scalar-engine activation: each function against its textbook formula (written here in
// long double), the fp32 affine stage, and the reduce registers (docs/machine.md "ACT reduce
// registers"). Tolerance for the functions: 2 fp32 ulps relative to the long-double formula (the
// implementation evaluates in double and rounds once; libm differences stay within that).
#include <cmath>
#include <numbers>

#include "harness.h"

namespace nisa::interp::test {
namespace {

using L = long double;
L sig(L x) { return 1.0L / (1.0L + std::exp(-x)); }
L softplus(L x) { return std::log1p(std::exp(x)); }

L reference(ActFunc f, L x) {
  const L pi = std::numbers::pi_v<L>;
  switch (f) {
  case ActFunc::copy: return x;
  case ActFunc::exp: return std::exp(x);
  case ActFunc::log: return std::log(x);
  case ActFunc::rsqrt: return 1.0L / std::sqrt(x);
  case ActFunc::sqrt: return std::sqrt(x);
  case ActFunc::reciprocal: return 1.0L / x;
  case ActFunc::tanh: return std::tanh(x);
  case ActFunc::sigmoid: return sig(x);
  case ActFunc::relu: return x > 0 ? x : 0;
  case ActFunc::gelu: return 0.5L * x * (1 + std::erf(x / std::sqrt(2.0L)));
  case ActFunc::gelu_dx: // d/dx of x * Phi(x) = Phi(x) + x * phi(x)
    return 0.5L * (1 + std::erf(x / std::sqrt(2.0L))) +
           x * std::exp(-x * x / 2) / std::sqrt(2 * pi);
  case ActFunc::gelu_apprx_tanh:
    return 0.5L * x * (1 + std::tanh(std::sqrt(2 / pi) * (x + 0.044715L * x * x * x)));
  case ActFunc::gelu_apprx_sigmoid: return x * sig(1.702L * x);
  case ActFunc::gelu_apprx_sigmoid_dx: { // d/dx of x * sig(1.702x)
    const L s = sig(1.702L * x);
    return s + x * 1.702L * s * (1 - s);
  }
  case ActFunc::silu: return x * sig(x);
  case ActFunc::silu_dx: return sig(x) + x * sig(x) * (1 - sig(x));
  case ActFunc::softplus: return softplus(x);
  case ActFunc::mish: return x * std::tanh(softplus(x));
  case ActFunc::erf: return std::erf(x);
  case ActFunc::erf_dx: return 2 / std::sqrt(pi) * std::exp(-x * x);
  case ActFunc::square: return x * x;
  case ActFunc::abs: return std::fabs(x);
  case ActFunc::sign: return x > 0 ? 1 : x < 0 ? -1 : 0;
  case ActFunc::sin: return std::sin(x);
  case ActFunc::arctan: return std::atan(x);
  }
  return NAN;
}

TEST(Activation, EveryFunctionMatchesItsFormula) {
  for (const auto& m : enum_members(EnumType::ActFunc)) {
    const auto f = static_cast<ActFunc>(m.value);
    SCOPED_TRACE(std::string(m.name));
    const auto [lo, hi] = act_range(f);
    const auto xs = randoms(2000, 100 + m.value, lo, hi);
    for (float x : xs) {
      const float got = ew::act_fn(f, x);
      const L want = reference(f, x);
      const L tol = 2 * std::fabs(want) * std::numeric_limits<float>::epsilon() + 1e-12L;
      ASSERT_LE(std::fabs(L(got) - want), tol) << "x = " << x << " got " << got;
    }
  }
}

TEST(Activation, SpecialValues) {
  EXPECT_EQ(ew::act_fn(ActFunc::relu, -0.0f), 0.0f);
  EXPECT_TRUE(std::isnan(ew::act_fn(ActFunc::relu, NAN)));
  EXPECT_EQ(ew::act_fn(ActFunc::sigmoid, -INFINITY), 0.0f);
  EXPECT_EQ(ew::act_fn(ActFunc::softplus, 100.0f), 100.0f); // no overflow in exp
  EXPECT_EQ(ew::act_fn(ActFunc::exp, -INFINITY), 0.0f);
  EXPECT_EQ(ew::act_fn(ActFunc::sign, 0.0f), 0.0f);
  EXPECT_EQ(ew::act_fn(ActFunc::gelu_apprx_sigmoid_dx, 0.0f), 0.5f);
  EXPECT_EQ(ew::act_fn(ActFunc::silu_dx, 0.0f), 0.5f);
}

Inst act(const AccessPattern& d, const AccessPattern& s, ActFunc f) {
  Inst in = make(Opcode::activation, Engine::act);
  set_ap(in, "dst", d);
  set_ap(in, "src", s);
  set_e(in, "func", f);
  return in;
}

TEST(Activation, WorkedExample9ReduceRegisters) {
  Bench b;
  b.put(Bench::sb(DType::fp32, 1, 3), {1, 2, 3});
  Inst i1 = act(Bench::sb(DType::fp32, 1, 3, 64), Bench::sb(DType::fp32, 1, 3), ActFunc::copy);
  set_f(i1, "scale", 2.0f);
  set_f(i1, "bias", 1.0f);
  set_e(i1, "reduce_cmd", ReduceCmd::reset_reduce);
  b.run(i1);
  EXPECT_EQ(b.get(Bench::sb(DType::fp32, 1, 3, 64)), (std::vector<float>{3, 5, 7}));
  EXPECT_EQ(b.st.act_acc[0], 15.0f);
  b.put(Bench::sb(DType::fp32, 1, 2, 128), {1, 1});
  Inst i2 =
      act(Bench::sb(DType::fp32, 1, 2, 192), Bench::sb(DType::fp32, 1, 2, 128), ActFunc::copy);
  set_e(i2, "reduce_cmd", ReduceCmd::reduce);
  set_ap(i2, "reduce_res", Bench::sb(DType::fp32, 1, 1, 256));
  b.run(i2);
  EXPECT_EQ(b.get(Bench::sb(DType::fp32, 1, 2, 192)), (std::vector<float>{1, 1}));
  EXPECT_EQ(b.get(Bench::sb(DType::fp32, 1, 1, 256))[0], 17.0f);
  // idle leaves the registers alone; reset zeroes them without adding.
  set_e(i2, "reduce_cmd", ReduceCmd::idle);
  b.run(i2);
  EXPECT_EQ(b.get(Bench::sb(DType::fp32, 1, 1, 256))[0], 17.0f);
  set_e(i2, "reduce_cmd", ReduceCmd::reset);
  b.run(i2);
  EXPECT_EQ(b.get(Bench::sb(DType::fp32, 1, 1, 256))[0], 0.0f);
}

TEST(Activation, PerPartitionScaleBiasAndRowSums) {
  Bench b;
  const uint32_t P = 128, F = 257;
  const auto x = randoms(P * F, 50), sc = randoms(P, 51), bi = randoms(P, 52);
  b.put(Bench::sb(DType::bf16, P, F), x);
  b.put(Bench::sb(DType::fp32, P, 1, 1024), sc);
  b.put(Bench::ps(DType::fp32, P, 1), bi);
  const auto D = Bench::ps(DType::bf16, P, F, 2048);
  Inst in = act(D, Bench::sb(DType::bf16, P, F), ActFunc::gelu_apprx_sigmoid);
  set_ap(in, "scale", Bench::sb(DType::fp32, P, 1, 1024));
  set_ap(in, "bias", Bench::ps(DType::fp32, P, 1));
  set_e(in, "reduce_cmd", ReduceCmd::reset_reduce);
  set_ap(in, "reduce_res", Bench::sb(DType::fp32, P, 1, 1100));
  b.run(in);
  const auto got = b.get(D), xb = b.get(Bench::sb(DType::bf16, P, F)),
             rr = b.get(Bench::sb(DType::fp32, P, 1, 1100));
  for (uint32_t p = 0; p < P; ++p) {
    float sum = 0.0f;
    for (uint32_t j = 0; j < F; ++j) {
      const float a = xb[p * F + j] * sc[p] + bi[p];
      const float y =
          ew::act_fn(ActFunc::gelu_apprx_sigmoid, a); // checked against the formula above
      sum += y;
      uint8_t buf[2];
      store_from_f32(DType::bf16, buf, y);
      ASSERT_EQ(got[p * F + j], load_as_f32(DType::bf16, buf));
    }
    ASSERT_EQ(rr[p], sum); // fp32 sum of the unrounded outputs, in free order
  }
}

TEST(Activation, Faults) {
  Bench b;
  Inst in = act(Bench::sb(DType::fp32, 4, 4), Bench::sb(DType::fp32, 4, 4), ActFunc::exp);
  set_e(in, "reduce_cmd", ReduceCmd::load_reduce);
  EXPECT_FAULT(b.run(in), "load_reduce");
  Bench b1(Target::trn1);
  Inst i1 = act(Bench::sb(DType::fp32, 4, 4), Bench::sb(DType::fp32, 4, 4), ActFunc::exp);
  set_f(i1, "bias", 1.0f);
  EXPECT_FAULT(b1.run(i1), "immediate bias needs trn2");
  Inst i2 = act(Bench::sb(DType::fp32, 4, 4), Bench::sb(DType::fp32, 4, 4), ActFunc::exp);
  set_ap(i2, "reduce_res", Bench::sb(DType::fp32, 4, 2, 64));
  EXPECT_FAULT(b.run(i2), "must be [4, 1], got 4 x 2");
}

} // namespace
} // namespace nisa::interp::test
