// Vector-engine (and shared copy/tensor_scalar/tensor_tensor/memset) semantics.
// Tolerances: fp32 results are exact (same single fp32 operation as the reference); results
// rounded into bf16/fp16/fp8/int are compared after the reference applies the same rounding
// (the conversions themselves are verified exhaustively in dtype_test.cpp).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

#include "harness.h"

namespace nisa::interp::test {
namespace {

using ew::find_index8_row;
using ew::match_replace8_row;
using ew::max8_row;

float round_to(DType t, float x) {
  uint8_t b[4];
  store_from_f32(t, b, x);
  return load_as_f32(t, b);
}
std::vector<float> rounded(DType t, std::vector<float> v) {
  for (auto& x : v) x = round_to(t, x);
  return v;
}

Inst tt(AluOp op, const AccessPattern& d, const AccessPattern& a, const AccessPattern& b,
        Engine e = Engine::dve) {
  Inst in = make(Opcode::tensor_tensor, e);
  set_ap(in, "dst", d);
  set_ap(in, "in0", a);
  set_ap(in, "in1", b);
  set_e(in, "op", op);
  return in;
}

// ---- tensor_tensor ---------------------------------------------------------------------------
TEST(TensorTensor, Fp32ArithmeticMatchesReference) {
  Bench b;
  const uint32_t P = 128, F = 300;
  const auto x = randoms(P * F, 1), y = randoms(P * F, 2);
  const auto A = Bench::sb(DType::fp32, P, F, 0), B = Bench::sb(DType::fp32, P, F, 4096),
             D = Bench::sb(DType::fp32, P, F, 8192);
  b.put(A, x);
  b.put(B, y);
  struct Case {
    AluOp op;
    float (*ref)(float, float);
  };
  const Case cases[] = {
      {AluOp::add, [](float a, float c) { return a + c; }},
      {AluOp::subtract, [](float a, float c) { return a - c; }},
      {AluOp::multiply, [](float a, float c) { return a * c; }},
      {AluOp::max, [](float a, float c) { return a > c ? a : c; }},
      {AluOp::min, [](float a, float c) { return a < c ? a : c; }},
      {AluOp::greater, [](float a, float c) { return float(a > c); }},
      {AluOp::less_equal, [](float a, float c) { return float(a <= c); }},
      {AluOp::logical_xor, [](float a, float c) { return float((a > 0) != (c > 0)); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(name_of(c.op)));
    if (c.op == AluOp::logical_xor) { // feed 0/1 values for the logical op
      b.put(A, rounded(DType::int32, randoms(P * F, 5, 0.0f, 1.0f)));
      b.put(B, rounded(DType::int32, randoms(P * F, 6, 0.0f, 1.0f)));
    }
    b.run(tt(c.op, D, A, B));
    const auto got = b.get(D), xa = b.get(A), yb = b.get(B);
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], c.ref(xa[i], yb[i])) << i;
  }
}

TEST(TensorTensor, Bf16InOutRoundsOnce) {
  Bench b;
  const uint32_t P = 64, F = 513;
  const auto x = rounded(DType::bf16, randoms(P * F, 3)),
             y = rounded(DType::bf16, randoms(P * F, 4));
  const auto A = Bench::sb(DType::bf16, P, F, 0), B = Bench::sb(DType::bf16, P, F, 2048),
             D = Bench::sb(DType::bf16, P, F, 4096);
  b.put(A, x);
  b.put(B, y);
  b.run(tt(AluOp::add, D, A, B));
  const auto got = b.get(D);
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], round_to(DType::bf16, x[i] + y[i]));
}

TEST(TensorTensor, StridedAndBroadcastOperands) {
  Bench b;
  // in1 repeats each of 4 values 3 times via a 0-stride inner dim (nkilib's repeat-interleave).
  const auto A = Bench::sb(DType::fp32, 2, 12, 0);
  AccessPattern B = Bench::sb(DType::fp32, 2, 4, 256);
  B.ndims = 2;
  B.dims[0] = {1, 4};
  B.dims[1] = {0, 3};
  const auto x = randoms(24, 8);
  const auto y = randoms(8, 9);
  b.put(A, x);
  b.put(Bench::sb(DType::fp32, 2, 4, 256), y);
  const auto D = Bench::sb(DType::fp16, 2, 12, 512);
  b.run(tt(AluOp::multiply, D, A, B));
  const auto got = b.get(D);
  for (int p = 0; p < 2; ++p)
    for (int j = 0; j < 12; ++j)
      EXPECT_EQ(got[p * 12 + j], round_to(DType::fp16, x[p * 12 + j] * y[p * 4 + j / 3]));
}

TEST(TensorTensor, PoolInt32IsExactDveGoesThroughFp32) {
  Bench b;
  const auto A = Bench::sb(DType::int32, 4, 16, 0), B = Bench::sb(DType::int32, 4, 16, 64),
             D = Bench::sb(DType::int32, 4, 16, 128);
  const auto x = random_ints(64, 10, 1 << 25, 1 << 28), y = random_ints(64, 11, -1000, 1000);
  b.put_int(A, x);
  b.put_int(B, y);
  b.run(tt(AluOp::add, D, A, B, Engine::pool));
  auto got = b.get_int(D);
  for (size_t i = 0; i < 64; ++i) EXPECT_EQ(got[i], x[i] + y[i]);
  b.run(tt(AluOp::add, D, A, B, Engine::dve));
  got = b.get_int(D);
  int inexact = 0;
  for (size_t i = 0; i < 64; ++i) {
    EXPECT_EQ(got[i], int64_t(float(float(x[i]) + float(y[i]))));
    inexact += got[i] != x[i] + y[i];
  }
  EXPECT_GT(inexact, 0);
}

