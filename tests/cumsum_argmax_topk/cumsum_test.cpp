// cumsum.nasm against an inclusive prefix sum written from the math.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/support/kernel_harness.h"

namespace nisa::kt {
namespace {

struct CumsumCase {
  Target target;
  int lnc;
  DType dt;
  int64_t rows, cols;
};

std::string case_name(const testing::TestParamInfo<CumsumCase>& i) {
  const CumsumCase& c = i.param;
  return case_prefix(c.target, c.lnc, c.dt) + "_" + std::to_string(c.rows) + "x" +
         std::to_string(c.cols);
}

class Cumsum : public testing::TestWithParam<CumsumCase> {};

std::vector<float> run_cumsum(const CumsumCase& c, const std::vector<float>& x,
                              uint64_t random_schedule_seed = 0) {
  Assembled a = assemble_kernel(
      "cumsum.nasm",
      {{"ROWS", std::to_string(c.rows)}, {"COLS", std::to_string(c.cols)}, {"DT", dt_name(c.dt)}},
      c.target);
  EXPECT_TRUE(a.ok) << a.diagnostics;
  if (!a.ok) return {};
  RunOutput r = run_kernel(a.module, c.target, c.lnc, {{"x", to_bytes(x, c.dt)}}, false,
                           random_schedule_seed);
  EXPECT_EQ(r.status, interp::RunStatus::ok) << r.report;
  return from_bytes(r.tensors["y"], c.dt);
}

TEST_P(Cumsum, MatchesPrefixSum) {
  const CumsumCase& c = GetParam();
  const auto n = static_cast<size_t>(c.rows * c.cols);
  const std::vector<float> x = random_values(n, c.dt, 1234u + static_cast<uint32_t>(n));
  const std::vector<float> y = run_cumsum(c, x);
  ASSERT_EQ(y.size(), n);
  for (int64_t r = 0; r < c.rows; ++r) {
    const float* xr = &x[size_t(r * c.cols)];
    const float* yr = &y[size_t(r * c.cols)];
    if (c.dt == DType::fp32) {
      // fp32: the scan computes r = (1 * r) + x[i] with fp32 state; 1 * r is exact, so each
      // step is one correctly rounded fp32 add, in the same order as a sequential loop. The
      // carry across 2048-wide tiles is the fp32 last column copied bit-exactly. Hence the
      // result equals the sequential fp32 prefix sum bit for bit.
      float s = 0.0f;
      for (int64_t i = 0; i < c.cols; ++i) {
        s += xr[i];
        ASSERT_EQ(f32_bits(yr[i]), f32_bits(s)) << "row " << r << " col " << i;
      }
      continue;
    }
    // bf16: exact prefix S_i (double) of the bf16 inputs. Errors of the kernel:
    //  - every output is S_i' rounded to bf16 (8 significant bits): half an ulp, which is
    //    2^-9 of the value's power of two 2^(e+1), i.e. <= 2^-8 |S_i'| (u = 2^-8);
    //  - at every 2048 boundary b the carry is re-read from the bf16 result: <= 2^-8 |S_b'|,
    //    and these errors add up over the boundaries already crossed;
    //  - the fp32 state within a tile: <= (i+1) 2^-24 sum_k |x_k| (recursive summation).
    // Tolerance = the sum of the three, with |S'| bounded by |S| + the previous terms.
    double s = 0, abs_sum = 0, carry_err = 0;
    for (int64_t i = 0; i < c.cols; ++i) {
      s += xr[i];
      abs_sum += std::fabs(xr[i]);
      const double fp32_err = double(i + 1) * std::ldexp(1.0, -24) * abs_sum;
      const double pre = std::fabs(s) + carry_err + fp32_err;
      const double tol = std::ldexp(pre, -8) + carry_err + fp32_err;
      ASSERT_LE(std::fabs(double(yr[i]) - s), tol) << "row " << r << " col " << i;
      if ((i + 1) % 2048 == 0) carry_err += std::ldexp(pre, -8);
    }
  }
}

// Semaphores order every load, scan, store and carry: random tie orders and durations must
// give the same bits.
TEST(CumsumSync, RandomSchedules) {
  const CumsumCase c{Target::trn2, 2, DType::fp32, 130, 4500};
  const std::vector<float> x = random_values(size_t(c.rows * c.cols), c.dt, 77u);
  const std::vector<float> ref = run_cumsum(c, x);
  for (uint64_t seed : {1u, 2u, 3u}) EXPECT_EQ(run_cumsum(c, x, seed), ref) << "seed " << seed;
}

constexpr Target T1 = Target::trn1, T2 = Target::trn2;
constexpr DType F32 = DType::fp32, B16 = DType::bf16;

INSTANTIATE_TEST_SUITE_P(Shapes, Cumsum,
                         testing::Values(
                             // COLS > 2048 and not a multiple of 2048; ROWS not a multiple of 128
                             CumsumCase{T2, 1, F32, 130, 4500}, CumsumCase{T2, 2, F32, 130, 4500},
                             CumsumCase{T1, 1, F32, 130, 4500}, CumsumCase{T2, 1, B16, 130, 4500},
                             CumsumCase{T2, 2, B16, 130, 4500}, CumsumCase{T1, 1, B16, 130, 4500},
                             // degenerate shapes
                             CumsumCase{T2, 1, F32, 1, 2049}, CumsumCase{T2, 2, B16, 1, 6145},
                             CumsumCase{T2, 1, F32, 7, 1}, CumsumCase{T1, 1, B16, 1, 1},
                             // the one large case: three partition tiles, several free tiles
                             CumsumCase{T2, 2, F32, 300, 5000}),
                         case_name);

} // namespace
} // namespace nisa::kt

