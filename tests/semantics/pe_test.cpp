// Tensor engine: matmul numerics (bit-exact against a scalar fma chain in k order, and within
// K * 2^-24 of a double-precision dot product), PSUM accumulation modes, limits, transpose.
#include <array>
#include <bit>
#include <cmath>

#include "harness.h"

namespace nisa::interp::test {
namespace {

Inst mm(const AccessPattern& d, const AccessPattern& s, const AccessPattern& m,
        AccMode acc = AccMode::overwrite) {
  Inst in = make(Opcode::matmul, Engine::pe);
  set_ap(in, "dst", d);
  set_ap(in, "stationary", s);
  set_ap(in, "moving", m);
  set_e(in, "acc", acc);
  return in;
}

TEST(Matmul, WorkedExample14) {
  Bench b;
  b.put(Bench::sb(DType::fp32, 3, 2), {1, 2, 3, 4, 5, 6});                        // S[k][m]
  b.put(Bench::sb(DType::fp32, 3, 4, 64), {1, 0, 2, -1, 0, 1, 3, 2, 1, 1, 0, 4}); // Mv[k][n]
  b.run(mm(Bench::ps(DType::fp32, 2, 4), Bench::sb(DType::fp32, 3, 2),
           Bench::sb(DType::fp32, 3, 4, 64)));
  // dst[m][n] = sum_k S[k][m] * Mv[k][n]
  EXPECT_EQ(b.get(Bench::ps(DType::fp32, 2, 4)), (std::vector<float>{6, 8, 11, 25, 8, 10, 16, 30}));
}

TEST(Matmul, FullSizeBf16IsTheFmaChainInKOrder) {
  Bench b;
  const uint32_t K = 128, M = 128, N = 512;
  const auto s = randoms(K * M, 60), v = randoms(K * N, 61);
  const auto S = Bench::sb(DType::bf16, K, M), V = Bench::sb(DType::bf16, K, N, 1024),
             D = Bench::ps(DType::fp32, M, N, 2048);
  b.put(S, s);
  b.put(V, v);
  b.run(mm(D, S, V));
  const auto got = b.get(D), sb = b.get(S), vb = b.get(V);
  for (uint32_t m = 0; m < M; ++m)
    for (uint32_t n = 0; n < N; ++n) {
      float acc = 0.0f;
      double exact = 0.0, mag = 0.0;
      for (uint32_t k = 0; k < K; ++k) {
        acc = std::fma(sb[k * M + m], vb[k * N + n], acc);
        exact += double(sb[k * M + m]) * vb[k * N + n];
        mag += std::fabs(double(sb[k * M + m]) * vb[k * N + n]);
      }
      ASSERT_EQ(got[m * N + n], acc) << m << "," << n;
      ASSERT_LE(std::fabs(got[m * N + n] - exact), K * 0x1p-24 * mag);
    }
}

TEST(Matmul, EveryHostKernelGivesTheSameBits) {
  // Sizes exercise the 64-column blocks and the 16-column tail of the SIMD kernels.
  for (auto [M, N, K] : {std::array<int, 3>{4, 16, 1}, {8, 80, 33}, {128, 512, 128}}) {
    const auto s = randoms(size_t(K) * M, 71 + N), v = randoms(size_t(K) * N, 72 + N);
    std::vector<float> ref(size_t(M) * N), got(size_t(M) * N);
    ASSERT_TRUE(
        ew::matmul_f32_with(ew::MatmulKernel::scalar, s.data(), M, v.data(), N, K, ref.data()));
    for (auto k : {ew::MatmulKernel::avx2, ew::MatmulKernel::avx512}) {
      if (!ew::matmul_f32_with(k, s.data(), M, v.data(), N, K, got.data())) continue;
      for (size_t i = 0; i < ref.size(); ++i)
        ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(ref[i])) << i;
    }
  }
}

TEST(Matmul, OddShapesAndStridedOperands) {
  Bench b;
  const uint32_t K = 7, M = 5, N = 19;
  b.put(Bench::sb(DType::fp16, K, M * 2), randoms(K * M * 2, 62));
  AccessPattern S = Bench::sb(DType::fp16, K, M);
  S.dims[0] = {2, M}; // every other column
  b.put(Bench::sb(DType::bf16, K, N, 512), randoms(K * N, 63));
  b.run(mm(Bench::ps(DType::fp32, M, N, 4096), S, Bench::sb(DType::bf16, K, N, 512)));
  const auto got = b.get(Bench::ps(DType::fp32, M, N, 4096)),
             s = b.get(Bench::sb(DType::fp16, K, M * 2)),
             v = b.get(Bench::sb(DType::bf16, K, N, 512));
  for (uint32_t m = 0; m < M; ++m)
    for (uint32_t n = 0; n < N; ++n) {
      float acc = 0.0f;
      for (uint32_t k = 0; k < K; ++k) acc = std::fma(s[k * M * 2 + 2 * m], v[k * N + n], acc);
      ASSERT_EQ(got[m * N + n], acc);
    }
}

// fp32 moving operands: aligned rows are read in place at the partition stride (a one-row
// matmul as depthwise_conv1d issues, and a full one; rows not a multiple of 16 columns read on
// into the partition's host pad, also at the very end of a partition: 33 columns), others are
// converted and padded (an odd byte offset); M not a multiple of 4 (1, 3, 6: the last rows one
// at a time); all the fma chain in k order.
TEST(Matmul, Fp32MovingInPlaceAndPadded) {
  struct Case {
    uint32_t K, M, N;
    uint64_t voff;
  };
  for (const Case c :
       {Case{128, 1, 512, 256}, Case{128, 128, 512, 0}, Case{9, 3, 20, 64}, Case{5, 2, 16, 2},
        Case{128, 1, 385, 0}, Case{7, 6, 33, 98304 - 33 * 4}, Case{3, 6, 130, 2}}) {
    Bench b;
    const auto S = Bench::sb(DType::fp32, c.K, c.M, 8192),
               V = Bench::sb(DType::fp32, c.K, c.N, c.voff), D = Bench::ps(DType::fp32, c.M, c.N);
    b.put(S, randoms(size_t(c.K) * c.M, 80 + c.N));
    b.put(V, randoms(size_t(c.K) * c.N, 81 + c.N));
    b.run(mm(D, S, V));
    const auto got = b.get(D), s = b.get(S), v = b.get(V);
    for (uint32_t m = 0; m < c.M; ++m)
      for (uint32_t n = 0; n < c.N; ++n) {
        float acc = 0.0f;
        for (uint32_t k = 0; k < c.K; ++k) acc = std::fma(s[k * c.M + m], v[k * c.N + n], acc);
        ASSERT_EQ(std::bit_cast<uint32_t>(got[m * c.N + n]), std::bit_cast<uint32_t>(acc))
            << c.K << "x" << c.M << "x" << c.N << " at " << m << "," << n;
      }
  }
}

TEST(Matmul, AccumulationModes) {
  Bench b;
  const auto s = randoms(8 * 4, 64), v = randoms(8 * 16, 65), poison = randoms(4 * 16, 66);
  const auto S = Bench::sb(DType::fp32, 8, 4), V = Bench::sb(DType::fp32, 8, 16, 64),
             D = Bench::ps(DType::fp32, 4, 16, 2048);
  b.put(S, s);
  b.put(V, v);
  b.run(mm(D, S, V));
  const auto once = b.get(D);
  // Overwrite ignores what was there; accumulate adds in fp32.
  b.put(D, poison);
  b.run(mm(D, S, V, AccMode::accumulate));
  auto got = b.get(D);
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], poison[i] + once[i]);
  // auto: the words were written by a matmul, so it adds...
  b.run(mm(D, S, V, AccMode::auto_));
  const auto before = got;
  got = b.get(D);
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], before[i] + once[i]);
  // ...until another engine writes there: then the next auto matmul overwrites.
  Inst ms = make(Opcode::memset, Engine::dve);
  set_ap(ms, "dst", D);
  set_f(ms, "value", 123.0f);
  b.run(ms);
  b.run(mm(D, S, V, AccMode::auto_));
  EXPECT_EQ(b.get(D), once);
  // A fresh PSUM location under auto overwrites.
  const auto D2 = Bench::ps(DType::fp32, 4, 16, 8192);
  b.put(D2, poison);
  b.run(mm(D2, S, V, AccMode::auto_));
  EXPECT_EQ(b.get(D2), once);
}