TEST(TensorTensor, BitvecOnRawIntegers) {
  Bench b;
  const auto A = Bench::sb(DType::uint16, 2, 8, 0), B = Bench::sb(DType::uint16, 2, 8, 64),
             D = Bench::sb(DType::uint16, 2, 8, 128);
  const auto x = random_ints(16, 12, 0, 0xffff), y = random_ints(16, 13, 0, 15);
  b.put_int(A, x);
  b.put_int(B, y);
  b.run(tt(AluOp::bitwise_xor, D, A, B));
  auto got = b.get_int(D);
  for (size_t i = 0; i < 16; ++i) EXPECT_EQ(got[i], x[i] ^ y[i]);
  b.run(tt(AluOp::right_shift, D, A, B));
  got = b.get_int(D);
  for (size_t i = 0; i < 16; ++i) EXPECT_EQ(got[i], x[i] >> y[i]);
  // Logical (not arithmetic) right shift of a negative int32.
  const auto I = Bench::sb(DType::int32, 1, 1, 0), S = Bench::sb(DType::int32, 1, 1, 64);
  b.put_int(I, {-8});
  b.put_int(S, {1});
  b.run(tt(AluOp::right_shift, I, I, S));
  EXPECT_EQ(b.get_int(I)[0], 0x7ffffffc);
  EXPECT_FAULT(b.run(tt(AluOp::bitwise_and, Bench::sb(DType::fp32, 1, 4),
                        Bench::sb(DType::fp32, 1, 4), Bench::sb(DType::fp32, 1, 4))),
               "bitwise_and needs integer operands");
}

TEST(TensorTensor, OperandRules) {
  Bench b;
  const auto s = Bench::sb(DType::fp32, 4, 8), p = Bench::ps(DType::fp32, 4, 8);
  EXPECT_FAULT(b.run(tt(AluOp::add, s, p, p)), "`in0` and `in1` may not both be in psum");
  EXPECT_FAULT(b.run(tt(AluOp::add, p, s, s, Engine::pool)),
               "pool.tensor_tensor operand `dst`: pool (GpSimd) cannot access psum");
  EXPECT_FAULT(b.run(tt(AluOp::add, Bench::sb(DType::fp32, 4, 9), s, s)),
               "dst is 4 partitions x 9 elements but in0 is 4 x 8");
  EXPECT_FAULT(b.run(tt(AluOp::abs, s, s, s)), "abs is not a binary operator");
}

TEST(TensorTensor, AbsMaxMinOnTrn3TieReturnsSecond) {
  Bench b(Target::trn3);
  const auto A = Bench::sb(DType::fp32, 1, 4), B = Bench::sb(DType::fp32, 1, 4, 64),
             D = Bench::sb(DType::fp32, 1, 4, 128);
  b.put(A, {-3, 2, 2, -0.5f});
  b.put(B, {2, -3, -2, 0.25f});
  b.run(tt(AluOp::abs_max, D, A, B));
  EXPECT_EQ(b.get(D), (std::vector<float>{-3, -3, -2, -0.5f}));
  b.run(tt(AluOp::abs_min, D, A, B));
  EXPECT_EQ(b.get(D), (std::vector<float>{2, 2, -2, 0.25f}));
  Bench b2;
  EXPECT_FAULT(b2.run(tt(AluOp::abs_max, D, A, B)), "abs_max needs trn3");
  EXPECT_FAULT(b2.run(tt(AluOp::power, D, A, B)), "power runs on pool only");
}

TEST(TensorTensor, NanPropagatesThroughMaxAndPoisonStaysVisible) {
  Bench b;
  const auto A = Bench::sb(DType::fp32, 1, 3, 0), B = Bench::sb(DType::fp32, 1, 3, 64);
  b.put(A, {NAN, 1.0f, INFINITY});
  b.put(B, {2.0f, NAN, -INFINITY});
  b.run(tt(AluOp::max, A, A, B));
  const auto got = b.get(A);
  EXPECT_TRUE(std::isnan(got[0]));
  EXPECT_TRUE(std::isnan(got[1]));
  EXPECT_EQ(got[2], INFINITY);
}

TEST(TensorTensor, EdgeSizesFreeOneAndWholePartition) {
  Bench b(Target::trn2, 212984);
  // Free size 1 on all 128 partitions.
  const auto x = randoms(128, 90), y = randoms(128, 91);
  b.put(Bench::sb(DType::fp32, 128, 1), x);
  b.put(Bench::sb(DType::fp32, 128, 1, 4), y);
  b.run(tt(AluOp::subtract, Bench::sb(DType::fp32, 128, 1, 8), Bench::sb(DType::fp32, 128, 1),
           Bench::sb(DType::fp32, 128, 1, 4)));
  const auto got = b.get(Bench::sb(DType::fp32, 128, 1, 8));
  for (int p = 0; p < 128; ++p) EXPECT_EQ(got[p], x[p] - y[p]);
  // The whole usable partition (212984 bytes = 53246 fp32), in place: dst = in0 = in1.
  const uint32_t F = 212984 / 4;
  const auto W = Bench::sb(DType::fp32, 128, F);
  const auto w = randoms(128 * F, 92);
  b.put(W, w);
  b.run(tt(AluOp::add, W, W, W));
  const auto gw = b.get(W);
  for (size_t i = 0; i < gw.size(); ++i) ASSERT_EQ(gw[i], w[i] + w[i]);
  const auto W1 = Bench::sb(DType::fp32, 128, F + 1);
  EXPECT_FAULT(b.run(tt(AluOp::add, W1, W1, W1)),
               "sbuf write of bytes 0..212987 is outside [0, 212984) of a partition");
}

