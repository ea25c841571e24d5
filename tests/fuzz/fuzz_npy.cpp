// libFuzzer target for the .npy reader (interp/run/npy.cpp): any bytes either parse or throw
// NpyError; what parses holds exactly shape x item bytes, survives a write/read round trip
// when nisa can write its descriptor, and checking it against a declaration never crashes.
// Build: see CMakeLists.txt here; run (seeds from tests/fuzz/npy_seeds.sh):
//   build-fuzz/tests/fuzz/fuzz_npy /tmp/npycorpus -max_total_time=1860 -timeout=10
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "interp/run/npy.h"

using namespace nisa;
using namespace nisa::interp;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  NpyArray a;
  try {
    a = parse_npy(bytes, "fuzz.npy");
  } catch (const NpyError& e) {
    // Diagnostics quote at most a line's worth of the input (isa/quote.h).
    if (std::string_view(e.what()).size() > 2000) std::abort();
    return 0;
  }
  uint64_t n = a.item_bytes;
  for (int64_t d : a.shape) n *= uint64_t(d);
  if (a.data.size() != n) std::abort();
  for (int t = 0; t < kNumDTypes; ++t) {
    const DType dt = static_cast<DType>(t);
    try {
      check_npy(a, dt, a.shape, "fuzz.npy", "x");
    } catch (const NpyError&) {
      continue;
    }
    if (uint32_t(dtype_bytes(dt)) != a.item_bytes) std::abort();
    // Round trip through the writer's format (little-endian, C order).
    NpyArray b = parse_npy(format_npy(dt, a.shape, a.data.data()), "again.npy");
    if (b.shape != a.shape || b.data != a.data) std::abort();
  }
  return 0;
}
