// ring_inputs OUT.npy R ROWS COLS SEED: a bf16 [R, ROWS, COLS] array of seeded normal values
// (the per-rank inputs of the ring kernels), written with interp/npy.
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "interp/run/npy.h"
#include "isa/dtype.h"

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: ring_inputs OUT.npy R ROWS COLS SEED\n");
    return 1;
  }
  const int64_t r = std::atoll(argv[2]), rows = std::atoll(argv[3]), cols = std::atoll(argv[4]);
  if (r < 1 || rows < 1 || cols < 1 || r * rows * cols > (int64_t(1) << 34)) {
    std::fprintf(stderr, "ring_inputs: sizes must be positive and at most 2^34 elements\n");
    return 1;
  }
  std::mt19937 rng(uint32_t(std::atoi(argv[5])));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<uint16_t> v(size_t(r * rows * cols));
  for (uint16_t& x : v) x = nisa::f32_to_bf16(nd(rng));
  try {
    nisa::interp::write_npy(argv[1], nisa::DType::bf16, {r, rows, cols},
                            reinterpret_cast<const uint8_t*>(v.data()));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ring_inputs: %s\n", e.what());
    return 1;
  }
  return 0;
}
