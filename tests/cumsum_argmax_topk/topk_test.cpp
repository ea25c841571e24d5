// topk.nasm against a top-K written from the math.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <random>
#include <set>

#include "tests/support/kernel_harness.h"

namespace nisa::kt {
namespace {

struct TopkCase {
  Target target;
  int lnc;
  DType dt;
  int64_t bxs, v, k;
  int sorted;
  std::string method;
  int pattern = 0;               // 0 random rows, 1 each row sorted ascending, 2 descending
  std::string nonfinite = "all"; // NONFINITE: all (default), ninf, none
};

std::string case_name(const testing::TestParamInfo<TopkCase>& i) {
  const TopkCase& c = i.param;
  return case_prefix(c.target, c.lnc, c.dt) + "_" + std::to_string(c.bxs) + "x" +
         std::to_string(c.v) + "_k" + std::to_string(c.k) + (c.sorted ? "_sorted_" : "_unsorted_") +
         c.method +
         (c.pattern == 1   ? "_ascending"
          : c.pattern == 2 ? "_descending"
                           : "") +
         (c.nonfinite == "all" ? "" : "_" + c.nonfinite);
}

Defines topk_defines(const TopkCase& c) {
  return {{"BXS", std::to_string(c.bxs)}, {"V", std::to_string(c.v)},
          {"K", std::to_string(c.k)},     {"SORTED", std::to_string(c.sorted)},
          {"DT", dt_name(c.dt)},          {"METHOD", c.method},
          {"NONFINITE", c.nonfinite}};
}

struct TopkResult {
  Module module;
  std::vector<float> values;
  std::vector<uint32_t> indices;
  RunOutput run;
};

TopkResult run_topk(const TopkCase& c, const std::vector<float>& x, bool timeline = false,
                    uint64_t random_seed = 0, bool check_uninit = false) {
  Assembled a = assemble_kernel("topk.nasm", topk_defines(c), c.target);
  EXPECT_TRUE(a.ok) << a.diagnostics;
  if (!a.ok) return {};
  TopkResult t;
  t.run = run_kernel(a.module, c.target, c.lnc, {{"x", to_bytes(x, c.dt)}}, timeline, random_seed,
                     check_uninit);
  EXPECT_EQ(t.run.status, interp::RunStatus::ok) << t.run.report;
  t.values = from_bytes(t.run.tensors["values"], c.dt);
  t.indices = u32_from_bytes(t.run.tensors["indices"]);
  t.module = std::move(a.module);
  return t;
}

// Reference: the K largest values of the row, descending. Indices are checked by gather
// (x[index] == value, all distinct), so any order of equal values is accepted.
void check_topk(const TopkCase& c, const std::vector<float>& x, const TopkResult& r) {
  ASSERT_EQ(r.values.size(), size_t(c.bxs * c.k));
  ASSERT_EQ(r.indices.size(), size_t(c.bxs * c.k));
  for (int64_t b = 0; b < c.bxs; ++b) {
    const float* row = &x[size_t(b * c.v)];
    std::vector<float> ref(row, row + c.v);
    std::sort(ref.begin(), ref.end(), std::greater<float>());
    ref.resize(size_t(c.k));
    std::vector<float> got(r.values.begin() + b * c.k, r.values.begin() + (b + 1) * c.k);
    if (c.sorted) {
      EXPECT_TRUE(std::is_sorted(got.begin(), got.end(), std::greater<float>())) << "row " << b;
    }
    std::vector<float> got_sorted = got;
    std::sort(got_sorted.begin(), got_sorted.end(), std::greater<float>());
    ASSERT_EQ(got_sorted, ref) << "row " << b;
    std::set<uint32_t> seen;
    for (int64_t j = 0; j < c.k; ++j) {
      const uint32_t i = r.indices[size_t(b * c.k + j)];
      ASSERT_LT(i, uint32_t(c.v)) << "row " << b << " slot " << j;
      EXPECT_EQ(row[i], got[size_t(j)]) << "row " << b << " slot " << j;
      EXPECT_TRUE(seen.insert(i).second) << "row " << b << ": index " << i << " twice";
    }
  }
}

class Topk : public testing::TestWithParam<TopkCase> {};

TEST_P(Topk, MatchesReference) {
  const TopkCase& c = GetParam();
  std::vector<float> x =
      random_values(size_t(c.bxs * c.v), c.dt, 11u + uint32_t(c.bxs * 131 + c.v * 7 + c.k), 2.0f);
  // Sorted rows put the whole top-K into one fold chunk (the first or the last): the
  // folded methods must still find all of it.
  for (int64_t b = 0; b < c.bxs && c.pattern != 0; ++b) {
    auto first = x.begin() + b * c.v, last = first + c.v;
    if (c.pattern == 1)
      std::sort(first, last);
    else
      std::sort(first, last, std::greater<float>());
  }
  check_topk(c, x, run_topk(c, x));
}

constexpr Target T1 = Target::trn1, T2 = Target::trn2;
constexpr DType F32 = DType::fp32, B16 = DType::bf16;

INSTANTIATE_TEST_SUITE_P(
    Scanning, Topk,
    testing::Values(
        // K % 8 != 0, odd row counts, both dtypes, lnc 1 / 2, trn1 (gen2 forms) / trn2
        TopkCase{T2, 1, F32, 3, 1000, 20, 1, "scanning"},
        TopkCase{T2, 2, F32, 3, 1000, 20, 1, "scanning"},
        TopkCase{T1, 1, F32, 3, 1000, 20, 1, "scanning"},
        TopkCase{T2, 2, B16, 7, 3000, 37, 1, "scanning"},
        TopkCase{T1, 1, B16, 7, 3000, 37, 0, "scanning"},
        TopkCase{T2, 2, F32, 65, 500, 24, 0, "scanning"},
        TopkCase{T2, 1, B16, 129, 700, 13, 1, "scanning"},
        TopkCase{T2, 2, F32, 1024, 300, 16, 1, "scanning"}, // 4 row tiles per core
        TopkCase{T2, 2, F32, 1, 16384, 40, 1, "scanning"},  // BXS = 1, the search limit
        // K <= 8: the router path
        TopkCase{T2, 2, F32, 5, 100, 1, 1, "scanning"},
        TopkCase{T2, 1, B16, 5, 100, 5, 1, "scanning"}, TopkCase{T1, 1, F32, 5, 100, 8, 1, "auto"},
        // K == V: the unsorted shortcut and the sorted strike-out; V < 8 pads with -inf
        TopkCase{T2, 2, F32, 3, 64, 64, 0, "scanning"},
        TopkCase{T2, 1, B16, 3, 64, 64, 1, "scanning"},
        TopkCase{T2, 1, F32, 2, 5, 5, 1, "scanning"}, TopkCase{T2, 1, F32, 2, 5, 3, 1, "auto"},
        // K = 2048
        TopkCase{T2, 2, F32, 3, 4096, 2048, 1, "scanning"},
        // NONFINITE = none: finite inputs, no key map (the seed's cost)
        TopkCase{T2, 2, B16, 7, 3000, 37, 1, "scanning", 0, "none"},
        TopkCase{T2, 1, F32, 5, 100, 5, 1, "scanning", 0, "none"}),
    case_name);

INSTANTIATE_TEST_SUITE_P(
    Folded, Topk,
    testing::Values(
        // rotational: BXS = 1 (the rotation cycles the stages of the one row), V = 151936
        TopkCase{T2, 1, F32, 1, 151936, 256, 1, "rotational", 1},
        TopkCase{T2, 2, B16, 3, 5000, 20, 1, "rotational", 1},
        // S * KP == K and unsorted: the unfolded store
        TopkCase{T2, 2, F32, 7, 20001, 64, 0, "rotational", 2},
        TopkCase{T1, 1, F32, 7, 20001, 64, 0, "rotational", 0},
        TopkCase{T1, 1, B16, 7, 20001, 13, 1, "rotational", 1},
        TopkCase{T2, 2, F32, 65, 3000, 37, 1, "rotational", 1},
        // more rows per core than partitions: the tile search
        TopkCase{T2, 1, B16, 129, 2000, 100, 1, "rotational", 0},
        TopkCase{T2, 2, F32, 1024, 500, 16, 1, "rotational", 1},
        TopkCase{T2, 2, F32, 2, 20000, 2048, 1, "rotational", 0}, // K = 2048
        // cascaded: fold -> local top-K -> combine
        TopkCase{T2, 2, F32, 3, 5000, 20, 1, "cascaded", 1},
        TopkCase{T2, 2, B16, 129, 2000, 100, 0, "cascaded", 2},
        TopkCase{T2, 1, B16, 1, 151936, 256, 1, "cascaded", 0},
        TopkCase{T1, 1, F32, 7, 20001, 64, 1, "cascaded", 2},
        TopkCase{T2, 2, F32, 1024, 600, 40, 1, "cascaded", 1},
        TopkCase{T2, 1, F32, 3, 8000, 2048, 1, "cascaded", 0}, // K = 2048
        // auto: V > 16384 goes rotational; K <= 8 there too
        TopkCase{T2, 2, F32, 5, 100000, 5, 1, "auto", 1},
        TopkCase{Target::trn3, 2, B16, 7, 20001, 64, 1, "rotational", 0},
        TopkCase{T2, 2, F32, 7, 20001, 64, 1, "rotational", 1, "none"},
        TopkCase{T1, 1, B16, 7, 20001, 64, 1, "cascaded", 2, "none"}),
    case_name);

// Every method under random schedules (tie order and durations): a missing wait between the
// engines (sp loads, dve strike-out, pool gathers, pe rotations, act inserts) shows up here.
// ---- non-finite values: PyTorch's order, NaN > +inf > every finite value > -inf ----------------

// a ranks above b in torch.topk's order (NaN above everything; NaNs equal).
bool torch_above(float a, float b) {
  if (std::isnan(a)) return !std::isnan(b);
  if (std::isnan(b)) return false;
  return a > b;
}
bool same_value(float a, float b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

struct NonFiniteCase {
  DType dt;
  int lnc;
  int k;
  std::string method;
  std::string mode = "all"; // NONFINITE; ninf: the inputs hold -inf, never NaN or +inf
  Target target = T2;
};

class TopkNonFinite : public testing::TestWithParam<NonFiniteCase> {};

// Rows (V = 3000): -inf at random positions (30 %); 5 finite values, the rest -inf (fewer than
// K); all -inf; NaN and -inf at random positions; +inf, NaN and -inf mixed; all finite. The
// kernel must return K distinct indices whose values (the value at each index) are the K
// largest in PyTorch's order, descending.
TEST_P(TopkNonFinite, KDistinctLargest) {
  const NonFiniteCase& p = GetParam();
  const TopkCase c{p.target, p.lnc, p.dt, 6, 3000, p.k, 1, p.method, 0, p.mode};
  const bool any = p.mode == "all";
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  std::vector<float> x = random_values(size_t(c.bxs * c.v), c.dt, 4711u + uint32_t(p.k), 2.0f);
  std::mt19937 rng(99u + uint32_t(p.k));
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int64_t j = 0; j < c.v; ++j) {
    float* r = &x[size_t(j)];
    const double a = u(rng), b = u(rng);
    if (a < 0.3) r[0] = -inf;
    if (j % 600 != 7) r[1 * c.v] = -inf; // 5 finite values
    r[2 * c.v] = -inf;
    if (a < 0.01 && any) r[3 * c.v] = nan;
    if (b < 0.2) r[3 * c.v] = -inf;
    if (a < 0.005 && any) r[4 * c.v] = inf;
    if (b < 0.004 && any) r[4 * c.v] = nan;
    if (a > 0.6) r[4 * c.v] = -inf;
  }
  const TopkResult r = run_topk(c, x);
  ASSERT_EQ(r.values.size(), size_t(c.bxs * c.k));
  for (int64_t b = 0; b < c.bxs; ++b) {
    const float* row = &x[size_t(b * c.v)];
    std::vector<float> ref(row, row + c.v);
    std::sort(ref.begin(), ref.end(), torch_above);
    std::set<uint32_t> seen;
    for (int64_t j = 0; j < c.k; ++j) {
      const uint32_t i = r.indices[size_t(b * c.k + j)];
      const float got = r.values[size_t(b * c.k + j)];
      ASSERT_LT(i, uint32_t(c.v)) << "row " << b << " slot " << j;
      EXPECT_TRUE(seen.insert(i).second) << "row " << b << ": index " << i << " twice";
      EXPECT_TRUE(same_value(row[i], got))
          << "row " << b << " slot " << j << ": x[" << i << "] = " << row[i] << ", value " << got;
      // sorted descending: slot j holds the j-th value of the order
      EXPECT_TRUE(same_value(got, ref[size_t(j)]))
          << "row " << b << " slot " << j << ": " << got << ", want " << ref[size_t(j)];
    }
  }
}

std::vector<NonFiniteCase> non_finite_cases() {
  std::vector<NonFiniteCase> v;
  int n = 0;
  for (const char* m : {"scanning", "rotational", "cascaded"})
    for (int k : {8, 9, 64, 256}) {
      v.push_back({n % 2 ? B16 : F32, 1 + (n / 2) % 2, k, m});
      ++n;
    }
  // NONFINITE = ninf (a router's -inf mask only): one max pass instead of the full map
  v.push_back({F32, 2, 9, "scanning", "ninf"});
  v.push_back({B16, 1, 64, "rotational", "ninf"});
  v.push_back({F32, 2, 256, "cascaded", "ninf"});
  // trn1: the gen2 forms (find_index8, then match_replace8)
  v.push_back({F32, 1, 20, "scanning", "all", T1});
  v.push_back({B16, 1, 64, "rotational", "all", T1});
  return v;
}
INSTANTIATE_TEST_SUITE_P(Methods, TopkNonFinite, testing::ValuesIn(non_finite_cases()),
                         [](const testing::TestParamInfo<NonFiniteCase>& i) {
                           return std::string(target_name(i.param.target)) + "_" + i.param.method +
                                  "_k" + std::to_string(i.param.k) + "_" + dt_name(i.param.dt) +
                                  "_lnc" + std::to_string(i.param.lnc);
                         });

TEST(TopkSync, RandomSchedules) {
  const TopkCase cases[] = {{T2, 1, F32, 300, 500, 20, 1, "scanning"},
                            {T2, 2, F32, 130, 2000, 100, 1, "rotational"},
                            {T2, 1, F32, 130, 2000, 100, 1, "rotational"},
                            {T2, 2, F32, 7, 20001, 64, 0, "rotational"},
                            {T2, 1, F32, 130, 2000, 100, 1, "cascaded"}};
  for (const TopkCase& c : cases) {
    const std::vector<float> x = random_values(size_t(c.bxs * c.v), c.dt, 41u);
    for (uint64_t seed : {1u, 2u}) {
      SCOPED_TRACE(c.method + " lnc " + std::to_string(c.lnc) + " seed " + std::to_string(seed));
      check_topk(c, x, run_topk(c, x, false, seed));
    }
  }
}

// No instruction reads memory the kernel never wrote (the fold's fill, the index map, the
// inserted columns and the padding of V < 8 all cover what the searches read).
TEST(TopkUninit, EveryMethodReadsOnlyWrittenMemory) {
  const TopkCase cases[] = {{T2, 2, F32, 3, 5, 3, 1, "scanning"},
                            {T2, 1, F32, 3, 64, 64, 0, "scanning"},
                            {T2, 2, B16, 3, 5001, 20, 1, "rotational"},
                            {T2, 2, F32, 7, 20001, 64, 0, "rotational"},
                            {T2, 1, F32, 130, 2000, 100, 1, "cascaded"}};
  for (const TopkCase& c : cases) {
    SCOPED_TRACE(c.method);
    const std::vector<float> x = random_values(size_t(c.bxs * c.v), c.dt, 43u);
    check_topk(c, x, run_topk(c, x, false, 0, /*check_uninit=*/true));
  }
}

// DVE cycles of the whole kernel, scanning beside rotational (docs figure, issue 4): the
// rotational method re-scans only the V / n_stages chunk plus the growing window.
TEST(TopkCost, RotationalBesideScanning) {
  auto dve_cycles = [](const TopkCase& c) {
    const std::vector<float> x = random_values(size_t(c.bxs * c.v), c.dt, 21u);
    const TopkResult r = run_topk(c, x);
    check_topk(c, x, r);
    return r.run.stats.cores.at(0).eng[int(Engine::dve)].cycles;
  };
  const int64_t scan = dve_cycles({T2, 1, F32, 1, 16384, 256, 1, "scanning", 0, "none"});
  const int64_t scan_all = dve_cycles({T2, 1, F32, 1, 16384, 256, 1, "scanning"});
  const int64_t scan_ninf = dve_cycles({T2, 1, F32, 1, 16384, 256, 1, "scanning", 0, "ninf"});
  const int64_t rot = dve_cycles({T2, 1, F32, 1, 16384, 256, 1, "rotational"});
  const int64_t rot_big = dve_cycles({T2, 1, F32, 1, 151936, 256, 1, "rotational"});
  // scanning: the strike-out plus a few 4-cycle control instructions (registers, nops)
  EXPECT_GE(scan, 32 * 2 * (16384 + 144));
  EXPECT_LE(scan, 32 * 2 * (16384 + 144) + 64);
  // NONFINITE = all adds, on DVE (60 cycles per instruction, 1 per element, 2 for two
  // inputs): the finite-key map of the row in 512-column blocks (lib/topk.inc topk_keys:
  // not_equal 2, clamp 1, copy_predicated 2 cycles per element), the map back of the 256
  // winners (3 x (equal 1 + copy_predicated 2 per element)) and 4 constant memsets of 512
  // columns; ninf one max pass, the -inf map back and 1 memset.
  const int64_t memset512 = 60 + 512;
  EXPECT_EQ(scan_all - scan, 32 * (3 * 60 + 5 * 512) + 3 * (2 * 60 + 3 * 256) + 4 * memset512);
  EXPECT_EQ(scan_ninf - scan, (60 + 16384) + (2 * 60 + 3 * 256) + memset512);
  EXPECT_LT(rot * 4, scan);
  // V = 151936 cannot run scanning (search limit); its formula: 32 * 2 * (V + 144)
  EXPECT_LT(rot_big * 10, int64_t(32) * 2 * (151936 + 144));
  RecordProperty("scanning_16384_k256_dve_cycles", std::to_string(scan));
  RecordProperty("rotational_16384_k256_dve_cycles", std::to_string(rot));
  RecordProperty("rotational_151936_k256_dve_cycles", std::to_string(rot_big));
  std::printf("DVE cycles, K = 256: scanning V=16384 %lld, rotational V=16384 %lld, "
              "rotational V=151936 %lld (scanning formula %lld)\n",
              (long long)scan, (long long)rot, (long long)rot_big,
              (long long)(int64_t(32) * 2 * (151936 + 144)));
}

// The strike-out instructions (max8, match_replace8, find_index8) of the scanning method
// cost ceil(K/8) * 2 * (V + 144) DVE cycles per row tile (issue 4, the seed's cost_estimate).
TEST(TopkCost, ScanningStrikeOutCycles) {
  for (int64_t k : {20, 8, 64}) {
    const TopkCase c{T2, 1, F32, 130, 1000, k, 1, "scanning"}; // two row tiles on core 0
    const std::vector<float> x = random_values(size_t(c.bxs * c.v), c.dt, 5u);
    const TopkResult r = run_topk(c, x, /*timeline=*/true);
    const int64_t tiles = 2;
    const int64_t expect = tiles * ((k + 7) / 8) * 2 * (c.v + 144);
    EXPECT_EQ(dve_cycles_of(r.module, c.target, r.run,
                            {Opcode::max8, Opcode::match_replace8, Opcode::find_index8}),
              expect)
        << "K = " << k;
  }
}

void expect_error(const Defines& d, const std::string& message) {
  Assembled a = assemble_kernel("topk.nasm", d, Target::trn2);
  EXPECT_FALSE(a.ok) << "expected: " << message;
  EXPECT_NE(a.diagnostics.find(message), std::string::npos) << a.diagnostics;
}

TEST(TopkEnvelope, EachLimitHasItsError) {
  auto d = [](std::string bxs, std::string v, std::string k, Defines more = {}) {
    Defines r{{"BXS", bxs}, {"V", v}, {"K", k}};
    r.insert(r.end(), more.begin(), more.end());
    return r;
  };
  expect_error(d("2", "100", "4", {{"DT", "int8"}}), "DT must be fp32 or bf16");
  expect_error(d("2", "100", "4", {{"METHOD", "bitonic"}}), "METHOD must be");
  expect_error(d("2", "100", "4", {{"NONFINITE", "some"}}), "NONFINITE must be all, ninf or none");
  expect_error(d("2", "100", "4", {{"SORTED", "2"}}), "SORTED must be 0 or 1");
  expect_error(d("2", "100", "4", {{"GEN", "2"}}), "'GEN' is predefined from the target");
  expect_error(d("0", "100", "4"), "BXS must be in [1, 1024]");
  expect_error(d("1025", "100", "4"), "BXS must be in [1, 1024]");
  expect_error(d("2", "151937", "4"), "V must be in [1, 151936]");
  expect_error(d("2", "4096", "2049"), "K must be in [1, 2048]");
  expect_error(d("2", "100", "0"), "K must be in [1, 2048]");
  expect_error(d("2", "100", "101"), "K must be <= V");
  expect_error(d("2", "16385", "16", {{"METHOD", "scanning"}}), "scanning needs V <= 16384");
  expect_error(d("1", "151936", "2048", {{"METHOD", "cascaded"}}), "no tile of rows fits");
  EXPECT_TRUE(
      assemble_kernel("topk.nasm", d("1024", "16384", "2048", {{"METHOD", "scanning"}}), T2).ok);
}

} // namespace
} // namespace nisa::kt