TEST(Matmul, LimitsAndOperandRules) {
  Bench b;
  const auto S = Bench::sb(DType::bf16, 128, 128), V = Bench::sb(DType::bf16, 128, 512, 512);
  EXPECT_FAULT(b.run(mm(Bench::ps(DType::fp32, 128, 512), S, Bench::sb(DType::bf16, 64, 512, 512))),
               "stationary has K = 128 partitions but moving has 64");
  EXPECT_FAULT(b.run(mm(Bench::ps(DType::fp32, 128, 512), Bench::sb(DType::bf16, 128, 129), V)),
               "has M = 129 columns (at most 128)");
  EXPECT_FAULT(
      b.run(mm(Bench::ps(DType::fp32, 128, 513), S, Bench::sb(DType::bf16, 128, 513, 512))),
      "has N = 513 columns (at most 512 on trn2)");
  EXPECT_FAULT(b.run(mm(Bench::ps(DType::fp32, 128, 512, 1024), S, V)),
               "bytes 1024..3071 must be contiguous within one 2 KiB psum bank");
  EXPECT_FAULT(b.run(mm(Bench::ps(DType::bf16, 128, 512), S, V)), "must be fp32");
  EXPECT_FAULT(b.run(mm(Bench::ps(DType::fp32, 128, 512), Bench::sb(DType::fp32, 128, 128), V)),
               "fp32 inputs pair only with fp32");
  EXPECT_FAULT(b.run(mm(Bench::ps(DType::fp32, 128, 512), Bench::sb(DType::int8, 128, 128), V)),
               "must be a float dtype, not int8");
  EXPECT_FAULT(b.run(mm(Bench::ps(DType::fp32, 128, 512), Bench::ps(DType::bf16, 128, 128), V)),
               "pe.matmul operand `stationary`: may not be in psum");
  EXPECT_FAULT(b.run(mm(Bench::ps(DType::fp32, 100, 512), S, V)), "must be M x N = 128 x 512");
  // trn3: up to 4096 fp32 columns over several banks, and bf16 PSUM output.
  Bench b3(Target::trn3);
  const auto s = randoms(4 * 4, 67), v = randoms(4 * 1024, 68);
  b3.put(Bench::sb(DType::fp32, 4, 4), s);
  b3.put(Bench::sb(DType::fp32, 4, 1024, 64), v);
  b3.run(mm(Bench::ps(DType::bf16, 4, 1024, 512), Bench::sb(DType::fp32, 4, 4),
            Bench::sb(DType::fp32, 4, 1024, 64)));
  const auto got = b3.get(Bench::ps(DType::bf16, 4, 1024, 512));
  for (int m = 0; m < 4; ++m)
    for (int n = 0; n < 1024; ++n) {
      float acc = 0.0f;
      for (int k = 0; k < 4; ++k) acc = std::fma(s[k * 4 + m], v[k * 1024 + n], acc);
      ASSERT_EQ(got[m * 1024 + n], bf16_to_f32(f32_to_bf16(acc)));
    }
}

