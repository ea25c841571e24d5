// The ring kernels of issue 12 (kernels_asm/fg_allgather.nasm, fgcc.nasm) on several ranks,
// against references written from the math: the all-gather is the concatenation of the lhs of
// the ranks of my replica group in rank order (bit-exact: a copy); fgcc is that concatenation
// times rhs, computed in double (tolerance below).
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

using kt::Defines;

struct RingCase {
  int tp, groups, force_hbm, lnc;
  DType dt;
  int m, k, n;        // n: fgcc only
  int rhs_stream = 0; // fgcc: FORCE_RHS_STREAM (stream the RHS from HBM even when it fits)
};

std::string ring_name(const testing::TestParamInfo<RingCase>& info) {
  const RingCase& c = info.param;
  return kt::case_prefix(Target::trn2, c.lnc, c.dt) + "_tp" + std::to_string(c.tp) + "_g" +
         std::to_string(c.groups) + (c.force_hbm ? "_hbm" : "_sbuf") + "_m" + std::to_string(c.m) +
         "_k" + std::to_string(c.k) + (c.n ? "_n" + std::to_string(c.n) : "") +
         (c.rhs_stream ? "_rhsstream" : "");
}
void PrintTo(const RingCase& c, std::ostream* os) {
  *os << "tp " << c.tp << " groups " << c.groups << " hbm " << c.force_hbm << " lnc " << c.lnc;
}

// Per-rank lhs values (seeded normal, representable in dt) and their bytes.
struct PerRank {
  std::vector<std::vector<float>> v;
  std::vector<Bytes> b;
};
PerRank make_per_rank(int ranks, size_t n, DType dt, uint32_t seed) {
  PerRank p;
  for (int r = 0; r < ranks; ++r) {
    p.v.push_back(kt::random_values(n, dt, seed + uint32_t(r) * 7919u));
    p.b.push_back(kt::to_bytes(p.v.back(), dt));
  }
  return p;
}

Defines ring_defines(const RingCase& c) {
  Defines d{{"M", std::to_string(c.m)},
            {"K", std::to_string(c.k)},
            {"TP", std::to_string(c.tp)},
            {"NUM_GROUPS", std::to_string(c.groups)},
            {"FORCE_HBM", std::to_string(c.force_hbm)},
            {"DT", kt::dt_name(c.dt)}};
  if (c.n) d.push_back({"N", std::to_string(c.n)});
  if (c.rhs_stream) d.push_back({"FORCE_RHS_STREAM", "1"});
  return d;
}

// ---- fg_allgather ------------------------------------------------------------------------------

class FgAllgather : public testing::TestWithParam<RingCase> {};

// Reference: out[rank] = lhs of ranks g0 .. g0 + G - 1 concatenated (g0 = my group's first).
std::vector<Bytes> allgather_ref(const RingCase& c, const std::vector<Bytes>& lhs) {
  const int G = c.tp / c.groups;
  std::vector<Bytes> out(size_t(c.tp));
  for (int r = 0; r < c.tp; ++r) {
    int g0 = r / G * G;
    for (int q = g0; q < g0 + G; ++q) out[r].insert(out[r].end(), lhs[q].begin(), lhs[q].end());
  }
  return out;
}

RankRun run_ring(const char* file, const RingCase& c,
                 const std::map<std::string, std::vector<Bytes>>& in, RunOpts o) {
  kt::Assembled a = kt::assemble_kernel(file, ring_defines(c), Target::trn2);
  if (!a.ok) throw std::runtime_error(a.diagnostics);
  o.ranks = c.tp;
  o.lnc = c.lnc;
  return run_ranks(a.module, o, in);
}

TEST_P(FgAllgather, ConcatenatesTheGroupInRankOrder) {
  const RingCase& c = GetParam();
  PerRank lhs = make_per_rank(c.tp, size_t(c.m) * c.k, c.dt, 100 + c.tp + c.m);
  RunOpts o;
  RankRun r = run_ring("fg_allgather.nasm", c, {{"lhs", lhs.b}}, o);
  ASSERT_EQ(r.status, interp::RunStatus::ok) << r.report;
  std::vector<Bytes> ref = allgather_ref(c, lhs.b);
  for (int rank = 0; rank < c.tp; ++rank)
    ASSERT_EQ(r.out["out"][rank], ref[rank]) << "rank " << rank;
}

