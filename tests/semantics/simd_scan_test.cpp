// The vector kernels of issue 16 (interp/simd/simd.h): every level the host has gives the
// same bits as the scalar level and as an independent plain-loop reference from the
// definitions, on seeded inputs with NaN (several payloads), +-inf, -0.0 / +0.0, ties,
// denormals and lengths that are not multiples of the vector width.
// This file: tensor_reduce max/min, scan and fold rows (fp32 and bf16 straight into the lanes).
#include "simd_common.h"

namespace nisa::interp::test {
namespace {

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
          want.push_back(f32_bits(neg ? -acc : acc));
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
              want[r * n + i] = f32_bits(acc);
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
              ASSERT_EQ(f32_bits(out[k]), want[k])
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
          want[r] = f32_bits(acc);
        }
        for (Level l : levels()) {
          std::vector<const float*> px(rows);
          for (uint32_t r = 0; r < rows; ++r) px[r] = x.data() + r * n;
          std::vector<float> got(rows);
          simd::fold_rows(l, px.data(), got.data(), rows, n, o);
          for (uint32_t r = 0; r < rows; ++r)
            ASSERT_EQ(f32_bits(got[r]), want[r]) << simd::name(l) << " rows=" << rows << " n=" << n;
        }
      }
}

// ---- rows of fp32 or bf16 elements straight into the lanes (simd.h scan_rows_t / fold_rows_t)
// bf16 from the definition: the upper 16 bits of the fp32 pattern, rounded to nearest, ties to
// the even one; a NaN keeps its upper bits with the quiet bit set.
uint16_t ref_to_bf16(float f) {
  const uint32_t u = f32_bits(f);
  if (std::isnan(f)) return uint16_t((u >> 16) | 0x40);
  uint32_t hi = u >> 16;
  const uint32_t lo = u & 0xFFFF;
  if (lo > 0x8000 || (lo == 0x8000 && (hi & 1))) ++hi;
  return uint16_t(hi);
}
float ref_from_bf16(uint16_t h) { return bits_f32(uint32_t(h) << 16); }

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
  // Every row's start, as scan_rows_t / fold_rows_t take them.
  std::vector<void*> rows_ptrs() {
    std::vector<void*> p(val.size() / n);
    for (uint32_t r = 0; r < p.size(); ++r) p[r] = row(r);
    return p;
  }
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
                    want[r * n + i] = to == LaneType::f32
                                          ? f32_bits(acc)
                                          : f32_bits(ref_from_bf16(ref_to_bf16(acc)));
                  }
                }
                for (Level l : levels()) {
                  TypedRows o(to, rows, n, 1, 1.0f);
                  const auto pa = a.rows_ptrs(), pb = b.rows_ptrs(), po = o.rows_ptrs();
                  simd::scan_rows_t(l, t0, pa.data(), t1, pb.data(), to, po.data(), init.data(),
                                    rows, n, o0, o1, rev0, rev1);
                  for (uint32_t r = 0; r < rows; ++r)
                    for (uint64_t i = 0; i < n; ++i)
                      ASSERT_EQ(f32_bits(o.read(r, i)), want[r * n + i])
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
                t == LaneType::f32 ? f32_bits(acc) : f32_bits(ref_from_bf16(ref_to_bf16(acc)));
          }
        }
        for (Level l : levels()) {
          TypedRows b = b0;
          const auto pa = a.rows_ptrs(), pb = b.rows_ptrs(); // out: the in1 rows
          simd::scan_rows_t(l, LaneType::f32, pa.data(), t, pb.data(), t, pb.data(), init.data(),
                            rows, n, simd::LaneOp::multiply, simd::LaneOp::add, false, false);
          for (uint32_t r = 0; r < rows; ++r)
            for (uint64_t i = 0; i < n; ++i)
              ASSERT_EQ(f32_bits(b.read(r, i)), want[r * n + i])
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
            want[r] = f32_bits(acc);
          }
          for (Level l : levels()) {
            const auto px = x.rows_ptrs();
            std::vector<float> got(rows, 777.0f);
            simd::fold_rows_t(l, t, px.data(), got.data(), rows, n, o);
            for (uint32_t r = 0; r < rows; ++r)
              ASSERT_EQ(f32_bits(got[r]), want[r])
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
        const Inst r = tensor_reduce(D, S, op, false);
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
              ASSERT_EQ(f32_bits(res.back()[p * 2 + g]), f32_bits(m)) << simd::name(l);
            }
          }
      }
      for (size_t k = 1; k < res.size(); ++k)
        for (size_t i = 0; i < res[0].size(); ++i)
          ASSERT_EQ(f32_bits(res[k][i]), f32_bits(res[0][i])) << "level " << k << " at " << i;
    }
}

