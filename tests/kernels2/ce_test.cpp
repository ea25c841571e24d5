// cross_entropy_fwd.nasm / cross_entropy_bwd.nasm against log-softmax written from the math in
// double (reference loss, lse and gradient), seeded random logits, some targets ignored.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tests/kernels/harness.h"

namespace nisa::kt {
namespace {

constexpr int kIgnore = -100;
const double kU = std::ldexp(1.0, -24); // fp32 unit roundoff
const double kUb = std::ldexp(1.0, -8); // bf16 unit roundoff (8 significant bits)

struct CeCase {
  Target target;
  int lnc;
  DType dt;
  int npos, v, pb, cs; // cs 0: the kernel's default
  int ignore_every;    // every k-th target is IGNORE_INDEX (0: none; 1: all)
  bool mean = true;    // backward reduction
};

std::string case_name(const testing::TestParamInfo<CeCase>& i) {
  const CeCase& c = i.param;
  return case_prefix(c.target, c.lnc, c.dt) + "_n" + std::to_string(c.npos) + "_v" +
         std::to_string(c.v) + "_pb" + std::to_string(c.pb) + "_cs" + std::to_string(c.cs) +
         "_ign" + std::to_string(c.ignore_every) + (c.mean ? "_mean" : "_sum");
}

std::vector<uint8_t> i32_bytes(const std::vector<int32_t>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

std::vector<int32_t> make_targets(const CeCase& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> pick(0, c.v - 1);
  std::vector<int32_t> t(static_cast<size_t>(c.npos));
  for (int i = 0; i < c.npos; ++i)
    t[size_t(i)] = c.ignore_every > 0 && i % c.ignore_every == 0 ? kIgnore : pick(rng);
  return t;
}

Defines defines(const CeCase& c) {
  return {{"NPOS", std::to_string(c.npos)},
          {"V", std::to_string(c.v)},
          {"PB", std::to_string(c.pb)},
          {"CS", std::to_string(c.cs)},
          {"DT", dt_name(c.dt)},
          {"IGNORE_INDEX", std::to_string(kIgnore)}};
}

// Reference: lse_i = log sum_j exp(x_ij) in double (max-shifted).
std::vector<double> ref_lse(const std::vector<float>& x, int npos, int v) {
  std::vector<double> lse(static_cast<size_t>(npos));
  for (int i = 0; i < npos; ++i) {
    const float* r = &x[size_t(i) * size_t(v)];
    const double m = *std::max_element(r, r + v);
    double s = 0;
    for (int j = 0; j < v; ++j) s += std::exp(double(r[j]) - m);
    lse[size_t(i)] = m + std::log(s);
  }
  return lse;
}

class CrossEntropyFwd : public testing::TestWithParam<CeCase> {};

struct FwdOut {
  std::vector<float> loss, lse;
};

FwdOut run_fwd(const CeCase& c, const std::vector<float>& x, const std::vector<int32_t>& t,
               uint64_t random_seed = 0) {
  Assembled a = assemble_kernel("cross_entropy_fwd.nasm", defines(c), c.target);
  EXPECT_TRUE(a.ok) << a.diagnostics;
  if (!a.ok) return {};
  RunOutput r = run_kernel(a.module, c.target, c.lnc,
                           {{"logits", to_bytes(x, c.dt)}, {"targets", i32_bytes(t)}}, false,
                           random_seed, /*check_uninit=*/random_seed != 0);
  EXPECT_EQ(r.status, interp::RunStatus::ok) << r.report;
  return {from_bytes(r.tensors["loss"], DType::fp32), from_bytes(r.tensors["lse"], DType::fp32)};
}

// Chunk size the kernel uses (its default when cs == 0).
int chunk_of(const CeCase& c, bool bwd) {
  const int dflt =
      bwd ? (c.dt == DType::fp32 ? 12288 : 16384) : (c.dt == DType::fp32 ? 16384 : 32768);
  return std::min(c.v, c.cs == 0 ? dflt : c.cs);
}

void check_fwd(const CeCase& c, uint64_t random_seed = 0) {
  const auto n = size_t(c.npos) * size_t(c.v);
  const std::vector<float> x = random_values(n, c.dt, 77u + uint32_t(n), 2.0f);
  const std::vector<int32_t> t = make_targets(c, 5u + uint32_t(c.npos));
  const FwdOut o = run_fwd(c, x, t, random_seed);
  ASSERT_EQ(o.loss.size(), size_t(c.npos));
  ASSERT_EQ(o.lse.size(), size_t(c.npos));
  const std::vector<double> lse = ref_lse(x, c.npos, c.v);
  const int cs = chunk_of(c, false);
  const int nc = (c.v + cs - 1) / cs;
  for (int i = 0; i < c.npos; ++i) {
    // The kernel is fp32 throughout for either DT (the inputs are exact DT values, the exp
    // outputs are summed in fp32 before any rounding to DT). Relative error of the denominator
    // d: each exp argument x - m rounds (<= |x - m| u, R = the row's range), exp rounds (u),
    // the fp32 row sum of a chunk (<= cs u, recursive summation), the corrections d * corr
    // (3 u per chunk). Then log d (u |log d|), m + log d (u |lse|), lse - x_t (u |loss|).
    const float* r = &x[size_t(i) * size_t(c.v)];
    const double range = *std::max_element(r, r + c.v) - *std::min_element(r, r + c.v);
    const double m = *std::max_element(r, r + c.v);
    const double rel_d = kU * (range + 1 + cs + 3 * nc);
    const double tol_lse = rel_d + kU * (std::fabs(lse[size_t(i)] - m) + std::fabs(lse[size_t(i)]));
    EXPECT_NEAR(o.lse[size_t(i)], lse[size_t(i)], tol_lse) << "position " << i;
    const double loss = t[size_t(i)] == kIgnore ? 0.0 : lse[size_t(i)] - r[t[size_t(i)]];
    const double tol_loss = t[size_t(i)] == kIgnore ? 0.0 : tol_lse + kU * std::fabs(loss);
    EXPECT_NEAR(o.loss[size_t(i)], loss, tol_loss)
        << "position " << i << " target " << t[size_t(i)];
  }
}

TEST_P(CrossEntropyFwd, MatchesLogSoftmax) { check_fwd(GetParam()); }

std::vector<CeCase> fwd_cases() {
  std::vector<CeCase> v;
  for (Target tg : {Target::trn2})
    for (int lnc : {1, 2})
      for (DType dt : {DType::fp32, DType::bf16}) {
        v.push_back({tg, lnc, dt, 37, 1000, 16, 384, 5}); // V % CS != 0, NPOS % PB != 0
        v.push_back({tg, lnc, dt, 1, 700, 32, 256, 0});   // NPOS = 1
      }
  v.push_back({Target::trn2, 2, DType::bf16, 130, 512, 128, 0, 7}); // NPOS > 128, default CS
  v.push_back({Target::trn2, 1, DType::fp32, 20, 300, 8, 100, 1});  // all ignored
  v.push_back({Target::trn1, 1, DType::bf16, 19, 640, 8, 200, 4});  // trn1 (lnc 1)
  // the vocabularies of the issue, few positions
  v.push_back({Target::trn2, 2, DType::bf16, 3, 32128, 32, 0, 3});
  v.push_back({Target::trn2, 2, DType::bf16, 2, 129280, 32, 0, 0});
  v.push_back({Target::trn2, 1, DType::fp32, 2, 151936, 32, 0, 0});
  v.push_back({Target::trn2, 2, DType::bf16, 3, 202408, 32, 50000, 2});
  return v;
}
INSTANTIATE_TEST_SUITE_P(Grid, CrossEntropyFwd, testing::ValuesIn(fwd_cases()), case_name);

TEST(CrossEntropyFwdSync, RandomScheduleSameResult) {
  // A missing wait would show up as a wrong value under a randomised schedule; a read of
  // never-written memory (e.g. an unpadded chunk tail) as a --check-uninit fault.
  check_fwd({Target::trn2, 2, DType::fp32, 21, 500, 4, 128, 3}, 99);
  check_fwd({Target::trn2, 1, DType::bf16, 21, 500, 4, 128, 3}, 7);
}

TEST(CrossEntropyFwdFault, TargetOutOfRangeNamesTheRow) {
  CeCase c{Target::trn2, 1, DType::fp32, 4, 100, 4, 0, 0};
  Assembled a = assemble_kernel("cross_entropy_fwd.nasm", defines(c), c.target);
  ASSERT_TRUE(a.ok) << a.diagnostics;
  const std::vector<float> x = random_values(400, DType::fp32, 3u);
  RunOutput r =
      run_kernel(a.module, c.target, 1,
                 {{"logits", to_bytes(x, DType::fp32)}, {"targets", i32_bytes({1, 2, 3, 400})}});
  EXPECT_EQ(r.status, interp::RunStatus::fault);
  // position 3 is row 1 of the second half
  EXPECT_NE(r.report.find("vector offset of row 1 = 700 is outside [0, 400)"), std::string::npos)
      << r.report;
}

// ---- backward ---------------------------------------------------------------------------------

class CrossEntropyBwd : public testing::TestWithParam<CeCase> {};

// Returns the gradient's raw bytes (for the in-place comparison).
std::vector<uint8_t> check_bwd(const CeCase& c, uint64_t random_seed = 0, int inplace = 0) {
  const auto n = size_t(c.npos) * size_t(c.v);
  const std::vector<float> x = random_values(n, c.dt, 91u + uint32_t(n), 2.0f);
  const std::vector<int32_t> t = make_targets(c, 8u + uint32_t(c.npos));
  std::vector<float> lse32(static_cast<size_t>(c.npos));
  const std::vector<double> lse = ref_lse(x, c.npos, c.v);
  for (size_t i = 0; i < lse.size(); ++i) lse32[i] = float(lse[i]);

  Defines d = defines(c);
  d.push_back({"REDUCTION", c.mean ? "mean" : "sum"});
  d.push_back({"INPLACE", std::to_string(inplace)});
  Assembled a = assemble_kernel("cross_entropy_bwd.nasm", d, c.target);
  EXPECT_TRUE(a.ok) << a.diagnostics;
  if (!a.ok) return {};
  RunOutput r = run_kernel(a.module, c.target, c.lnc,
                           {{"logits", to_bytes(x, c.dt)},
                            {"targets", i32_bytes(t)},
                            {"lse", to_bytes(lse32, DType::fp32)}},
                           false, random_seed, /*check_uninit=*/random_seed != 0);
  EXPECT_EQ(r.status, interp::RunStatus::ok) << r.report;
  const std::vector<float> g = from_bytes(r.tensors["grad"], c.dt);
  EXPECT_EQ(g.size(), n);
  if (g.size() != n) return {};

  int valid = 0;
  for (int32_t v : t) valid += v != kIgnore;
  for (int i = 0; i < c.npos; ++i) {
    const bool ok = t[size_t(i)] != kIgnore;
    const double sc = !ok ? 0.0 : c.mean ? 1.0 / std::max(valid, 1) : 1.0;
    for (int j = 0; j < c.v; ++j) {
      const size_t k = size_t(i) * size_t(c.v) + size_t(j);
      // softmax from the given (fp32) lse, as the kernel's contract says
      const double arg = double(x[k]) - double(lse32[size_t(i)]);
      const double e = std::exp(arg);
      const double ref = sc * (e - (j == t[size_t(i)] ? 1.0 : 0.0));
      // fp32 part: x - lse rounds (|arg| u), exp rounds (u), the product with the scale (u);
      // the scale 1/count itself (u, scales the whole result: u |ref|) and the add of the
      // one-hot (u |ref|). bf16 (DT): the exp output is stored in DT (kUb relative) and so is
      // the result (kUb |ref|).
      const double eb = c.dt == DType::bf16 ? kUb : 0.0;
      const double tol = sc * e * ((std::fabs(arg) + 4) * kU + eb) + std::fabs(ref) * (2 * kU + eb);
      EXPECT_NEAR(g[k], ref, tol) << "position " << i << " column " << j << " target "
                                  << t[size_t(i)];
      if (std::fabs(g[k] - ref) > tol) return {};
    }
  }
  return r.tensors["grad"];
}

TEST_P(CrossEntropyBwd, MatchesSoftmaxMinusOneHot) { check_bwd(GetParam()); }

std::vector<CeCase> bwd_cases() {
  std::vector<CeCase> v;
  for (int lnc : {1, 2})
    for (DType dt : {DType::fp32, DType::bf16})
      for (bool mean : {true, false}) {
        v.push_back({Target::trn2, lnc, dt, 37, 1000, 16, 384, 5, mean});
        v.push_back({Target::trn2, lnc, dt, 1, 700, 32, 256, 0, mean});
      }
  v.push_back({Target::trn2, 2, DType::bf16, 130, 512, 128, 0, 7, true});
  v.push_back({Target::trn2, 1, DType::fp32, 20, 300, 8, 100, 1, true}); // all ignored: zeros
  v.push_back({Target::trn2, 2, DType::fp32, 20, 300, 8, 100, 1, false});
  v.push_back({Target::trn1, 1, DType::bf16, 19, 640, 8, 200, 4, true});
  v.push_back({Target::trn2, 2, DType::bf16, 3, 32128, 32, 0, 3, true});
  v.push_back({Target::trn2, 2, DType::bf16, 2, 129280, 32, 0, 0, true});
  v.push_back({Target::trn2, 1, DType::fp32, 2, 151936, 32, 0, 0, false});
  v.push_back({Target::trn2, 2, DType::bf16, 3, 202408, 32, 0, 2, true});
  return v;
}
INSTANTIATE_TEST_SUITE_P(Grid, CrossEntropyBwd, testing::ValuesIn(bwd_cases()), case_name);

TEST(CrossEntropyBwdSync, RandomScheduleSameResult) {
  check_bwd({Target::trn2, 2, DType::fp32, 21, 500, 4, 128, 3, true}, 99);
  check_bwd({Target::trn2, 1, DType::bf16, 21, 500, 4, 128, 3, false}, 5);
}

TEST(CrossEntropyBwdInplace, SameBitsOverTheLogits) {
  // INPLACE = 1 pins grad over logits: the result must be the out-of-place one, bit for bit.
  for (DType dt : {DType::fp32, DType::bf16}) {
    const CeCase c{Target::trn2, 2, dt, 21, 700, 8, 256, 4, true};
    const std::vector<uint8_t> out_of_place = check_bwd(c, 0, 0);
    const std::vector<uint8_t> in_place = check_bwd(c, 0, 1);
    ASSERT_FALSE(out_of_place.empty());
    EXPECT_EQ(in_place, out_of_place) << dt_name(dt);
  }
}

TEST(CrossEntropyChain, BackwardFromTheForwardsLse) {
  // The forward's saved lse feeds the backward (as in training); the gradient must match the
  // double reference within the backward's tolerance plus the lse error of the forward
  // (which moves every softmax value by the factor exp(lse error)).
  const CeCase c{Target::trn2, 2, DType::fp32, 19, 3000, 8, 1024, 6, true};
  const auto n = size_t(c.npos) * size_t(c.v);
  const std::vector<float> x = random_values(n, c.dt, 4242u, 2.0f);
  const std::vector<int32_t> t = make_targets(c, 17u);
  const FwdOut f = run_fwd(c, x, t);
  ASSERT_EQ(f.lse.size(), size_t(c.npos));
  Defines d = defines(c);
  d.push_back({"REDUCTION", "mean"});
  Assembled a = assemble_kernel("cross_entropy_bwd.nasm", d, c.target);
  ASSERT_TRUE(a.ok) << a.diagnostics;
  RunOutput r = run_kernel(a.module, c.target, c.lnc,
                           {{"logits", to_bytes(x, c.dt)},
                            {"targets", i32_bytes(t)},
                            {"lse", to_bytes(f.lse, DType::fp32)}});
  ASSERT_EQ(r.status, interp::RunStatus::ok) << r.report;
  const std::vector<float> g = from_bytes(r.tensors["grad"], c.dt);
  const std::vector<double> lse = ref_lse(x, c.npos, c.v);
  int valid = 0;
  for (int32_t v : t) valid += v != kIgnore;
  for (int i = 0; i < c.npos; ++i) {
    const bool ok = t[size_t(i)] != kIgnore;
    const double sc = ok ? 1.0 / valid : 0.0;
    const double dl = std::fabs(double(f.lse[size_t(i)]) - lse[size_t(i)]);
    for (int j = 0; j < c.v; ++j) {
      const size_t k = size_t(i) * size_t(c.v) + size_t(j);
      const double arg = double(x[k]) - lse[size_t(i)];
      const double e = std::exp(arg);
      const double ref = sc * (e - (j == t[size_t(i)] ? 1.0 : 0.0));
      const double tol =
          sc * e * ((std::fabs(arg) + 5) * kU + std::expm1(dl)) + std::fabs(ref) * 2 * kU;
      ASSERT_NEAR(g[k], ref, tol) << "position " << i << " column " << j;
    }
  }
}

// ---- envelope: every limit is an assembly error naming it -------------------------------------

} // namespace
} // namespace nisa::kt