std::vector<RingCase> allgather_grid() {
  std::vector<RingCase> g;
  for (int tp : {2, 4, 8, 16})
    for (int groups : {1, 2})
      for (int hbm : {0, 1})
        for (int lnc : {1, 2})
          // the dtype alternates over the cases: both meet every TP, path and LNC (CI time)
          g.push_back({tp, groups, hbm, lnc,
                       (tp / 2 + groups + hbm + lnc) % 2 ? DType::fp32 : DType::bf16, 24, 40, 0});
  for (int groups : {1, 2}) // TP = 64: tiny slices (NS = 8 slices of 2 rows)
    for (int hbm : {0, 1})
      for (int lnc : {1, 2}) g.push_back({64, groups, hbm, lnc, DType::bf16, 16, 8, 0});
  // TP = 128, the top of the seed's envelope (256 cores under LNC 2).
  g.push_back({128, 1, 0, 2, DType::bf16, 16, 8, 0});
  g.push_back({128, 2, 1, 1, DType::fp32, 16, 8, 0});
  g.push_back({4, 1, 0, 2, DType::bf16, 1024, 16, 0}); // slices of 256 rows (2 per partition)
  return g;
}
INSTANTIATE_TEST_SUITE_P(Grid, FgAllgather, testing::ValuesIn(allgather_grid()), ring_name);

} // namespace
} // namespace nisa::ring

