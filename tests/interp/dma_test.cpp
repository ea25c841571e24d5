// DMA semantics (copy with casts and indirect offsets, transpose, compute) and the sequencer
// instructions, each against plain reference loops.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "builders.h"

namespace nisa::test {
namespace {

using interp::Machine;
using interp::RunStatus;

// Reference fp32 -> bf16 round-to-nearest-even for finite values, from the definition: keep the
// top 16 bits, round on the 16 dropped ones, ties to the even kept value.
uint16_t ref_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  uint32_t keep = u >> 16, rest = u & 0xffff;
  if (rest > 0x8000 || (rest == 0x8000 && (keep & 1))) ++keep;
  return uint16_t(keep);
}
float from_bf16(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// in -> (sp, q0) -> SBUF tile of dtype `mid` -> (sp, q1) -> out.
TEST(Dma, CastThroughSbufRoundsToDestinationDtype) {
  KB k;
  int x = k.hbm("x", DType::fp32, {4, 32}, Role::input);
  int y = k.hbm("y", DType::fp32, {4, 32}, Role::output);
  int z = k.hbm("z", DType::bf16, {4, 32}, Role::output);
  uint16_t s = k.sem("s");
  auto T = sbuf_ap(0, 4, 0, DType::bf16, 32);
  k.add(Engine::sp, with_signal(dma(Engine::sp, 0, T, hbm_ap(k.m.tensors[x])), s));
  k.add(Engine::sp, with_signal(with_wait(dma(Engine::sp, 1, hbm_ap(k.m.tensors[y]), T), s, 1), s));
  k.add(Engine::sp, with_signal(with_wait(dma(Engine::sp, 2, hbm_ap(k.m.tensors[z]), T), s, 1), s));
  k.add(Engine::sp, with_wait(nop(Engine::sp), s, 3));
  auto in = random_floats(128, 21);
  in[0] = 1.0f + 1.0f / 256; // exactly half-way between two bf16 values: ties to even (1.0)
  in[1] = 1.0f + 3.0f / 256; // half-way, rounds up to the even 1 + 4/256
  Machine m(k.m, {});
  m.write_tensor(k.m.tensors[x], as_bytes(in).data());
  auto r = interp::run(m);
  ASSERT_EQ(r.status, RunStatus::ok) << r.report;
  auto out = read_f32(m, k.m.tensors[y]);
  std::vector<uint16_t> raw(128);
  std::memcpy(raw.data(), m.hbm_tensor(0, k.m.tensors[z]), 256);
  for (int i = 0; i < 128; ++i) {
    EXPECT_EQ(raw[i], ref_bf16(in[i])) << i; // bf16 -> bf16 is bit-exact
    EXPECT_EQ(out[i], from_bf16(ref_bf16(in[i]))) << i;
  }
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 1.0f + 4.0f / 256);
}

// HBM rows of 40 -> 16 partitions of 3 runs of 5 (stride 8) -> back: the flat element order
// maps element f = p * 15 + i * 5 + j to partition p, element i * 8 + j (runs of adjacent
// elements copied whole, partition and row boundaries falling inside runs).
TEST(Dma, StridedCopyFollowsTheFlatElementOrder) {
  KB k;
  int x = k.hbm("x", DType::fp32, {6, 40}, Role::input);
  int y = k.hbm("y", DType::fp32, {6, 40}, Role::output);
  uint16_t s = k.sem("s");
  AccessPattern T = sbuf_ap(0, 16, 64, DType::fp32, 1);
  T.ndims = 2;
  T.dims[0] = {8, 3};
  T.dims[1] = {1, 5};
  k.add(Engine::sp, with_signal(dma(Engine::sp, 0, T, hbm_ap(k.m.tensors[x])), s));
  k.add(Engine::sp, with_signal(with_wait(dma(Engine::sp, 1, hbm_ap(k.m.tensors[y]), T), s, 1), s));
  k.add(Engine::sp, with_wait(nop(Engine::sp), s, 2));
  auto in = random_floats(240, 23);
  Machine m(k.m, {});
  m.write_tensor(k.m.tensors[x], as_bytes(in).data());
  auto r = interp::run(m);
  ASSERT_EQ(r.status, RunStatus::ok) << r.report;
  const auto& st = m.cores[0].st;
  for (int p = 0; p < 16; ++p)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 5; ++j) {
        float v;
        std::memcpy(&v, st.sbuf + size_t(p) * st.sbuf_stride + 64 + size_t(i * 8 + j) * 4, 4);
        EXPECT_EQ(v, in[size_t(p * 15 + i * 5 + j)]) << p << " " << i << " " << j;
      }
  // The gaps between runs were not written (still poison: NaN).
  float gap;
  std::memcpy(&gap, st.sbuf + 64 + 5 * 4, 4);
  EXPECT_TRUE(std::isnan(gap));
  EXPECT_EQ(read_f32(m, k.m.tensors[y]), in);
}

