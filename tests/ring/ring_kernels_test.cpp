// The ring kernels of issue 12 (kernels_asm/fg_allgather.nasm, fgcc.nasm) on several ranks,
// against references written from the math: the all-gather is the concatenation of the lhs of
// the ranks of my replica group in rank order (bit-exact: a copy); fgcc is that concatenation
// times rhs, computed in double (tolerance below).
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "tests/kernels/harness.h"
#include "tests/ring/ring_harness.h"

namespace nisa::ring {
namespace {

using kt::Defines;

struct RingCase {
  int tp, groups, force_hbm, lnc;
  DType dt;
  int m, k, n; // n: fgcc only
};

std::string ring_name(const testing::TestParamInfo<RingCase>& info) {
  const RingCase& c = info.param;
  return kt::case_prefix(Target::trn2, c.lnc, c.dt) + "_tp" + std::to_string(c.tp) + "_g" +
         std::to_string(c.groups) + (c.force_hbm ? "_hbm" : "_sbuf") + "_m" + std::to_string(c.m) +
         "_k" + std::to_string(c.k) + (c.n ? "_n" + std::to_string(c.n) : "");
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
          for (DType dt : {DType::bf16, DType::fp32})
            g.push_back({tp, groups, hbm, lnc, dt, 24, 40, 0});
  for (int groups : {1, 2}) // TP = 64: tiny slices (NS = 8 slices of 2 rows)
    for (int hbm : {0, 1})
      for (int lnc : {1, 2}) g.push_back({64, groups, hbm, lnc, DType::bf16, 16, 8, 0});
  g.push_back({4, 1, 0, 2, DType::bf16, 1024, 16, 0}); // slices of 256 rows (2 per partition)
  return g;
}
INSTANTIATE_TEST_SUITE_P(Grid, FgAllgather, testing::ValuesIn(allgather_grid()), ring_name);

} // namespace
} // namespace nisa::ring
