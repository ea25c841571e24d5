// The vector kernels of issue 16 (interp/simd/simd.h): every level the host has gives the
// same bits as the scalar level and as an independent plain-loop reference from the
// definitions, on seeded inputs with NaN (several payloads), +-inf, -0.0 / +0.0, ties,
// denormals and lengths that are not multiples of the vector width.
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
namespace {

using simd::Level;

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

std::vector<Level> levels() {
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
std::vector<float> nasty_row(uint64_t n, uint32_t seed, bool specials) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-8.0f, 8.0f);
  std::uniform_int_distribution<int> pick(0, 99);
  const float kSpecial[] = {from_bits(0x7fc00000u),
                            from_bits(0xffc00001u),
                            from_bits(0x7f800123u),
                            INFINITY,
                            -INFINITY,
                            0.0f,
                            -0.0f,
                            from_bits(1u),
                            from_bits(0x80000005u),
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

const uint64_t kLengths[] = {8,  9,  15,  16,  17,  31,   33,   63,
                             64, 65, 100, 127, 129, 1000, 4097, 16384};

// ---- max8 --------------------------------------------------------------------------------------
// Reference: stable sort by rank (NaN first, then descending; NaNs tie, -0 ties +0).
std::vector<uint32_t> max8_reference(const std::vector<float>& x) {
  auto rank_gt = [](float a, float b) {
    if (std::isnan(a)) return !std::isnan(b);
    if (std::isnan(b)) return false;
    return a > b;
  };
  std::vector<float> s = x;
  std::stable_sort(s.begin(), s.end(), rank_gt);
  std::vector<uint32_t> out;
  for (size_t k = 0; k < 8; ++k) out.push_back(k < s.size() ? bits(s[k]) : bits(-INFINITY));
  return out;
}

TEST(Simd, Max8EveryLevelMatchesStableSortBitForBit) {
  int seed = 0;
  for (uint64_t n : kLengths)
    for (bool specials : {false, true})
      for (int rep = 0; rep < 4; ++rep) {
        std::vector<float> x = nasty_row(n, 1000 + seed++, specials);
        if (rep == 2) std::sort(x.begin(), x.end()); // ascending: every element is inserted
        if (rep == 3) // infinities and zeros but no NaN (the two-pass form of max8)
          for (size_t i = 0; i < x.size(); ++i)
            if (std::isnan(x[i])) x[i] = i % 2 ? INFINITY : -INFINITY;
        const auto want = max8_reference(x);
        for (Level l : levels()) {
          float out[8];
          simd::max8_row(l, x.data(), n, out);
          for (int k = 0; k < 8; ++k)
            ASSERT_EQ(bits(out[k]), want[k])
                << simd::name(l) << " n=" << n << " specials=" << specials << " slot " << k;
        }
      }
}

// Rows of the folded top-K methods: long padded or struck-out stretches (-inf, a -HI
// constant), few distinct values above them, ties at the threshold, runs of +-0.
TEST(Simd, Max8PaddedAndStruckOutRowsEveryLevel) {
  std::mt19937 g(77);
  for (uint64_t n : {512u, 700u, 1024u, 2816u, 5000u})
    for (int kind = 0; kind < 6; ++kind)
      for (int rep = 0; rep < 3; ++rep) {
        std::uniform_real_distribution<float> d(-4.0f, 4.0f);
        std::uniform_int_distribution<uint64_t> at(0, n - 1);
        const float pad = kind % 2 ? -INFINITY : -3.0e38f;
        std::vector<float> x(n, pad);
        const uint64_t live = kind < 2 ? n / 3 : kind < 4 ? 5 : n / 20; // non-padding count
        for (uint64_t k = 0; k < live; ++k) {
          float v = d(g);
          if (kind == 4) v = std::round(v);                   // many ties
          if (kind == 5) v = k % 2 ? 0.0f : -0.0f;            // zeros of both signs
          x[rep == 0 ? k : rep == 1 ? n - 1 - k : at(g)] = v; // front, back, scattered
        }
        const auto want = max8_reference(x);
        for (Level l : levels()) {
          float out[8];
          simd::max8_row(l, x.data(), n, out);
          for (int k = 0; k < 8; ++k)
            ASSERT_EQ(bits(out[k]), want[k]) << simd::name(l) << " n=" << n << " kind=" << kind
                                             << " rep=" << rep << " slot " << k;
        }
      }
}

// max8 of bf16 rows (the AVX-512 level reads them without converting): every level gives the
// stable-sort reference of the widened values.
TEST(Simd, Max8InstructionBf16RowsEveryLevel) {
  LevelGuard guard;
  const uint32_t P = 12;
  for (uint32_t n : {512u, 1000u, 4097u}) {
    auto x = nasty_row(uint64_t(P) * n, 17000 + n, true);
    for (uint32_t p = 0; p < P; p += 2) // NaN-free rows (the two-pass form), some padded
      for (uint32_t j = 0; j < n; ++j) {
        float& v = x[p * n + j];
        if (std::isnan(v)) v = -1.0f;
        if (p % 4 == 0 && j > n / 3) v = -INFINITY;
      }
    for (Level l : levels()) {
      ASSERT_TRUE(simd::set_level(l));
      Bench b;
      const auto S = Bench::sb(DType::bf16, P, n), D = Bench::sb(DType::fp32, P, 8, 60000);
      b.put(S, x);
      const auto xs = b.get(S);
      Inst in = make(Opcode::max8, Engine::dve);
      set_ap(in, "dst", D);
      set_ap(in, "src", S);
      b.run(in);
      const auto got = b.get(D);
      for (uint32_t p = 0; p < P; ++p) {
        const auto want =
            max8_reference(std::vector<float>(xs.begin() + p * n, xs.begin() + (p + 1) * n));
        for (int k = 0; k < 8; ++k)
          ASSERT_EQ(bits(got[p * 8 + k]), want[k]) << simd::name(l) << " n=" << n << " p=" << p;
      }
    }
  }
}

// ---- find_index8 / match_replace8 --------------------------------------------------------------
// Slot values: present values (duplicated, so ranks matter), absent ones, NaN, -0.
// seed % 4 == 3: the row's 8 largest non-NaN values (a topk step: few positions lie in their
// range, the one-pass form), with slot 2 repeating slot 1.
std::vector<float> slot_values(const std::vector<float>& x, uint32_t seed) {
  if (seed % 4 == 3) {
    std::vector<float> s;
    for (float f : x)
      if (!std::isnan(f)) s.push_back(f);
    s.resize(std::max<size_t>(s.size(), 8), 0.0f);
    std::partial_sort(s.begin(), s.begin() + 8, s.end(), std::greater<>());
    s.resize(8);
    s[2] = s[1];
    return s;
  }
  std::mt19937 g(seed);
  std::uniform_int_distribution<uint64_t> at(0, x.size() - 1);
  std::vector<float> v(8);
  for (int j = 0; j < 8; ++j) v[j] = x[at(g)];
  v[2] = v[1];                   // a duplicate slot
  v[5] = 1234.5f;                // absent
  if (seed % 3 == 0) v[6] = NAN; // never matches
  if (seed % 3 == 1) v[6] = -0.0f;
  return v;
}

TEST(Simd, FindIndex8EveryLevelMatchesOccurrenceCount) {
  int seed = 0;
  for (uint64_t n : kLengths)
    for (bool specials : {false, true}) {
      const std::vector<float> x = nasty_row(n, 2000 + seed, specials);
      const std::vector<float> v = slot_values(x, 3000 + seed++);
      int64_t want[8];
      for (int j = 0; j < 8; ++j) { // slot j takes the (number of equal earlier slots)-th match
        int rank = 0;
        for (int i = 0; i < j; ++i) rank += v[i] == v[j];
        want[j] = -1;
        int seen = 0;
        for (uint64_t k = 0; k < n && want[j] < 0; ++k)
          if (x[k] == v[j] && seen++ == rank) want[j] = int64_t(k);
      }
      for (Level l : levels()) {
        int64_t got[8];
        simd::find_index8_row(l, x.data(), n, v.data(), got);
        for (int j = 0; j < 8; ++j)
          ASSERT_EQ(got[j], want[j]) << simd::name(l) << " n=" << n << " slot " << j;
      }
    }
}

TEST(Simd, MatchReplace8EveryLevelMatchesReverseSlotOrder) {
  int seed = 0;
  for (uint64_t n : kLengths)
    for (bool specials : {false, true}) {
      const std::vector<float> x = nasty_row(n, 4000 + seed, specials);
      const std::vector<float> v = slot_values(x, 5000 + seed++);
      int64_t want[8];
      std::vector<bool> used(n, false);
      for (int j = 7; j >= 0; --j) {
        want[j] = -1;
        for (uint64_t k = 0; k < n; ++k)
          if (!used[k] && x[k] == v[j]) {
            used[k] = true;
            want[j] = int64_t(k);
            break;
          }
      }
      for (Level l : levels()) {
        int64_t got[8];
        simd::match_replace8_row(l, x.data(), n, v.data(), got);
        for (int j = 0; j < 8; ++j)
          ASSERT_EQ(got[j], want[j]) << simd::name(l) << " n=" << n << " slot " << j;
      }
    }
}

// ---- bf16 rows of the search instructions (the vector forms read them as 16-bit patterns) -------
float bf16_value(uint16_t h) { return from_bits(uint32_t(h) << 16); }
bool bf16_is_nan(uint16_t h) { return (h & 0x7fff) > 0x7f80; }

// A bf16 row (its bits) of kind: 0 values in [-8, 8) truncated, 30% of them integers (ties);
// 1 few distinct values (+-0, +-1, +-2, +-inf, a denormal: ties everywhere); 2 all negative
// (some -inf); 3 negative with zeros of both signs (the top 8 hold zeros); 4 -inf padding with
// 5 live values; 5 any bit pattern; 6 negative with many -0 and three +0 (the 8th largest
// lane maximum is -0). nan: a few NaNs (several payloads, both signs); else none.
std::vector<uint16_t> bf16_row(uint64_t n, uint32_t seed, int kind, bool nan) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-8.0f, 8.0f);
  std::uniform_int_distribution<int> pick(0, 99);
  std::uniform_int_distribution<uint32_t> any(0, 0xffff);
  const uint16_t kFew[] = {0x0000, 0x8000, 0x3f80, 0xbf80, 0x4000, 0xc000, 0x7f80, 0xff80, 0x0001};
  const uint16_t kNan[] = {0x7fc0, 0xffc0, 0x7f81, 0xffff, 0x7fff};
  std::vector<uint16_t> v(n);
  for (uint64_t i = 0; i < n; ++i) {
    float f = d(g);
    if (pick(g) < 30) f = std::round(f);
    uint16_t h = uint16_t(bits(f) >> 16);
    if (kind == 1) h = kFew[pick(g) % 9];
    if (kind == 2) h = pick(g) < 5 ? 0xff80 : uint16_t(h | 0x8000);
    if (kind == 3) h = pick(g) < 10 ? (pick(g) % 2 ? 0x8000 : 0x0000) : uint16_t(h | 0x8000);
    if (kind == 4) h = 0xff80;
    if (kind == 5) h = uint16_t(any(g));
    if (kind == 6) h = pick(g) < 10 ? 0x8000 : uint16_t(h | 0x8000);
    if (!nan && bf16_is_nan(h)) h = 0x4000;
    v[i] = h;
  }
  if (kind == 4)
    for (int k = 0; k < 5; ++k) v[std::uniform_int_distribution<uint64_t>(0, n - 1)(g)] = 0x3f00;
  if (kind == 6)
    for (int k = 0; k < 3; ++k) v[std::uniform_int_distribution<uint64_t>(0, n - 1)(g)] = 0x0000;
  if (nan)
    for (int k = 0; k < 3; ++k) v[std::uniform_int_distribution<uint64_t>(0, n - 1)(g)] = kNan[k];
  return v;
}
std::vector<float> widen(const std::vector<uint16_t>& h) {
  std::vector<float> out;
  for (uint16_t x : h) out.push_back(bf16_value(x));
  return out;
}
const uint8_t* bytes_of(const std::vector<uint16_t>& h) {
  return reinterpret_cast<const uint8_t*>(h.data());
}
const uint64_t kBf16Lengths[] = {8,   9,   31,   100,  255,  256,  257,  333,
                                 511, 640, 1000, 2048, 2049, 4097, 8192, 16384};