namespace nisa::ring {
namespace {

// ---- fgcc --------------------------------------------------------------------------------------

class Fgcc : public testing::TestWithParam<RingCase> {};

// Reference in double: out[rank][(q - g0) * M + i][n] = sum_k lhs[q][i][k] * rhs[rank][k][n],
// and beside it the sum of |terms| (for the tolerance).
struct FgccRef {
  std::vector<std::vector<double>> val, mag;
};
FgccRef fgcc_ref(const RingCase& c, const PerRank& lhs, const PerRank& rhs) {
  const int G = c.tp / c.groups;
  FgccRef f;
  f.val.resize(size_t(c.tp));
  f.mag.resize(size_t(c.tp));
  for (int r = 0; r < c.tp; ++r) {
    int g0 = r / G * G;
    f.val[r].assign(size_t(G) * c.m * c.n, 0.0);
    f.mag[r].assign(size_t(G) * c.m * c.n, 0.0);
    for (int q = g0; q < g0 + G; ++q)
      for (int i = 0; i < c.m; ++i)
        for (int k = 0; k < c.k; ++k) {
          double a = lhs.v[q][size_t(i) * c.k + k];
          size_t row = (size_t(q - g0) * c.m + i) * c.n;
          for (int n = 0; n < c.n; ++n) {
            double t = a * rhs.v[r][size_t(k) * c.n + n];
            f.val[r][row + n] += t;
            f.mag[r][row + n] += std::fabs(t);
          }
        }
  }
  return f;
}

// Tolerance: one rounding of the fp32 PSUM sum to DT (bf16 storage: 2^-8 relative; fp32:
// 2^-24) plus the fp32 accumulation over K terms (K * 2^-24 of the sum of |terms|).
void expect_fgcc(const RingCase& c, const PerRank& lhs, const PerRank& rhs, const RankRun& r) {
  FgccRef ref = fgcc_ref(c, lhs, rhs);
  for (int rank = 0; rank < c.tp; ++rank) {
    std::vector<float> got = kt::from_bytes(r.out.at("out")[rank], c.dt);
    ASSERT_EQ(got.size(), ref.val[rank].size());
    for (size_t e = 0; e < got.size(); ++e) {
      double v = ref.val[rank][e];
      double tol = (c.dt == DType::bf16 ? std::fabs(v) * 0x1p-8 : std::fabs(v) * 0x1p-24) +
                   ref.mag[rank][e] * c.k * 0x1p-24;
      ASSERT_NEAR(got[e], v, tol + 1e-30) << "rank " << rank << " element " << e;
    }
  }
}

TEST_P(Fgcc, GatheredLhsTimesRhs) {
  const RingCase& c = GetParam();
  PerRank lhs = make_per_rank(c.tp, size_t(c.m) * c.k, c.dt, 300 + c.tp);
  PerRank rhs = make_per_rank(c.tp, size_t(c.k) * c.n, c.dt, 900 + c.k);
  RankRun r = run_ring("fgcc.nasm", c, {{"lhs", lhs.b}, {"rhs", rhs.b}}, RunOpts{});
  ASSERT_EQ(r.status, interp::RunStatus::ok) << r.report;
  expect_fgcc(c, lhs, rhs, r);
}

std::vector<RingCase> fgcc_grid() {
  std::vector<RingCase> g;
  for (int tp : {2, 4, 8, 16})
    for (int groups : {1, 2})
      for (int hbm : {0, 1})
        for (int lnc : {1, 2})
          // the dtype alternates over the cases: both meet every TP, path and LNC (CI time)
          g.push_back({tp, groups, hbm, lnc,
                       (tp / 2 + groups + hbm + lnc) % 2 ? DType::fp32 : DType::bf16, 24, 40, 24});
  for (int groups : {1, 2})
    for (int hbm : {0, 1})
      for (int lnc : {1, 2}) g.push_back({64, groups, hbm, lnc, DType::bf16, 8, 8, 8});
  g.push_back({128, 1, 1, 2, DType::bf16, 8, 8, 8});
  g.push_back({128, 2, 0, 1, DType::fp32, 8, 8, 8});
  // Several K tiles, N tiles (520 = 512 + 8) and M tiles (slices of 256 rows: 2 M tiles).
  g.push_back({2, 1, 0, 2, DType::bf16, 512, 256, 520});
  g.push_back({2, 1, 1, 1, DType::fp32, 512, 256, 520});
  // The RHS streamed from HBM by N tiles (forced at small shapes): one N tile (both slots
  // reused across ring steps), three N tiles with a partial last one, several K and M tiles,
  // both paths, LNC 1 and 2, both dtypes.
  g.push_back({2, 1, 0, 2, DType::bf16, 24, 40, 24, 1});
  g.push_back({4, 1, 1, 1, DType::fp32, 24, 256, 1100, 1});
  g.push_back({4, 2, 0, 2, DType::fp32, 24, 128, 1100, 1});
  g.push_back({8, 1, 0, 1, DType::bf16, 24, 256, 520, 1});
  g.push_back({8, 2, 1, 2, DType::bf16, 24, 40, 1100, 1});
  g.push_back({16, 1, 1, 2, DType::fp32, 16, 128, 600, 1});
  g.push_back({2, 1, 1, 2, DType::bf16, 512, 256, 520, 1});
  // Real RHS over the 16 MiB budget (2 * K * N * bytes = 20 MiB), streamed without the knob.
  g.push_back({2, 1, 0, 2, DType::bf16, 8, 2048, 2560});
  g.push_back({2, 1, 1, 1, DType::fp32, 8, 1024, 2560});
  return g;
}
INSTANTIATE_TEST_SUITE_P(Grid, Fgcc, testing::ValuesIn(fgcc_grid()), ring_name);

} // namespace
} // namespace nisa::ring

