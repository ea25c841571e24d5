// The vector kernels of issue 16 (interp/simd/simd.h): every level the host has gives the
// same bits as the scalar level and as an independent plain-loop reference from the
// definitions, on seeded inputs with NaN (several payloads), +-inf, -0.0 / +0.0, ties,
// denormals and lengths that are not multiples of the vector width.
// This file: max8, find_index8 and match_replace8 (fp32 and bf16 rows, lane forms).
#include "simd_common.h"

namespace nisa::interp::test {
namespace {

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
  for (size_t k = 0; k < 8; ++k) out.push_back(k < s.size() ? f32_bits(s[k]) : f32_bits(-INFINITY));
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
            ASSERT_EQ(f32_bits(out[k]), want[k])
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
            ASSERT_EQ(f32_bits(out[k]), want[k]) << simd::name(l) << " n=" << n << " kind=" << kind
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
          ASSERT_EQ(f32_bits(got[p * 8 + k]), want[k]) << simd::name(l) << " n=" << n << " p=" << p;
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

// The definitions. find_index8: slot j takes the (number of equal earlier slots)-th match of
// v[j] in x, -1 when there is none.
void ref_find_index8(const float* x, uint64_t n, const float* v, int64_t want[8]) {
  for (int j = 0; j < 8; ++j) {
    int rank = 0, seen = 0;
    for (int i = 0; i < j; ++i) rank += v[i] == v[j];
    want[j] = -1;
    for (uint64_t k = 0; k < n && want[j] < 0; ++k)
      if (x[k] == v[j] && seen++ == rank) want[j] = int64_t(k);
  }
}
// match_replace8: slots 7..0, each the first match no later slot took, -1 when there is none;
// returns which elements of x were taken.
std::vector<bool> ref_match_replace8(const float* x, uint64_t n, const float* v, int64_t want[8]) {
  std::vector<bool> used(n, false);
  for (int j = 7; j >= 0; --j) {
    want[j] = -1;
    for (uint64_t k = 0; k < n && want[j] < 0; ++k)
      if (!used[k] && x[k] == v[j]) used[k] = true, want[j] = int64_t(k);
  }
  return used;
}

TEST(Simd, FindIndex8EveryLevelMatchesOccurrenceCount) {
  int seed = 0;
  for (uint64_t n : kLengths)
    for (bool specials : {false, true}) {
      const std::vector<float> x = nasty_row(n, 2000 + seed, specials);
      const std::vector<float> v = slot_values(x, 3000 + seed++);
      int64_t want[8];
      ref_find_index8(x.data(), n, v.data(), want);
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
      ref_match_replace8(x.data(), n, v.data(), want);
      for (Level l : levels()) {
        int64_t got[8];
        simd::match_replace8_row(l, x.data(), n, v.data(), got);
        for (int j = 0; j < 8; ++j)
          ASSERT_EQ(got[j], want[j]) << simd::name(l) << " n=" << n << " slot " << j;
      }
    }
}

// ---- bf16 rows of the search instructions (the vector forms read them as 16-bit patterns) -------
float bf16_value(uint16_t h) { return bits_f32(uint32_t(h) << 16); }
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
    uint16_t h = uint16_t(f32_bits(f) >> 16);
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
            ASSERT_EQ(f32_bits(out[k]), want[k])
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
  if (kind == 7) x[3] = NAN;                           // a NaN in the first vector
  if (kind == 8) x[n - n / 3] = bits_f32(0xffc00001u); // a negative NaN later on
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
              ASSERT_EQ(f32_bits(out[k]), want[k])
                  << simd::name(l) << " n=" << n << " kind=" << kind << " rep=" << rep << " slot "
                  << k;
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
        for (uint64_t i = 0; i < n; ++i) h[i] = uint16_t(f32_bits(f[i]) >> 16); // truncated: exact
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
              ASSERT_EQ(f32_bits(out[k]), want[k])
                  << simd::name(l) << " n=" << n << " kind=" << kind << " rep=" << rep << " slot "
                  << k;
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
          if (pick(g) < nan_pct) v = pick(g) % 2 ? bits_f32(0x7fc00000u) : bits_f32(0xffc00001u);
        }
        std::vector<float> v = slot_values(x, c == 0 ? 3u : 40000u + seed);
        if (c == 2) v[7] = -0.0f, v[0] = 0.0f; // both zeros
        int64_t want_fi[8], want_mr[8];
        ref_find_index8(x.data(), n, v.data(), want_fi);
        ref_match_replace8(x.data(), n, v.data(), want_mr);
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
  if (c == 3)
    v[3] = -0.0f, v[5] = bits_f32(f32_bits(v[5]) | 1u), v[7] = bits_f32(f32_bits(v[0]) + 7u);
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
        int64_t want_fi[8], want_mr[8];
        ref_find_index8(x.data(), n, v.data(), want_fi);
        ref_match_replace8(x.data(), n, v.data(), want_mr);
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
          int64_t want_mr[8], want_fi[8];
          const std::vector<bool> used = ref_match_replace8(r, n, v, want_mr);
          ref_find_index8(r, n, v, want_fi);
          for (int j = 7; j >= 0; --j) { // an index not found is written as 0xffffffff
            ASSERT_EQ(idx[p * 8 + j], want_mr[j] < 0 ? int64_t(0xffffffff) : want_mr[j])
                << simd::name(l) << " n=" << n << " p=" << p << " slot " << j;
            ASSERT_EQ(fi[p * 8 + j], want_fi[j] < 0 ? int64_t(0xffffffff) : want_fi[j])
                << simd::name(l) << " n=" << n << " p=" << p << " slot " << j;
          }
          for (uint32_t k = 0; k < n; ++k)
            ASSERT_EQ(f32_bits(got[p * n + k]), f32_bits(used[k] ? -3.0f : r[k]))
                << simd::name(l) << " n=" << n << " p=" << p << " k=" << k;
        }
        outs.push_back(got);
      }
    }
    for (size_t k = 2; k < outs.size(); ++k)
      for (size_t i = 0; i < outs[0].size(); ++i)
        ASSERT_EQ(f32_bits(outs[k][i]), f32_bits(outs[k % 2][i])) << "run " << k << " at " << i;
  }
}

} // namespace
} // namespace nisa::interp::test