// max8 of bf16 rows read as bf16: the stable-sort reference of the widened values at every
// vector level; the form declines only rows with a NaN or fewer than 256 elements (and the
// scalar level), which the instruction converts.
TEST(Simd, Max8Bf16RowsEveryLevelMatchStableSort) {
  uint32_t seed = 0;
  for (uint64_t n : kBf16Lengths)
    for (int kind = 0; kind < 7; ++kind)
      for (bool nan : {false, true}) {
        const auto h = bf16_row(n, 21000 + seed++, kind, nan);
        const auto want = max8_reference(widen(h));
        bool has_nan = false;
        for (uint16_t x : h) has_nan |= bf16_is_nan(x);
        for (Level l : levels()) {
          float out[8];
          const bool done = simd::max8_bf16_row(l, bytes_of(h), n, out);
          ASSERT_EQ(done, l != Level::scalar && n >= 256 && !has_nan)
              << simd::name(l) << " n=" << n << " kind=" << kind;
          if (!done) continue;
          for (int k = 0; k < 8; ++k)
            ASSERT_EQ(bits(out[k]), want[k])
                << simd::name(l) << " n=" << n << " kind=" << kind << " slot " << k;
        }
      }
}

// The lane-maxima form of max8 (16 lanes, a threshold by a sorting network, the candidates
// sorted 16 then 8 at a time, zeros put back in index order), fp32 and bf16, with a next-row
// prefetch hint: rows whose top 8 hold zeros of both signs under a negative threshold or at a
// zero one, ties at the threshold, +-inf, NaN in the first vector or later, rows with one lane
// far above the others (16..300 candidates: the chunked merges and the fallback past 128),
// lengths that are not multiples of 16 or 64.
std::vector<float> lane_row(uint64_t n, uint32_t seed, int kind) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-8.0f, -1.0f), u(0.0f, 1.0f);
  std::vector<float> x(n);
  for (uint64_t i = 0; i < n; ++i) {
    float v = d(g);
    switch (kind) {
    case 0: v = u(g) < 0.02f ? (u(g) < 0.5f ? 0.0f : -0.0f) : v; break; // few zeros on top
    case 1: v = u(g) < 0.3f ? (u(g) < 0.5f ? 0.0f : -0.0f) : v; break;  // threshold a zero
    case 2: v = std::round(v + 9.0f); break;                            // ties, 1..8
    case 3: v = i % 16 == 5 ? 10.0f + u(g) : v; break;                  // one lane on top
    case 4: v = i % 16 == 5 ? (u(g) < 0.5f ? 0.0f : -0.0f) : v; break;  // its zeros on top
    case 5: v = u(g) < 0.01f ? (u(g) < 0.5f ? INFINITY : -INFINITY) : v; break;
    case 6: v = u(g) < 0.5f ? -INFINITY : std::round(v); break;
    default: break;
    }
    x[i] = v;
  }
  if (kind == 7) x[3] = NAN;                            // a NaN in the first vector
  if (kind == 8) x[n - n / 3] = from_bits(0xffc00001u); // a negative NaN later on
  return x;
}

TEST(Simd, Max8LaneFormZerosTiesCandidatesEveryLevel) {
  uint32_t seed = 0;
  for (uint64_t n : {64u, 65u, 80u, 127u, 200u, 513u, 1000u, 2048u, 2077u, 4096u, 8192u})
    for (int kind = 0; kind < 9; ++kind)
      for (int rep = 0; rep < 3; ++rep) {
        const auto x = lane_row(n, 31000 + seed++, kind);
        const auto next = lane_row(n, 32000 + seed, 0);
        const auto want = max8_reference(x);
        for (Level l : levels())
          for (bool hint : {false, true}) {
            float out[8];
            simd::max8_row(l, x.data(), n, out, hint ? next.data() : nullptr);
            for (int k = 0; k < 8; ++k)
              ASSERT_EQ(bits(out[k]), want[k]) << simd::name(l) << " n=" << n << " kind=" << kind
                                               << " rep=" << rep << " slot " << k;
          }
      }
}

TEST(Simd, Max8Bf16LaneFormZerosTiesCandidatesEveryLevel) {
  uint32_t seed = 0;
  for (uint64_t n : {256u, 300u, 513u, 1000u, 2048u, 2077u, 4096u, 8192u})
    for (int kind = 0; kind < 9; ++kind)
      for (int rep = 0; rep < 3; ++rep) {
        const auto f = lane_row(n, 33000 + seed++, kind);
        std::vector<uint16_t> h(n), next(n, 0x3f80);
        for (uint64_t i = 0; i < n; ++i) h[i] = uint16_t(bits(f[i]) >> 16); // truncated: exact
        const auto want = max8_reference(widen(h));
        bool has_nan = false;
        for (uint16_t b : h) has_nan |= bf16_is_nan(b);
        for (Level l : levels())
          for (bool hint : {false, true}) {
            float out[8];
            const bool done =
                simd::max8_bf16_row(l, bytes_of(h), n, out, hint ? bytes_of(next) : nullptr);
            ASSERT_EQ(done, l != Level::scalar && !has_nan) << simd::name(l) << " n=" << n;
            if (!done) continue;
            for (int k = 0; k < 8; ++k)
              ASSERT_EQ(bits(out[k]), want[k]) << simd::name(l) << " n=" << n << " kind=" << kind
                                               << " rep=" << rep << " slot " << k;
          }
      }
}

// find_index8 / match_replace8 on rows dense in NaN (the block-maximum skip must not let a NaN
// hide an element in range), the slots the row's top 8 (few candidates) or values spread over
// the row, every level, against the plain loops of the definitions.
TEST(Simd, FindIndex8MatchReplace8NanDenseRowsEveryLevel) {
  uint32_t seed = 0;
  for (uint64_t n : {64u, 100u, 129u, 1000u, 2048u, 2051u})
    for (int nan_pct : {10, 50, 90})
      for (int c = 0; c < 3; ++c) {
        std::mt19937 g(35000 + seed++);
        std::uniform_real_distribution<float> d(-4.0f, 4.0f);
        std::uniform_int_distribution<int> pick(0, 99);
        std::vector<float> x(n);
        for (auto& v : x) {
          v = std::round(d(g) * 4.0f) / 4.0f;
          if (pick(g) < nan_pct) v = pick(g) % 2 ? from_bits(0x7fc00000u) : from_bits(0xffc00001u);
        }
        std::vector<float> v = slot_values(x, c == 0 ? 3u : 40000u + seed);
        if (c == 2) v[7] = -0.0f, v[0] = 0.0f; // both zeros
        int64_t want_fi[8], want_mr[8];
        for (int j = 0; j < 8; ++j) {
          int rank = 0, seen = 0;
          for (int i = 0; i < j; ++i) rank += v[i] == v[j];
          want_fi[j] = -1;
          for (uint64_t k = 0; k < n && want_fi[j] < 0; ++k)
            if (x[k] == v[j] && seen++ == rank) want_fi[j] = int64_t(k);
        }
        std::vector<bool> used(n, false);
        for (int j = 7; j >= 0; --j) {
          want_mr[j] = -1;
          for (uint64_t k = 0; k < n && want_mr[j] < 0; ++k)
            if (!used[k] && x[k] == v[j]) used[k] = true, want_mr[j] = int64_t(k);
        }
        for (Level l : levels()) {
          int64_t fi[8], mr[8];
          simd::find_index8_row(l, x.data(), n, v.data(), fi);
          simd::match_replace8_row(l, x.data(), n, v.data(), mr);
          for (int j = 0; j < 8; ++j) {
            ASSERT_EQ(fi[j], want_fi[j]) << simd::name(l) << " n=" << n << " c=" << c << " " << j;
            ASSERT_EQ(mr[j], want_mr[j]) << simd::name(l) << " n=" << n << " c=" << c << " " << j;
          }
        }
      }
}

// Slot values for a bf16 row: c = 0 the 8 largest non-NaN values (a topk step) with slot 2 =
// slot 1; 1 the 8 smallest (a range of negatives); 2 present values, a duplicate, an absent
// bf16 value, NaN; 3 present values, -0, and fp32 values next to present ones (no bf16 equals
// them); 4 +-inf, +0, -0, NaN; 5 the row's minimum and maximum (every element a candidate:
// the per-slot scans); 6 all NaN.
std::vector<float> bf16_slots(const std::vector<float>& x, uint32_t seed, int c) {
  std::vector<float> s;
  for (float f : x)
    if (!std::isnan(f)) s.push_back(f);
  if (s.empty()) s.push_back(1.0f);
  std::mt19937 g(seed);
  std::uniform_int_distribution<uint64_t> at(0, s.size() - 1);
  std::vector<float> v(8);
  for (float& f : v) f = s[at(g)];
  if (c == 0 || c == 1) {
    s.resize(std::max<size_t>(s.size(), 8), s[0]);
    if (c == 0) std::partial_sort(s.begin(), s.begin() + 8, s.end(), std::greater<>());
    if (c == 1) std::partial_sort(s.begin(), s.begin() + 8, s.end());
    v.assign(s.begin(), s.begin() + 8);
    v[2] = v[1];
  }
  if (c == 2) v[2] = v[1], v[4] = 1234.0f, v[6] = NAN;
  if (c == 3) v[3] = -0.0f, v[5] = from_bits(bits(v[5]) | 1u), v[7] = from_bits(bits(v[0]) + 7u);
  if (c == 4) v = {INFINITY, -INFINITY, 0.0f, -0.0f, NAN, v[0], 0.0f, -INFINITY};
  if (c == 5) {
    v[3] = *std::min_element(s.begin(), s.end());
    v[6] = *std::max_element(s.begin(), s.end());
  }
  if (c == 6) v.assign(8, NAN);
  return v;
}

