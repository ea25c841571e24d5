// Host probe and level override of the vector kernels (see simd.h).
#include "interp/simd/simd.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace nisa::interp::simd {

namespace {
bool host_has(Level l) {
  switch (l) {
  case Level::avx512:
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("popcnt");
  case Level::avx2:
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("popcnt");
  case Level::scalar: return true;
  }
  return false;
}

Level probe() {
  Level l = host_has(Level::avx512) ? Level::avx512
            : host_has(Level::avx2) ? Level::avx2
                                    : Level::scalar;
  // NISA_SIMD may lower the level; an unknown or unsupported value keeps the probed one.
  if (const char* e = std::getenv("NISA_SIMD")) {
    for (Level w : {Level::scalar, Level::avx2, Level::avx512})
      if (std::strcmp(e, name(w)) == 0 && host_has(w) && w <= l) l = w;
  }
  return l;
}

std::atomic<uint8_t>& current() {
  static std::atomic<uint8_t> l{static_cast<uint8_t>(probe())};
  return l;
}
} // namespace

Level level() { return static_cast<Level>(current().load(std::memory_order_relaxed)); }

Level best() {
  static const Level b = host_has(Level::avx512) ? Level::avx512
                         : host_has(Level::avx2) ? Level::avx2
                                                 : Level::scalar;
  return b;
}

bool supported(Level l) { return host_has(l); }

bool set_level(Level l) {
  if (!host_has(l)) return false;
  current().store(static_cast<uint8_t>(l), std::memory_order_relaxed);
  return true;
}

const char* name(Level l) {
  switch (l) {
  case Level::scalar: return "scalar";
  case Level::avx2: return "avx2";
  case Level::avx512: return "avx512";
  }
  return "?";
}

} // namespace nisa::interp::simd