namespace nisa::ring {
namespace {

// ---- every ring kernel: schedules, races, overlap ----------------------------------------------

struct SyncCase {
  const char* file;
  RingCase c;
};
class RingSync : public testing::TestWithParam<SyncCase> {};

std::map<std::string, std::vector<Bytes>> ring_inputs(const SyncCase& sc) {
  const RingCase& c = sc.c;
  std::map<std::string, std::vector<Bytes>> in{
      {"lhs", make_per_rank(c.tp, size_t(c.m) * c.k, c.dt, 11).b}};
  if (std::string(sc.file) == "fgcc.nasm")
    in["rhs"] = make_per_rank(c.tp, size_t(c.k) * c.n, c.dt, 12).b;
  return in;
}

// Bit-identical outputs under --schedule random seeds, no race under --check-races, and no
// read of never-written memory (races checked up to 16 ranks).
TEST_P(RingSync, RandomSchedulesSameBitsAndRaceFree) {
  const SyncCase& sc = GetParam();
  auto in = ring_inputs(sc);
  RankRun base = run_ring(sc.file, sc.c, in, RunOpts{});
  ASSERT_EQ(base.status, interp::RunStatus::ok) << base.report;
  for (uint64_t seed : {1u, 7u, 1234u}) {
    RunOpts o;
    o.seed = seed;
    RankRun r = run_ring(sc.file, sc.c, in, o);
    ASSERT_EQ(r.status, interp::RunStatus::ok) << r.report;
    EXPECT_EQ(r.out, base.out) << "seed " << seed;
  }
  // The race checker's vector clocks grow with the agents (26 per core): 64 ranks would take
  // a minute; the ring's synchronisation does not depend on the rank count past a few.
  if (sc.c.tp > 16) return;
  RunOpts o;
  o.check_races = true;
  o.check_uninit = true;
  RankRun r = run_ring(sc.file, sc.c, in, o);
  ASSERT_EQ(r.status, interp::RunStatus::ok) << r.report;
  EXPECT_EQ(r.races, 0u) << r.race_text;
  EXPECT_EQ(r.out, base.out);
}

std::string sync_name(const testing::TestParamInfo<SyncCase>& info) {
  std::string f(info.param.file);
  return f.substr(0, f.find('.')) + "_" +
         ring_name(testing::TestParamInfo<RingCase>(info.param.c, info.index));
}
void PrintTo(const SyncCase& s, std::ostream* os) { *os << s.file; }

INSTANTIATE_TEST_SUITE_P(
    Kernels, RingSync,
    testing::Values(SyncCase{"fg_allgather.nasm", {4, 1, 0, 2, DType::bf16, 24, 40, 0}},
                    SyncCase{"fg_allgather.nasm", {8, 2, 1, 1, DType::fp32, 24, 40, 0}},
                    SyncCase{"fg_allgather.nasm", {64, 1, 0, 2, DType::bf16, 16, 8, 0}},
                    SyncCase{"fgcc.nasm", {4, 1, 0, 2, DType::bf16, 24, 40, 24}},
                    SyncCase{"fgcc.nasm", {8, 2, 1, 1, DType::fp32, 24, 40, 24}},
                    SyncCase{"fgcc.nasm", {4, 1, 1, 2, DType::bf16, 8, 256, 520}},
                    SyncCase{"fgcc.nasm", {64, 2, 0, 1, DType::bf16, 8, 8, 8}},
                    SyncCase{"fgcc.nasm", {4, 1, 0, 2, DType::bf16, 24, 256, 1100, 1}},
                    SyncCase{"fgcc.nasm", {8, 2, 1, 1, DType::fp32, 24, 128, 520, 1}},
                    SyncCase{"fgcc.nasm", {2, 1, 1, 1, DType::bf16, 24, 40, 24, 1}}),
    sync_name);

// The ring overlaps: fgcc's makespan is well below the sum of its permutes (every channel's
// busy time) and its matmuls (PE busy time) on a core.
TEST(FgccOverlap, MakespanWellBelowPermutesPlusMatmuls) {
  RingCase c{8, 1, 0, 1, DType::bf16, 512, 128, 512};
  SyncCase sc{"fgcc.nasm", c};
  RankRun r = run_ring(sc.file, c, ring_inputs(sc), RunOpts{});
  ASSERT_EQ(r.status, interp::RunStatus::ok) << r.report;
  const interp::CoreStats& cs = r.stats.cores[0];
  int64_t permutes = 0;
  for (const interp::ChanStats& ch : cs.chan) permutes += ch.busy_ticks;
  int64_t matmuls = cs.eng[int(Engine::pe)].busy_ticks;
  ASSERT_GT(permutes, 0);
  ASSERT_GT(matmuls, 0);
  EXPECT_LT(double(r.stats.makespan_ticks), 0.7 * double(permutes + matmuls))
      << "makespan " << r.stats.makespan_ticks << " permutes " << permutes << " matmuls "
      << matmuls;
}

// The streamed RHS hides under the ring: streaming the N tiles from HBM (forced) costs no more
// modelled time than the resident RHS (whose one up-front load the first matmul waits for),
// and gives the same bits (same K order of the fp32 PSUM sums).
TEST(FgccOverlap, StreamedRhsCostsNoMoreThanResident) {
  RingCase resident{2, 1, 0, 1, DType::bf16, 512, 256, 1024};
  RingCase streamed = resident;
  streamed.rhs_stream = 1;
  SyncCase sc{"fgcc.nasm", resident};
  auto in = ring_inputs(sc);
  RankRun a = run_ring(sc.file, resident, in, RunOpts{});
  RankRun b = run_ring(sc.file, streamed, in, RunOpts{});
  ASSERT_EQ(a.status, interp::RunStatus::ok) << a.report;
  ASSERT_EQ(b.status, interp::RunStatus::ok) << b.report;
  EXPECT_EQ(a.out, b.out);
  EXPECT_LE(double(b.stats.makespan_ticks), 1.05 * double(a.stats.makespan_ticks))
      << "streamed " << b.stats.makespan_ticks << " resident " << a.stats.makespan_ticks;
}

} // namespace
} // namespace nisa::ring