TEST(Simd, FindIndex8AndMatchReplace8Bf16RowsEveryLevel) {
  uint32_t seed = 0;
  for (uint64_t n : kBf16Lengths)
    for (int kind = 0; kind < 7; ++kind)
      for (int c = 0; c < 7; ++c) {
        const auto h = bf16_row(n, 23000 + seed, kind, seed % 2 == 0);
        const auto x = widen(h);
        const auto v = bf16_slots(x, 24000 + seed++, c);
        // find_index8: slot j takes the (number of equal earlier slots)-th match.
        int64_t want_fi[8], want_mr[8];
        for (int j = 0; j < 8; ++j) {
          int rank = 0;
          for (int i = 0; i < j; ++i) rank += v[i] == v[j];
          want_fi[j] = -1;
          int seen = 0;
          for (uint64_t k = 0; k < n && want_fi[j] < 0; ++k)
            if (x[k] == v[j] && seen++ == rank) want_fi[j] = int64_t(k);
        }
        // match_replace8: slots 7..0, each the first match no later slot took.
        std::vector<bool> used(n, false);
        for (int j = 7; j >= 0; --j) {
          want_mr[j] = -1;
          for (uint64_t k = 0; k < n; ++k)
            if (!used[k] && x[k] == v[j]) {
              used[k] = true;
              want_mr[j] = int64_t(k);
              break;
            }
        }
        for (Level l : levels()) {
          int64_t fi[8], mr[8];
          const bool a = simd::find_index8_bf16_row(l, bytes_of(h), n, v.data(), fi);
          const bool b = simd::match_replace8_bf16_row(l, bytes_of(h), n, v.data(), mr);
          ASSERT_EQ(a, l != Level::scalar);
          ASSERT_EQ(b, l != Level::scalar);
          if (!a) continue;
          for (int j = 0; j < 8; ++j) {
            ASSERT_EQ(fi[j], want_fi[j])
                << simd::name(l) << " n=" << n << " kind=" << kind << " c=" << c << " slot " << j;
            ASSERT_EQ(mr[j], want_mr[j])
                << simd::name(l) << " n=" << n << " kind=" << kind << " c=" << c << " slot " << j;
          }
        }
      }
}

// The instructions on bf16 tiles: find_index8 into uint32, match_replace8 in place and into
// another bf16 tile (with idx); every level gives the reference and the same bytes.
TEST(Simd, FindIndex8AndMatchReplace8InstructionsBf16EveryLevel) {
  LevelGuard guard;
  const uint32_t P = 14;
  for (uint32_t n : {300u, 2048u, 2051u}) {
    std::vector<float> x, vals;
    for (uint32_t p = 0; p < P; ++p) {
      const auto r = widen(bf16_row(n, 25000 + n + p, p % 7, p % 3 == 0));
      const auto v = bf16_slots(r, 26000 + p, p % 7);
      x.insert(x.end(), r.begin(), r.end());
      vals.insert(vals.end(), v.begin(), v.end());
    }
    std::vector<std::vector<float>> outs;
    for (Level l : levels()) {
      ASSERT_TRUE(simd::set_level(l));
      for (bool in_place : {false, true}) {
        Bench b;
        const auto S = Bench::sb(DType::bf16, P, n), V = Bench::sb(DType::fp32, P, 8, 10000);
        const auto FI = Bench::sb(DType::uint32, P, 8, 10100),
                   I = Bench::sb(DType::uint32, P, 8, 10200);
        const auto D = in_place ? S : Bench::sb(DType::bf16, P, n, 12000);
        b.put(S, x);
        b.put(V, vals);
        const auto xs = b.get(S); // as stored (put quiets NaN payloads)
        Inst f = make(Opcode::find_index8, Engine::dve);
        set_ap(f, "dst", FI);
        set_ap(f, "data", S);
        set_ap(f, "vals", V);
        b.run(f);
        const auto fi = b.get_int(FI);
        Inst m = make(Opcode::match_replace8, Engine::dve);
        set_ap(m, "dst", D);
        set_ap(m, "data", S);
        set_ap(m, "vals", V);
        set_ap(m, "idx", I);
        set_f(m, "imm", -3.0f);
        b.run(m);
        const auto got = b.get(D);
        const auto idx = b.get_int(I);
        for (uint32_t p = 0; p < P; ++p) {
          const float* r = xs.data() + p * n;
          const float* v = vals.data() + p * 8;
          std::vector<bool> used(n, false);
          for (int j = 7; j >= 0; --j) {
            int64_t want = -1;
            for (uint32_t k = 0; k < n && want < 0; ++k)
              if (!used[k] && r[k] == v[j]) used[k] = true, want = k;
            ASSERT_EQ(idx[p * 8 + j], want < 0 ? int64_t(0xffffffff) : want)
                << simd::name(l) << " n=" << n << " p=" << p << " slot " << j;
            int rank = 0, seen = 0;
            for (int i = 0; i < j; ++i) rank += v[i] == v[j];
            int64_t wf = -1;
            for (uint32_t k = 0; k < n && wf < 0; ++k)
              if (r[k] == v[j] && seen++ == rank) wf = k;
            ASSERT_EQ(fi[p * 8 + j], wf < 0 ? int64_t(0xffffffff) : wf)
                << simd::name(l) << " n=" << n << " p=" << p << " slot " << j;
          }
          for (uint32_t k = 0; k < n; ++k)
            ASSERT_EQ(bits(got[p * n + k]), bits(used[k] ? -3.0f : r[k]))
                << simd::name(l) << " n=" << n << " p=" << p << " k=" << k;
        }
        outs.push_back(got);
      }
    }
    for (size_t k = 2; k < outs.size(); ++k)
      for (size_t i = 0; i < outs[0].size(); ++i)
        ASSERT_EQ(bits(outs[k][i]), bits(outs[k % 2][i])) << "run " << k << " at " << i;
  }
}

// ---- tensor_reduce max / min through the instruction --------------------------------------------
TEST(Simd, TensorReduceMaxMinEveryLevelMatchesSequentialFold) {
  LevelGuard guard;
  const uint32_t P = 16;
  for (uint64_t n : {uint64_t(7), uint64_t(64), uint64_t(100), uint64_t(1000), uint64_t(2049)}) {
    std::vector<float> x;
    for (uint32_t p = 0; p < P; ++p) {
      std::vector<float> r = nasty_row(n, 6000 + p + uint32_t(n), p % 2 == 1);
      if (p == 4) std::fill(r.begin(), r.end(), 0.0f), r[n / 2] = -0.0f; // a zero maximum
      if (p == 6) std::fill(r.begin(), r.end(), -0.0f), r[n / 3] = 0.0f;
      if (p == 8) r[n - 1] = NAN;
      x.insert(x.end(), r.begin(), r.end());
    }
    Bench b(Target::trn2, 96 * 1024);
    const auto S = Bench::sb(DType::fp32, P, uint32_t(n));
    const auto D = Bench::sb(DType::fp32, P, 1, 16384);
    b.put(S, x);
    for (AluOp op : {AluOp::max, AluOp::min})
      for (bool neg : {false, true}) {
        std::vector<uint32_t> want;
        for (uint32_t p = 0; p < P; ++p) { // the definition: a left fold, NaN-propagating
          const float* r = x.data() + p * n;
          float acc = r[0];
          for (uint64_t k = 1; k < n; ++k) {
            const float a = acc, c = r[k];
            acc = (std::isnan(a) || std::isnan(c)) ? a + c
                  : op == AluOp::max               ? (a > c ? a : c)
                                                   : (a < c ? a : c);
          }
          want.push_back(bits(neg ? -acc : acc));
        }
        for (Level l : levels()) {
          ASSERT_TRUE(simd::set_level(l));
          b.run(tensor_reduce(D, S, op, neg));
          const View v = b.cx.view(D, Access::read);
          for (uint32_t p = 0; p < P; ++p) {
            uint32_t got;
            std::memcpy(&got, v.row(p), 4);
            ASSERT_EQ(got, want[p]) << simd::name(l) << " n=" << n << " row " << p;
          }
        }
      }
  }
}

// ---- scan / fold with rows in lanes ------------------------------------------------------------
// The definitions, with the documented NaN rule: a NaN operand propagates, a's before b's.
float ref_op(simd::LaneOp o, float a, float b) {
  if (std::isnan(a)) return a + a;
  if (std::isnan(b)) return b + b;
  switch (o) {
  case simd::LaneOp::add: return a + b;
  case simd::LaneOp::subtract: return a - b;
  case simd::LaneOp::multiply: return a * b;
  case simd::LaneOp::max: return std::max(b, a); // b unless a > b
  case simd::LaneOp::min: return std::min(b, a);
  }
  return NAN;
}
const simd::LaneOp kLaneOps[] = {simd::LaneOp::add, simd::LaneOp::subtract, simd::LaneOp::multiply,
                                 simd::LaneOp::max, simd::LaneOp::min};

