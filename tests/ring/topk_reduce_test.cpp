// kernels_asm/topk_reduce.nasm (the MoE combine) against a reference written from its header's
// math: out[t] = the sum of the first K rows (in row order) whose packed int32 id is t; each of
// the kernel's read-modify-write adds rounds to DT. Grid: the token and K envelope at a few
// hundred rows; SmallRows: every ROWS from 1 (fewer than the 8 ids find_index8 searches; the
// kernel pads its id row) with several T and K, tokens with more than K rows included.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "tests/ring/ring_harness.h"
#include "tests/support/kernel_harness.h"

namespace nisa::ring {
namespace {

struct TkCase {
  int rows, t, k, lnc;
  DType dt;
  bool over_k = false; // some tokens get more than K rows (the rows past the K-th are dropped)
};
void PrintTo(const TkCase& c, std::ostream* os) {
  *os << "ROWS " << c.rows << " T " << c.t << " K " << c.k << " lnc " << c.lnc;
}
std::string tk_name(const testing::TestParamInfo<TkCase>& info) {
  const TkCase& c = info.param;
  return std::string("trn2_lnc") + std::to_string(c.lnc) +
         (c.dt == DType::bf16 ? "_bf16" : "_fp16") + "_rows" + std::to_string(c.rows) + "_t" +
         std::to_string(c.t) + "_k" + std::to_string(c.k) + (c.over_k ? "_overk" : "");
}

uint16_t to_half(float x, DType dt) { return dt == DType::bf16 ? f32_to_bf16(x) : f32_to_fp16(x); }
float from_half(uint16_t h, DType dt) {
  return dt == DType::bf16 ? bf16_to_f32(h) : fp16_to_f32(h);
}

// The token id of every row, -1 for an unused row. Without over_k each token gets 0..K rows
// (token 0 min(K, ROWS)) at random positions; with over_k ids are drawn uniformly from
// -1..T-1, so a token may own more than K rows.
std::vector<int32_t> make_ids(const TkCase& c, std::mt19937& rng) {
  std::vector<int32_t> id(static_cast<size_t>(c.rows), -1);
  if (c.over_k) {
    for (int32_t& v : id) v = int32_t(rng() % uint32_t(c.t + 1)) - 1;
    return id;
  }
  std::vector<int> slots(static_cast<size_t>(c.rows));
  for (int i = 0; i < c.rows; ++i) slots[size_t(i)] = i;
  std::shuffle(slots.begin(), slots.end(), rng);
  size_t next = 0;
  for (int t = 0; t < c.t && next < slots.size(); ++t) {
    int n = t == 0 ? c.k : int(rng() % uint32_t(c.k + 1));
    for (int i = 0; i < n && next < slots.size(); ++i) id[size_t(slots[next++])] = t;
  }
  return id;
}

void check_topk_reduce(const TkCase& c, bool schedules_and_races) {
  const int H = 16;
  std::mt19937 rng(uint32_t(1000 + c.rows * 7919 + c.t * 10 + c.k + (c.over_k ? 555 : 0)));
  const std::vector<int32_t> id = make_ids(c, rng);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  Bytes inp(size_t(c.rows) * (H + 2) * 2);
  std::vector<std::vector<uint16_t>> row(static_cast<size_t>(c.rows));
  for (int r = 0; r < c.rows; ++r) {
    for (int h = 0; h < H; ++h) {
      const uint16_t b = to_half(nd(rng), c.dt);
      row[size_t(r)].push_back(b);
      std::memcpy(&inp[(size_t(r) * (H + 2) + h) * 2], &b, 2);
    }
    std::memcpy(&inp[(size_t(r) * (H + 2) + H) * 2], &id[size_t(r)], 4); // columns H (low), H+1
  }
  // Reference: for each token, its first K rows in row order, added one at a time into a zero
  // (the sum of two DT values in fp32, rounded to DT: a dma_compute add).
  std::vector<uint16_t> ref(size_t(c.t) * H, to_half(0.0f, c.dt));
  std::vector<int> taken(static_cast<size_t>(c.t), 0);
  for (int r = 0; r < c.rows; ++r) {
    const int32_t t = id[size_t(r)];
    if (t < 0 || taken[size_t(t)] == c.k) continue;
    ++taken[size_t(t)];
    for (int h = 0; h < H; ++h) {
      uint16_t& o = ref[size_t(t) * H + size_t(h)];
      o = to_half(from_half(o, c.dt) + from_half(row[size_t(r)][size_t(h)], c.dt), c.dt);
    }
  }
  kt::Assembled a = kt::assemble_kernel("topk_reduce.nasm",
                                        {{"ROWS", std::to_string(c.rows)},
                                         {"T", std::to_string(c.t)},
                                         {"K", std::to_string(c.k)},
                                         {"H", std::to_string(H)},
                                         {"DT", c.dt == DType::bf16 ? "bf16" : "fp16"}},
                                        Target::trn2);
  ASSERT_TRUE(a.ok) << a.diagnostics;
  RunOpts o;
  o.lnc = c.lnc;
  RankRun r = run_ranks(a.module, o, {{"inp", {inp}}});
  ASSERT_EQ(r.status, interp::RunStatus::ok) << r.report;
  const Bytes& got = r.out["out"][0];
  ASSERT_EQ(got.size(), ref.size() * 2);
  for (size_t e = 0; e < ref.size(); ++e) {
    uint16_t b;
    std::memcpy(&b, &got[e * 2], 2);
    ASSERT_EQ(b, ref[e]) << "token " << e / H << " column " << e % H << ": " << from_half(b, c.dt)
                         << " vs " << from_half(ref[e], c.dt);
  }
  if (!schedules_and_races) return;
  // Same bits under a random schedule; race-free, no uninitialised read.
  RunOpts rs = o;
  rs.seed = 5;
  EXPECT_EQ(run_ranks(a.module, rs, {{"inp", {inp}}}).out, r.out);
  RunOpts rc = o;
  rc.check_races = true;
  rc.check_uninit = true;
  RankRun rr = run_ranks(a.module, rc, {{"inp", {inp}}});
  ASSERT_EQ(rr.status, interp::RunStatus::ok) << rr.report;
  EXPECT_EQ(rr.races, 0u) << rr.race_text;
}

class TopkReduce : public testing::TestWithParam<TkCase> {};
TEST_P(TopkReduce, SumsTheRowsOfEachToken) { check_topk_reduce(GetParam(), true); }

std::vector<TkCase> topk_reduce_grid() {
  std::vector<TkCase> g;
  for (int t : {1, 4, 128})
    for (int k = 1; k <= 8; ++k)
      for (int lnc : {1, 2}) g.push_back({t * k + 7, t, k, lnc, DType::bf16});
  g.push_back({4 * 8 + 7, 4, 8, 2, DType::fp16});
  g.push_back({128 * 3 + 7, 128, 3, 1, DType::fp16});
  g.push_back({300, 16, 4, 2, DType::bf16, true});
  return g;
}
INSTANTIATE_TEST_SUITE_P(Grid, TopkReduce, testing::ValuesIn(topk_reduce_grid()), tk_name);

// Every ROWS from 1 to 17 (the id row below, at and above find_index8's 8) with T in
// {1, 2, 3, 5, 128} and K in {1, 2, 3, 8}, half of them with tokens owning more than K rows.
class TopkReduceSmallRows : public testing::TestWithParam<TkCase> {};
TEST_P(TopkReduceSmallRows, SumsTheRowsOfEachToken) {
  const TkCase& c = GetParam();
  check_topk_reduce(c, c.rows % 4 == 1); // schedules and the race check on a quarter
}

std::vector<TkCase> small_rows() {
  std::vector<TkCase> g;
  int i = 0;
  for (int rows = 1; rows <= 17; ++rows)
    for (int t : {1, 2, 3, 5, 128})
      for (int k : {1, 2, 3, 8}) {
        g.push_back({rows, t, k, 1 + i % 2, i % 5 == 0 ? DType::fp16 : DType::bf16, i % 3 == 0});
        ++i;
      }
  return g;
}
INSTANTIATE_TEST_SUITE_P(Sweep, TopkReduceSmallRows, testing::ValuesIn(small_rows()), tk_name);

} // namespace
} // namespace nisa::ring