// ---- aliasing ---------------------------------------------------------------------------
TEST(Aliasing, OverlappingShiftedCopyReadsSourceFirst) {
  Bench b;
  const auto x = randoms(40, 14);
  b.put(Bench::sb(DType::fp32, 4, 10), x);
  Inst in = make(Opcode::copy, Engine::dve);
  set_ap(in, "dst", Bench::sb(DType::fp32, 4, 9, 4)); // columns 1..9 <- columns 0..8
  set_ap(in, "src", Bench::sb(DType::fp32, 4, 9, 0));
  b.run(in);
  const auto got = b.get(Bench::sb(DType::fp32, 4, 10));
  for (int p = 0; p < 4; ++p) {
    EXPECT_EQ(got[p * 10], x[p * 10]);
    for (int j = 1; j < 10; ++j) EXPECT_EQ(got[p * 10 + j], x[p * 10 + j - 1]);
  }
}

// ---- copy ------------------------------------------------------------------------------------
TEST(Copy, BitExactWhenDtypesMatchElseRounded) {
  Bench b;
  const auto S = Bench::sb(DType::fp32, 128, 5, 0), D = Bench::sb(DType::fp32, 128, 5, 64);
  auto x = randoms(640, 15, -300.0f, 300.0f);
  x[3] = std::bit_cast<float>(0x7fa00001u); // NaN payload
  x[7] = -0.0f;
  b.put(S, x);
  Inst in = make(Opcode::copy, Engine::pool);
  set_ap(in, "dst", D);
  set_ap(in, "src", S);
  b.run(in);
  const auto got = b.get_int(D), want = b.get_int(S);
  EXPECT_EQ(got, want);
  for (DType t : {DType::bf16, DType::fp8e4m3, DType::int8, DType::uint16, DType::int32}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const auto Dt = Bench::tile(MemSpace::sbuf, t, 0, 128, 128, 5);
    set_ap(in, "dst", Dt);
    in.engine = Engine::dve;
    b.run(in);
    const auto g = b.get(Dt);
    for (size_t i = 0; i < 640; ++i) {
      if (i == 3) continue; // the NaN
      ASSERT_EQ(g[i], round_to(t, x[i])) << i;
    }
  }
}

TEST(Copy, ActOnTrn1GoesThroughFp32) {
  Bench b(Target::trn1);
  const auto S = Bench::sb(DType::int32, 1, 1, 0), D = Bench::sb(DType::int32, 1, 1, 64);
  b.put_int(S, {16777217});
  Inst in = make(Opcode::copy, Engine::act);
  set_ap(in, "dst", D);
  set_ap(in, "src", S);
  b.run(in);
  EXPECT_EQ(b.get_int(D)[0], 16777216);
  in.engine = Engine::dve;
  b.run(in);
  EXPECT_EQ(b.get_int(D)[0], 16777217);
}

// ---- tensor_scalar -----------------------------------------------------------------------------
Inst ts(const AccessPattern& d, const AccessPattern& s, AluOp op0, float a0, bool rev0,
        AluOp op1 = AluOp::bypass, float a1 = 0.0f, bool rev1 = false, Engine e = Engine::dve) {
  Inst in = make(Opcode::tensor_scalar, e);
  set_ap(in, "dst", d);
  set_ap(in, "src", s);
  set_e(in, "op0", op0);
  set_f(in, "operand0", a0);
  set_i(in, "rev0", rev0);
  set_e(in, "op1", op1);
  set_f(in, "operand1", a1);
  set_i(in, "rev1", rev1);
  return in;
}

TEST(TensorScalar, WorkedExample8) {
  Bench b;
  const auto S = Bench::sb(DType::fp32, 1, 2), D = Bench::sb(DType::fp32, 1, 2, 64);
  b.put(S, {2, 5});
  b.run(ts(D, S, AluOp::subtract, 10, false));
  EXPECT_EQ(b.get(D), (std::vector<float>{-8, -5}));
  b.run(ts(D, S, AluOp::subtract, 10, true));
  EXPECT_EQ(b.get(D), (std::vector<float>{8, 5}));
  b.run(ts(D, S, AluOp::subtract, 10, true, AluOp::multiply, 2));
  EXPECT_EQ(b.get(D), (std::vector<float>{16, 10}));
  b.run(ts(D, S, AluOp::subtract, 10, false, AluOp::subtract, 1, true)); // 1 - (x - 10)
  EXPECT_EQ(b.get(D), (std::vector<float>{9, 6}));
}