TEST(Simd, ScanRowsEveryLevelMatchesTheRecurrence) {
  int seed = 0;
  for (uint32_t rows : {1u, 7u, 8u, 16u, 17u, 37u})
    for (uint64_t n : {uint64_t(1), uint64_t(7), uint64_t(8), uint64_t(9), uint64_t(100)})
      for (simd::LaneOp o0 : kLaneOps)
        for (simd::LaneOp o1 : kLaneOps) {
          const bool rev0 = seed % 2, rev1 = seed % 3 == 0;
          std::vector<float> a, b;
          for (uint32_t r = 0; r < rows; ++r) {
            const auto ra = nasty_row(n, 7000 + seed * 64 + r, r % 3 == 0);
            const auto rb = nasty_row(n, 9000 + seed * 64 + r, r % 4 == 1);
            a.insert(a.end(), ra.begin(), ra.end());
            b.insert(b.end(), rb.begin(), rb.end());
          }
          for (auto& x : a) x = x * 0.25f; // keep multiply chains finite for a while
          const auto init = nasty_row(rows, 11000 + seed++, false);
          std::vector<uint32_t> want(rows * n);
          for (uint32_t r = 0; r < rows; ++r) {
            float acc = init[r];
            for (uint64_t i = 0; i < n; ++i) {
              const float x = a[r * n + i], y = b[r * n + i];
              const float t = rev0 ? ref_op(o0, acc, x) : ref_op(o0, x, acc);
              acc = rev1 ? ref_op(o1, y, t) : ref_op(o1, t, y);
              want[r * n + i] = bits(acc);
            }
          }
          for (Level l : levels()) {
            std::vector<float> out(rows * n, 12345.0f);
            std::vector<const float*> pa(rows), pb(rows);
            std::vector<float*> po(rows);
            for (uint32_t r = 0; r < rows; ++r) {
              pa[r] = a.data() + r * n;
              pb[r] = b.data() + r * n;
              po[r] = out.data() + r * n;
            }
            simd::scan_rows(l, pa.data(), pb.data(), po.data(), init.data(), rows, n, o0, o1, rev0,
                            rev1);
            for (size_t k = 0; k < out.size(); ++k)
              ASSERT_EQ(bits(out[k]), want[k])
                  << simd::name(l) << " rows=" << rows << " n=" << n << " ops " << int(o0) << ","
                  << int(o1) << " at " << k;
          }
        }
}

TEST(Simd, FoldRowsEveryLevelMatchesTheLeftFold) {
  int seed = 0;
  for (uint32_t rows : {1u, 8u, 15u, 16u, 33u})
    for (uint64_t n : {uint64_t(1), uint64_t(2), uint64_t(9), uint64_t(10), uint64_t(257)})
      for (simd::LaneOp o : kLaneOps) {
        std::vector<float> x;
        for (uint32_t r = 0; r < rows; ++r) {
          const auto v = nasty_row(n, 12000 + seed * 64 + r, r % 3 == 2);
          x.insert(x.end(), v.begin(), v.end());
        }
        ++seed;
        std::vector<uint32_t> want(rows);
        for (uint32_t r = 0; r < rows; ++r) {
          float acc = x[r * n];
          for (uint64_t k = 1; k < n; ++k) acc = ref_op(o, acc, x[r * n + k]);
          want[r] = bits(acc);
        }
        for (Level l : levels()) {
          std::vector<const float*> px(rows);
          for (uint32_t r = 0; r < rows; ++r) px[r] = x.data() + r * n;
          std::vector<float> got(rows);
          simd::fold_rows(l, px.data(), got.data(), rows, n, o);
          for (uint32_t r = 0; r < rows; ++r)
            ASSERT_EQ(bits(got[r]), want[r]) << simd::name(l) << " rows=" << rows << " n=" << n;
        }
      }
}

// ---- rows of fp32 or bf16 elements straight into the lanes (simd.h scan_rows_t / fold_rows_t)
// bf16 from the definition: the upper 16 bits of the fp32 pattern, rounded to nearest, ties to
// the even one; a NaN keeps its upper bits with the quiet bit set.
uint16_t ref_to_bf16(float f) {
  const uint32_t u = bits(f);
  if (std::isnan(f)) return uint16_t((u >> 16) | 0x40);
  uint32_t hi = u >> 16;
  const uint32_t lo = u & 0xFFFF;
  if (lo > 0x8000 || (lo == 0x8000 && (hi & 1))) ++hi;
  return uint16_t(hi);
}
float ref_from_bf16(uint16_t h) { return from_bits(uint32_t(h) << 16); }

// Rows of one lane type: the elements (bf16-representable when t is bf16), and the bytes.
struct TypedRows {
  simd::LaneType t;
  uint64_t n;
  std::vector<float> val;   // rows x n, the values the kernel reads
  std::vector<uint8_t> mem; // rows x n elements of t, row r at r * pitch bytes
  uint64_t pitch;
  TypedRows(simd::LaneType t_, uint32_t rows, uint64_t n_, uint32_t seed, float scale)
      : t(t_), n(n_), val(size_t(rows) * n_) {
    const uint64_t eb = t == simd::LaneType::f32 ? 4 : 2;
    pitch = (n * eb + 63) / 64 * 64 + 2 * eb; // rows not all aligned alike
    mem.assign(rows * pitch + 64, 0);
    for (uint32_t r = 0; r < rows; ++r) {
      auto v = nasty_row(n, seed + r, r % 3 != 1);
      for (uint64_t i = 0; i < n; ++i) {
        float x = v[i] * scale;
        if (std::isnan(v[i])) x = v[i]; // keep the payloads
        if (t == simd::LaneType::bf16) {
          const uint16_t h = ref_to_bf16(x);
          std::memcpy(mem.data() + r * pitch + 2 * i, &h, 2);
          x = ref_from_bf16(h);
        } else {
          std::memcpy(mem.data() + r * pitch + 4 * i, &x, 4);
        }
        val[r * n + i] = x;
      }
    }
  }
  void* row(uint32_t r) { return mem.data() + r * pitch; }
  float read(uint32_t r, uint64_t i) const {
    if (t == simd::LaneType::f32) {
      float f;
      std::memcpy(&f, mem.data() + r * pitch + 4 * i, 4);
      return f;
    }
    uint16_t h;
    std::memcpy(&h, mem.data() + r * pitch + 2 * i, 2);
    return ref_from_bf16(h);
  }
};

const char* tname(simd::LaneType t) { return t == simd::LaneType::f32 ? "f32" : "bf16"; }

TEST(Simd, TypedScanRowsEveryLevelMatchTheRecurrenceWithRounding) {
  using simd::LaneType;
  int seed = 0;
  const LaneType kT[] = {LaneType::f32, LaneType::bf16};
  for (uint32_t rows : {1u, 9u, 15u, 16u, 17u, 31u, 40u, 70u})
    for (uint64_t n :
         {uint64_t(1), uint64_t(7), uint64_t(8), uint64_t(9), uint64_t(23), uint64_t(333)})
      for (LaneType t0 : kT)
        for (LaneType t1 : kT)
          for (LaneType to : kT) {
            // every operator pair on the short shapes, three on the others
            const bool all_ops = rows <= 17 && n <= 23;
            for (simd::LaneOp o0 : kLaneOps)
              for (simd::LaneOp o1 : kLaneOps) {
                ++seed;
                if (!all_ops && !(o0 == simd::LaneOp::multiply && o1 == simd::LaneOp::add) &&
                    !(o0 == simd::LaneOp::add && o1 == simd::LaneOp::subtract) &&
                    !(o0 == simd::LaneOp::max && o1 == simd::LaneOp::multiply))
                  continue;
                const bool rev0 = seed % 2, rev1 = seed % 3 == 0;
                TypedRows a(t0, rows, n, 30000 + seed * 97, 0.25f),
                    b(t1, rows, n, 50000 + seed * 97, 1.0f);
                const auto init = nasty_row(rows, 70000 + seed, false);
                std::vector<uint32_t> want(size_t(rows) * n);
                for (uint32_t r = 0; r < rows; ++r) {
                  float acc = init[r];
                  for (uint64_t i = 0; i < n; ++i) {
                    const float x = a.val[r * n + i], y = b.val[r * n + i];
                    const float t = rev0 ? ref_op(o0, acc, x) : ref_op(o0, x, acc);
                    acc = rev1 ? ref_op(o1, y, t) : ref_op(o1, t, y);
                    // the state stays fp32; a bf16 row stores it rounded
                    want[r * n + i] =
                        to == LaneType::f32 ? bits(acc) : bits(ref_from_bf16(ref_to_bf16(acc)));
                  }
                }
                for (Level l : levels()) {
                  TypedRows o(to, rows, n, 1, 1.0f);
                  std::vector<const void*> pa(rows), pb(rows);
                  std::vector<void*> po(rows);
                  for (uint32_t r = 0; r < rows; ++r) {
                    pa[r] = a.row(r);
                    pb[r] = b.row(r);
                    po[r] = o.row(r);
                  }
                  simd::scan_rows_t(l, t0, pa.data(), t1, pb.data(), to, po.data(), init.data(),
                                    rows, n, o0, o1, rev0, rev1);
                  for (uint32_t r = 0; r < rows; ++r)
                    for (uint64_t i = 0; i < n; ++i)
                      ASSERT_EQ(bits(o.read(r, i)), want[r * n + i])
                          << simd::name(l) << " " << tname(t0) << tname(t1) << "->" << tname(to)
                          << " rows=" << rows << " n=" << n << " ops " << int(o0) << "," << int(o1)
                          << " row " << r << " col " << i;
                }
              }
          }
}

// In place (out rows are the in1 rows), bf16 and fp32, at every level.
TEST(Simd, TypedScanRowsInPlaceEveryLevel) {
  using simd::LaneType;
  for (LaneType t : {LaneType::f32, LaneType::bf16})
    for (uint32_t rows : {16u, 33u, 64u})
      for (uint64_t n : {uint64_t(8), uint64_t(61), uint64_t(1000)}) {
        TypedRows a(LaneType::f32, rows, n, 81000 + rows, 0.25f), b0(t, rows, n, 82000 + n, 1.0f);
        const auto init = nasty_row(rows, 83000, false);
        std::vector<uint32_t> want(size_t(rows) * n);
        for (uint32_t r = 0; r < rows; ++r) {
          float acc = init[r];
          for (uint64_t i = 0; i < n; ++i) {
            acc = ref_op(simd::LaneOp::add, ref_op(simd::LaneOp::multiply, a.val[r * n + i], acc),
                         b0.val[r * n + i]);
            want[r * n + i] =
                t == LaneType::f32 ? bits(acc) : bits(ref_from_bf16(ref_to_bf16(acc)));
          }
        }
        for (Level l : levels()) {
          TypedRows b = b0;
          std::vector<const void*> pa(rows), pb(rows);
          std::vector<void*> po(rows);
          for (uint32_t r = 0; r < rows; ++r) {
            pa[r] = a.row(r);
            pb[r] = b.row(r);
            po[r] = b.row(r);
          }
          simd::scan_rows_t(l, LaneType::f32, pa.data(), t, pb.data(), t, po.data(), init.data(),
                            rows, n, simd::LaneOp::multiply, simd::LaneOp::add, false, false);
          for (uint32_t r = 0; r < rows; ++r)
            for (uint64_t i = 0; i < n; ++i)
              ASSERT_EQ(bits(b.read(r, i)), want[r * n + i])
                  << simd::name(l) << " " << tname(t) << " rows=" << rows << " n=" << n << " row "
                  << r << " col " << i;
        }
      }
}

