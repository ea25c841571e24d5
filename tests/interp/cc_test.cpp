// Collectives across ranks, ring_rank, and per-rank inputs/outputs.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>
#include <sstream>
#include <unistd.h>

#include "builders.h"
#include "interp/engines/xfer.h"
#include "interp/run/run.h"

namespace nisa::test {
namespace {

using interp::Machine;
using interp::MachineOptions;
using interp::RunStatus;

constexpr int C = 6;

// x (per rank) -> op -> y, with a cc instruction between HBM tensors.
KB cc_kernel(Opcode op, std::vector<int64_t> yshape, std::vector<std::vector<uint32_t>> groups,
             int64_t arg = 0) {
  KB k;
  int x = k.hbm("x", DType::fp32, {2, C}, Role::input);
  int y = k.hbm("y", DType::fp32, yshape, Role::output);
  k.m.groups.push_back({"g", groups});
  Inst in = make_inst(op, Engine::cc);
  in.ops[0].ap = hbm_ap(k.m.tensors[y]);
  in.ops[1].ap = hbm_ap(k.m.tensors[x]);
  in.ops[2].i = 0;
  if (op == Opcode::all_gather) in.ops[3].i = arg;
  if (op == Opcode::all_reduce || op == Opcode::reduce_scatter) in.ops[3].i = arg;
  k.add(Engine::cc, in);
  return k;
}

std::vector<std::vector<float>> run_ranks(const KB& k, int ranks,
                                          std::vector<std::vector<float>>& ins, int threads = 1) {
  MachineOptions mo;
  mo.ranks = ranks;
  Machine m(k.m, mo);
  ins.clear();
  for (int r = 0; r < ranks; ++r) {
    ins.push_back(random_floats(2 * C, 100 + r));
    m.write_tensor(k.m.tensors[0], as_bytes(ins[r]).data(), r);
  }
  interp::SchedOptions so;
  so.threads = threads;
  auto res = interp::run(m, so);
  EXPECT_EQ(res.status, RunStatus::ok) << res.report;
  std::vector<std::vector<float>> outs;
  for (int r = 0; r < ranks; ++r) outs.push_back(read_f32(m, k.m.tensors[1], r));
  return outs;
}

TEST(Collectives, AllReduceAddAndMax) {
  std::vector<std::vector<float>> in;
  auto out = run_ranks(cc_kernel(Opcode::all_reduce, {2, C}, {{0, 1, 2}}, int(AluOp::add)), 3, in);
  for (int r = 0; r < 3; ++r)
    for (int j = 0; j < 2 * C; ++j) EXPECT_EQ(out[r][j], (in[0][j] + in[1][j]) + in[2][j]);
  out = run_ranks(cc_kernel(Opcode::all_reduce, {2, C}, {{0, 1}, {2, 3}}, int(AluOp::max)), 4, in);
  for (int r = 0; r < 4; ++r)
    for (int j = 0; j < 2 * C; ++j) EXPECT_EQ(out[r][j], std::max(in[r & ~1][j], in[r | 1][j]));
}

TEST(Collectives, AllGatherDim0AndDim1) {
  std::vector<std::vector<float>> in;
  auto out = run_ranks(cc_kernel(Opcode::all_gather, {4, C}, {{0, 1}}, 0), 2, in);
  for (int r = 0; r < 2; ++r)
    for (int j = 0; j < 4 * C; ++j) EXPECT_EQ(out[r][j], in[j / (2 * C)][j % (2 * C)]);
  out = run_ranks(cc_kernel(Opcode::all_gather, {2, 2 * C}, {{0, 1}}, 1), 2, in);
  for (int row = 0; row < 2; ++row)
    for (int j = 0; j < 2 * C; ++j) EXPECT_EQ(out[1][row * 2 * C + j], in[j / C][row * C + j % C]);
}

TEST(Collectives, ReduceScatterAndAllToAll) {
  std::vector<std::vector<float>> in;
  auto out = run_ranks(cc_kernel(Opcode::reduce_scatter, {1, C}, {{0, 1}}, int(AluOp::add)), 2, in);
  for (int r = 0; r < 2; ++r)
    for (int j = 0; j < C; ++j) EXPECT_EQ(out[r][j], in[0][r * C + j] + in[1][r * C + j]);
  out = run_ranks(cc_kernel(Opcode::all_to_all, {2, C}, {{0, 1}}), 2, in);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int e = 0; e < C; ++e) EXPECT_EQ(out[i][j * C + e], in[j][i * C + e]);
}

TEST(Collectives, PermuteImplicitRingAndCollectivePermute) {
  std::vector<std::vector<float>> in;
  auto out = run_ranks(cc_kernel(Opcode::permute_implicit, {2, C}, {{2, 0, 1}}), 3, in);
  // Ring 2 -> 0 -> 1 -> 2: each rank receives its predecessor's data.
  EXPECT_EQ(out[0], in[2]);
  EXPECT_EQ(out[1], in[0]);
  EXPECT_EQ(out[2], in[1]);
  out = run_ranks(cc_kernel(Opcode::collective_permute, {2, C}, {{0, 1}, {1, 2}, {2, 0}}), 3, in);
  EXPECT_EQ(out[1], in[0]);
  EXPECT_EQ(out[2], in[1]);
  EXPECT_EQ(out[0], in[2]);
}

// On host threads each participant's source is read and its destination written on a thread
// of its own (interp/engines/cc.cpp): the results are those of one thread, bit for bit, and
// a permute that names a target twice still ends with the later move's data.
TEST(Collectives, SameBitsOnOneAndFourHostThreads) {
  struct Case {
    Opcode op;
    std::vector<int64_t> y;
    std::vector<std::vector<uint32_t>> groups;
    int64_t arg;
  };
  const std::vector<Case> cases = {
      {Opcode::all_gather, {8, C}, {{0, 1, 2, 3}}, 0},
      {Opcode::all_gather, {2, 4 * C}, {{3, 1, 0, 2}}, 1},
      {Opcode::all_to_all, {2, C}, {{0, 1}, {2, 3}}, 0},
      {Opcode::all_reduce, {2, C}, {{0, 1, 2, 3}}, int(AluOp::add)},
      {Opcode::reduce_scatter, {1, C}, {{0, 1}, {2, 3}}, int(AluOp::max)},
      {Opcode::collective_permute, {2, C}, {{0, 1}, {2, 1}, {1, 3}, {3, 0}}, 0},
      {Opcode::permute_implicit, {2, C}, {{1, 3, 0, 2}}, 0},
  };
  for (const Case& c : cases) {
    const KB k = cc_kernel(c.op, c.y, c.groups, c.arg);
    std::vector<std::vector<float>> in1, in4;
    const auto one = run_ranks(k, 4, in1, 1), four = run_ranks(k, 4, in4, 4);
    ASSERT_EQ(in1, in4);
    for (int r = 0; r < 4; ++r)
      EXPECT_EQ(0, std::memcmp(one[r].data(), four[r].data(), one[r].size() * 4))
          << desc(c.op).mnemonic << " rank " << r;
    if (c.op == Opcode::collective_permute) { // 0 -> 1, then 2 -> 1: rank 1 holds rank 2's
      EXPECT_EQ(four[1], in4[2]);
      EXPECT_EQ(four[3], in4[1]);
      EXPECT_EQ(four[0], in4[3]);
    }
    const int order[4] = {3, 1, 0, 2};
    if (c.op == Opcode::all_gather && c.arg == 1) { // row p: row p of ranks 3, 1, 0, 2
      for (int row = 0; row < 2; ++row)
        for (int j = 0; j < 4 * C; ++j)
          EXPECT_EQ(four[0][row * 4 * C + j], in4[order[j / C]][row * C + j % C]);
    }
  }
}

// scatter_pieces writes what scatter_bytes writes from the pieces' concatenation: into a
// strided destination, through a cast, and around skipped rows.
TEST(Collectives, ScatterPiecesEqualsScatterOfTheConcatenation) {
  const std::vector<uint8_t> src = random_bytes(3 * 4 * 5 * 4, 7);
  std::mt19937 rng(11);
  interp::BytePieces pieces;
  for (size_t at = 0; at < src.size();) { // pieces of 0..13 bytes: runs split anywhere
    const size_t n = std::min<size_t>(rng() % 14, src.size() - at);
    pieces.push_back({src.data() + at, n});
    at += n;
  }
  for (const DType src_dtype : {DType::fp32, DType::int32, DType::bf16}) {
    for (const bool skip : {false, true}) {
      std::vector<uint8_t> a(4096, 0xAB), b(4096, 0xAB);
      interp::View v;
      v.dtype = DType::fp32;
      v.parts = 3;
      v.pstride = 1000;
      v.count[2] = 4, v.stride[2] = 40; // 4 x 5 elements of a partition, rows 40 bytes apart
      v.count[3] = 5, v.stride[3] = 4;
      v.free_elems = 20;
      if (skip) v.row_skip = {0, 1, 0};
      const size_t used = 60 * size_t(dtype_bytes(src_dtype)); // a bf16 source: half the bytes
      interp::BytePieces cut;
      for (size_t left = used, k = 0; left > 0; ++k) {
        const size_t n = std::min(left, pieces[k].second);
        cut.push_back({pieces[k].first, n});
        left -= n;
      }
      v.base = a.data();
      interp::scatter_bytes(v, src.data(), src_dtype);
      v.base = b.data();
      interp::scatter_pieces(v, cut, src_dtype);
      EXPECT_EQ(a, b) << dtype_name(src_dtype) << " skip " << skip;
      EXPECT_NE(a, std::vector<uint8_t>(4096, 0xAB));
    }
  }
}

TEST(Collectives, RingRankAndRankRegisters) {
  KB k;
  int y = k.hbm("y", DType::int32, {1, 4}, Role::output);
  k.m.groups.push_back({"ring", {{0, 1, 2}}});
  auto st = [&](int reg, int idx) {
    Inst s = make_inst(Opcode::st, Engine::sp);
    s.ops[0].ap = hbm_row(k.m.tensors[y], 0);
    s.ops[0].ap.offset += idx * 4;
    s.ops[1].i = reg;
    k.add(Engine::sp, s);
  };
  for (int step = 0; step < 3; ++step) {
    Inst rr = make_inst(Opcode::ring_rank, Engine::sp);
    rr.ops[0].i = step;
    rr.ops[1].i = step;
    rr.ops[2].i = 0;
    k.add(Engine::sp, rr);
    st(step, step);
  }
  Inst sys = make_inst(Opcode::sysreg, Engine::sp);
  sys.ops[0].i = 9;
  sys.ops[1].i = int(SysReg::num_ranks);
  k.add(Engine::sp, sys);
  st(9, 3);
  MachineOptions mo;
  mo.ranks = 3;
  Machine m(k.m, mo);
  auto r = interp::run(m);
  ASSERT_EQ(r.status, RunStatus::ok) << r.report;
  for (int rank = 0; rank < 3; ++rank) {
    int32_t v[4];
    std::memcpy(v, m.hbm_tensor(rank, k.m.tensors[y]), 16);
    EXPECT_EQ(v[0], rank);
    EXPECT_EQ(v[1], (rank + 2) % 3);
    EXPECT_EQ(v[2], (rank + 1) % 3);
    EXPECT_EQ(v[3], 3);
  }
}

TEST(Collectives, RankOutsideTheGroupFaults) {
  std::vector<std::vector<float>> in;
  KB k = cc_kernel(Opcode::all_reduce, {2, C}, {{0, 1}}, int(AluOp::add));
  MachineOptions mo;
  mo.ranks = 3;
  Machine m(k.m, mo);
  auto r = interp::run(m);
  EXPECT_EQ(r.status, RunStatus::fault);
  EXPECT_NE(r.report.find("rank 2 is in no list of replica group 'g'"), std::string::npos)
      << r.report;
}

} // namespace
} // namespace nisa::test

