// The object checksums (docs/encoding.md "Checksum"): FNV-1a 64 up to version 2, XXH64 from
// version 3.
#include "isa/object.h"

#include <bit>
#include <cstring>

namespace nisa {

uint64_t fnv1a64(std::span<const uint8_t> bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint8_t b : bytes) {
    h ^= b;
    h *= 0x100000001b3ull;
  }
  return h;
}

// XXH64 (xxHash, 64-bit), as its reference implementation computes it: four independent
// lanes over 32-byte stripes, then the tail and the avalanche.
uint64_t xxh64(std::span<const uint8_t> bytes, uint64_t seed) {
  constexpr uint64_t P1 = 0x9E3779B185EBCA87ull, P2 = 0xC2B2AE3D27D4EB4Full,
                     P3 = 0x165667B19E3779F9ull, P4 = 0x85EBCA77C2B2AE63ull,
                     P5 = 0x27D4EB2F165667C5ull;
  auto rotl = [](uint64_t x, int r) { return (x << r) | (x >> (64 - r)); };
  auto round = [&](uint64_t acc, uint64_t in) { return rotl(acc + in * P2, 31) * P1; };
  auto merge = [&](uint64_t acc, uint64_t v) { return (acc ^ round(0, v)) * P1 + P4; };
  // A little-endian word of T's width at p, on any host.
  auto le = []<class T>(const uint8_t* p, T) {
    T v = 0;
    if constexpr (std::endian::native == std::endian::little)
      std::memcpy(&v, p, sizeof(T));
    else
      for (size_t k = 0; k < sizeof(T); ++k) v |= T(p[k]) << (8 * k);
    return v;
  };
  auto le64 = [&](const uint8_t* p) { return le(p, uint64_t{}); };
  auto le32 = [&](const uint8_t* p) { return le(p, uint32_t{}); };
  const uint8_t* p = bytes.data();
  const uint8_t* const end = p + bytes.size();
  uint64_t h;
  if (bytes.size() >= 32) {
    uint64_t v1 = seed + P1 + P2, v2 = seed + P2, v3 = seed, v4 = seed - P1;
    auto stripe = [&](const uint8_t* q) {
      v1 = round(v1, le64(q));
      v2 = round(v2, le64(q + 8));
      v3 = round(v3, le64(q + 16));
      v4 = round(v4, le64(q + 24));
    };
    // Two stripes per iteration: the loop's own bookkeeping was a sixth of its instructions.
    for (; end - p >= 64; p += 64) {
      stripe(p);
      stripe(p + 32);
    }
    if (end - p >= 32) {
      stripe(p);
      p += 32;
    }
    h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
    h = merge(merge(merge(merge(h, v1), v2), v3), v4);
  } else {
    h = seed + P5;
  }
  h += bytes.size();
  for (; end - p >= 8; p += 8) h = rotl(h ^ round(0, le64(p)), 27) * P1 + P4;
  if (end - p >= 4) {
    h = rotl(h ^ (uint64_t(le32(p)) * P1), 23) * P2 + P3;
    p += 4;
  }
  for (; p < end; ++p) h = rotl(h ^ (*p * P5), 11) * P1;
  h ^= h >> 33;
  h *= P2;
  h ^= h >> 29;
  h *= P3;
  h ^= h >> 32;
  return h;
}

uint64_t object_body_checksum(uint16_t version, std::span<const uint8_t> body) {
  return version >= 3 ? xxh64(body) : fnv1a64(body);
}

} // namespace nisa