TEST(TensorScalar, PerPartitionOperandsAndUnary) {
  Bench b;
  const uint32_t P = 128, F = 33;
  const auto x = randoms(P * F, 16, 0.1f, 9.0f), s0 = randoms(P, 17), s1 = randoms(P, 18);
  const auto S = Bench::sb(DType::fp32, P, F), D = Bench::sb(DType::bf16, P, F, 256);
  const auto O0 = Bench::sb(DType::fp32, P, 1, 1024), O1 = Bench::ps(DType::fp32, P, 1);
  b.put(S, x);
  b.put(O0, s0);
  b.put(O1, s1);
  Inst in = ts(D, S, AluOp::multiply, 0, false, AluOp::add);
  set_ap(in, "operand0", O0);
  set_ap(in, "operand1", O1);
  b.run(in);
  auto got = b.get(D);
  for (uint32_t p = 0; p < P; ++p)
    for (uint32_t j = 0; j < F; ++j)
      ASSERT_EQ(got[p * F + j], round_to(DType::bf16, x[p * F + j] * s0[p] + s1[p]));
  b.run(ts(D, S, AluOp::rsqrt, 0, false));
  got = b.get(D);
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(got[i], round_to(DType::bf16, 1.0f / std::sqrt(x[i])));
}

TEST(TensorScalar, BitvecPairsAndActRestrictions) {
  Bench b;
  const auto S = Bench::sb(DType::int32, 2, 4), D = Bench::sb(DType::int32, 2, 4, 64);
  const auto x = random_ints(8, 19, -100000, 100000);
  b.put_int(S, x);
  b.run(ts(D, S, AluOp::right_shift, 16, false, AluOp::bitwise_and, 255));
  const auto got = b.get_int(D);
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(got[i], ((uint32_t(x[i]) >> 16) & 255));
  EXPECT_FAULT(b.run(ts(D, S, AluOp::right_shift, 1, false, AluOp::add, 1)),
               "must both be bitvec or both arithmetic");
  const auto F = Bench::sb(DType::fp32, 2, 4, 128);
  EXPECT_FAULT(b.run(ts(F, F, AluOp::subtract, 1, false, AluOp::bypass, 0, false, Engine::act)),
               "act runs tensor_scalar only as (multiply, add)");
  Bench b3(Target::trn3);
  EXPECT_NO_THROW(
      b3.run(ts(F, F, AluOp::subtract, 1, false, AluOp::bypass, 0, false, Engine::act)));
}

// ---- scalar_tensor_tensor --------------------------------------------------------------------
TEST(ScalarTensorTensor, MatchesReferenceWithReversalsAndInPlace) {
  Bench b;
  const uint32_t P = 32, F = 70;
  const auto x = randoms(P * F, 20), y = randoms(P * F, 21), s = randoms(P, 22);
  const auto A = Bench::sb(DType::fp32, P, F), B = Bench::sb(DType::fp32, P, F, 512),
             O = Bench::sb(DType::fp32, P, 1, 1024);
  for (bool rev0 : {false, true})
    for (bool rev1 : {false, true}) {
      b.put(A, x);
      b.put(B, y);
      b.put(O, s);
      Inst in = make(Opcode::scalar_tensor_tensor, Engine::dve);
      set_ap(in, "dst", B); // in place on in1: in1 must be read before the first pass writes
      set_ap(in, "in0", A);
      set_ap(in, "in1", B);
      set_e(in, "op0", AluOp::subtract);
      set_ap(in, "operand0", O);
      set_e(in, "op1", AluOp::subtract);
      set_i(in, "rev0", rev0);
      set_i(in, "rev1", rev1);
      b.run(in);
      const auto got = b.get(B);
      for (uint32_t p = 0; p < P; ++p)
        for (uint32_t j = 0; j < F; ++j) {
          const float xv = x[p * F + j], yv = y[p * F + j];
          const float t = rev0 ? s[p] - xv : xv - s[p];
          ASSERT_EQ(got[p * F + j], rev1 ? yv - t : t - yv);
        }
    }
}

// ---- tensor_reduce ---------------------------------------------------------------------------
TEST(TensorReduce, TrailingAxesAndNegate) {
  Bench b;
  const uint32_t P = 128, A = 6, B = 5, C = 7;
  const auto x = randoms(P * A * B * C, 23);
  AccessPattern S = Bench::sb(DType::fp32, P, A * B * C);
  b.put(S, x);
  S.ndims = 3;
  S.dims[0] = {int32_t(B * C), A};
  S.dims[1] = {int32_t(C), B};
  S.dims[2] = {1, C};
  for (int axes : {1, 2, 3}) {
    const uint32_t inner = axes == 1 ? C : axes == 2 ? B * C : A * B * C;
    const uint32_t outer = A * B * C / inner;
    const auto D = Bench::sb(DType::fp32, P, outer, 8192);
    for (AluOp op : {AluOp::add, AluOp::max}) {
      b.run(tensor_reduce(D, S, op, op == AluOp::add, axes));
      const auto got = b.get(D);
      for (uint32_t p = 0; p < P; ++p)
        for (uint32_t o = 0; o < outer; ++o) {
          const float* r = x.data() + (p * outer + o) * inner;
          float acc = r[0];
          for (uint32_t k = 1; k < inner; ++k)
            acc = op == AluOp::add ? acc + r[k] : std::max(acc, r[k]);
          ASSERT_EQ(got[p * outer + o], op == AluOp::add ? -acc : acc);
        }
    }
  }
  Inst in = make(Opcode::tensor_reduce, Engine::dve);
  set_ap(in, "dst", Bench::sb(DType::fp32, P, 5, 8192));
  set_ap(in, "src", S);
  set_e(in, "op", AluOp::add);
  set_i(in, "axes", 4);
  EXPECT_FAULT(b.run(in), "4 is outside 1..3");
  set_i(in, "axes", 1);
  EXPECT_FAULT(b.run(in), "dst must be 128 partitions x 30 elements");
}

