// trn3 (gen4) matmul through the whole toolchain: assembled, run on the modelled machine and
// compared with a plain C++ matmul loop. Gen4 takes N up to 4096 moving columns with an fp32
// dst (8192 with bf16) and a bf16 PSUM dst; gen2/3 stop at N = 512 and an fp32 dst.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>

#include "asm/asm.h"
#include "tests/support/kernel_harness.h"

namespace nisa::kt {
namespace {

// y[M, N] = w[K, M]^T x[K, N], through SBUF and PSUM; the dst dtype is DT.
std::string source(int K, int M, int N, DType dt) {
  return fmt::format(R"(.kernel mm
.hbm  w : bf16[{K}, {M}] input
.hbm  x : bf16[{K}, {N}] input
.hbm  y : {dt}[{M}, {N}] output
.sbuf ws : bf16[{K}, {M}]
.sbuf xs : bf16[{K}, {N}]
.psum o  : {dt}[{M}, {N}]
.sbuf ys : {dt}[{M}, {N}]
.sem  s
  sp.dma q0, ws, w @signal(s)
  sp.dma q1, xs, x @signal(s)
  pe.matmul o, ws, xs @wait(s >= 2) @signal(s)
  act.copy ys, o @wait(s >= 3) @signal(s)
  sp.dma q0, y, ys @wait(s >= 4)
)",
                     fmt::arg("K", K), fmt::arg("M", M), fmt::arg("N", N),
                     fmt::arg("dt", dt_name(dt)));
}

nasm::AsmResult assemble(int K, int M, int N, DType dt, Target t) {
  nasm::AsmOptions o;
  o.target = t;
  return nasm::assemble_string(source(K, M, N, dt), "mm.nasm", o);
}

// The plain loop, in double (the reference of the fp32 accumulation in k order).
std::vector<double> reference(const std::vector<float>& w, const std::vector<float>& x, int K,
                              int M, int N) {
  std::vector<double> y(size_t(M) * N, 0.0);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double acc = 0.0;
      for (int k = 0; k < K; ++k) acc += double(w[size_t(k) * M + m]) * x[size_t(k) * N + n];
      y[size_t(m) * N + n] = acc;
    }
  return y;
}

void run_and_check(int K, int M, int N, DType dt) {
  const nasm::AsmResult a = assemble(K, M, N, dt, Target::trn3);
  ASSERT_TRUE(a.ok()) << a.diagnostics_text();
  const auto w = random_values(size_t(K) * M, DType::bf16, 11),
             x = random_values(size_t(K) * N, DType::bf16, 12);
  RunOutput r = run_kernel(*a.module, Target::trn3, 1,
                           {{"w", to_bytes(w, DType::bf16)}, {"x", to_bytes(x, DType::bf16)}});
  ASSERT_EQ(r.status, interp::RunStatus::ok) << r.report;
  const std::vector<float> y = from_bytes(r.tensors["y"], dt);
  const std::vector<double> ref = reference(w, x, K, M, N);
  ASSERT_EQ(y.size(), ref.size());
  for (size_t i = 0; i < y.size(); ++i) {
    // |sum| bound of the fp32 chain: K roundings of at most 2^-24 relative each on the partial
    // sums (bounded by sum |w x|). bf16 dst: one more rounding to 8 significant bits, half an
    // ulp = 2^-9 of the value's binade, <= 2^-8 relative.
    const int m = int(i) / N, n = int(i) % N;
    double abs_sum = 0.0;
    for (int k = 0; k < K; ++k)
      abs_sum += std::fabs(double(w[size_t(k) * M + m]) * x[size_t(k) * N + n]);
    const double fp32_tol = K * std::ldexp(1.0, -24) * abs_sum;
    const double tol =
        dt == DType::bf16 ? std::ldexp(std::fabs(ref[i]) + fp32_tol, -8) + fp32_tol : fp32_tol;
    ASSERT_LE(std::fabs(double(y[i]) - ref[i]), tol) << "m " << m << " n " << n;
  }
}

TEST(MatmulTrn3, N1024Fp32Dst) { run_and_check(128, 64, 1024, DType::fp32); }
TEST(MatmulTrn3, Bf16Dst) { run_and_check(128, 64, 512, DType::bf16); }
TEST(MatmulTrn3, N1024Bf16Dst) { run_and_check(64, 32, 1024, DType::bf16); }

// The same sources on gen2/3: rejected by the assembler, at the operand, with the limit.
TEST(MatmulTrn3, OlderTargetsReject) {
  for (Target t : {Target::trn1, Target::trn2}) {
    const nasm::AsmResult n = assemble(128, 64, 1024, DType::fp32, t);
    EXPECT_FALSE(n.ok());
    EXPECT_NE(n.diagnostics_text().find("has N = 1024 columns (at most 512 on"), std::string::npos)
        << n.diagnostics_text();
    const nasm::AsmResult b = assemble(128, 64, 512, DType::bf16, t);
    EXPECT_FALSE(b.ok());
    EXPECT_NE(b.diagnostics_text().find("pe.matmul operand `dst`: must be fp32, not bf16"),
              std::string::npos)
        << b.diagnostics_text();
  }
}

} // namespace
} // namespace nisa::kt