TEST(Dma, VectorOffsetGatherWithOobSkip) {
  KB k;
  int x = k.hbm("x", DType::fp32, {6, 4}, Role::input);
  int idx = k.hbm("idx", DType::int32, {4, 1}, Role::input);
  int y = k.hbm("y", DType::fp32, {4, 4}, Role::output);
  uint16_t s = k.sem("s");
  auto I = sbuf_ap(0, 4, 0, DType::int32, 1), D = sbuf_ap(0, 4, 64, DType::fp32, 4);
  k.add(Engine::pool, with_signal(dma(Engine::pool, 0, I, hbm_ap(k.m.tensors[idx])), s));
  AccessPattern g = hbm_ap(k.m.tensors[x]);
  g.part_count = 4;
  g.part_stride = 0;
  g.dyn = DynKind::vec;
  g.dyn_mult = 4;
  g.dyn_limit = 6;
  g.vidx = {0, 4, 0, DType::int32};
  Inst gather = dma(Engine::pool, 0, D, g);
  gather.ops[3].i = static_cast<int>(OobMode::skip);
  k.add(Engine::pool, with_signal(with_wait(gather, s, 1), s));
  k.add(Engine::pool,
        with_signal(with_wait(dma(Engine::pool, 0, hbm_ap(k.m.tensors[y]), D), s, 2), s));
  k.add(Engine::pool, with_wait(nop(Engine::pool), s, 3));
  auto xv = random_floats(24, 22);
  std::vector<int32_t> iv{5, 0, 9, 2};
  Machine m(k.m, {});
  m.write_tensor(k.m.tensors[x], as_bytes(xv).data());
  m.write_tensor(k.m.tensors[idx], reinterpret_cast<uint8_t*>(iv.data()));
  auto r = interp::run(m);
  ASSERT_EQ(r.status, RunStatus::ok) << r.report;
  auto out = read_f32(m, k.m.tensors[y]);
  for (int p = 0; p < 4; ++p)
    for (int j = 0; j < 4; ++j) {
      if (p == 2)
        EXPECT_TRUE(std::isnan(out[p * 4 + j])); // skipped: the tile keeps its poison
      else
        EXPECT_EQ(out[p * 4 + j], xv[iv[p] * 4 + j]);
    }
  // The same gather with oob=error faults on row 2.
  k.m.streams[int(Engine::pool)][1].ops[3].i = static_cast<int>(OobMode::error);
  Machine m2(k.m, {});
  m2.write_tensor(k.m.tensors[x], as_bytes(xv).data());
  m2.write_tensor(k.m.tensors[idx], reinterpret_cast<uint8_t*>(iv.data()));
  auto r2 = interp::run(m2);
  EXPECT_EQ(r2.status, RunStatus::fault);
  EXPECT_NE(r2.report.find("vector offset of row 2 = 9 is outside [0, 6)"), std::string::npos)
      << r2.report;
}

// A register (scalar) offset with oob=skip: in range, the row moves; outside [0, limit) (e.g. a
// uint32 0xFFFFFFFF "no update" index, -1 as int32), the whole transfer is dropped and the
// destination keeps its bytes; with oob=error the same register faults.
TEST(Dma, RegisterOffsetWithOobSkipDropsTheTransfer) {
  for (int32_t reg : {2, -1, 6}) {
    for (OobMode mode : {OobMode::skip, OobMode::error}) {
      KB k;
      int x = k.hbm("x", DType::fp32, {1, 4}, Role::input);
      int y = k.hbm("y", DType::fp32, {6, 4}, Role::input);
      uint16_t s = k.sem("s");
      Inst li = make_inst(Opcode::li, Engine::sp);
      li.ops[0].i = 5;
      li.ops[1].i = reg;
      k.add(Engine::sp, li);
      AccessPattern row = hbm_row(k.m.tensors[y], 0);
      row.dyn = DynKind::reg;
      row.dyn_reg = 5;
      row.dyn_mult = 4;
      row.dyn_limit = 6;
      Inst scatter = dma(Engine::sp, 0, row, hbm_ap(k.m.tensors[x]));
      scatter.ops[3].i = static_cast<int>(mode);
      k.add(Engine::sp, with_signal(scatter, s));
      k.add(Engine::sp, with_wait(nop(Engine::sp), s, 1));
      auto xv = random_floats(4, 5), yv = random_floats(24, 6);
      Machine m(k.m, {});
      m.write_tensor(k.m.tensors[x], as_bytes(xv).data());
      m.write_tensor(k.m.tensors[y], as_bytes(yv).data());
      auto r = interp::run(m);
      const bool in_range = reg >= 0 && reg < 6;
      if (!in_range && mode == OobMode::error) {
        EXPECT_EQ(r.status, RunStatus::fault) << reg;
        EXPECT_NE(r.report.find("register r5 = " + std::to_string(reg) + " is outside [0, 6)"),
                  std::string::npos)
            << r.report;
        continue;
      }
      ASSERT_EQ(r.status, RunStatus::ok) << r.report;
      auto out = read_f32(m, k.m.tensors[y]);
      for (int row_i = 0; row_i < 6; ++row_i)
        for (int j = 0; j < 4; ++j)
          EXPECT_EQ(out[row_i * 4 + j], in_range && row_i == reg ? xv[j] : yv[row_i * 4 + j])
              << "reg " << reg << " row " << row_i;
    }
  }
}