TEST(Simd, TypedFoldRowsEveryLevelMatchTheLeftFold) {
  using simd::LaneType;
  int seed = 0;
  for (LaneType t : {LaneType::f32, LaneType::bf16})
    for (uint32_t rows : {1u, 8u, 15u, 16u, 17u, 33u, 47u, 64u, 65u, 100u, 130u})
      for (uint64_t n : {uint64_t(1), uint64_t(2), uint64_t(8), uint64_t(9), uint64_t(16),
                         uint64_t(17), uint64_t(100), uint64_t(2049)})
        for (simd::LaneOp o : kLaneOps) {
          if (n > 100 && rows > 65 && o != simd::LaneOp::add && o != simd::LaneOp::multiply)
            continue;
          ++seed;
          // multiply: factors near 1 (and the specials), so long products stay in range
          TypedRows x(t, rows, n, 90000 + seed * 131, o == simd::LaneOp::multiply ? 0.15f : 1.0f);
          if (o == simd::LaneOp::multiply)
            for (uint32_t r = 0; r < rows; ++r)
              for (uint64_t i = 0; i < n; ++i) {
                float& v = x.val[r * n + i];
                if (!std::isfinite(v) || v == 0.0f) continue;
                v = 1.0f + v / 16.0f;
                if (t == LaneType::bf16) {
                  const uint16_t h = ref_to_bf16(v);
                  std::memcpy(static_cast<uint8_t*>(x.row(r)) + 2 * i, &h, 2);
                  v = ref_from_bf16(h);
                } else {
                  std::memcpy(static_cast<uint8_t*>(x.row(r)) + 4 * i, &v, 4);
                }
              }
          std::vector<uint32_t> want(rows);
          for (uint32_t r = 0; r < rows; ++r) {
            float acc = x.val[r * n];
            for (uint64_t k = 1; k < n; ++k) acc = ref_op(o, acc, x.val[r * n + k]);
            want[r] = bits(acc);
          }
          for (Level l : levels()) {
            std::vector<const void*> px(rows);
            for (uint32_t r = 0; r < rows; ++r) px[r] = x.row(r);
            std::vector<float> got(rows, 777.0f);
            simd::fold_rows_t(l, t, px.data(), got.data(), rows, n, o);
            for (uint32_t r = 0; r < rows; ++r)
              ASSERT_EQ(bits(got[r]), want[r])
                  << simd::name(l) << " " << tname(t) << " rows=" << rows << " n=" << n << " op "
                  << int(o) << " row " << r;
          }
        }
}

// The instructions on the lane paths: cumsum into bf16 in place of its data operand, and a
// two-axis add reduce, at every level equal to the scalar level's bits.
// tensor_reduce max / min of bf16 rows: the AVX-512 level reads the bf16 bytes directly
// (simd.h reduce_maxmin_bf16_row); every level gives the scalar level's bits, and NaN-free rows
// with a nonzero extreme give the plain maximum / minimum.
TEST(Simd, TensorReduceMaxMinBf16RowsAgreeAcrossLevels) {
  LevelGuard guard;
  const uint32_t P = 24;
  for (uint32_t inner : {64u, 130u, 333u})
    for (AluOp op : {AluOp::max, AluOp::min}) {
      const uint32_t F = 2 * inner;
      auto x = nasty_row(uint64_t(P) * F, 16000 + inner, true);
      for (uint32_t p = 0; p < P; p += 3) // NaN-free rows, some with a zero extreme
        for (uint32_t j = 0; j < F; ++j) {
          float& v = x[p * F + j];
          if (std::isnan(v)) v = 1.0f;
          if (p % 2 == 0) v = op == AluOp::max ? -std::fabs(v) : std::fabs(v);
        }
      std::vector<std::vector<float>> res;
      for (Level l : levels()) {
        ASSERT_TRUE(simd::set_level(l));
        Bench b;
        AccessPattern S = Bench::sb(DType::bf16, P, F);
        b.put(S, x);
        const auto xs = b.get(S); // the bf16 values as fp32
        S.ndims = 2;
        S.dims[0] = {int32_t(inner), 2};
        S.dims[1] = {1, inner};
        const auto D = Bench::sb(DType::fp32, P, 2, 40000);
        Inst r = make(Opcode::tensor_reduce, Engine::dve);
        set_ap(r, "dst", D);
        set_ap(r, "src", S);
        set_e(r, "op", op);
        set_i(r, "axes", 1);
        b.run(r);
        res.push_back(b.get(D));
        for (uint32_t p = 0; p < P; ++p)
          for (uint32_t g = 0; g < 2; ++g) {
            bool nan = false;
            float m = xs[p * F + g * inner];
            for (uint32_t k = 0; k < inner; ++k) {
              const float v = xs[p * F + g * inner + k];
              nan |= std::isnan(v);
              m = op == AluOp::max ? std::max(m, v) : std::min(m, v);
            }
            if (!nan && m != 0.0f) {
              ASSERT_EQ(bits(res.back()[p * 2 + g]), bits(m)) << simd::name(l);
            }
          }
      }
      for (size_t k = 1; k < res.size(); ++k)
        for (size_t i = 0; i < res[0].size(); ++i)
          ASSERT_EQ(bits(res[k][i]), bits(res[0][i])) << "level " << k << " at " << i;
    }
}

// scan as a cumsum from 0.5: dst[j] = (state * ones[j]) + x[j], the state fp32.
Inst cumsum_inst(const AccessPattern& dst, const AccessPattern& ones, const AccessPattern& x) {
  Inst in = make(Opcode::scan, Engine::dve);
  set_ap(in, "dst", dst);
  set_ap(in, "in0", ones);
  set_ap(in, "in1", x);
  set_f(in, "init", 0.5f);
  set_e(in, "op0", AluOp::multiply);
  set_e(in, "op1", AluOp::add);
  return in;
}

TEST(Simd, ScanAndReduceInstructionsAgreeAcrossLevels) {
  LevelGuard guard;
  const uint32_t P = 40, F = 300;
  const auto x = nasty_row(P * F, 13000, true);
  std::vector<std::vector<float>> scans, sums;
  for (Level l : levels()) {
    ASSERT_TRUE(simd::set_level(l));
    Bench b;
    const auto X = Bench::sb(DType::bf16, P, F), ONES = Bench::sb(DType::fp32, P, F, 8192);
    b.put(X, x);
    b.put(ONES, std::vector<float>(P * F, 1.0f));
    b.run(cumsum_inst(X, ONES, X));
    scans.push_back(b.get(X));
    // reduce: src [P, 30 x 10] fp32, axes = 1 -> [P, 30]
    AccessPattern S = Bench::sb(DType::fp32, P, F, 20000);
    b.put(S, x);
    S.ndims = 2;
    S.dims[0] = {10, 30};
    S.dims[1] = {1, 10};
    const auto D = Bench::sb(DType::fp32, P, 30, 40000);
    Inst r = make(Opcode::tensor_reduce, Engine::dve);
    set_ap(r, "dst", D);
    set_ap(r, "src", S);
    set_e(r, "op", AluOp::add);
    set_i(r, "axes", 1);
    set_i(r, "negate", 1);
    b.run(r);
    sums.push_back(b.get(D));
    // the reference for the reduce, from the definition
    const auto got = sums.back();
    for (uint32_t p = 0; p < P; ++p)
      for (uint32_t g = 0; g < 30; ++g) {
        // The documented NaN rule (simd_lanes.cpp): a's NaN if a is NaN, else b's. Spelled
        // out: `acc += x` leaves the payload to code generation (it differs at -O0).
        auto add = [](float a, float b) { return a != a ? a + a : b != b ? b + b : a + b; };
        float acc = x[p * F + g * 10];
        for (uint32_t k = 1; k < 10; ++k) acc = add(acc, x[p * F + g * 10 + k]);
        ASSERT_EQ(bits(got[p * 30 + g]), bits(-acc)) << simd::name(l);
      }
  }
  for (size_t k = 1; k < scans.size(); ++k) {
    for (size_t i = 0; i < scans[0].size(); ++i) ASSERT_EQ(bits(scans[k][i]), bits(scans[0][i]));
  }
}

// bf16 sources of the add fold and the scan are converted into a padded row buffer
// (dve.cpp conv_stride) before the lane kernels: rows of 2048 and of an odd length, every
// level, against the left fold and the recurrence written out (finite values: no NaN rule).
TEST(Simd, Bf16FoldAndScanThroughConvertedRowsMatchThePlainLoops) {
  LevelGuard guard;
  for (uint32_t F : {2048u, 333u}) {
    const uint32_t P = 40;
    for (Level l : levels()) {
      ASSERT_TRUE(simd::set_level(l));
      Bench b;
      const auto X = Bench::sb(DType::bf16, P, F), ONES = Bench::sb(DType::fp32, P, F, 8192),
                 Y = Bench::sb(DType::fp32, P, F, 20480), D = Bench::sb(DType::fp32, P, 1, 40960);
      b.put(X, nasty_row(uint64_t(P) * F, 700 + F, false));
      b.put(ONES, std::vector<float>(size_t(P) * F, 1.0f));
      const auto x = b.get(X); // the bf16-rounded values
      Inst r = make(Opcode::tensor_reduce, Engine::dve);
      set_ap(r, "dst", D);
      set_ap(r, "src", X);
      set_e(r, "op", AluOp::add);
      set_i(r, "axes", 1);
      b.run(r);
      b.run(cumsum_inst(Y, ONES, X));
      const auto sum = b.get(D), scan = b.get(Y);
      for (uint32_t p = 0; p < P; ++p) {
        float acc = x[size_t(p) * F];
        for (uint32_t j = 1; j < F; ++j) acc += x[size_t(p) * F + j];
        ASSERT_EQ(bits(sum[p]), bits(acc)) << simd::name(l) << " F " << F << " p " << p;
        float st = 0.5f;
        for (uint32_t j = 0; j < F; ++j) {
          st = st * 1.0f + x[size_t(p) * F + j];
          ASSERT_EQ(bits(scan[size_t(p) * F + j]), bits(st))
              << simd::name(l) << " F " << F << " p " << p << " j " << j;
        }
      }
    }
  }
}