TEST(TensorReduce, BitwiseOrOnInts) {
  Bench b;
  const auto x = random_ints(3 * 9, 24, 0, 1 << 20);
  b.put_int(Bench::sb(DType::int32, 3, 9), x);
  Inst in = make(Opcode::tensor_reduce, Engine::dve);
  set_ap(in, "dst", Bench::sb(DType::int32, 3, 1, 64));
  set_ap(in, "src", Bench::sb(DType::int32, 3, 9));
  set_e(in, "op", AluOp::bitwise_or);
  b.run(in);
  const auto got = b.get_int(Bench::sb(DType::int32, 3, 1, 64));
  for (int p = 0; p < 3; ++p) {
    int64_t acc = 0;
    for (int j = 0; j < 9; ++j) acc |= x[p * 9 + j];
    EXPECT_EQ(got[p], acc);
  }
}

// ---- copy_predicated -------------------------------------------------------------------------
TEST(CopyPredicated, CopiesWherePredicateHolds) {
  Bench b;
  const uint32_t P = 16, F = 40;
  const auto src = randoms(P * F, 25), old = randoms(P * F, 26);
  const auto pred = random_ints(P * F, 27, 0, 3);
  const auto S = Bench::sb(DType::bf16, P, F), D = Bench::sb(DType::bf16, P, F, 256),
             Q = Bench::sb(DType::uint8, P, F, 512);
  b.put(S, src);
  b.put_int(Q, pred);
  for (bool rev : {false, true}) {
    b.put(D, old);
    b.run(copy_predicated(D, S, Q, rev));
    const auto got = b.get(D);
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_EQ(got[i], round_to(DType::bf16, ((pred[i] != 0) != rev) ? src[i] : old[i]));
  }
}

// fp32 rows (the top-K key maps): the predicate is its element's raw bits (-0.0 and NaN hold,
// +0.0 does not), with dst apart from both sources (selected in place) and dst the very tile
// of src or of pred (the sources read whole first).
TEST(CopyPredicated, Fp32PredicateIsItsRawBits) {
  const uint32_t P = 8, F = 37;
  const auto src = randoms(P * F, 28), old = randoms(P * F, 29);
  std::vector<float> pred(P * F);
  const float kinds[] = {0.0f, -0.0f, 0.3f, std::nanf(""), 1.0f, 0.0f};
  for (size_t i = 0; i < pred.size(); ++i) pred[i] = kinds[(i * 7 + i / 5) % 6];
  const auto S = Bench::sb(DType::fp32, P, F), D = Bench::sb(DType::fp32, P, F, 512),
             Q = Bench::sb(DType::fp32, P, F, 1024);
  auto bits = [](float x) { return std::bit_cast<uint32_t>(x); };
  for (int alias = 0; alias < 3; ++alias)
    for (bool rev : {false, true}) {
      Bench b;
      b.put(S, src);
      b.put(Q, pred);
      const AccessPattern dst = alias == 0 ? D : alias == 1 ? S : Q;
      if (alias == 0) b.put(D, old);
      const std::vector<float> before = b.get(dst);
      b.run(copy_predicated(dst, S, Q, rev));
      const auto got = b.get(dst);
      for (size_t i = 0; i < got.size(); ++i) {
        const float want = ((bits(pred[i]) != 0) != rev) ? src[i] : before[i];
        ASSERT_EQ(bits(got[i]), bits(want)) << alias << " " << rev << " " << i;
      }
    }
}

// ---- scan ------------------------------------------------------------------------------------
TEST(Scan, WorkedExample1) {
  struct Case {
    AluOp op1;
    bool rev1;
    std::vector<float> want;
  };
  for (const Case& c :
       {Case{AluOp::add, false, {13, 14, 18, 19}}, Case{AluOp::subtract, false, {7, 6, 2, 1}},
        Case{AluOp::subtract, true, {-7, 8, -4, 5}}}) {
    Bench b;
    b.put(Bench::sb(DType::fp32, 1, 4), {1, 1, 1, 1});
    b.put(Bench::sb(DType::fp32, 1, 4, 64), {3, 1, 4, 1});
    Inst in = make(Opcode::scan, Engine::dve);
    set_ap(in, "dst", Bench::sb(DType::fp32, 1, 4, 128));
    set_ap(in, "in0", Bench::sb(DType::fp32, 1, 4));
    set_ap(in, "in1", Bench::sb(DType::fp32, 1, 4, 64));
    set_f(in, "init", 10);
    set_e(in, "op1", c.op1);
    set_i(in, "rev1", c.rev1);
    b.run(in);
    EXPECT_EQ(b.get(Bench::sb(DType::fp32, 1, 4, 128)), c.want);
  }
}

