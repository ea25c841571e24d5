// Decoder robustness: random bytes, truncations and bit flips of valid instruction streams and
// objects never crash and always either decode or name an offset inside the buffer.
// Case counts (about 125k in total): 20k random instruction buffers, every truncation of 300
// instructions (~35k), 20k instruction bit flips, every truncation of 6 objects (~17k), 20k
// object flips behind a repaired checksum, 5k flips caught by the checksum, 8k random objects
// read twice (with and without the checksum).
#include <gtest/gtest.h>

#include <random>

#include "isa/encode.h"
#include "isa/object.h"
#include "tests/isa/random_inst.h"

namespace nisa {
namespace {

using Bytes = std::vector<uint8_t>;

// The decoder's contract on arbitrary input. Returns true when it decoded.
bool check_inst_decode(const Bytes& b, uint64_t at) {
  auto r = decode_inst(b, at);
  if (!r.ok()) {
    EXPECT_TRUE(b.empty() ? r.error().offset == 0 : r.error().offset < b.size())
        << r.error().str() << " (buffer of " << b.size() << ")";
    EXPECT_FALSE(r.error().message.empty());
    return false;
  }
  EXPECT_EQ(check_inst(r->inst), std::nullopt);
  // Whatever decodes is canonical: it re-encodes to exactly the bytes consumed.
  Bytes again;
  encode_inst(r->inst, again);
  EXPECT_TRUE(std::equal(again.begin(), again.end(), b.begin() + static_cast<std::ptrdiff_t>(at),
                         b.begin() + static_cast<std::ptrdiff_t>(at + r->length)) &&
              again.size() == r->length);
  return true;
}

bool check_object_decode(const Bytes& b, ReadOptions opts = {}) {
  auto r = read_object(b, opts);
  if (!r.ok()) {
    EXPECT_TRUE(b.empty() ? r.error().offset == 0 : r.error().offset < b.size())
        << r.error().str() << " (object of " << b.size() << " bytes)";
    return false;
  }
  auto again = read_object(write_object(*r));
  EXPECT_TRUE(again.ok() && *again == *r) << "a decoded module does not round-trip";
  return true;
}

void fix_header(Bytes& b) {
  // Total size at byte 16 and the trailing checksum, as the writer would set them.
  const uint64_t n = b.size();
  for (int k = 0; k < 8; ++k) b[16 + k] = static_cast<uint8_t>(n >> (8 * k));
  const uint64_t h =
      object_body_checksum(uint16_t(b[4] | b[5] << 8), std::span<const uint8_t>(b).first(n - 8));
  for (int k = 0; k < 8; ++k) b[n - 8 + k] = static_cast<uint8_t>(h >> (8 * k));
}

void flip_bits(Bytes& b, std::mt19937_64& rng, size_t from, size_t to) {
  for (int k = 1 + static_cast<int>(rng() % 3); k > 0; --k) {
    const size_t at = from + rng() % (to - from);
    b[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
  }
}

Bytes random_inst_bytes(std::mt19937_64& rng) {
  const auto& d = inst_table()[rng() % inst_table().size()];
  Bytes b;
  encode_inst(testing::random_inst(rng, d.op), b);
  return b;
}

TEST(Robustness, InstructionRandomBytes) {
  std::mt19937_64 rng(1);
  int decoded = 0;
  for (int k = 0; k < 20000; ++k) {
    Bytes b(rng() % 96);
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    if (b.size() >= 4 && rng() % 2) { // a real opcode and a plausible length half the time
      const auto& d = inst_table()[rng() % inst_table().size()];
      b[0] = static_cast<uint8_t>(d.opcode), b[1] = static_cast<uint8_t>(d.opcode >> 8);
      b[2] = static_cast<uint8_t>(b.size()), b[3] = 0;
    }
    decoded += check_inst_decode(b, 0);
  }
  RecordProperty("decoded", decoded);
}

TEST(Robustness, InstructionTruncations) {
  std::mt19937_64 rng(2);
  for (int k = 0; k < 300; ++k) {
    const Bytes full = random_inst_bytes(rng);
    for (size_t n = 0; n < full.size(); ++n) {
      const Bytes cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
      EXPECT_FALSE(check_inst_decode(cut, 0)) << "a truncated instruction decoded";
    }
  }
}

TEST(Robustness, InstructionBitFlips) {
  std::mt19937_64 rng(3);
  for (int k = 0; k < 20000; ++k) {
    Bytes b = random_inst_bytes(rng);
    flip_bits(b, rng, 0, b.size());
    check_inst_decode(b, 0);
  }
}

Bytes small_object(std::mt19937_64& rng) {
  return write_object(testing::RandomGen(rng).module(/*max_stream=*/4));
}

TEST(Robustness, ObjectTruncations) {
  std::mt19937_64 rng(4);
  for (int k = 0; k < 6; ++k) {
    const Bytes full = small_object(rng);
    for (size_t n = 0; n < full.size(); ++n) {
      Bytes cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
      // Odd modules: also repair size and checksum so the cut reaches the section parsers.
      if (k % 2 && n >= 32) fix_header(cut);
      EXPECT_FALSE(check_object_decode(cut)) << "a truncated object decoded (" << n << " bytes)";
    }
  }
}

TEST(Robustness, ObjectBitFlipsBehindRepairedChecksum) {
  std::mt19937_64 rng(5);
  Bytes base = small_object(rng);
  for (int k = 0; k < 20000; ++k) {
    if (k % 500 == 0) base = small_object(rng);
    Bytes b = base;
    flip_bits(b, rng, 24, b.size() - 8); // the sections
    fix_header(b);
    check_object_decode(b);
  }
}

TEST(Robustness, ObjectBitFlipsAreCaught) {
  std::mt19937_64 rng(6);
  Bytes base = small_object(rng);
  for (int k = 0; k < 5000; ++k) {
    Bytes b = base;
    flip_bits(b, rng, 0, b.size());
    EXPECT_FALSE(check_object_decode(b)) << "a corrupted object passed";
  }
}

TEST(Robustness, ObjectRandomBytes) {
  std::mt19937_64 rng(7);
  const Bytes header = small_object(rng);
  for (int k = 0; k < 8000; ++k) {
    Bytes b(rng() % 512);
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    // Most get a valid header so that the section parsers see the noise.
    if (b.size() >= 32 && rng() % 4) {
      std::copy(header.begin(), header.begin() + 16, b.begin());
      fix_header(b);
    }
    check_object_decode(b);
    check_object_decode(b, ReadOptions{.verify_checksum = false});
  }
}

} // namespace
} // namespace nisa