// bf16 rows read straight into the lanes by the instructions (dve.cpp): a bf16 cumsum into a
// bf16 dst and an add / multiply fold of bf16 rows (one and two free axes), NaN / inf included,
// partition counts and lengths that are not multiples of 16, every level, against the plain
// loops with the rounding written from the definition.
TEST(Simd, Bf16RowsStraightIntoTheLanesMatchThePlainLoops) {
  LevelGuard guard;
  for (uint32_t P : {70u, 128u})
    for (uint32_t F : {333u, 2048u}) {
      for (Level l : levels()) {
        ASSERT_TRUE(simd::set_level(l));
        Bench b;
        const auto X = Bench::sb(DType::bf16, P, F), ONES = Bench::sb(DType::fp32, P, F, 8192),
                   Y = Bench::sb(DType::bf16, P, F, 20480), D = Bench::sb(DType::fp32, P, 2, 40960);
        auto xv = nasty_row(uint64_t(P) * F, 800 + F + P, true);
        b.put(X, xv);
        std::vector<float> ones(size_t(P) * F);
        std::mt19937 g(F);
        std::uniform_real_distribution<float> near1(0.95f, 1.05f);
        for (auto& v : ones) v = near1(g);
        b.put(ONES, ones);
        const auto x = b.get(X); // the bf16-rounded values
        b.run(cumsum_inst(Y, ONES, X));
        const auto scan = b.get(Y);
        for (uint32_t p = 0; p < P; ++p) {
          float st = 0.5f;
          for (uint32_t j = 0; j < F; ++j) {
            const size_t k = size_t(p) * F + j;
            st = ref_op(simd::LaneOp::add, ref_op(simd::LaneOp::multiply, ones[k], st), x[k]);
            ASSERT_EQ(bits(scan[k]), bits(ref_from_bf16(ref_to_bf16(st))))
                << simd::name(l) << " P " << P << " F " << F << " p " << p << " j " << j;
          }
        }
        for (AluOp op : {AluOp::add, AluOp::multiply}) {
          const simd::LaneOp lop = op == AluOp::add ? simd::LaneOp::add : simd::LaneOp::multiply;
          if (op == AluOp::multiply) { // factors near 1 (specials kept)
            for (auto& v : xv)
              if (std::isfinite(v) && v != 0.0f) v = 1.0f + v / 64.0f;
            b.put(X, xv);
          }
          const auto xm = b.get(X);
          AccessPattern S = X; // two groups of F / 2 (the second longer when F is odd)
          S.ndims = 2;
          S.dims[0] = {int32_t(F / 2), 2};
          S.dims[1] = {1, F / 2};
          Inst r = make(Opcode::tensor_reduce, Engine::dve);
          set_ap(r, "dst", D);
          set_ap(r, "src", S);
          set_e(r, "op", op);
          set_i(r, "axes", 1);
          b.run(r);
          const auto got = b.get(D);
          for (uint32_t p = 0; p < P; ++p)
            for (uint32_t gi = 0; gi < 2; ++gi) {
              const float* row = xm.data() + size_t(p) * F + gi * (F / 2);
              float acc = row[0];
              for (uint32_t k = 1; k < F / 2; ++k) acc = ref_op(lop, acc, row[k]);
              ASSERT_EQ(bits(got[p * 2 + gi]), bits(acc))
                  << simd::name(l) << " op " << int(op) << " P " << P << " F " << F << " p " << p;
            }
        }
      }
    }
}

// The host stride (interp/core/target.h host_stride()) is more than a partition: tiles that end on
// the last byte of every partition (127 included), in SBUF and PSUM, read 16 rows in lockstep
// by the scan and fold kernels, give the plain loops' values, and the pad between partitions
// is never written. Checked through views and through raw host addresses p * stride + offset.
TEST(Simd, ScanAndFoldOnTheLastBytesOfEveryPartitionMatchThePlainLoop) {
  LevelGuard guard;
  constexpr uint64_t kPart = 224 * 1024, kPsum = 16384; // trn2
  const uint32_t P = 128, F = 1000, W = 4 * F;
  std::mt19937 g(1607);
  auto uniform = [&](float lo, float hi) {
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(P * F);
    for (float& x : v) x = d(g);
    return v;
  };
  const auto a = uniform(-1.0f, 1.0f), b = uniform(-1.0f, 1.0f), s = uniform(-2.0f, 2.0f),
             m = uniform(0.9f, 1.1f);
  std::vector<float> scan_ref(P * F), add_ref(P), mul_ref(P);
  for (uint32_t p = 0; p < P; ++p) {
    float acc = 0.25f;
    for (uint32_t j = 0; j < F; ++j) {
      const float t = a[p * F + j] * acc; // op0 = multiply (in0, state)
      acc = t + b[p * F + j];             // op1 = add
      scan_ref[p * F + j] = acc;
    }
    float sum = s[p * F], prod = m[p * F];
    for (uint32_t j = 1; j < F; ++j) sum = sum + s[p * F + j], prod = prod * m[p * F + j];
    add_ref[p] = sum, mul_ref[p] = prod;
  }
  for (Level l : levels()) {
    ASSERT_TRUE(simd::set_level(l));
    Bench bench(Target::trn2, kPart);
    ASSERT_GT(bench.st.sbuf_stride, kPart);
    ASSERT_GT(bench.st.psum_stride, kPsum);
    for (uint32_t p = 0; p < P; ++p) { // the pads, to check they stay as they are
      std::memset(bench.st.sbuf + p * bench.st.sbuf_stride + kPart, 0x5a,
                  bench.st.sbuf_stride - kPart);
      std::memset(bench.st.psum + p * bench.st.psum_stride + kPsum, 0x5a,
                  bench.st.psum_stride - kPsum);
    }
    const auto A = Bench::sb(DType::fp32, P, F, 0), B = Bench::sb(DType::fp32, P, F, W);
    const auto X = Bench::sb(DType::fp32, P, F, kPart - W),
               Y = Bench::ps(DType::fp32, P, F, kPsum - W);
    bench.put(A, a);
    bench.put(B, b);
    for (const AccessPattern& dst : {X, Y}) {
      Inst in = make(Opcode::scan, Engine::dve);
      set_ap(in, "dst", dst);
      set_ap(in, "in0", A);
      set_ap(in, "in1", B);
      set_f(in, "init", 0.25f);
      set_e(in, "op0", AluOp::multiply);
      set_e(in, "op1", AluOp::add);
      bench.run(in);
      const auto got = bench.get(dst);
      uint8_t* mem = dst.space == MemSpace::sbuf ? bench.st.sbuf : bench.st.psum;
      const uint64_t stride =
          dst.space == MemSpace::sbuf ? bench.st.sbuf_stride : bench.st.psum_stride;
      for (uint32_t p = 0; p < P; ++p)
        for (uint32_t j = 0; j < F; ++j) {
          ASSERT_EQ(bits(got[p * F + j]), bits(scan_ref[p * F + j]))
              << simd::name(l) << " " << name_of(dst.space) << " row " << p << " at " << j;
          float raw;
          std::memcpy(&raw, mem + p * stride + dst.offset + 4 * j, 4);
          ASSERT_EQ(bits(raw), bits(scan_ref[p * F + j])) << simd::name(l) << " row " << p;
        }
    }
    // The folds read [P, F] sources that end on the last byte of every partition.
    const auto D = Bench::sb(DType::fp32, P, 2, 2 * W);
    for (auto [op, src, ref] :
         {std::tuple{AluOp::add, &s, &add_ref}, std::tuple{AluOp::multiply, &m, &mul_ref}}) {
      bench.put(X, *src);
      Inst r = make(Opcode::tensor_reduce, Engine::dve);
      set_ap(r, "dst", Bench::sb(DType::fp32, P, 1, 2 * W));
      set_ap(r, "src", X);
      set_e(r, "op", op);
      set_i(r, "axes", 1);
      bench.run(r);
      const auto got = bench.get(D);
      for (uint32_t p = 0; p < P; ++p)
        ASSERT_EQ(bits(got[p * 2]), bits((*ref)[p])) << simd::name(l) << " row " << p;
    }
    for (uint32_t p = 0; p < P; ++p) {
      const uint8_t* sp = bench.st.sbuf + p * bench.st.sbuf_stride + kPart;
      const uint8_t* pp = bench.st.psum + p * bench.st.psum_stride + kPsum;
      for (uint64_t i = 0; i < bench.st.sbuf_stride - kPart; ++i) ASSERT_EQ(sp[i], 0x5a) << p;
      for (uint64_t i = 0; i < bench.st.psum_stride - kPsum; ++i) ASSERT_EQ(pp[i], 0x5a) << p;
    }
  }
}

// ---- activation exp -----------------------------------------------------------------------------
// Distance in fp32 ulps (finite or infinite values of one sign ordered by their bits).
int64_t ulps(float a, float b) {
  auto key = [](float f) {
    const int64_t u = bits(f);
    return u & 0x80000000 ? -(u & 0x7fffffff) : u;
  };
  return std::llabs(key(a) - key(b));
}

TEST(Simd, ExpWithinOneUlpOfStdExpOverASweep) {
  // Every 61st fp32 value from -104 to 89 (about 17 million), against std::exp in double.
  int64_t worst = 0, differ = 0, total = 0;
  const uint32_t neg_lo = bits(-104.0f), pos_hi = bits(89.0f);
  auto check = [&](float x) {
    const float want = static_cast<float>(std::exp(static_cast<double>(x)));
    const float got = simd::exp_f32(x);
    const int64_t u = ulps(got, want);
    worst = std::max(worst, u);
    differ += u != 0;
    ++total;
  };
  for (uint32_t u = 0x80000000u; u <= neg_lo; u += 61) check(from_bits(u));
  for (uint32_t u = 0; u <= pos_hi; u += 61) check(from_bits(u));
  EXPECT_LE(worst, 1) << differ << " of " << total << " differ";
  EXPECT_LT(differ, total / 1000) << "worst " << worst; // nearly always the same rounding
  RecordProperty("exp_ulps_worst", int(worst));
  RecordProperty("exp_ulps_differ", int(differ));
  std::printf(
      "exp sweep: %lld of %lld values differ from (float)std::exp(double), worst %lld ulp\n",
      (long long)differ, (long long)total, (long long)worst);
  // Limits and specials.
  EXPECT_EQ(simd::exp_f32(-INFINITY), 0.0f);
  EXPECT_EQ(simd::exp_f32(INFINITY), INFINITY);
  EXPECT_EQ(simd::exp_f32(89.0f), INFINITY);
  EXPECT_EQ(simd::exp_f32(-104.0f), 0.0f);
  EXPECT_EQ(simd::exp_f32(0.0f), 1.0f);
  EXPECT_EQ(simd::exp_f32(-0.0f), 1.0f);
  EXPECT_TRUE(std::isnan(simd::exp_f32(NAN)));
  EXPECT_LE(ulps(simd::exp_f32(88.72283f), static_cast<float>(std::exp(double(88.72283f)))), 1);
}

