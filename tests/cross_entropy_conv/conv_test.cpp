// conv1d.nasm and depthwise_conv1d.nasm against direct convolution loops in double.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/support/kernel_harness.h"

namespace nisa::kt {
namespace {

const double kU = std::ldexp(1.0, -24);
const double kUb = std::ldexp(1.0, -8); // bf16 unit roundoff (8 significant bits)

double act_ref(const std::string& a, double v) {
  if (a == "relu") return std::max(v, 0.0);
  if (a == "sigmoid") return 1.0 / (1.0 + std::exp(-v));
  if (a == "silu") return v / (1.0 + std::exp(-v));
  if (a == "tanh") return std::tanh(v);
  if (a == "gelu") return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
  if (a == "gelu_apprx_tanh")
    return 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
  return v; // none
}

// Error bound of a dot product of n terms accumulated in fp32 (the products of DT values are
// exact in fp32 for bf16 and round once for fp32): (n + 2) u sum |terms| (recursive summation,
// plus the bias add), propagated through the activation (|slope| <= 1.2 for all of them), plus
// the rounding of the result to fp32 / DT.
double tolerance(DType dt, int n_terms, double abs_sum, double y) {
  return 1.2 * (n_terms + 2) * kU * abs_sum +
         std::fabs(y) * (kU + (dt == DType::bf16 ? kUb : 0.0)) + 1e-30;
}

struct ConvCase {
  Target target;
  int lnc;
  DType dt;
  int b, cin, cout, l, k, stride, pad_l, pad_r, dil, bias;
  std::string act;
  int shard;
};

std::string conv_name(const testing::TestParamInfo<ConvCase>& i) {
  const ConvCase& c = i.param;
  return case_prefix(c.target, c.lnc, c.dt) + "_b" + std::to_string(c.b) + "_ci" +
         std::to_string(c.cin) + "_co" + std::to_string(c.cout) + "_l" + std::to_string(c.l) +
         "_k" + std::to_string(c.k) + "_s" + std::to_string(c.stride) + "_p" +
         std::to_string(c.pad_l) + "_" + std::to_string(c.pad_r) + "_d" + std::to_string(c.dil) +
         "_bias" + std::to_string(c.bias) + "_" + c.act + "_shard" + std::to_string(c.shard);
}

class Conv1d : public testing::TestWithParam<ConvCase> {};

// random_seed != 0: randomised schedule and --check-uninit (a missing wait or a read of
// never-written memory, e.g. a gap partition of the stacked tiles, fails).
void check_conv(const ConvCase& c, uint64_t random_seed = 0) {
  const int lout = (c.l + c.pad_l + c.pad_r - c.dil * (c.k - 1) - 1) / c.stride + 1;
  const auto s = [](int v) { return std::to_string(v); };
  Assembled a = assemble_kernel("conv1d.nasm",
                                {{"B", s(c.b)},
                                 {"CIN", s(c.cin)},
                                 {"COUT", s(c.cout)},
                                 {"L", s(c.l)},
                                 {"K", s(c.k)},
                                 {"STRIDE", s(c.stride)},
                                 {"PAD_L", s(c.pad_l)},
                                 {"PAD_R", s(c.pad_r)},
                                 {"DIL", s(c.dil)},
                                 {"BIAS", s(c.bias)},
                                 {"ACT", c.act},
                                 {"LNC_SHARD", s(c.shard)},
                                 {"DT", dt_name(c.dt)}},
                                c.target);
  ASSERT_TRUE(a.ok) << a.diagnostics;
  const std::vector<float> x = random_values(size_t(c.b) * c.cin * c.l, c.dt, 11u + c.cin);
  const std::vector<float> f = random_values(size_t(c.k) * c.cin * c.cout, c.dt, 12u + c.k);
  const std::vector<float> bias = random_values(size_t(c.cout), c.dt, 13u);
  std::map<std::string, std::vector<uint8_t>> in = {{"x", to_bytes(x, c.dt)},
                                                    {"filters", to_bytes(f, c.dt)}};
  if (c.bias) in["bias"] = to_bytes(bias, c.dt);
  RunOutput r = run_kernel(a.module, c.target, c.lnc, in, false, random_seed, random_seed != 0);
  ASSERT_EQ(r.status, interp::RunStatus::ok) << r.report;
  const std::vector<float> y = from_bytes(r.tensors["y"], c.dt);
  ASSERT_EQ(y.size(), size_t(c.b) * c.cout * lout);
  for (int b = 0; b < c.b; ++b)
    for (int o = 0; o < c.cout; ++o)
      for (int l = 0; l < lout; ++l) {
        double acc = c.bias ? bias[size_t(o)] : 0.0, abs_sum = std::fabs(acc);
        for (int ci = 0; ci < c.cin; ++ci)
          for (int k = 0; k < c.k; ++k) {
            const int p = l * c.stride + k * c.dil - c.pad_l;
            if (p < 0 || p >= c.l) continue;
            const double t = double(f[(size_t(k) * c.cin + ci) * c.cout + o]) *
                             x[(size_t(b) * c.cin + ci) * c.l + p];
            acc += t;
            abs_sum += std::fabs(t);
          }
        const double ref = act_ref(c.act, acc);
        const double got = y[(size_t(b) * c.cout + o) * lout + l];
        ASSERT_NEAR(got, ref, tolerance(c.dt, c.cin * c.k, abs_sum, ref))
            << "b " << b << " c_out " << o << " l " << l;
      }
}

TEST_P(Conv1d, MatchesDirectConvolution) { check_conv(GetParam()); }

TEST(Conv1dSync, RandomScheduleAndInitialisedReads) {
  check_conv({Target::trn2, 2, DType::fp32, 2, 16, 200, 30, 3, 1, 1, 1, 1, 1, "relu", 1}, 17);
  check_conv({Target::trn2, 1, DType::bf16, 1, 130, 20, 40, 3, 2, 2, 1, 2, 1, "silu", 0}, 3);
}

std::vector<ConvCase> conv_cases() {
  const Target t2 = Target::trn2;
  const DType f32 = DType::fp32, b16 = DType::bf16;
  std::vector<ConvCase> v = {
      // C_in <= 32: 4 taps stacked at partition stride 32
      {t2, 1, f32, 2, 16, 40, 50, 3, 1, 1, 1, 1, 1, "relu", 0},
      {t2, 1, b16, 1, 32, 24, 33, 8, 1, 0, 0, 1, 0, "none", 0},
      // C_in <= 64: 2 taps at stride 64; stride 2, dilation 2, asymmetric padding
      {t2, 1, b16, 2, 48, 20, 70, 8, 2, 3, 0, 2, 0, "silu", 0},
      {t2, 2, f32, 1, 64, 36, 41, 3, 2, 0, 5, 2, 1, "gelu", 1},
      // C_in > 128 (two C_in tiles), C_out not a multiple of 128, sharded over two cores
      {t2, 2, f32, 1, 200, 130, 40, 3, 1, 1, 1, 1, 1, "gelu_apprx_tanh", 1},
      {t2, 1, b16, 1, 129, 10, 20, 1, 1, 0, 0, 1, 1, "tanh", 1}, // lnc 1 runs both halves
      // K = 100 (25 tap groups), K = 1
      {t2, 1, b16, 1, 4, 8, 300, 100, 1, 50, 49, 1, 1, "tanh", 0},
      {t2, 1, f32, 1, 8, 16, 100, 1, 1, 0, 0, 1, 0, "sigmoid", 0},
      // L_out > 512 (3 L tiles); C_out > 8 PSUM tiles (two groups), with and without shard
      {t2, 1, f32, 1, 8, 16, 1100, 3, 1, 1, 1, 1, 1, "relu", 0},
      {t2, 2, b16, 1, 4, 1100, 20, 2, 1, 0, 0, 1, 1, "sigmoid", 1},
      {t2, 1, f32, 1, 4, 1100, 12, 2, 1, 1, 0, 1, 0, "none", 0},
      // LNC_SHARD = 0 on two cores: core 1 idles
      {t2, 2, f32, 1, 20, 30, 25, 5, 1, 2, 2, 1, 1, "none", 0},
      // trn1
      {Target::trn1, 1, b16, 1, 40, 50, 60, 4, 2, 1, 2, 1, 1, "relu", 0},
  };
  // every activation, with bias, small shape
  for (const char* act : {"none", "relu", "silu", "gelu", "gelu_apprx_tanh", "sigmoid", "tanh"})
    v.push_back({t2, 1, b16, 1, 24, 16, 30, 3, 1, 1, 1, 1, 1, act, 0});
  return v;
}
INSTANTIATE_TEST_SUITE_P(Grid, Conv1d, testing::ValuesIn(conv_cases()), conv_name);

// ---- depthwise ---------------------------------------------------------------------------------

struct DwCase {
  int lnc;
  DType dt;
  int n, c, w, s, stride, pad_l, pad_r;
  Target target = Target::trn2;
};

std::string dw_name(const testing::TestParamInfo<DwCase>& i) {
  const DwCase& c = i.param;
  return case_prefix(c.target, c.lnc, c.dt) + "_n" + std::to_string(c.n) + "_c" +
         std::to_string(c.c) + "_w" + std::to_string(c.w) + "_s" + std::to_string(c.s) + "_st" +
         std::to_string(c.stride) + "_p" + std::to_string(c.pad_l) + "_" + std::to_string(c.pad_r);
}

class DepthwiseConv1d : public testing::TestWithParam<DwCase> {};

void check_dw(const DwCase& c, uint64_t random_seed = 0) {
  const int q = (c.w + c.pad_l + c.pad_r - c.s) / c.stride + 1;
  const auto s = [](int v) { return std::to_string(v); };
  Assembled a = assemble_kernel("depthwise_conv1d.nasm",
                                {{"N", s(c.n)},
                                 {"C", s(c.c)},
                                 {"W", s(c.w)},
                                 {"S", s(c.s)},
                                 {"STRIDE", s(c.stride)},
                                 {"PAD_L", s(c.pad_l)},
                                 {"PAD_R", s(c.pad_r)},
                                 {"DT", dt_name(c.dt)}},
                                Target::trn2);
  ASSERT_TRUE(a.ok) << a.diagnostics;
  const std::vector<float> x = random_values(size_t(c.n) * c.c * c.w, c.dt, 21u + c.s);
  const std::vector<float> f = random_values(size_t(c.c) * c.s, c.dt, 22u + c.c);
  RunOutput r = run_kernel(a.module, c.target, c.lnc,
                           {{"img", to_bytes(x, c.dt)}, {"filter", to_bytes(f, c.dt)}}, false,
                           random_seed, random_seed != 0);
  ASSERT_EQ(r.status, interp::RunStatus::ok) << r.report;
  const std::vector<float> y = from_bytes(r.tensors["out"], c.dt);
  ASSERT_EQ(y.size(), size_t(c.n) * c.c * q);
  for (int n = 0; n < c.n; ++n)
    for (int ch = 0; ch < c.c; ++ch)
      for (int j = 0; j < q; ++j) {
        double acc = 0, abs_sum = 0;
        for (int k = 0; k < c.s; ++k) {
          const int p = j * c.stride + k - c.pad_l;
          if (p < 0 || p >= c.w) continue;
          const double t = double(f[size_t(ch) * c.s + k]) * x[(size_t(n) * c.c + ch) * c.w + p];
          acc += t;
          abs_sum += std::fabs(t);
        }
        // no activation: the slope factor 1.2 of tolerance() only loosens by 20%
        ASSERT_NEAR(y[(size_t(n) * c.c + ch) * q + j], acc, tolerance(c.dt, c.s, abs_sum, acc))
            << "n " << n << " c " << ch << " q " << j;
      }
}

TEST_P(DepthwiseConv1d, MatchesPerChannelConvolution) { check_dw(GetParam()); }

TEST(DepthwiseConv1dSync, RandomScheduleAndInitialisedReads) {
  check_dw({2, DType::fp32, 2, 7, 70, 5, 2, 2, 1}, 23);
  check_dw({1, DType::bf16, 1, 130, 40, 130, 1, 60, 61}, 4);
}

std::vector<DwCase> dw_cases() {
  std::vector<DwCase> v;
  for (int lnc : {1, 2})
    for (DType dt : {DType::fp32, DType::bf16}) {
      v.push_back({lnc, dt, 2, 130, 50, 3, 1, 1, 1}); // C not a multiple of 128
      v.push_back({lnc, dt, 1, 9, 64, 7, 2, 3, 2});   // stride 2, asymmetric padding
    }
  v.push_back({1, DType::bf16, 1, 5, 200, 64, 1, 0, 0});
  v.push_back({2, DType::fp32, 1, 6, 260, 200, 3, 20, 10}); // S > 128: two S tiles
  v.push_back({2, DType::bf16, 1, 3, 1200, 3, 1, 1, 1});    // Q > 512: three Q tiles
  v.push_back({1, DType::fp32, 1, 1, 10, 10, 1, 0, 0});     // C = 1, Q = 1
  v.push_back({1, DType::bf16, 2, 20, 90, 7, 2, 3, 3, Target::trn1});
  return v;
}
INSTANTIATE_TEST_SUITE_P(Grid, DepthwiseConv1d, testing::ValuesIn(dw_cases()), dw_name);

// ---- envelopes ---------------------------------------------------------------------------------

} // namespace
} // namespace nisa::kt