// scan as a cumsum from `init` (0.5 unless given): dst[j] = (state * ones[j]) + x[j], the state
// fp32.
Inst cumsum_inst(const AccessPattern& dst, const AccessPattern& ones, const AccessPattern& x,
                 float init = 0.5f) {
  Inst in = make(Opcode::scan, Engine::dve);
  set_ap(in, "dst", dst);
  set_ap(in, "in0", ones);
  set_ap(in, "in1", x);
  set_f(in, "init", init);
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
    const Inst r = tensor_reduce(D, S, AluOp::add, true);
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
        ASSERT_EQ(f32_bits(got[p * 30 + g]), f32_bits(-acc)) << simd::name(l);
      }
  }
  for (size_t k = 1; k < scans.size(); ++k) {
    for (size_t i = 0; i < scans[0].size(); ++i)
      ASSERT_EQ(f32_bits(scans[k][i]), f32_bits(scans[0][i]));
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
      const Inst r = tensor_reduce(D, X, AluOp::add, false);
      b.run(r);
      b.run(cumsum_inst(Y, ONES, X));
      const auto sum = b.get(D), scan = b.get(Y);
      for (uint32_t p = 0; p < P; ++p) {
        float acc = x[size_t(p) * F];
        for (uint32_t j = 1; j < F; ++j) acc += x[size_t(p) * F + j];
        ASSERT_EQ(f32_bits(sum[p]), f32_bits(acc)) << simd::name(l) << " F " << F << " p " << p;
        float st = 0.5f;
        for (uint32_t j = 0; j < F; ++j) {
          st = st * 1.0f + x[size_t(p) * F + j];
          ASSERT_EQ(f32_bits(scan[size_t(p) * F + j]), f32_bits(st))
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
            ASSERT_EQ(f32_bits(scan[k]), f32_bits(ref_from_bf16(ref_to_bf16(st))))
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
          const Inst r = tensor_reduce(D, S, op, false);
          b.run(r);
          const auto got = b.get(D);
          for (uint32_t p = 0; p < P; ++p)
            for (uint32_t gi = 0; gi < 2; ++gi) {
              const float* row = xm.data() + size_t(p) * F + gi * (F / 2);
              float acc = row[0];
              for (uint32_t k = 1; k < F / 2; ++k) acc = ref_op(lop, acc, row[k]);
              ASSERT_EQ(f32_bits(got[p * 2 + gi]), f32_bits(acc))
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
      bench.run(cumsum_inst(dst, A, B, 0.25f));
      const auto got = bench.get(dst);
      uint8_t* mem = dst.space == MemSpace::sbuf ? bench.st.sbuf : bench.st.psum;
      const uint64_t stride =
          dst.space == MemSpace::sbuf ? bench.st.sbuf_stride : bench.st.psum_stride;
      for (uint32_t p = 0; p < P; ++p)
        for (uint32_t j = 0; j < F; ++j) {
          ASSERT_EQ(f32_bits(got[p * F + j]), f32_bits(scan_ref[p * F + j]))
              << simd::name(l) << " " << name_of(dst.space) << " row " << p << " at " << j;
          float raw;
          std::memcpy(&raw, mem + p * stride + dst.offset + 4 * j, 4);
          ASSERT_EQ(f32_bits(raw), f32_bits(scan_ref[p * F + j])) << simd::name(l) << " row " << p;
        }
    }
    // The folds read [P, F] sources that end on the last byte of every partition.
    const auto D = Bench::sb(DType::fp32, P, 2, 2 * W);
    for (auto [op, src, ref] :
         {std::tuple{AluOp::add, &s, &add_ref}, std::tuple{AluOp::multiply, &m, &mul_ref}}) {
      bench.put(X, *src);
      const Inst r = tensor_reduce(Bench::sb(DType::fp32, P, 1, 2 * W), X, op, false);
      bench.run(r);
      const auto got = bench.get(D);
      for (uint32_t p = 0; p < P; ++p)
        ASSERT_EQ(f32_bits(got[p * 2]), f32_bits((*ref)[p])) << simd::name(l) << " row " << p;
    }
    for (uint32_t p = 0; p < P; ++p) {
      const uint8_t* sp = bench.st.sbuf + p * bench.st.sbuf_stride + kPart;
      const uint8_t* pp = bench.st.psum + p * bench.st.psum_stride + kPsum;
      for (uint64_t i = 0; i < bench.st.sbuf_stride - kPart; ++i) ASSERT_EQ(sp[i], 0x5a) << p;
      for (uint64_t i = 0; i < bench.st.psum_stride - kPsum; ++i) ASSERT_EQ(pp[i], 0x5a) << p;
    }
  }
}

} // namespace
} // namespace nisa::interp::test
