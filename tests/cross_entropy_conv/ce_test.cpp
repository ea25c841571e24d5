// cross_entropy_fwd.nasm / cross_entropy_bwd.nasm against log-softmax written from the math in
// double (reference loss, lse and gradient), seeded random logits, some targets ignored.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "tests/support/kernel_harness.h"

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

// The kernel's DMA tiling (its header): the chunk C = min(V, CS or the default); chunks below
// 512 are merged (CE = C * max(1, 512 / C)), wider ones split into near-equal tiles of at most
// TWMAX. Returns {tile width, tiles per row}: the tolerances grow with both.
std::pair<int, int> tiles_of(const CeCase& c, bool bwd) {
  const int db = c.dt == DType::fp32 ? 4 : 2;
  const int dflt =
      bwd ? (c.dt == DType::fp32 ? 12288 : 16384) : (c.dt == DType::fp32 ? 16384 : 32768);
  const int ch = std::min(c.v, c.cs == 0 ? dflt : c.cs);
  const int ce = std::min(c.v, ch * std::max(1, 512 / ch));
  const int twmax = bwd ? 204800 / (2 * db + 8) : 204800 / (2 * db);
  const int nsub = (ce + twmax - 1) / twmax;
  const int tw = (ce + nsub - 1) / nsub;
  const int nce = (c.v + ce - 1) / ce;
  return {tw, nce * nsub};
}