TEST(Dma, TransposeAndCompute) {
  KB k;
  int x = k.hbm("x", DType::fp32, {3, 5}, Role::input);
  int b = k.hbm("b", DType::bf16, {5, 3}, Role::input);
  int y = k.hbm("y", DType::fp32, {5, 3}, Role::output);
  int z = k.hbm("z", DType::fp32, {5, 3}, Role::output);
  uint16_t s = k.sem("s");
  auto T = sbuf_ap(0, 5, 0, DType::fp32, 3), S = sbuf_ap(0, 5, 64, DType::fp32, 3);
  Inst tr = make_inst(Opcode::dma_transpose, Engine::act);
  tr.ops[0].i = 4;
  tr.ops[1].ap = T;
  tr.ops[2].ap = hbm_ap(k.m.tensors[x]);
  k.add(Engine::act, with_signal(tr, s));
  Inst dc = make_inst(Opcode::dma_compute, Engine::act);
  dc.ops[0].i = 4;
  dc.ops[1].ap = S;
  dc.ops[2].ap = T;
  dc.ops[3].ap = hbm_ap(k.m.tensors[b]);
  k.add(Engine::act, with_signal(with_wait(dc, s, 1), s));
  k.add(Engine::act,
        with_signal(with_wait(dma(Engine::act, 4, hbm_ap(k.m.tensors[y]), T), s, 2), s));
  k.add(Engine::act,
        with_signal(with_wait(dma(Engine::act, 4, hbm_ap(k.m.tensors[z]), S), s, 3), s));
  k.add(Engine::act, with_wait(nop(Engine::act), s, 4));
  auto xv = random_floats(15, 23);
  std::vector<uint16_t> bv(15);
  auto bf = random_floats(15, 24);
  for (int i = 0; i < 15; ++i) bv[i] = ref_bf16(bf[i]);
  Machine m(k.m, {});
  m.write_tensor(k.m.tensors[x], as_bytes(xv).data());
  m.write_tensor(k.m.tensors[b], reinterpret_cast<uint8_t*>(bv.data()));
  auto r = interp::run(m);
  ASSERT_EQ(r.status, RunStatus::ok) << r.report;
  auto yv = read_f32(m, k.m.tensors[y]), zv = read_f32(m, k.m.tensors[z]);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) {
      EXPECT_EQ(yv[j * 3 + i], xv[i * 5 + j]);
      EXPECT_EQ(zv[j * 3 + i], xv[i * 5 + j] + from_bf16(bv[j * 3 + i]));
    }
}