// Bug fixed: with a bf16 PSUM dst (trn3) two elements share one accumulation flag word; in
// acc=auto the first element's write set the flag and the second element added onto memory no
// matmul had written (poison: NaN). Each element now decides from the flags before the matmul.
TEST(Matmul, Bf16PsumAutoOverwritesBothHalvesOfAWord) {
  Bench b(Target::trn3);
  const auto D = Bench::ps(DType::bf16, 4, 64), S = Bench::sb(DType::fp32, 4, 4),
             V = Bench::sb(DType::fp32, 4, 64, 64);
  b.put(D, std::vector<float>(4 * 64, NAN)); // never written by a matmul
  const auto s = randoms(16, 71), v = randoms(4 * 64, 72);
  b.put(S, s);
  b.put(V, v);
  b.run(mm(D, S, V, AccMode::auto_));
  auto expect = [&](float scale) {
    const auto got = b.get(D);
    for (int m = 0; m < 4; ++m)
      for (int n = 0; n < 64; ++n) {
        float acc = 0.0f;
        for (int k = 0; k < 4; ++k) acc = std::fma(s[k * 4 + m], v[k * 64 + n], acc);
        ASSERT_EQ(got[m * 64 + n],
                  scale == 1.0f ? bf16_to_f32(f32_to_bf16(acc))
                                : bf16_to_f32(f32_to_bf16(bf16_to_f32(f32_to_bf16(acc)) + acc)))
            << m << " " << n;
      }
  };
  expect(1.0f);
  b.run(mm(D, S, V, AccMode::auto_)); // now every element adds
  expect(2.0f);
}

