// GpSimd: iota, affine_select (docs/machine.md "Vector and GpSimd instructions"), n_gather.
#include "harness.h"

namespace nisa::interp::test {
namespace {

AffinePattern pattern(std::initializer_list<std::array<int32_t, 2>> pairs) {
  AffinePattern p;
  for (const auto& d : pairs) p.d[p.n++] = d;
  return p;
}

TEST(Iota, WorkedExample2) {
  Bench b;
  Inst in = make(Opcode::iota, Engine::pool);
  const auto D = Bench::sb(DType::int32, 2, 6);
  set_ap(in, "dst", D);
  in.ops[ew::operand_index(in, "pattern")].pat = pattern({{3, 2}, {1, 3}});
  set_i(in, "offset", 5);
  set_i(in, "pmul", 100);
  b.run(in);
  EXPECT_EQ(b.get_int(D), (std::vector<int64_t>{5, 6, 7, 8, 9, 10, 105, 106, 107, 108, 109, 110}));
  // cascaded_max stage offsets: [[0,1],[0,R],[C,S]] gives (j mod S) * C.
  const auto D2 = Bench::sb(DType::fp32, 1, 12, 64);
  set_ap(in, "dst", D2);
  in.ops[ew::operand_index(in, "pattern")].pat = pattern({{0, 1}, {0, 3}, {7, 4}});
  set_i(in, "offset", 0);
  set_i(in, "pmul", 0);
  b.run(in);
  const auto got = b.get(D2);
  for (int j = 0; j < 12; ++j) EXPECT_EQ(got[j], float((j % 4) * 7));
}

TEST(Iota, CastsAndChecks) {
  Bench b;
  Inst in = make(Opcode::iota, Engine::pool);
  const auto D = Bench::sb(DType::int8, 128, 4);
  set_ap(in, "dst", D);
  in.ops[ew::operand_index(in, "pattern")].pat = pattern({{1, 4}});
  set_i(in, "pmul", 1);
  set_i(in, "offset", 10);
  b.run(in);
  const auto got = b.get_int(D);
  for (int p = 0; p < 128; ++p)
    for (int j = 0; j < 4; ++j) ASSERT_EQ(got[p * 4 + j], std::min(p + 10 + j, 127)); // saturates
  in.ops[ew::operand_index(in, "pattern")].pat = pattern({{1, 5}});
  EXPECT_FAULT(b.run(in), "pattern covers 5 elements but dst has 4 per partition");
  set_ap(in, "dst", Bench::ps(DType::int32, 128, 4));
  EXPECT_FAULT(b.run(in), "pool.iota operand `dst`: may not be in psum");
}

TEST(AffineSelect, WorkedExample3Identity) {
  Bench b;
  std::vector<float> ones(16, 1.0f);
  b.put(Bench::sb(DType::bf16, 4, 4), ones);
  Inst in = make(Opcode::affine_select, Engine::pool);
  set_ap(in, "dst", Bench::sb(DType::fp32, 4, 4, 64));
  set_ap(in, "on_true", Bench::sb(DType::bf16, 4, 4));
  in.ops[ew::operand_index(in, "pattern")].pat = pattern({{1, 4}});
  set_i(in, "pmul", -1);
  set_e(in, "cmp", AluOp::equal);
  set_f(in, "on_false", 0.0f);
  b.run(in);
  EXPECT_EQ(b.get(Bench::sb(DType::fp32, 4, 4, 64)),
            (std::vector<float>{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}));
}

TEST(AffineSelect, CausalMaskRandomData) {
  Bench b;
  const uint32_t P = 128, F = 200;
  const auto x = randoms(P * F, 80);
  const auto T = Bench::sb(DType::fp32, P, F);
  b.put(T, x);
  Inst in = make(Opcode::affine_select, Engine::pool);
  set_ap(in, "dst", T); // in place
  set_ap(in, "on_true", T);
  in.ops[ew::operand_index(in, "pattern")].pat = pattern({{-1, int32_t(F)}});
  set_i(in, "pmul", 1);
  set_i(in, "offset", 3);
  set_e(in, "cmp", AluOp::greater_equal);
  set_f(in, "on_false", -1e30f);
  b.run(in);
  const auto got = b.get(T);
  for (uint32_t p = 0; p < P; ++p)
    for (uint32_t j = 0; j < F; ++j)
      ASSERT_EQ(got[p * F + j], (3 + int(p) - int(j) >= 0) ? x[p * F + j] : -1e30f);
}

TEST(NGather, PerPartitionGatherAndBounds) {
  Bench b;
  const uint32_t P = 64, F = 300, J = 50;
  const auto x = randoms(P * F, 81);
  const auto idx = random_ints(P * J, 82, 0, F - 1);
  b.put(Bench::sb(DType::fp32, P, F), x);
  b.put_int(Bench::sb(DType::uint32, P, J, 2048), idx);
  Inst in = make(Opcode::n_gather, Engine::pool);
  set_ap(in, "dst", Bench::sb(DType::fp32, P, J, 4096));
  set_ap(in, "data", Bench::sb(DType::fp32, P, F));
  set_ap(in, "idx", Bench::sb(DType::uint32, P, J, 2048));
  b.run(in);
  const auto got = b.get(Bench::sb(DType::fp32, P, J, 4096));
  for (uint32_t p = 0; p < P; ++p)
    for (uint32_t j = 0; j < J; ++j) ASSERT_EQ(got[p * J + j], x[p * F + idx[p * J + j]]);
  auto bad = idx;
  bad[3 * J + 7] = F;
  b.put_int(Bench::sb(DType::uint32, P, J, 2048), bad);
  EXPECT_FAULT(b.run(in), "operand `idx`: [3, 7] = 300 is outside [0, 300)");
}

// The other paths: int32 indices into bf16 data, and a dst that overlaps data (the gather reads
// every index's source before it writes: in place, the first J columns).
TEST(NGather, Int32IndicesBf16AndInPlace) {
  const uint32_t P = 16, F = 100, J = 40;
  for (const DType t : {DType::bf16, DType::fp32}) {
    Bench b;
    const auto x = randoms(P * F, 83);
    const auto idx = random_ints(P * J, 84, 0, F - 1);
    b.put(Bench::sb(t, P, F), x);
    const auto xs = b.get(Bench::sb(t, P, F)); // as stored (bf16 rounded)
    b.put_int(Bench::sb(DType::int32, P, J, 2048), idx);
    Inst in = make(Opcode::n_gather, Engine::pool);
    set_ap(in, "dst", Bench::sb(t, P, J)); // the first J columns of data itself
    set_ap(in, "data", Bench::sb(t, P, F));
    set_ap(in, "idx", Bench::sb(DType::int32, P, J, 2048));
    b.run(in);
    const auto got = b.get(Bench::sb(t, P, F));
    for (uint32_t p = 0; p < P; ++p)
      for (uint32_t j = 0; j < J; ++j) ASSERT_EQ(got[p * F + j], xs[p * F + idx[p * J + j]]);
    auto bad = idx;
    bad[2 * J + 5] = -1;
    b.put_int(Bench::sb(DType::int32, P, J, 2048), bad);
    EXPECT_FAULT(b.run(in), "operand `idx`: [2, 5] = -1 is outside [0, 100)");
  }
}

} // namespace
} // namespace nisa::interp::test
