// fgcc_check LHS.npy RHS.npy OUT.npy G ROWS SEED: checks a bf16 fgcc result (bench/ring/run.sh)
// against the matmul in double on ROWS seeded random output rows of every rank (a full check of
// the benchmark shape is ~275 G multiply-adds). out[r][(q - g0) * M + i] = lhs[q][i] @ rhs[r],
// g0 = r / G * G. Tolerance per element: one bf16 rounding (2^-8 relative) plus the fp32 PSUM
// accumulation (K * 2^-24 of the sum of |terms|). Exit 0: every sampled element within it.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "interp/run/npy.h"
#include "isa/dtype.h"

namespace {
float at(const nisa::interp::NpyArray& a, uint64_t i) {
  uint16_t h;
  std::memcpy(&h, a.data.data() + i * 2, 2);
  return nisa::bf16_to_f32(h);
}
} // namespace

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: fgcc_check LHS.npy RHS.npy OUT.npy G ROWS SEED\n");
    return 1;
  }
  try {
    using nisa::interp::read_npy;
    nisa::interp::NpyArray lhs = read_npy(argv[1]), rhs = read_npy(argv[2]),
                           out = read_npy(argv[3]);
    const int64_t G = std::atoll(argv[4]), rows = std::atoll(argv[5]);
    for (const auto* a : {&lhs, &rhs, &out})
      if (a->shape.size() != 3 || !nisa::interp::npy_descr_matches(a->descr, nisa::DType::bf16)) {
        std::fprintf(stderr, "fgcc_check: inputs must be bf16 [R, ROWS, COLS] arrays\n");
        return 1;
      }
    const int64_t R = lhs.shape[0], M = lhs.shape[1], K = lhs.shape[2], N = rhs.shape[2];
    if (G < 1 || R % G != 0 || rows < 1 || rhs.shape[0] != R || rhs.shape[1] != K ||
        out.shape[0] != R || out.shape[1] != G * M || out.shape[2] != N) {
      std::fprintf(stderr, "fgcc_check: shapes do not match an fgcc of group size G\n");
      return 1;
    }
    std::mt19937_64 rng(uint64_t(std::atoll(argv[6])));
    std::uniform_int_distribution<int64_t> pick(0, G * M - 1);
    double worst = 0; // largest |error| / tolerance
    int64_t bad = 0;
    std::vector<double> val(static_cast<size_t>(N)), mag(static_cast<size_t>(N));
    for (int64_t r = 0; r < R; ++r)
      for (int64_t s = 0; s < rows; ++s) {
        const int64_t row = pick(rng), q = r / G * G + row / M, i = row % M;
        std::fill(val.begin(), val.end(), 0.0);
        std::fill(mag.begin(), mag.end(), 0.0);
        for (int64_t k = 0; k < K; ++k) {
          const double a = at(lhs, uint64_t((q * M + i) * K + k));
          const uint64_t rb = uint64_t((r * K + k) * N);
          for (int64_t n = 0; n < N; ++n) {
            const double t = a * at(rhs, rb + uint64_t(n));
            val[size_t(n)] += t;
            mag[size_t(n)] += std::fabs(t);
          }
        }
        for (int64_t n = 0; n < N; ++n) {
          const double got = at(out, uint64_t((r * G * M + row) * N + n));
          const double tol =
              std::fabs(val[size_t(n)]) * 0x1p-8 + mag[size_t(n)] * double(K) * 0x1p-24;
          const double e = std::fabs(got - val[size_t(n)]) / (tol + 1e-30);
          if (e > 1) ++bad;
          if (e > worst) worst = e;
        }
      }
    std::printf("fgcc_check: %lld ranks x %lld rows x %lld columns, worst error %.3f of the "
                "tolerance, %lld outside\n",
                (long long)R, (long long)rows, (long long)N, worst, (long long)bad);
    return bad ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fgcc_check: %s\n", e.what());
    return 1;
  }
}