void check_fwd(const CeCase& c, uint64_t random_seed = 0) {
  const auto n = size_t(c.npos) * size_t(c.v);
  const std::vector<float> x = random_values(n, c.dt, 77u + uint32_t(n), 2.0f);
  const std::vector<int32_t> t = make_targets(c, 5u + uint32_t(c.npos));
  const FwdOut o = run_fwd(c, x, t, random_seed);
  ASSERT_EQ(o.loss.size(), size_t(c.npos));
  ASSERT_EQ(o.lse.size(), size_t(c.npos));
  const std::vector<double> lse = ref_lse(x, c.npos, c.v);
  const auto [cs, nc] = tiles_of(c, false); // tile width, tiles per row
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

// A target outside [0, V) that is not IGNORE_INDEX faults (exit code 3) in the range-check DMA,
// naming the row in its batch and the target: V and -1 used to read a neighbour's logit.
TEST(CrossEntropyFwdFault, TargetOutOfRangeNamesTheRow) {
  for (int bad : {100, -1, 400, -99, 2147483647}) {
    CeCase c{Target::trn2, 1, DType::fp32, 4, 100, 4, 0, 0};
    Assembled a = assemble_kernel("cross_entropy_fwd.nasm", defines(c), c.target);
    ASSERT_TRUE(a.ok) << a.diagnostics;
    const std::vector<float> x = random_values(400, DType::fp32, 3u);
    RunOutput r = run_kernel(
        a.module, c.target, 1,
        {{"logits", to_bytes(x, DType::fp32)}, {"targets", i32_bytes({1, kIgnore, 99, bad})}});
    EXPECT_EQ(r.status, interp::RunStatus::fault) << bad;
    // position 3 is row 1 of the second half's batch
    const std::string want =
        "vector offset of row 1 = " + std::to_string(bad) + " is outside [0, 100)";
    EXPECT_NE(r.report.find(want), std::string::npos) << r.report;
  }
}

// PyTorch's values at the extremes, the reference written from the definitions:
// lse = torch.logsumexp (an infinite max is replaced by 0 before the shift) and
// loss = -log_softmax(x)[t] = -(x_t - m - log(sum exp(x - m))) with the plain max m (NaN when
// m is infinite), 0 for an ignored position.
TEST(CrossEntropyFwdExtremes, AsPyTorch) {
  const float inf = std::numeric_limits<float>::infinity();
  for (DType dt : {DType::fp32, DType::bf16})
    for (int lnc : {1, 2}) {
      const int v = 100;
      // CS 30: several tiles per row, the -inf block spans the first tile(s)
      CeCase c{Target::trn2, lnc, dt, 7, v, 4, 30, 0};
      std::vector<float> x = random_values(size_t(7 * v), dt, 606u, 2.0f);
      std::vector<int32_t> t = {5, 0, 3, kIgnore, 9, 50, 7};
      for (int j = 0; j < v; ++j) {
        x[size_t(0 * v + j)] = 1e30f;            // every logit 1e30: loss log V
        x[size_t(1 * v + j)] = -inf;             // all -inf: lse -inf, loss NaN
        x[size_t(3 * v + j)] = -inf;             // all -inf but ignored: loss 0
        if (j < 60) x[size_t(5 * v + j)] = -inf; // leading -inf tiles, then finite logits
      }
      if (dt == DType::bf16) // 1e30 as the bf16 value the kernel reads
        for (int j = 0; j < v; ++j) x[size_t(j)] = from_bytes(to_bytes({1e30f}, dt), dt)[0];
      x[size_t(2 * v + 3)] = -inf;  // only the target's logit -inf: loss +inf
      x[size_t(4 * v + 17)] = inf;  // a +inf logit: lse +inf, loss NaN
      x[size_t(6 * v + 11)] = -inf; // a few -inf among finite logits
      x[size_t(6 * v + 80)] = -inf;
      const FwdOut o = run_fwd(c, x, t);
      ASSERT_EQ(o.loss.size(), 7u);
      for (int i = 0; i < 7; ++i) {
        const float* r = &x[size_t(i) * size_t(v)];
        const double m = *std::max_element(r, r + v);
        const double ms = std::isinf(m) ? 0.0 : m;
        double s = 0, s_plain = 0;
        for (int j = 0; j < v; ++j) {
          s += std::exp(double(r[j]) - ms);
          s_plain += std::exp(double(r[j]) - m);
        }
        const double lse = ms + std::log(s);
        const double loss =
            t[size_t(i)] == kIgnore ? 0.0 : -(double(r[t[size_t(i)]]) - m - std::log(s_plain));
        const std::string at = std::string(dt_name(dt)) + " lnc " + std::to_string(lnc) +
                               " position " + std::to_string(i);
        if (std::isnan(lse) || std::isinf(lse))
          EXPECT_TRUE(std::isnan(o.lse[size_t(i)]) == std::isnan(lse) &&
                      (std::isnan(lse) || o.lse[size_t(i)] == lse))
              << at << ": lse " << o.lse[size_t(i)] << ", want " << lse;
        else // fp32 state: |lse| u for the large rows plus the sum's rounding
          EXPECT_NEAR(o.lse[size_t(i)], lse, kU * (std::fabs(lse) + 2 * v)) << at;
        if (std::isnan(loss) || std::isinf(loss))
          EXPECT_TRUE(std::isnan(o.loss[size_t(i)]) == std::isnan(loss) &&
                      (std::isnan(loss) || o.loss[size_t(i)] == loss))
              << at << ": loss " << o.loss[size_t(i)] << ", want " << loss;
        else // (m - x_t) + log d: no cancellation against |lse|, so v u suffices
          EXPECT_NEAR(o.loss[size_t(i)], loss, kU * (std::fabs(loss) + 4 * v)) << at;
      }
      EXPECT_NEAR(o.loss[0], std::log(100.0), 1e-5); // the figure: 4.605
    }
}

// The chunk-size envelope: every CS in 1..65535 runs with either DT at the vocabularies of the
// original tests and 32128 (one position per LNC half and one more; LNC alternates over the
// grid).
std::vector<CeCase> cs_grid(bool bwd) {
  std::vector<CeCase> v;
  int k = 0;
  for (int vocab : {32128, 129280, 151936, 202408})
    for (int cs : {1, 127, 32768, 65535})
      for (DType dt : {DType::fp32, DType::bf16})
        v.push_back({Target::trn2, 1 + (k++ % 2), dt, 3, vocab, 32, cs, bwd ? 3 : 0, true});
  return v;
}
class CrossEntropyFwdCs : public testing::TestWithParam<CeCase> {};
TEST_P(CrossEntropyFwdCs, MatchesLogSoftmax) { check_fwd(GetParam()); }
INSTANTIATE_TEST_SUITE_P(Envelope, CrossEntropyFwdCs, testing::ValuesIn(cs_grid(false)), case_name);

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

class CrossEntropyBwdCs : public testing::TestWithParam<CeCase> {};
TEST_P(CrossEntropyBwdCs, MatchesSoftmaxMinusOneHot) { check_bwd(GetParam()); }
INSTANTIATE_TEST_SUITE_P(Envelope, CrossEntropyBwdCs, testing::ValuesIn(cs_grid(true)), case_name);

// The backward faults on a bad target too (its range check reads row NPOS + position of the
// targets), with and without INPLACE.
TEST(CrossEntropyBwdFault, TargetOutOfRangeNamesThePosition) {
  for (int inplace : {0, 1})
    for (int bad : {100, -1, 12345}) {
      CeCase c{Target::trn2, 2, DType::fp32, 4, 100, 4, 0, 0};
      Defines d = defines(c);
      d.push_back({"INPLACE", std::to_string(inplace)});
      Assembled a = assemble_kernel("cross_entropy_bwd.nasm", d, c.target);
      ASSERT_TRUE(a.ok) << a.diagnostics;
      const std::vector<float> x = random_values(400, DType::fp32, 3u);
      RunOutput r = run_kernel(a.module, c.target, 2,
                               {{"logits", to_bytes(x, DType::fp32)},
                                {"targets", i32_bytes({1, bad, 99, kIgnore})},
                                {"lse", to_bytes({1.f, 2.f, 3.f, 4.f}, DType::fp32)}});
      EXPECT_EQ(r.status, interp::RunStatus::fault) << bad;
      // position 1 (row 1 of core 0's batch): row 1 + NPOS = 5 of the targets
      EXPECT_NE(r.report.find("vector offset of row 1 = 5 is outside [0, 4)"), std::string::npos)
          << r.report;
    }
}

// ---- envelope: every limit is an assembly error naming it -------------------------------------

} // namespace
} // namespace nisa::kt
