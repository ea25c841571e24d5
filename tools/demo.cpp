// nisa-demo: the `make demo` driver. It shows the toolchain the way a kernel author uses
// it: assemble a kernel, disassemble it, run it on a generated input with --stats, then
// check the output against a plain C++ reference written from the math.
//
//   nisa-demo NISA_BINARY SOURCE_DIR OUT_DIR
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "interp/npy.h"

namespace {

int sh(const std::string& cmd) {
  std::printf("\n$ %s\n", cmd.c_str());
  std::fflush(stdout);
  int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 1;
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: nisa-demo NISA_BINARY SOURCE_DIR OUT_DIR\n");
    return 1;
  }
  const std::string nisa = argv[1], src = argv[2], out = argv[3];
  const int rows = 300, cols = 5000; // 3 partition tiles (the last ragged), 3 free tiles
  const std::string kernel = src + "/kernels_asm/cumsum.nasm";
  const std::string defs = " -D ROWS=" + std::to_string(rows) + " -D COLS=" + std::to_string(cols);

  std::printf("nisa demo: inclusive cumsum of a %dx%d fp32 tensor, written by hand in "
              "kernels_asm/cumsum.nasm\n",
              rows, cols);
  if (sh(nisa + " asm " + kernel + defs + " -o " + out + "/cumsum.nbin") != 0) return 1;
  if (sh(nisa + " disasm " + out + "/cumsum.nbin | head -n 24") != 0) return 1;

  // A seeded random input (never constants).
  std::mt19937 rng(2026);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> x(size_t(rows) * cols);
  for (auto& v : x) v = dist(rng);
  nisa::interp::write_npy(out + "/x.npy", nisa::DType::fp32, {rows, cols},
                          reinterpret_cast<const uint8_t*>(x.data()));

  if (sh(nisa + " run " + out + "/cumsum.nbin --in x=" + out + "/x.npy --out y=" + out +
         "/y.npy --stats") != 0)
    return 1;

  // Reference: the inclusive prefix sum in fp32, element by element, left to right.
  // The kernel's scan computes exactly (1 * r) + x[i] in fp32 and carries r exactly, so
  // the fp32 result must match bit for bit.
  auto y = nisa::interp::read_npy(out + "/y.npy");
  const float* got = reinterpret_cast<const float*>(y.data.data());
  size_t mismatches = 0;
  double max_err = 0;
  for (int r = 0; r < rows; ++r) {
    float acc = 0.0f;
    for (int c = 0; c < cols; ++c) {
      acc += x[size_t(r) * cols + c];
      float g = got[size_t(r) * cols + c];
      if (g != acc) ++mismatches;
      max_err = std::max(max_err, double(std::fabs(g - acc)));
    }
  }
  std::printf("\nfirst rows, last column: ");
  for (int r = 0; r < 4; ++r)
    std::printf("y[%d,%d] = %.6f  ", r, cols - 1, got[size_t(r) * cols + cols - 1]);
  std::printf("\ncheck against the C++ reference: %zu of %d elements differ (max |diff| %.3g)\n",
              mismatches, rows * cols, max_err);
  if (mismatches != 0) {
    std::printf("DEMO FAILED\n");
    return 1;
  }
  std::printf("demo OK: bit-exact match\n");
  return 0;
}
