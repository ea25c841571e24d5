// nisa-demo: the `make demo` driver. It shows the toolchain the way a kernel author uses it
// on the main job, the rotational top-K of a vocabulary-sized input (V = 151936):
// assemble the hand-written kernel, disassemble part of it, run it on a generated input
// with --stats through `nisa run`, then check the outputs against std::partial_sort.
//
//   nisa-demo NISA_BINARY SOURCE_DIR OUT_DIR
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "interp/run/npy.h"

namespace {

int sh(const std::string& cmd) {
  std::printf("\n$ %s\n", cmd.c_str());
  std::fflush(stdout);
  int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 1;
}

template <class T> std::vector<T> read_as(const std::string& path) {
  auto a = nisa::interp::read_npy(path);
  std::vector<T> v(a.data.size() / sizeof(T));
  std::memcpy(v.data(), a.data.data(), v.size() * sizeof(T));
  return v;
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: nisa-demo NISA_BINARY SOURCE_DIR OUT_DIR\n");
    return 1;
  }
  const std::string nisa = argv[1], src = argv[2], out = argv[3];
  const int bxs = 4, v = 151936, k = 256;
  const std::string defs = " -D BXS=" + std::to_string(bxs) + " -D V=" + std::to_string(v) +
                           " -D K=" + std::to_string(k) + " -D METHOD=rotational -D SORTED=1";

  std::printf("nisa demo: rotational top-%d of a %dx%d fp32 input, kernels_asm/topk.nasm "
              "(hand-written), two cores (--lnc 2)\n",
              k, bxs, v);
  if (sh(nisa + " asm " + src + "/kernels_asm/topk.nasm" + defs + " -o " + out + "/topk.nbin") != 0)
    return 1;
  if (sh(nisa + " disasm " + out + "/topk.nbin --engine dve --no-source | grep -m 12 -E " +
         "'max8|match_replace8|n_gather'") != 0)
    return 1;

  // A seeded random input (normal values, never constants).
  std::mt19937 rng(2026);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(size_t(bxs) * v);
  for (auto& e : x) e = dist(rng);
  nisa::interp::write_npy(out + "/x.npy", nisa::DType::fp32, {bxs, v},
                          reinterpret_cast<const uint8_t*>(x.data()));

  if (sh(nisa + " run " + out + "/topk.nbin --lnc 2 --in x=" + out + "/x.npy --out values=" + out +
         "/values.npy --out indices=" + out + "/indices.npy --stats") != 0)
    return 1;

  // Reference: std::partial_sort of each row, descending. Values must match exactly and
  // each index must point at its value (equal values may come in any index order).
  auto vals = read_as<float>(out + "/values.npy");
  auto idx = read_as<uint32_t>(out + "/indices.npy");
  size_t bad = 0;
  std::vector<uint32_t> order(size_t(v), 0);
  for (int b = 0; b < bxs; ++b) {
    const float* row = &x[size_t(b) * v];
    std::iota(order.begin(), order.end(), 0u);
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [row](uint32_t p, uint32_t q) { return row[p] > row[q]; });
    for (int j = 0; j < k; ++j) {
      size_t o = size_t(b) * k + j;
      if (vals[o] != row[order[j]] || idx[o] >= uint32_t(v) || row[idx[o]] != vals[o]) ++bad;
    }
  }
  std::printf("\nfirst rows (value@index):\n");
  for (int b = 0; b < 2; ++b) {
    std::printf("  row %d:", b);
    for (int j = 0; j < 6; ++j)
      std::printf("  %.5f@%u", double(vals[size_t(b) * k + j]), idx[size_t(b) * k + j]);
    std::printf("  ...\n");
  }
  std::printf("check against std::partial_sort: %zu of %d values/indices differ\n", bad, bxs * k);
  if (bad != 0) {
    std::printf("DEMO FAILED\n");
    return 1;
  }
  std::printf("demo OK\n");
  return 0;
}