// dma_transpose of tiles wider than its 16-row blocks, partial last blocks, 2- and 4-byte
// elements: y[j][i] = x[i][j], compared byte for byte with a plain index loop.
TEST(Dma, TransposeLargeTilesEveryWidth) {
  struct Case {
    DType dt;
    uint32_t rows, cols; // of the source; the SBUF destination has cols partitions
  };
  for (Case c : {Case{DType::fp32, 300, 100}, Case{DType::bf16, 77, 128}, Case{DType::bf16, 5, 17},
                 Case{DType::fp32, 1, 33}}) {
    KB k;
    const int w = dtype_bytes(c.dt);
    int x = k.hbm("x", c.dt, {c.rows, c.cols}, Role::input);
    int y = k.hbm("y", c.dt, {c.cols, c.rows}, Role::output);
    uint16_t s = k.sem("s");
    auto T = sbuf_ap(0, uint16_t(c.cols), 0, c.dt, c.rows);
    Inst tr = make_inst(Opcode::dma_transpose, Engine::act);
    tr.ops[0].i = 4;
    tr.ops[1].ap = T;
    tr.ops[2].ap = hbm_ap(k.m.tensors[x]);
    k.add(Engine::act, with_signal(tr, s));
    k.add(Engine::act,
          with_signal(with_wait(dma(Engine::act, 4, hbm_ap(k.m.tensors[y]), T), s, 1), s));
    k.add(Engine::act, with_wait(nop(Engine::act), s, 2));
    auto xv = random_bytes(size_t(c.rows) * c.cols * w, 31 + c.rows);
    Machine m(k.m, {});
    m.write_tensor(k.m.tensors[x], xv.data());
    auto r = interp::run(m);
    ASSERT_EQ(r.status, RunStatus::ok) << r.report;
    auto yv = hbm_bytes(m, k.m.tensors[y]);
    ASSERT_EQ(yv.size(), xv.size());
    for (uint32_t i = 0; i < c.rows; ++i)
      for (uint32_t j = 0; j < c.cols; ++j)
        ASSERT_EQ(
            0, std::memcmp(&yv[(size_t(j) * c.rows + i) * w], &xv[(size_t(i) * c.cols + j) * w], w))
            << dtype_name(c.dt) << " " << c.rows << "x" << c.cols << " at " << i << "," << j;
  }
}

// A DMA into contiguous SBUF rows from a strided HBM source (partition j = column j, the
// free dims walk the rows in two levels, forwards or backwards): the gather path of
// copy_elems, for 1-, 2- and 4-byte elements. Reference: the index arithmetic of the pattern.
TEST(Dma, StridedSourceIntoContiguousRowsEveryWidth) {
  struct Case {
    DType dt;
    uint32_t rows, cols, parts; // x is [rows, cols]; parts columns land on partitions
    bool backwards;
  };
  for (Case c : {Case{DType::int8, 64, 40, 40, false}, Case{DType::bf16, 30, 128, 100, true},
                 Case{DType::fp32, 1026, 7, 7, false}, Case{DType::fp32, 2, 3, 1, true}}) {
    KB k;
    const int w = dtype_bytes(c.dt);
    int x = k.hbm("x", c.dt, {c.rows, c.cols}, Role::input);
    int y = k.hbm("y", c.dt, {c.parts, c.rows}, Role::output);
    uint16_t s = k.sem("s");
    AccessPattern src = hbm_ap(k.m.tensors[x]);
    src.part_count = uint16_t(c.parts);
    src.part_stride = 1;
    src.ndims = 2; // row i = 2a + b (a < rows / 2, b < 2), or rows - 1 - i backwards
    const int32_t step = int32_t(c.cols) * (c.backwards ? -1 : 1);
    src.dims[0] = {2 * step, c.rows / 2};
    src.dims[1] = {step, 2};
    if (c.backwards) src.offset += uint64_t(c.rows - 1) * c.cols * w;
    auto T = sbuf_ap(0, uint16_t(c.parts), 64, c.dt, c.rows);
    k.add(Engine::sp, with_signal(dma(Engine::sp, 0, T, src), s));
    k.add(Engine::sp,
          with_signal(with_wait(dma(Engine::sp, 0, hbm_ap(k.m.tensors[y]), T), s, 1), s));
    k.add(Engine::sp, with_wait(nop(Engine::sp), s, 2));
    auto xv = random_bytes(size_t(c.rows) * c.cols * w, 41 + c.rows);
    Machine m(k.m, {});
    m.write_tensor(k.m.tensors[x], xv.data());
    auto r = interp::run(m);
    ASSERT_EQ(r.status, RunStatus::ok) << r.report;
    auto yv = hbm_bytes(m, k.m.tensors[y]);
    for (uint32_t j = 0; j < c.parts; ++j)
      for (uint32_t i = 0; i < c.rows; ++i) {
        const uint32_t from = c.backwards ? c.rows - 1 - i : i;
        ASSERT_EQ(0, std::memcmp(&yv[(size_t(j) * c.rows + i) * w],
                                 &xv[(size_t(from) * c.cols + j) * w], w))
            << dtype_name(c.dt) << " " << c.rows << "x" << c.cols << " at " << j << "," << i;
      }
  }
}

