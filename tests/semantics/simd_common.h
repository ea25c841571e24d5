// Helpers shared by the vector-kernel tests (simd_*_test.cpp): bit views, the host's SIMD
// levels, a guard restoring the level, and rows of awkward values.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numbers>
#include <random>
#include <tuple>

#include "harness.h"
#include "interp/simd/simd.h"

namespace nisa::interp::test {

using simd::Level;

inline std::vector<Level> levels() {
  std::vector<Level> out;
  for (Level l : {Level::scalar, Level::avx2, Level::avx512})
    if (simd::supported(l)) out.push_back(l);
  return out;
}

// Restores the process-wide level when a test ends.
struct LevelGuard {
  Level saved = simd::level();
  ~LevelGuard() { simd::set_level(saved); }
};

// A row of awkward values: ties (rounded values), specials sprinkled at random positions.
inline std::vector<float> nasty_row(uint64_t n, uint32_t seed, bool specials) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-8.0f, 8.0f);
  std::uniform_int_distribution<int> pick(0, 99);
  const float kSpecial[] = {bits_f32(0x7fc00000u),
                            bits_f32(0xffc00001u),
                            bits_f32(0x7f800123u),
                            INFINITY,
                            -INFINITY,
                            0.0f,
                            -0.0f,
                            bits_f32(1u),
                            bits_f32(0x80000005u),
                            std::numeric_limits<float>::max()};
  std::vector<float> v(n);
  for (auto& x : v) {
    x = d(g);
    const int k = pick(g);
    if (k < 30) x = std::round(x); // ties
    if (specials && k >= 97) x = kSpecial[pick(g) % 10];
  }
  return v;
}

inline constexpr uint64_t kLengths[] = {8,  9,  15,  16,  17,  31,   33,   63,
                                        64, 65, 100, 127, 129, 1000, 4097, 16384};

} // namespace nisa::interp::test
