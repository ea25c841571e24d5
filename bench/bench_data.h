// Shared by the kernel benchmarks: seeded bf16-representable inputs and their raw bytes.
#pragma once
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "isa/dtype.h"

namespace nisa::bench {

// n normal values N(mean, scale), rounded to bf16 (kept as floats for the native baseline).
inline std::vector<float> random_bf16(size_t n, uint32_t seed, float scale = 1.0f,
                                      float mean = 0.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(mean, scale);
  std::vector<float> v(n);
  for (float& x : v) x = nisa::bf16_to_f32(nisa::f32_to_bf16(nd(rng)));
  return v;
}

// The bf16 bytes of values that are bf16-representable (little-endian).
inline std::vector<uint8_t> bf16_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 2);
  for (size_t i = 0; i < v.size(); ++i) {
    const uint16_t h = nisa::f32_to_bf16(v[i]);
    std::memcpy(&b[2 * i], &h, 2);
  }
  return b;
}

// The bytes of a vector of trivially copyable elements (int32 ids, fp32 tensors).
template <class T> std::vector<uint8_t> raw_bytes(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

} // namespace nisa::bench