TEST(Scan, CumsumWithPerPartitionInitKeepsFp32State) {
  Bench b;
  const uint32_t P = 128, F = 2048;
  const auto x = randoms(P * F, 28), init = randoms(P, 29);
  std::vector<float> ones(P * F);
  for (size_t i = 0; i < ones.size(); ++i) ones[i] = 1.0f;
  const auto X = Bench::sb(DType::bf16, P, F), Ones = Bench::sb(DType::fp32, P, F, 4096),
             D = Bench::sb(DType::bf16, P, F, 12288), I = Bench::sb(DType::fp32, P, 1, 16384);
  b.put(X, x);
  b.put(Ones, ones);
  b.put(I, init);
  Inst in = make(Opcode::scan, Engine::dve);
  set_ap(in, "dst", D);
  set_ap(in, "in0", Ones);
  set_ap(in, "in1", X);
  set_ap(in, "init", I);
  b.run(in);
  const auto got = b.get(D), xb = b.get(X);
  for (uint32_t p = 0; p < P; ++p) {
    float r = init[p]; // the state is fp32; only the stored values are bf16
    for (uint32_t j = 0; j < F; ++j) {
      r = 1.0f * r + xb[p * F + j];
      ASSERT_EQ(got[p * F + j], round_to(DType::bf16, r)) << p << "," << j;
    }
  }
}

// ---- reciprocal -----------------------------------------------------------------------------
TEST(Reciprocal, Fp32Division) {
  Bench b;
  auto x = randoms(64, 30);
  x[0] = 0.0f;
  x[1] = -0.0f;
  b.put(Bench::sb(DType::fp32, 8, 8), x);
  Inst in = make(Opcode::reciprocal, Engine::dve);
  set_ap(in, "dst", Bench::sb(DType::fp32, 8, 8));
  set_ap(in, "src", Bench::sb(DType::fp32, 8, 8));
  b.run(in);
  const auto got = b.get(Bench::sb(DType::fp32, 8, 8));
  EXPECT_EQ(got[0], INFINITY);
  EXPECT_EQ(got[1], -INFINITY);
  for (size_t i = 2; i < 64; ++i) EXPECT_EQ(got[i], 1.0f / x[i]);
}

// ---- top-8 family ----------------------------------------------------------------------------
const std::vector<float> kEx7 = {3, 9, 1, 9, 5, 7, 2, 8, 6, 0};

TEST(Max8, WorkedExample7AndRowFunction) {
  float out[8];
  max8_row(kEx7.data(), kEx7.size(), out);
  EXPECT_EQ(std::vector<float>(out, out + 8), (std::vector<float>{9, 9, 8, 7, 6, 5, 3, 2}));
  const float nan_row[9] = {1, NAN, 3, 2, 5, 4, 6, 7, 8};
  max8_row(nan_row, 9, out);
  EXPECT_TRUE(std::isnan(out[0])); // NaN ranks above everything
  EXPECT_EQ(out[1], 8.0f);
}

TEST(Max8, RandomRowsAgainstSortAtMinAndMaxSizes) {
  for (uint32_t F : {8u, 1000u, 16384u}) {
    Bench b;
    const uint32_t P = 128;
    auto x = randoms(P * F, 31 + F);
    for (size_t i = 0; i < x.size(); i += 7) x[i] = std::round(x[i]); // plenty of ties
    b.put(Bench::sb(DType::fp32, P, F), x);
    Inst in = make(Opcode::max8, Engine::dve);
    set_ap(in, "dst", Bench::sb(DType::bf16, P, 8, 65536 + 4096));
    set_ap(in, "src", Bench::sb(DType::fp32, P, F));
    b.run(in);
    const auto got = b.get(Bench::sb(DType::bf16, P, 8, 65536 + 4096));
    for (uint32_t p = 0; p < P; ++p) {
      std::vector<float> r(x.begin() + p * F, x.begin() + (p + 1) * F);
      std::partial_sort(r.begin(), r.begin() + 8, r.end(), std::greater<>());
      for (int k = 0; k < 8; ++k) ASSERT_EQ(got[p * 8 + k], round_to(DType::bf16, r[k]));
    }
  }
  Bench b;
  Inst in = make(Opcode::max8, Engine::dve);
  set_ap(in, "dst", Bench::sb(DType::fp32, 1, 8, 0));
  set_ap(in, "src", Bench::sb(DType::fp32, 1, 7, 64));
  EXPECT_FAULT(b.run(in), "has 7 elements per partition; the search instructions take 8..16384");
  set_ap(in, "src", Bench::sb(DType::fp32, 1, 16385, 64));
  EXPECT_FAULT(b.run(in), "has 16385 elements");
}

