// libFuzzer target for the object reader (and through it the instruction decoder).
// Build: CC=clang CXX=clang++ cmake -B build-fuzz -DNISA_FUZZ=ON && cmake --build build-fuzz
//        --target fuzz_decode; run: build-fuzz/tests/fuzz/fuzz_decode -max_total_time=30
// The checksum is not verified so that mutated inputs reach the section parsers; whatever
// decodes must survive a write/read round trip, and errors must point inside the input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "isa/encode.h"
#include "isa/object.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  auto r = nisa::read_object(bytes, nisa::ReadOptions{.verify_checksum = false});
  if (!r.ok()) {
    if (size > 0 && r.error().offset >= size) std::abort();
  } else {
    auto again = nisa::read_object(nisa::write_object(*r));
    if (!again.ok() || !(*again == *r)) std::abort();
  }
  // The same bytes as a raw instruction stream.
  nisa::Inst in;
  for (uint64_t at = 0; at < size;) {
    uint32_t len = 0;
    if (auto e = nisa::decode_inst_into(bytes, at, in, len)) {
      if (e->offset >= size) std::abort();
      break;
    }
    at += len;
  }
  return 0;
}