namespace nisa::ring {
namespace {

// ---- envelopes: each limit stops assembly with an .error naming it ------------------------------

struct Neg {
  const char* file;
  Defines defs;
  const char* message;
};
void PrintTo(const Neg& n, std::ostream* os) { *os << n.file; }
class RingEnvelope : public testing::TestWithParam<Neg> {};

TEST_P(RingEnvelope, ErrorNamesTheLimit) {
  const Neg& n = GetParam();
  kt::Assembled a = kt::assemble_kernel(n.file, n.defs, Target::trn2);
  EXPECT_FALSE(a.ok);
  EXPECT_NE(a.diagnostics.find(n.message), std::string::npos) << a.diagnostics;
}

INSTANTIATE_TEST_SUITE_P(
    Limits, RingEnvelope,
    testing::Values(
        Neg{"fg_allgather.nasm", {{"TP", "3"}}, "TP must be even and in [2, 128]"},
        Neg{"fg_allgather.nasm", {{"TP", "130"}}, "TP must be even and in [2, 128]"},
        Neg{"fg_allgather.nasm", {{"TP", "8"}, {"NUM_GROUPS", "3"}}, "NUM_GROUPS must divide TP"},
        Neg{"fg_allgather.nasm", {{"M", "6"}}, "M must be divisible by 2 * channels"},
        Neg{"fg_allgather.nasm", {{"M", "1000"}}, "slice rows M / (2 * channels) must be"},
        Neg{"fg_allgather.nasm", {{"DT", "int8"}}, "DT must be bf16, fp32 or fp16"},
        Neg{"fgcc.nasm", {{"K", "200"}}, "K must be <= 128 or a multiple of 128"},
        Neg{"fgcc.nasm", {{"K", "16384"}, {"N", "4096"}}, "exceed the SBUF partition"},
        Neg{"fgcc.nasm", {{"TP", "5"}}, "TP must be even and in [2, 128]"},
        Neg{"fgcc.nasm", {{"M", "10"}}, "M must be divisible by 2 * channels"},
        Neg{"sb2sb_allgather.nasm", {{"ROWS", "129"}}, "untiled ROWS must be <= 128"},
        Neg{"sb2sb_allgather.nasm",
            {{"ROWS", "200"}, {"TILED", "1"}},
            "tiled ROWS must be <= 128 or a multiple of 128"},
        Neg{"sb2sb_allgather.nasm", {{"COLS", "2048"}, {"TP", "64"}}, "exceeds the SBUF partition"},
        Neg{"topk_reduce.nasm", {{"T", "129"}}, "T must be in [1, 128]"},
        Neg{"topk_reduce.nasm", {{"K", "9"}}, "K must be in [1, 8]"},
        Neg{"topk_reduce.nasm", {{"H", "255"}}, "H must be even"},
        Neg{"topk_reduce.nasm", {{"DT", "fp32"}}, "DT must be bf16 or fp16"},
        Neg{"topk_reduce.nasm", {{"ROWS", "16385"}}, "ROWS must be in [1, 16384]"}),
    [](const testing::TestParamInfo<Neg>& info) { return "case" + std::to_string(info.index); });

TEST(RingEnvelope, FgccNeedsTrn2) {
  kt::Assembled a = kt::assemble_kernel("fgcc.nasm", {}, Target::trn1);
  EXPECT_FALSE(a.ok);
  EXPECT_NE(a.diagnostics.find("needs trn2 or trn3"), std::string::npos) << a.diagnostics;
}

} // namespace
} // namespace nisa::ring