// dma_compute with dst on top of src0: the same elements (row at a time is the element
// order's result), and dst one element past src0 (each sum feeds the next: element by element
// in flat order). Reference: a plain loop over the flat elements.
TEST(Dma, ComputeInPlaceAndShiftedOverlap) {
  for (int shift : {0, 1}) {
    KB k;
    int x = k.hbm("x", DType::fp32, {4, 9}, Role::input);
    int b = k.hbm("b", DType::fp32, {4, 8}, Role::input);
    int y = k.hbm("y", DType::fp32, {4, 9}, Role::output);
    uint16_t s = k.sem("s");
    auto X = sbuf_ap(0, 4, 0, DType::fp32, 9), A = sbuf_ap(0, 4, 0, DType::fp32, 8),
         D = sbuf_ap(0, 4, 4 * shift, DType::fp32, 8);
    k.add(Engine::sp, with_signal(dma(Engine::sp, 0, X, hbm_ap(k.m.tensors[x])), s));
    Inst dc = make_inst(Opcode::dma_compute, Engine::sp);
    dc.ops[0].i = 0;
    dc.ops[1].ap = D;
    dc.ops[2].ap = A;
    dc.ops[3].ap = hbm_ap(k.m.tensors[b]);
    k.add(Engine::sp, with_signal(with_wait(dc, s, 1), s));
    k.add(Engine::sp,
          with_signal(with_wait(dma(Engine::sp, 0, hbm_ap(k.m.tensors[y]), X), s, 2), s));
    k.add(Engine::sp, with_wait(nop(Engine::sp), s, 3));
    auto xv = random_floats(36, 31), bv = random_floats(32, 32);
    Machine m(k.m, {});
    m.write_tensor(k.m.tensors[x], as_bytes(xv).data());
    m.write_tensor(k.m.tensors[b], as_bytes(bv).data());
    auto r = interp::run(m);
    ASSERT_EQ(r.status, RunStatus::ok) << r.report;
    std::vector<float> ref = xv; // rows of 9: [p * 9 + j]
    for (int p = 0; p < 4; ++p)
      for (int j = 0; j < 8; ++j) ref[p * 9 + j + shift] = ref[p * 9 + j] + bv[p * 8 + j];
    EXPECT_EQ(read_f32(m, k.m.tensors[y]), ref) << "shift " << shift;
  }
}

TEST(Ctrl, LoadStoreAndRegisterAlu) {
  KB k;
  int a = k.hbm("a", DType::int32, {1, 1}, Role::input);
  int y = k.hbm("y", DType::int32, {1, 4}, Role::output);
  int f = k.hbm("f", DType::fp32, {1, 1}, Role::output);
  auto add = [&](Opcode op, int64_t a0, int64_t a1, int64_t a2 = 0, bool reg = true) {
    Inst in = make_inst(op, Engine::act);
    in.ops[0].i = a0;
    in.ops[1].i = a1;
    if (in.ops.size() > 2) {
      in.ops[2].i = a2;
      in.ops[2].is_reg = reg;
    }
    k.add(Engine::act, in);
  };
  Inst ld = make_inst(Opcode::ld, Engine::act);
  ld.ops[0].i = 1;
  ld.ops[1].ap = hbm_ap(k.m.tensors[a]);
  k.add(Engine::act, ld);            // r1 = a = -12
  add(Opcode::li, 2, 5);             // r2 = 5
  add(Opcode::min, 3, 1, 2);         // r3 = min(-12, 5) signed
  add(Opcode::max, 4, 1, 2);         // r4 = 5
  add(Opcode::shr, 5, 1, 28, false); // logical: 0xfffffff4 >> 28 = 15
  add(Opcode::mul, 6, 1, 2);         // -60
  auto st = [&](int reg, int i, int t) {
    Inst s = make_inst(Opcode::st, Engine::act);
    s.ops[0].ap = hbm_row(k.m.tensors[t], 0);
    s.ops[0].ap.offset += i * 4;
    s.ops[1].i = reg;
    k.add(Engine::act, s);
  };
  st(3, 0, y);
  st(4, 1, y);
  st(5, 2, y);
  st(6, 3, y);
  st(6, 0, f); // stored as fp32 -60.0
  Machine m(k.m, {});
  int32_t av = -12;
  m.write_tensor(k.m.tensors[a], reinterpret_cast<uint8_t*>(&av));
  auto r = interp::run(m);
  ASSERT_EQ(r.status, RunStatus::ok) << r.report;
  int32_t v[4];
  std::memcpy(v, m.hbm_tensor(0, k.m.tensors[y]), 16);
  EXPECT_EQ(v[0], -12);
  EXPECT_EQ(v[1], 5);
  EXPECT_EQ(v[2], 15);
  EXPECT_EQ(v[3], -60);
  EXPECT_EQ(read_f32(m, k.m.tensors[f])[0], -60.0f);
}

} // namespace
} // namespace nisa::test