TEST(Simd, ExpRowEveryLevelBitIdentical) {
  for (uint64_t n : kLengths) {
    std::vector<float> x = nasty_row(n, 14000 + uint32_t(n), true);
    for (size_t i = 0; i < x.size(); i += 5) x[i] *= 12.0f; // reach the overflow / underflow ends
    for (float scale : {1.0f, -0.75f})
      for (float bias : {0.0f, 0.5f}) {
        std::vector<uint32_t> want(n);
        for (uint64_t i = 0; i < n; ++i) want[i] = bits(simd::exp_f32(x[i] * scale + bias));
        for (Level l : levels()) {
          std::vector<float> out(n);
          simd::exp_row(l, x.data(), n, scale, bias, out.data());
          for (uint64_t i = 0; i < n; ++i) {
            ASSERT_EQ(bits(out[i]), want[i]) << simd::name(l) << " n=" << n << " x=" << x[i];
            const float a = x[i] * scale + bias; // and the math: within 1 ulp of std::exp
            if (std::isnan(a)) {
              ASSERT_TRUE(std::isnan(out[i]));
              continue;
            }
            ASSERT_LE(ulps(out[i], static_cast<float>(std::exp(static_cast<double>(a)))), 1) << a;
          }
        }
      }
  }
}

// ---- the other activation functions (simd_math.cpp) ------------------------------------------
using simd::MathFn;
struct MathCase {
  MathFn f;
  const char* name;
  float lo, hi; // swept range
};
const MathCase kMath[] = {
    {MathFn::log, "log", 0.0f, 3.0e38f},
    {MathFn::sqrt, "sqrt", 0.0f, 3.0e38f},
    {MathFn::rsqrt, "rsqrt", 0.0f, 3.0e38f},
    {MathFn::reciprocal, "reciprocal", -3.0e38f, 3.0e38f},
    {MathFn::tanh, "tanh", -20.0f, 20.0f},
    {MathFn::sigmoid, "sigmoid", -80.0f, 80.0f},
    {MathFn::gelu_apprx_tanh, "gelu_apprx_tanh", -9.0f, 20.0f},
    {MathFn::gelu_apprx_sigmoid, "gelu_apprx_sigmoid", -50.0f, 50.0f},
    {MathFn::gelu_apprx_sigmoid_dx, "gelu_apprx_sigmoid_dx", -50.0f, 50.0f},
    {MathFn::silu, "silu", -80.0f, 80.0f},
    {MathFn::silu_dx, "silu_dx", -80.0f, 80.0f},
    {MathFn::softplus, "softplus", -80.0f, 80.0f},
    {MathFn::mish, "mish", -80.0f, 80.0f},
    {MathFn::erf_dx, "erf_dx", -9.0f, 9.0f},
    {MathFn::gelu, "gelu", -3.0e38f, 3.0e38f},
    {MathFn::gelu_dx, "gelu_dx", -3.0e38f, 3.0e38f},
    {MathFn::erf, "erf", -3.0e38f, 3.0e38f},
    {MathFn::arctan, "arctan", -3.0e38f, 3.0e38f},
    {MathFn::sin, "sin", -3.0e38f, 3.0e38f},
};

// The textbook formula in long double, rounded once to fp32.
float math_reference(MathFn f, float xf) {
  using L = long double;
  const L x = xf;
  auto sig = [](L v) { return 1.0L / (1.0L + std::exp(-v)); };
  auto sp = [](L v) { return std::max(v, 0.0L) + std::log1p(std::exp(-std::fabs(v))); };
  L r = 0;
  switch (f) {
  case MathFn::log: r = std::log(x); break;
  case MathFn::sqrt: r = std::sqrt(x); break;
  case MathFn::rsqrt: r = 1.0L / std::sqrt(x); break;
  case MathFn::reciprocal: r = 1.0L / x; break;
  case MathFn::tanh: r = std::tanh(x); break;
  case MathFn::sigmoid: r = sig(x); break;
  case MathFn::gelu_apprx_tanh: // 0.5 x (1 + tanh z) without the cancellation of 1 + tanh z
    r = x / (1 + std::exp(-2 * std::sqrt(2 / std::numbers::pi_v<L>) * (x + 0.044715L * x * x * x)));
    break;
  case MathFn::gelu_apprx_sigmoid: r = x * sig(1.702L * x); break;
  case MathFn::gelu_apprx_sigmoid_dx: {
    const L g = sig(1.702L * x);
    r = g * (1 + 1.702L * x * (1 - g));
    break;
  }
  case MathFn::silu: r = x * sig(x); break;
  case MathFn::silu_dx: r = sig(x) * (1 + x * (1 - sig(x))); break;
  case MathFn::softplus: r = sp(x); break;
  case MathFn::mish: r = x * std::tanh(sp(x)); break;
  case MathFn::erf_dx: r = 2 / std::sqrt(std::numbers::pi_v<L>) * std::exp(-x * x); break;
  // 0.5 x (1 + erf(x / sqrt 2)) = 0.5 x erfc(-x / sqrt 2): no cancellation for negative x
  case MathFn::gelu: r = 0.5L * x * std::erfc(-x / std::sqrt(2.0L)); break;
  case MathFn::gelu_dx:
    r = 0.5L * std::erfc(-x / std::sqrt(2.0L)) +
        x / std::sqrt(2 * std::numbers::pi_v<L>) * std::exp(-0.5L * x * x);
    break;
  case MathFn::erf: r = std::erf(x); break;
  case MathFn::arctan: r = std::atan(x); break;
  case MathFn::sin: r = std::sin(x); break;
  }
  return static_cast<float>(r);
}

// What activation computed before these vector forms: the formula in double through libm.
float math_libm(MathFn f, float xf) {
  const double x = xf;
  auto sig = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  auto sp = [](double v) { return std::max(v, 0.0) + std::log1p(std::exp(-std::fabs(v))); };
  double r = 0;
  switch (f) {
  case MathFn::log: r = std::log(x); break;
  case MathFn::sqrt: r = std::sqrt(x); break;
  case MathFn::rsqrt: r = 1.0 / std::sqrt(x); break;
  case MathFn::reciprocal: r = 1.0 / x; break;
  case MathFn::tanh: r = std::tanh(x); break;
  case MathFn::sigmoid: r = sig(x); break;
  case MathFn::gelu_apprx_tanh:
    r = 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
    break;
  case MathFn::gelu_apprx_sigmoid: r = x * sig(1.702 * x); break;
  case MathFn::gelu_apprx_sigmoid_dx: {
    const double g = sig(1.702 * x);
    r = g * (1.0 + 1.702 * x * (1.0 - g));
    break;
  }
  case MathFn::silu: r = x * sig(x); break;
  case MathFn::silu_dx: {
    const double g = sig(x);
    r = g * (1.0 + x * (1.0 - g));
    break;
  }
  case MathFn::softplus: r = sp(x); break;
  case MathFn::mish: r = x * std::tanh(sp(x)); break;
  case MathFn::erf_dx: r = 2.0 / std::sqrt(std::numbers::pi) * std::exp(-x * x); break;
  case MathFn::gelu: r = 0.5 * x * (1.0 + std::erf(x * 0.70710678118654752440)); break;
  case MathFn::gelu_dx:
    r = 0.5 * (1.0 + std::erf(x * 0.70710678118654752440)) +
        x * 0.39894228040143267794 * std::exp(-0.5 * x * x);
    break;
  case MathFn::erf: r = std::erf(x); break;
  case MathFn::arctan: r = std::atan(x); break;
  case MathFn::sin: r = std::sin(x); break;
  }
  return static_cast<float>(r);
}