namespace nisa::ring {
namespace {

// ---- sb2sb_allgather ---------------------------------------------------------------------------

struct SbCase {
  int rows, cols, tp, tiled, lnc;
  DType dt;
};
class Sb2sbAllgather : public testing::TestWithParam<SbCase> {};
void PrintTo(const SbCase& c, std::ostream* os) { *os << c.rows << "x" << c.cols; }

RankRun run_sb2sb(const SbCase& c, const std::vector<Bytes>& inp, RunOpts o) {
  kt::Assembled a = kt::assemble_kernel("sb2sb_allgather.nasm",
                                        {{"ROWS", std::to_string(c.rows)},
                                         {"COLS", std::to_string(c.cols)},
                                         {"TP", std::to_string(c.tp)},
                                         {"TILED", std::to_string(c.tiled)},
                                         {"DT", kt::dt_name(c.dt)}},
                                        Target::trn2);
  if (!a.ok) throw std::runtime_error(a.diagnostics);
  o.ranks = c.tp;
  o.lnc = c.lnc;
  return run_ranks(a.module, o, {{"inp", inp}});
}

// Reference: out[r][row][q * COLS + col] = inp[q][row][col] for every rank r (bit-exact copy).
TEST_P(Sb2sbAllgather, RankBlocksSideBySide) {
  const SbCase& c = GetParam();
  PerRank inp = make_per_rank(c.tp, size_t(c.rows) * c.cols, c.dt, 500 + c.rows);
  RankRun r = run_sb2sb(c, inp.b, RunOpts{});
  ASSERT_EQ(r.status, interp::RunStatus::ok) << r.report;
  const size_t w = c.dt == DType::fp32 ? 4 : 2, rowb = size_t(c.cols) * w;
  Bytes ref;
  for (int row = 0; row < c.rows; ++row)
    for (int q = 0; q < c.tp; ++q)
      ref.insert(ref.end(), inp.b[q].begin() + row * rowb, inp.b[q].begin() + (row + 1) * rowb);
  for (int rank = 0; rank < c.tp; ++rank) ASSERT_EQ(r.out["out"][rank], ref) << "rank " << rank;
  // Same bits under random schedules; no race (up to 16 cores: see RingSync).
  RunOpts o;
  o.seed = 99;
  EXPECT_EQ(run_sb2sb(c, inp.b, o).out, r.out);
  if (c.tp * c.lnc <= 8) {
    RunOpts rc;
    rc.check_races = true;
    rc.check_uninit = true;
    RankRun rr = run_sb2sb(c, inp.b, rc);
    ASSERT_EQ(rr.status, interp::RunStatus::ok) << rr.report;
    EXPECT_EQ(rr.races, 0u) << rr.race_text;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Grid, Sb2sbAllgather,
    testing::Values(SbCase{64, 96, 8, 0, 1, DType::bf16}, SbCase{96, 40, 16, 0, 2, DType::fp32},
                    SbCase{128, 16, 64, 0, 1, DType::bf16}, SbCase{128, 24, 2, 0, 2, DType::bf16},
                    SbCase{64, 32, 4, 1, 2, DType::bf16}, SbCase{256, 40, 4, 1, 2, DType::bf16},
                    SbCase{384, 24, 8, 1, 1, DType::bf16}, SbCase{384, 24, 4, 1, 2, DType::fp32},
                    SbCase{256, 8, 64, 1, 2, DType::bf16}, SbCase{256, 4, 128, 1, 2, DType::fp32},
                    SbCase{32, 8, 128, 0, 1, DType::bf16}),
    [](const testing::TestParamInfo<SbCase>& info) {
      const SbCase& c = info.param;
      return kt::case_prefix(Target::trn2, c.lnc, c.dt) + (c.tiled ? "_tiled" : "_untiled") + "_r" +
             std::to_string(c.rows) + "_c" + std::to_string(c.cols) + "_tp" + std::to_string(c.tp);
    });

} // namespace
} // namespace nisa::ring