namespace nisa::kt {
namespace {

TEST(CumsumEnvelope, EachLimitHasItsError) {
  auto error_of = [](const Defines& d) {
    Assembled a = assemble_kernel("cumsum.nasm", d, Target::trn2);
    EXPECT_FALSE(a.ok);
    return a.diagnostics;
  };
  EXPECT_NE(error_of({{"DT", "fp16"}}).find("DT must be fp32 or bf16"), std::string::npos);
  EXPECT_NE(error_of({{"ROWS", "0"}}).find("ROWS and COLS must be positive"), std::string::npos);
  EXPECT_NE(error_of({{"COLS", "0"}}).find("ROWS and COLS must be positive"), std::string::npos);
}

} // namespace
} // namespace nisa::kt

namespace nisa::kt {
namespace {

// The double-buffered variant gives the same bits as cumsum.nasm, also under random schedules.
TEST(CumsumDoubleBuffered, SameBitsAsCumsum) {
  for (DType dt : {DType::fp32, DType::bf16}) {
    const Defines d{{"ROWS", "130"}, {"COLS", "4500"}, {"DT", dt_name(dt)}};
    const std::vector<uint8_t> x = to_bytes(random_values(130 * 4500, dt, 9u), dt);
    Assembled a = assemble_kernel("cumsum.nasm", d, Target::trn2);
    Assembled b = assemble_kernel("cumsum_double_buffered.nasm", d, Target::trn2);
    ASSERT_TRUE(a.ok && b.ok) << a.diagnostics << b.diagnostics;
    const RunOutput ra = run_kernel(a.module, Target::trn2, 1, {{"x", x}});
    for (uint64_t seed : {0u, 1u, 2u}) {
      const RunOutput rb = run_kernel(b.module, Target::trn2, 1, {{"x", x}}, false, seed);
      ASSERT_EQ(rb.status, interp::RunStatus::ok) << rb.report;
      EXPECT_EQ(rb.tensors.at("y"), ra.tensors.at("y")) << dt_name(dt) << " seed " << seed;
      if (seed == 0) {
        EXPECT_LT(rb.stats.makespan_ticks, ra.stats.makespan_ticks);
      }
    }
  }
}

} // namespace
} // namespace nisa::kt
