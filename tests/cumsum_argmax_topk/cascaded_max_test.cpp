// cascaded_max.nasm against argmax written from the math.
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/support/kernel_harness.h"

namespace nisa::kt {
namespace {

struct CmaxCase {
  Target target;
  int lnc;
  DType dt;
  int64_t bxs, v;
};

std::string case_name(const testing::TestParamInfo<CmaxCase>& i) {
  const CmaxCase& c = i.param;
  return case_prefix(c.target, c.lnc, c.dt) + "_" + std::to_string(c.bxs) + "x" +
         std::to_string(c.v);
}

Defines cmax_defines(int64_t bxs, int64_t v, DType dt) {
  return {{"BXS", std::to_string(bxs)}, {"V", std::to_string(v)}, {"DT", dt_name(dt)}};
}

struct CmaxResult {
  std::vector<float> values;
  std::vector<uint32_t> indices;
  interp::Stats stats;
};

CmaxResult run_cmax(const CmaxCase& c, const std::vector<float>& x, uint64_t random_seed = 0,
                    bool check_uninit = false) {
  Assembled a = assemble_kernel("cascaded_max.nasm", cmax_defines(c.bxs, c.v, c.dt), c.target);
  EXPECT_TRUE(a.ok) << a.diagnostics;
  if (!a.ok) return {};
  RunOutput r = run_kernel(a.module, c.target, c.lnc, {{"x", to_bytes(x, c.dt)}}, false,
                           random_seed, check_uninit);
  EXPECT_EQ(r.status, interp::RunStatus::ok) << r.report;
  return {from_bytes(r.tensors["values"], c.dt), u32_from_bytes(r.tensors["indices"]), r.stats};
}

// The documented tie rule needs the kernel's stage chunk (header of cascaded_max.nasm):
// T = ceil(BXS/2) rows per tile, n_stages = max(1, min(128 / T, V / 128)), C = ceil(V / n_stages).
int64_t stage_chunk(int64_t bxs, int64_t v) {
  const int64_t t = (bxs + 1) / 2;
  const int64_t s = std::max<int64_t>(1, std::min(128 / t, v / 128));
  return (v + s - 1) / s;
}

// Expected index under the tie rule: the first occurrence of the maximum within the last
// chunk that holds it.
int64_t expected_index(const float* row, int64_t v, int64_t chunk) {
  const float m = *std::max_element(row, row + v);
  int64_t last = v - 1;
  while (row[last] != m) --last;
  int64_t i = last / chunk * chunk;
  while (row[i] != m) ++i;
  return i;
}

void check_rows(const CmaxCase& c, const std::vector<float>& x, const CmaxResult& r) {
  ASSERT_EQ(r.values.size(), size_t(c.bxs));
  ASSERT_EQ(r.indices.size(), size_t(c.bxs));
  const int64_t chunk = stage_chunk(c.bxs, c.v);
  for (int64_t b = 0; b < c.bxs; ++b) {
    const float* row = &x[size_t(b * c.v)];
    const float m = *std::max_element(row, row + c.v);
    EXPECT_EQ(r.values[b], m) << "row " << b;
    ASSERT_LT(r.indices[b], uint32_t(c.v)) << "row " << b;
    EXPECT_EQ(row[r.indices[b]], m) << "row " << b << ": index does not point at the maximum";
    EXPECT_EQ(int64_t(r.indices[b]), expected_index(row, c.v, chunk)) << "row " << b;
  }
}

class CascadedMax : public testing::TestWithParam<CmaxCase> {};

TEST_P(CascadedMax, MatchesArgmax) {
  const CmaxCase& c = GetParam();
  const std::vector<float> x =
      random_values(size_t(c.bxs * c.v), c.dt, 99u + uint32_t(c.bxs * 7 + c.v), 3.0f);
  check_rows(c, x, run_cmax(c, x));
}

constexpr Target T1 = Target::trn1, T2 = Target::trn2;
constexpr DType F32 = DType::fp32, B16 = DType::bf16;

// V not divisible by the fold factor except where noted (exact path): 3x1000 (S=7, C=143),
// 7x20001 (S=32), 65x40000 (S=3), 1x100000 (S=128); exact: 129x5000 (S=1), 2x151936.
INSTANTIATE_TEST_SUITE_P(
    Grid, CascadedMax,
    testing::Values(CmaxCase{T2, 1, F32, 1, 151936}, CmaxCase{T2, 2, B16, 1, 100000},
                    CmaxCase{T2, 1, F32, 3, 1000}, CmaxCase{T2, 2, F32, 3, 1000},
                    CmaxCase{T1, 1, B16, 3, 1000}, CmaxCase{T2, 2, B16, 7, 20001},
                    CmaxCase{T1, 1, F32, 7, 20001}, CmaxCase{T2, 2, F32, 65, 40000},
                    CmaxCase{T2, 1, B16, 65, 40000}, CmaxCase{T2, 2, B16, 129, 5000},
                    CmaxCase{T1, 1, F32, 129, 5000}, CmaxCase{T2, 2, F32, 2, 151936},
                    CmaxCase{T2, 1, F32, 5, 100},
                    // chunks wider than the find_index8 limit (C = 37984: three pieces)
                    CmaxCase{T2, 2, F32, 64, 151936}, CmaxCase{T1, 1, B16, 64, 151936},
                    CmaxCase{Target::trn3, 2, B16, 7, 20001}),
    case_name);

// A chunk searched in 16384-wide pieces: the maximum twice in the last piece and once in the
// second piece of the same chunk; the first occurrence (second piece) wins.
TEST(CascadedMaxTies, FirstOccurrenceAcrossPieces) {
  const CmaxCase c{T2, 1, F32, 64, 151936}; // T = 32, S = 4, C = 37984
  std::vector<float> x = random_values(size_t(c.bxs * c.v), c.dt, 8u);
  const int64_t chunk = stage_chunk(c.bxs, c.v);
  ASSERT_EQ(chunk, 37984);
  for (int64_t b = 0; b < c.bxs; ++b) {
    float* row = &x[size_t(b * c.v)];
    row[chunk + 16384 + 7] = 70.0f;     // chunk 1, piece 1
    row[chunk + 2 * 16384 + 3] = 70.0f; // chunk 1, piece 2
    row[chunk + 2 * 16384 + 9] = 70.0f;
  }
  const CmaxResult r = run_cmax(c, x);
  ASSERT_EQ(r.indices.size(), size_t(c.bxs));
  for (int64_t b = 0; b < c.bxs; ++b) EXPECT_EQ(r.indices[b], chunk + 16384 + 7) << "row " << b;
  check_rows(c, x, r);
}

// Planted ties: the maximum appears twice inside one chunk and once in an earlier chunk.
TEST(CascadedMaxTies, LastChunkFirstOccurrence) {
  const CmaxCase c{T2, 2, F32, 3, 1000}; // C = 143
  std::vector<float> x = random_values(size_t(c.bxs * c.v), c.dt, 7u);
  const int64_t chunk = stage_chunk(c.bxs, c.v);
  ASSERT_EQ(chunk, 143);
  for (int64_t b = 0; b < c.bxs; ++b) {
    float* row = &x[size_t(b * c.v)];
    row[10 + b] = 50.0f;          // chunk 0
    row[3 * chunk + 4] = 50.0f;   // chunk 3, first occurrence there: the winner
    row[3 * chunk + 100] = 50.0f; // chunk 3, later
  }
  x[size_t(2 * c.v + 5)] = 60.0f; // row 2: a single maximum in chunk 0
  const CmaxResult r = run_cmax(c, x);
  ASSERT_EQ(r.indices.size(), 3u);
  EXPECT_EQ(r.indices[0], 3 * chunk + 4);
  EXPECT_EQ(r.indices[1], 3 * chunk + 4);
  EXPECT_EQ(r.indices[2], 5u);
  check_rows(c, x, r);
}

// Missing waits would show up under random schedules (shared buffers across the two tiles
// with --lnc 1, the semaphore fast-forward of core 1 with --lnc 2, several pieces).
TEST(CascadedMaxSync, RandomSchedules) {
  for (int lnc : {1, 2}) {
    const CmaxCase c{T2, lnc, F32, 7, 40001};
    const std::vector<float> x = random_values(size_t(c.bxs * c.v), c.dt, 31u);
    for (uint64_t seed : {1u, 2u}) check_rows(c, x, run_cmax(c, x, seed));
  }
}

TEST(CascadedMaxUninit, ReadsOnlyWrittenMemory) {
  for (const CmaxCase& c : {CmaxCase{T2, 2, F32, 3, 1000}, CmaxCase{T2, 1, B16, 64, 151936}}) {
    const std::vector<float> x = random_values(size_t(c.bxs * c.v), c.dt, 51u);
    check_rows(c, x, run_cmax(c, x, 0, /*check_uninit=*/true));
  }
}

// BXS == 1 runs on one core: core 1 only reads its registers and branches.
TEST(CascadedMaxLnc, SingleRowUsesOneCore) {
  const CmaxCase c{T2, 2, F32, 1, 4096};
  const std::vector<float> x = random_values(size_t(c.v), c.dt, 3u);
  const CmaxResult r = run_cmax(c, x);
  check_rows(c, x, r);
  ASSERT_EQ(r.stats.cores.size(), 2u);
  EXPECT_GT(r.stats.cores[0].eng[int(Engine::dve)].insts, 8u);
  EXPECT_LE(r.stats.cores[1].eng[int(Engine::dve)].insts, 5u);
  EXPECT_EQ(r.stats.cores[1].queue[0].transfers + r.stats.cores[1].queue[2].transfers, 0u);
}

// Two rows split across the cores: each core stores one row.
TEST(CascadedMaxLnc, RowsSplitAcrossCores) {
  const CmaxCase c{T2, 2, F32, 2, 4096};
  const std::vector<float> x = random_values(size_t(2 * c.v), c.dt, 4u);
  const CmaxResult r = run_cmax(c, x);
  check_rows(c, x, r);
  for (int core = 0; core < 2; ++core)
    EXPECT_EQ(r.stats.cores[size_t(core)].queue[0].transfers, 1u) << "core " << core;
}

void expect_error(const Defines& d, const std::string& message) {
  Assembled a = assemble_kernel("cascaded_max.nasm", d, Target::trn2);
  EXPECT_FALSE(a.ok);
  EXPECT_NE(a.diagnostics.find(message), std::string::npos) << a.diagnostics;
}

TEST(CascadedMaxEnvelope, EachLimitHasItsError) {
  expect_error({{"BXS", "2"}, {"V", "1000"}, {"DT", "fp16"}}, "DT must be fp32 or bf16");
  expect_error({{"BXS", "0"}, {"V", "1000"}}, "BXS must be in [1, 256]");
  expect_error({{"BXS", "257"}, {"V", "1000"}}, "BXS must be in [1, 256]");
  expect_error({{"BXS", "2"}, {"V", "7"}}, "V must be >= 8");
  // one row per partition (S = 1): the chunk is the whole row, 4 bytes per fp32 element
  expect_error({{"BXS", "129"}, {"V", "44033"}}, "does not fit one SBUF partition");
  expect_error({{"BXS", "129"}, {"V", "88065"}, {"DT", "bf16"}}, "does not fit one SBUF partition");
  // the largest valid neighbours assemble
  EXPECT_TRUE(assemble_kernel("cascaded_max.nasm", cmax_defines(129, 44032, F32), T2).ok);
  EXPECT_TRUE(assemble_kernel("cascaded_max.nasm", cmax_defines(129, 88064, B16), T2).ok);
  EXPECT_TRUE(assemble_kernel("cascaded_max.nasm", cmax_defines(256, 8, F32), T2).ok);
}

} // namespace
} // namespace nisa::kt