TEST(Matmul, TransposeModeIsBitExact) {
  Bench b;
  const uint32_t K = 32, M = 16;
  auto s = randoms(K * M, 69);
  s[5] = NAN;
  s[17] = INFINITY;
  s[40] = -0.0f;
  b.put(Bench::sb(DType::bf16, K, M), s);
  std::vector<float> eye(K * K, 0.0f);
  for (uint32_t i = 0; i < K; ++i) eye[i * K + i] = 1.0f;
  b.put(Bench::sb(DType::bf16, K, K, 64), eye);
  Inst in = mm(Bench::ps(DType::bf16, M, K), Bench::sb(DType::bf16, K, M),
               Bench::sb(DType::bf16, K, K, 64));
  set_i(in, "transpose", 1);
  b.run(in);
  const auto got = b.get_int(Bench::ps(DType::bf16, M, K)),
             src = b.get_int(Bench::sb(DType::bf16, K, M));
  for (uint32_t m = 0; m < M; ++m)
    for (uint32_t k = 0; k < K; ++k) ASSERT_EQ(got[m * K + k], src[k * M + m]);
  eye[3] = 1.0f; // row 0 gets a second 1
  b.put(Bench::sb(DType::bf16, K, K, 64), eye);
  EXPECT_FAULT(b.run(in), "one 1 per column; column 3 differs");
}

TEST(PeTranspose, BitExactIntoPsum) {
  Bench b;
  const uint32_t P = 128, F = 100;
  auto x = randoms(P * F, 70);
  x[0] = NAN;
  b.put(Bench::sb(DType::fp16, P, F), x);
  Inst in = make(Opcode::pe_transpose, Engine::pe);
  set_ap(in, "dst", Bench::ps(DType::fp16, F, P));
  set_ap(in, "src", Bench::sb(DType::fp16, P, F));
  b.run(in);
  const auto got = b.get_int(Bench::ps(DType::fp16, F, P)),
             src = b.get_int(Bench::sb(DType::fp16, P, F));
  for (uint32_t f = 0; f < F; ++f)
    for (uint32_t p = 0; p < P; ++p) ASSERT_EQ(got[f * P + p], src[p * F + f]);
  set_ap(in, "dst", Bench::ps(DType::fp32, F, P));
  EXPECT_FAULT(b.run(in), "must have the same dtype");
}

} // namespace
} // namespace nisa::interp::test