TEST(FindIndex8, WorkedExample7DuplicatesAndSentinels) {
  int64_t idx[8];
  const float vals[8] = {9, 9, 8, 7, 6, 5, 3, 2};
  find_index8_row(kEx7.data(), kEx7.size(), vals, idx);
  EXPECT_EQ(std::vector<int64_t>(idx, idx + 8), (std::vector<int64_t>{1, 3, 7, 5, 8, 4, 0, 6}));
  const float more[8] = {9, 9, 9, 4, 0, 0, 3, 3};
  find_index8_row(kEx7.data(), kEx7.size(), more, idx);
  EXPECT_EQ(std::vector<int64_t>(idx, idx + 8), (std::vector<int64_t>{1, 3, -1, -1, 9, -1, 0, -1}));

  Bench b;
  b.put(Bench::sb(DType::bf16, 2, 10), [] {
    std::vector<float> v = kEx7;
    v.insert(v.end(), kEx7.rbegin(), kEx7.rend());
    return v;
  }());
  b.put(Bench::sb(DType::fp32, 2, 8, 64), {9, 9, 8, 7, 6, 5, 3, 42, 9, 9, 8, 7, 6, 5, 3, 42});
  for (DType t : {DType::uint32, DType::uint16}) {
    Inst in = make(Opcode::find_index8, Engine::dve);
    const auto D = Bench::tile(MemSpace::psum, t, 0, 2, 0, 8);
    set_ap(in, "dst", D);
    set_ap(in, "data", Bench::sb(DType::bf16, 2, 10));
    set_ap(in, "vals", Bench::sb(DType::fp32, 2, 8, 64));
    b.run(in);
    const int64_t none = t == DType::uint32 ? 0xffffffffLL : 0xffff;
    EXPECT_EQ(b.get_int(D),
              (std::vector<int64_t>{1, 3, 7, 5, 8, 4, 0, none, 6, 8, 2, 4, 1, 5, 9, none}));
  }
}

TEST(MatchReplace8, WorkedExamplesInPlaceWithIndex) {
  int64_t idx[8];
  const std::vector<float> d2 = {1, 2, 3, 4, 8, 8, 8, 8, 8, 8, 8};
  const float v2[8] = {3, 8, 8, 8, 8, 8, 8, 8};
  match_replace8_row(d2.data(), d2.size(), v2, idx);
  EXPECT_EQ(std::vector<int64_t>(idx, idx + 8), (std::vector<int64_t>{2, 10, 9, 8, 7, 6, 5, 4}));

  Bench b;
  const auto D = Bench::sb(DType::fp32, 1, 10), V = Bench::sb(DType::fp32, 1, 8, 64),
             I = Bench::sb(DType::uint32, 1, 8, 128);
  b.put(D, kEx7);
  b.put(V, {9, 9, 8, 7, 6, 5, 3, 2});
  Inst in = make(Opcode::match_replace8, Engine::dve);
  set_ap(in, "dst", D);
  set_ap(in, "data", D);
  set_ap(in, "vals", V);
  set_ap(in, "idx", I);
  b.run(in);
  EXPECT_EQ(b.get_int(I), (std::vector<int64_t>{3, 1, 7, 5, 8, 4, 0, 6}));
  const float ninf = -INFINITY;
  EXPECT_EQ(b.get(D), (std::vector<float>{ninf, ninf, 1, ninf, ninf, ninf, ninf, ninf, ninf, 0}));
  Bench b1(Target::trn1);
  EXPECT_FAULT(b1.run(in), "operand `idx`: needs trn2 or later");
}

TEST(MatchReplace8, RandomRowsIntoOtherDtype) {
  Bench b;
  const uint32_t P = 128, F = 500;
  auto x = rounded(DType::bf16, randoms(P * F, 40));
  for (size_t i = 0; i < x.size(); i += 3) x[i] = std::round(x[i]);
  b.put(Bench::sb(DType::bf16, P, F), x);
  // vals = the row's top 8 (as a topk step does).
  std::vector<float> vals;
  for (uint32_t p = 0; p < P; ++p) {
    std::vector<float> r(x.begin() + p * F, x.begin() + (p + 1) * F);
    std::partial_sort(r.begin(), r.begin() + 8, r.end(), std::greater<>());
    vals.insert(vals.end(), r.begin(), r.begin() + 8);
  }
  b.put(Bench::sb(DType::bf16, P, 8, 2048), vals);
  Inst in = make(Opcode::match_replace8, Engine::dve);
  set_ap(in, "dst", Bench::sb(DType::fp32, P, F, 4096));
  set_ap(in, "data", Bench::sb(DType::bf16, P, F));
  set_ap(in, "vals", Bench::sb(DType::bf16, P, 8, 2048));
  set_f(in, "imm", -1000.0f);
  b.run(in);
  const auto got = b.get(Bench::sb(DType::fp32, P, F, 4096));
  for (uint32_t p = 0; p < P; ++p) {
    std::vector<float> want(x.begin() + p * F, x.begin() + (p + 1) * F);
    std::vector<bool> used(F, false);
    for (int s = 7; s >= 0; --s) // reference: reverse slot order, first unused match
      for (uint32_t k = 0; k < F; ++k)
        if (!used[k] && want[k] == vals[p * 8 + s]) {
          used[k] = true;
          break;
        }
    for (uint32_t k = 0; k < F; ++k) ASSERT_EQ(got[p * F + k], used[k] ? -1000.0f : want[k]);
  }
}

// ---- transpose, memset, stream_shuffle -------------------------------------------------------
TEST(DveTranspose, BlockAndQuadrants) {
  Bench b;
  const auto x = randoms(128 * 32, 41);
  b.put(Bench::sb(DType::fp32, 128, 32), x);
  Inst in = make(Opcode::dve_transpose, Engine::dve);
  set_ap(in, "dst", Bench::ps(DType::fp32, 128, 32));
  set_ap(in, "src", Bench::sb(DType::fp32, 128, 32));
  b.run(in);
  auto got = b.get(Bench::ps(DType::fp32, 128, 32));
  for (int q = 0; q < 4; ++q)
    for (int i = 0; i < 32; ++i)
      for (int j = 0; j < 32; ++j) ASSERT_EQ(got[(q * 32 + i) * 32 + j], x[(q * 32 + j) * 32 + i]);
  set_ap(in, "dst", Bench::sb(DType::fp32, 5, 20, 4096, 32));
  set_ap(in, "src", Bench::sb(DType::fp32, 20, 5));
  b.run(in);
  got = b.get(Bench::sb(DType::fp32, 5, 20, 4096, 32));
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 20; ++j) ASSERT_EQ(got[i * 20 + j], x[j * 32 + i]);
  set_ap(in, "src", Bench::sb(DType::fp32, 64, 5));
  EXPECT_FAULT(b.run(in), "dve transpose takes at most 32 x 32");
}