namespace nisa::test {
namespace {

TEST(Collectives, PerRankInputFilesAndStackedOutputs) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("nisa_ranks_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  KB k = cc_kernel(Opcode::all_reduce, {2, C}, {{0, 1}}, int(AluOp::add));
  auto in = random_floats(2 * 2 * C, 41); // [2 ranks, 2, C]
  interp::write_npy((dir / "x.npy").string(), DType::fp32, {2, 2, C}, as_bytes(in).data());
  interp::RunConfig cfg;
  cfg.machine.ranks = 2;
  cfg.inputs = {{"x", (dir / "x.npy").string()}};
  cfg.outputs = {{"y", (dir / "y.npy").string()}};
  std::ostringstream out, err;
  ASSERT_EQ(interp::run_module(k.m, cfg, out, err), 0) << err.str();
  interp::NpyArray y = interp::read_npy((dir / "y.npy").string());
  EXPECT_EQ(y.shape, (std::vector<int64_t>{2, 2, C}));
  std::vector<float> got(4 * C);
  std::memcpy(got.data(), y.data.data(), got.size() * 4);
  for (int r = 0; r < 2; ++r)
    for (int j = 0; j < 2 * C; ++j) EXPECT_EQ(got[r * 2 * C + j], in[j] + in[2 * C + j]);
  fs::remove_all(dir);
}

} // namespace
} // namespace nisa::test