TEST(Simd, MathFunctionsWithinOneUlpOfTheirFormulaOverASweep) {
  // About 200k fp32 values per sign of each range (every k-th bit pattern), against the formula
  // in long double rounded to fp32.
  for (const MathCase& c : kMath) {
    int64_t worst = 0, differ = 0, total = 0, libm_worst = 0, libm_differ = 0;
    auto sweep = [&](uint32_t from, uint32_t to) { // bit patterns [from, to], one sign
      const uint32_t step = std::max<uint32_t>(1, (to - from) / 200000);
      for (uint32_t u = from; u <= to && u >= from; u += step) {
        const float x = from_bits(u);
        const float got = simd::math_f32(c.f, x), want = math_reference(c.f, x);
        if (std::isnan(want)) {
          ASSERT_TRUE(std::isnan(got)) << c.name << " x=" << x;
          continue;
        }
        const int64_t d = ulps(got, want);
        ASSERT_LE(d, 1) << c.name << " x=" << x << " got " << got << " want " << want;
        worst = std::max(worst, d);
        differ += d != 0;
        ++total;
        const int64_t dl = ulps(got, math_libm(c.f, x)); // reported, not asserted
        libm_worst = std::max(libm_worst, dl);
        libm_differ += dl != 0;
      }
    };
    if (c.hi > 0) sweep(c.lo > 0 ? bits(c.lo) : 0u, bits(c.hi));
    if (c.lo < 0) sweep(0x80000000u, bits(c.lo));
    std::printf("%s: of %lld values, %lld differ from the long-double formula (worst %lld ulp), "
                "%lld from the libm formula in double (worst %lld ulp)\n",
                c.name, (long long)total, (long long)differ, (long long)worst,
                (long long)libm_differ, (long long)libm_worst);
    EXPECT_LT(differ, total / 100) << c.name;
  }
  // Limits and specials (the scalar definition).
  EXPECT_EQ(simd::math_f32(MathFn::log, 0.0f), -INFINITY);
  EXPECT_EQ(simd::math_f32(MathFn::log, INFINITY), INFINITY);
  EXPECT_EQ(simd::math_f32(MathFn::log, 1.0f), 0.0f);
  EXPECT_TRUE(std::isnan(simd::math_f32(MathFn::log, -1.0f)));
  EXPECT_EQ(simd::math_f32(MathFn::log, from_bits(1u)), static_cast<float>(std::log(0x1p-149)));
  EXPECT_EQ(bits(simd::math_f32(MathFn::tanh, -0.0f)), bits(-0.0f));
  EXPECT_EQ(simd::math_f32(MathFn::tanh, INFINITY), 1.0f);
  EXPECT_EQ(simd::math_f32(MathFn::tanh, -INFINITY), -1.0f);
  EXPECT_EQ(simd::math_f32(MathFn::sigmoid, -INFINITY), 0.0f);
  EXPECT_EQ(simd::math_f32(MathFn::sigmoid, INFINITY), 1.0f);
  EXPECT_EQ(simd::math_f32(MathFn::softplus, 100.0f), 100.0f);
  EXPECT_EQ(simd::math_f32(MathFn::rsqrt, 0.0f), INFINITY);
  EXPECT_EQ(simd::math_f32(MathFn::reciprocal, -0.0f), -INFINITY);
  EXPECT_EQ(simd::math_f32(MathFn::gelu_apprx_tanh, 0.0f), 0.0f);
  EXPECT_EQ(simd::math_f32(MathFn::silu_dx, 0.0f), 0.5f);
  // Every fp32 value of the narrow ranges where the new forms are delicate: gelu_dx around its
  // root (x ~ -0.7518, where Phi(x) and x phi(x) cancel), sin around multiples of pi / 2 up
  // to 2^28 and above it (the exact reduction), erf / gelu around the 0.75 switch.
  auto dense = [&](MathFn f, float from, float to) {
    int64_t n = 0;
    for (float x = from; x <= to; x = std::nextafter(x, INFINITY), ++n) {
      const float got = simd::math_f32(f, x), want = math_reference(f, x);
      ASSERT_LE(ulps(got, want), 1) << int(f) << " x=" << x << " got " << got << " want " << want;
    }
    EXPECT_GT(n, 1000);
  };
  auto around = [&](MathFn f, float c) { // 3000 fp32 values either side of c
    dense(f, from_bits(bits(c) - 3000), from_bits(bits(c) + 3000));
  };
  dense(MathFn::gelu_dx, -0.7530f, -0.7505f);
  dense(MathFn::gelu_dx, -1.0610f, -1.0600f);
  dense(MathFn::gelu_dx, 1.0600f, 1.0610f);
  dense(MathFn::erf, 0.7495f, 0.7505f);
  dense(MathFn::gelu, -1.0610f, -1.0600f);
  for (double m : {1.0, 2.0, 3.0, 1e3, 12345.0, 1e6, 1e8}) around(MathFn::sin, float(m * M_PI_2));
  around(MathFn::sin, 0x1p28f);
  std::mt19937 g(8);
  std::uniform_int_distribution<uint32_t> big(bits(0x1p28f), bits(3.0e38f));
  for (int i = 0; i < 100000; ++i) { // the exact reduction over the whole range
    const float x = from_bits(big(g) | (i & 1 ? 0x80000000u : 0u));
    ASSERT_LE(ulps(simd::math_f32(MathFn::sin, x), math_reference(MathFn::sin, x)), 1) << x;
  }
  // Limits of the new forms (gelu_dx: the limits 1 and 0; the libm formula gave NaN = inf * 0).
  EXPECT_EQ(simd::math_f32(MathFn::gelu_dx, INFINITY), 1.0f);
  EXPECT_EQ(simd::math_f32(MathFn::gelu_dx, -INFINITY), 0.0f);
  EXPECT_EQ(simd::math_f32(MathFn::gelu, INFINITY), INFINITY);
  EXPECT_EQ(bits(simd::math_f32(MathFn::gelu, -INFINITY)), bits(-0.0f)); // the formula: NaN
  EXPECT_EQ(simd::math_f32(MathFn::gelu, -1e30f), 0.0f);
  EXPECT_EQ(simd::math_f32(MathFn::erf, INFINITY), 1.0f);
  EXPECT_EQ(simd::math_f32(MathFn::erf, -INFINITY), -1.0f);
  EXPECT_EQ(simd::math_f32(MathFn::arctan, INFINITY), static_cast<float>(M_PI_2));
  EXPECT_EQ(simd::math_f32(MathFn::arctan, -INFINITY), -static_cast<float>(M_PI_2));
  EXPECT_TRUE(std::isnan(simd::math_f32(MathFn::sin, INFINITY)));
  EXPECT_TRUE(std::isnan(simd::math_f32(MathFn::sin, -INFINITY)));
  for (MathFn f : {MathFn::gelu, MathFn::erf, MathFn::arctan, MathFn::sin}) {
    EXPECT_EQ(bits(simd::math_f32(f, -0.0f)), bits(-0.0f)) << int(f);
    EXPECT_EQ(bits(simd::math_f32(f, from_bits(0x80000001u))),
              bits(math_reference(f, from_bits(0x80000001u))))
        << int(f);
  }
  EXPECT_EQ(simd::math_f32(MathFn::gelu_dx, 0.0f), 0.5f);
  const float nan = from_bits(0x7fa00001u); // signalling: comes back quieted, payload kept
  for (const MathCase& c : kMath) EXPECT_EQ(bits(simd::math_f32(c.f, nan)), 0x7fe00001u) << c.name;
}

TEST(Simd, MathRowEveryLevelBitIdentical) {
  for (const MathCase& c : kMath)
    for (uint64_t n : kLengths) {
      std::vector<float> x = nasty_row(n, 15000 + uint32_t(n), true);
      for (size_t i = 0; i < x.size(); i += 7) x[i] *= 20.0f; // the saturating ends
      for (size_t i = 3; i < x.size(); i += 11) x[i] = std::fabs(x[i]) * 1e-30f;
      for (size_t i = 5; i < x.size(); i += 13) x[i] *= 3e28f; // sin's exact reduction, huge args
      for (float scale : {1.0f, -0.75f})
        for (float bias : {0.0f, 0.5f}) {
          std::vector<uint32_t> want(n);
          for (uint64_t i = 0; i < n; ++i) want[i] = bits(simd::math_f32(c.f, x[i] * scale + bias));
          for (Level l : levels()) {
            std::vector<float> out(n);
            simd::math_row(l, c.f, x.data(), n, scale, bias, out.data());
            for (uint64_t i = 0; i < n; ++i)
              ASSERT_EQ(bits(out[i]), want[i])
                  << c.name << " " << simd::name(l) << " n=" << n << " x=" << x[i];
          }
        }
    }
}

// ---- iota runs ---------------------------------------------------------------------------------
TEST(Simd, IotaRunEveryLevelMatchesTheSequence) {
  // Wrapping int32 arithmetic and fp32 rounding of large values (above 2^24: ties to even).
  const uint32_t starts[] = {0u, 7u, 0x7ffffff0u, 0xfffffff9u, 16777213u, 0x80000000u};
  const int32_t steps[] = {1, -3, 1 << 20, 5, 0};
  for (uint32_t v0 : starts)
    for (int32_t st : steps)
      for (uint64_t n : kLengths) {
        std::vector<int32_t> wi(n);
        std::vector<uint32_t> wf(n);
        for (uint64_t j = 0; j < n; ++j) {
          const auto v = int32_t(v0 + uint32_t(j) * uint32_t(st)); // wraps
          wi[j] = v;
          wf[j] = bits(static_cast<float>(static_cast<double>(v))); // exact, then one rounding
        }
        for (Level l : levels()) {
          std::vector<uint8_t> out(n * 4 + 1);
          ASSERT_TRUE(simd::iota_run(l, DType::int32, out.data() + 1, v0, uint32_t(st), n));
          for (uint64_t j = 0; j < n; ++j) {
            int32_t got;
            std::memcpy(&got, out.data() + 1 + 4 * j, 4);
            ASSERT_EQ(got, wi[j]) << simd::name(l) << " j=" << j;
          }
          ASSERT_TRUE(simd::iota_run(l, DType::fp32, out.data(), v0, uint32_t(st), n));
          for (uint64_t j = 0; j < n; ++j) {
            uint32_t got;
            std::memcpy(&got, out.data() + 4 * j, 4);
            ASSERT_EQ(got, wf[j]) << simd::name(l) << " j=" << j;
          }
          EXPECT_FALSE(simd::iota_run(l, DType::bf16, out.data(), v0, 1, n));
        }
      }
}

// ---- DMA dtype conversion ---------------------------------------------------------------------
TEST(Simd, ConvertRowFp32Bf16EveryLevelMatchesElementwiseRounding) {
  for (uint64_t n : kLengths) {
    std::vector<float> x = nasty_row(n, 15000 + uint32_t(n), true);
    for (size_t i = 0; i < x.size(); i += 4) // rounding ties and carries of bf16 (low half 0x8000)
      x[i] = from_bits((bits(x[i]) & 0xffff0000u) | (i % 8 == 0 ? 0x8000u : 0x7fffu));
    std::vector<uint16_t> want(n);
    std::vector<float> back(n);
    for (uint64_t i = 0; i < n; ++i) { // the rounding from the definition: RNE, NaN kept quiet
      const uint32_t u = bits(x[i]);
      want[i] = (u & 0x7fffffffu) > 0x7f800000u ? uint16_t((u >> 16) | 0x40)
                                                : uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
      back[i] = from_bits(uint32_t(want[i]) << 16);
    }
    for (Level l : levels()) {
      std::vector<uint16_t> h(n);
      ASSERT_TRUE(simd::convert_row(l, DType::fp32, reinterpret_cast<const uint8_t*>(x.data()),
                                    DType::bf16, reinterpret_cast<uint8_t*>(h.data()), n));
      for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(h[i], want[i]) << simd::name(l) << " " << x[i];
      std::vector<float> f(n);
      ASSERT_TRUE(simd::convert_row(l, DType::bf16, reinterpret_cast<const uint8_t*>(h.data()),
                                    DType::fp32, reinterpret_cast<uint8_t*>(f.data()), n));
      for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(bits(f[i]), bits(back[i])) << simd::name(l);
    }
  }
  uint8_t b[4] = {};
  EXPECT_FALSE(simd::convert_row(Level::scalar, DType::fp16, b, DType::fp32, b + 2, 0));
}

// A DMA copy fp32 -> bf16 between HBM and SBUF (the row path) equals element-wise rounding.
TEST(Simd, DmaCopyConvertsRowsAtEveryLevel) {
  LevelGuard guard;
  const uint32_t P = 24, F = 301;
  const auto x = nasty_row(P * F, 16000, true);
  for (Level l : levels()) {
    ASSERT_TRUE(simd::set_level(l));
    Bench b;
    const AccessPattern src = Bench::tile(MemSpace::hbm, DType::fp32, 0, P, 0, F);
    AccessPattern h = src;
    h.part_stride = F;
    b.put(h, x);
    Inst in = make(Opcode::dma, Engine::sp);
    in.ops[1].present = in.ops[1].is_ap = true;
    in.ops[1].ap = Bench::sb(DType::bf16, P, F, 512);
    in.ops[2].present = in.ops[2].is_ap = true;
    in.ops[2].ap = h;
    sem_dma(b.cx, in);
    const auto got = b.get(Bench::sb(DType::bf16, P, F, 512));
    for (size_t i = 0; i < x.size(); ++i) {
      uint8_t h[2]; // the element-wise conversion of the Cursor path
      store_from_f32(DType::bf16, h, x[i]);
      const float want = load_as_f32(DType::bf16, h);
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(got[i]));
        continue;
      }
      ASSERT_EQ(bits(got[i]), bits(want)) << simd::name(l) << " at " << i;
    }
  }
}

TEST(Simd, LevelOverride) {
  LevelGuard guard;
  EXPECT_TRUE(simd::supported(Level::scalar));
  EXPECT_TRUE(simd::set_level(Level::scalar));
  EXPECT_EQ(simd::level(), Level::scalar);
  EXPECT_EQ(simd::set_level(Level::avx512), simd::supported(Level::avx512));
  EXPECT_STREQ(simd::name(Level::avx2), "avx2");
}

} // namespace
} // namespace nisa::interp::test