TEST(Memset, ConvertsOnceToTheDtype) {
  Bench b;
  struct Case {
    DType t;
    float v, want;
  };
  for (const Case& c : {Case{DType::fp32, 0.1f, 0.1f}, Case{DType::fp8e4m3, 500.0f, 240.0f},
                        Case{DType::int8, 2.5f, 2.0f}, Case{DType::bf16, -9948.0f, -9920.0f}}) {
    const auto D = Bench::tile(MemSpace::sbuf, c.t, 0, 128, 64, 300);
    Inst in = make(Opcode::memset, Engine::pool);
    set_ap(in, "dst", D);
    set_f(in, "value", c.v);
    b.run(in);
    for (float g : b.get(D)) ASSERT_EQ(g, c.want);
  }
}

TEST(Memset, LongUnalignedRowsFillExactlyTheirBytes) {
  // Rows longer than the 16 KiB fill block, starting off any 64-byte boundary: every byte of
  // each row holds the pattern, every byte around them keeps what it held.
  struct Case {
    DType t;
    float v;
    std::vector<uint8_t> pattern; // the value's bytes in the dtype, little-endian
    uint64_t off;
    uint32_t free;
  };
  for (const Case& c : {Case{DType::fp32, 0.1f, {0xCD, 0xCC, 0xCC, 0x3D}, 12, 5003},
                        Case{DType::bf16, -9948.0f, {0x1B, 0xC6}, 6, 11001},
                        Case{DType::int8, 2.5f, {0x02}, 3, 20011}}) {
    Bench b;
    const uint64_t pb = b.st.sbuf_part_bytes, stride = b.st.sbuf_stride; // (host pad between)
    std::mt19937 rng(uint32_t(c.free));
    std::vector<uint8_t> before(kNumPartitions * stride);
    for (auto& x : before) x = uint8_t(rng());
    std::memcpy(b.st.sbuf, before.data(), before.size());
    Inst in = make(Opcode::memset, Engine::dve);
    set_ap(in, "dst", Bench::tile(MemSpace::sbuf, c.t, 32, 32, c.off, c.free));
    set_f(in, "value", c.v);
    b.run(in);
    const uint64_t eb = c.pattern.size(), end = c.off + c.free * eb;
    for (uint64_t p = 0; p < kNumPartitions; ++p)
      for (uint64_t i = 0; i < pb; ++i) {
        const bool inside = p >= 32 && p < 64 && i >= c.off && i < end;
        const uint8_t want = inside ? c.pattern[(i - c.off) % eb] : before[p * stride + i];
        ASSERT_EQ(b.st.sbuf[p * stride + i], want)
            << dtype_name(c.t) << " partition " << p << " byte " << i;
      }
  }
}

TEST(StreamShuffle, WorkedExample11) {
  Bench b;
  const auto x = randoms(128 * 3, 42);
  const auto S = Bench::sb(DType::fp32, 128, 3);
  b.put(S, x);
  Inst in = make(Opcode::stream_shuffle, Engine::dve);
  set_ap(in, "dst", S); // in place
  set_ap(in, "src", S);
  ShuffleMask m;
  for (int i = 0; i < 32; ++i) m.v[i] = uint8_t(i);
  std::swap(m.v[0], m.v[1]);
  m.v[5] = 255;
  m.v[6] = 9;
  in.ops[ew::operand_index(in, "mask")].mask = m;
  b.run(in);
  const auto got = b.get(S);
  for (int p = 0; p < 128; ++p) {
    const int q = p / 32, i = p % 32;
    const int from = i == 0 ? 1 : i == 1 ? 0 : i == 5 ? i : i == 6 ? 9 : i;
    for (int j = 0; j < 3; ++j) ASSERT_EQ(got[p * 3 + j], x[(q * 32 + from) * 3 + j]) << p;
  }
  // Broadcast one partition to 32 (mask all zeros).
  m.v.fill(0);
  in.ops[ew::operand_index(in, "mask")].mask = m;
  set_ap(in, "dst", Bench::sb(DType::fp32, 32, 3, 64, 32));
  set_ap(in, "src", Bench::sb(DType::fp32, 1, 3));
  b.run(in);
  const auto bc = b.get(Bench::sb(DType::fp32, 32, 3, 64, 32));
  for (int p = 0; p < 32; ++p)
    for (int j = 0; j < 3; ++j) ASSERT_EQ(bc[p * 3 + j], got[j]);
  m.v[3] = 4;
  in.ops[ew::operand_index(in, "mask")].mask = m;
  EXPECT_FAULT(b.run(in), "entry 3 = 4 selects src partition 4 but src has 1 partitions");
}

} // namespace
} // namespace nisa::interp::test
