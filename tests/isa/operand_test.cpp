// Operand's ap, pat and mask share storage (isa/isa.h): an operand of each kind copies and
// compares by its live payload only, checks reject a payload of the wrong kind, and the codec
// keeps every payload. An instruction with the most waits and signals round-trips.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "isa/encode.h"
#include "isa/isa.h"
#include "isa/op_index.h"

namespace nisa {
namespace {

std::string check_msg(const Inst& in) {
  auto e = check_inst(in);
  return e ? *e : "<valid>";
}

Inst roundtrip(const Inst& in) {
  std::vector<uint8_t> b;
  encode_inst(in, b);
  auto r = decode_inst(b, 0);
  EXPECT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(r->length, b.size());
  return r->inst;
}

// An access pattern with every field away from its default.
AccessPattern busy_ap() {
  AccessPattern a;
  a.space = MemSpace::hbm;
  a.dtype = DType::int16;
  a.ndims = 4;
  a.part_start = 3;
  a.part_count = 77;
  a.part_stride = -12345;
  a.offset = 0xFEDCBA9876543210ull;
  a.dims = {FreeDim{-1, 2}, FreeDim{3, 4}, FreeDim{5, 6}, FreeDim{7, 8}};
  a.dyn = DynKind::vec;
  a.dyn_reg = 9;
  a.dyn_mult = -4;
  a.dyn_limit = 1000;
  a.vidx = VecIndex{1, 2, 3, DType::int32};
  return a;
}

TEST(Operand, DefaultsByKind) {
  const Inst io = make_inst(Opcode::iota, Engine::pool);
  const Operand& p = io.ops[op::iota::pattern];
  EXPECT_EQ(p.payload, Payload::pat);
  EXPECT_EQ(p.pat.n, 0);
  for (const auto& d : p.pat.d) EXPECT_EQ(d, (std::array<int32_t, 2>{0, 0}));
  const Inst sh = make_inst(Opcode::stream_shuffle, Engine::dve);
  const Operand& m = sh.ops[op::stream_shuffle::mask];
  EXPECT_EQ(m.payload, Payload::mask);
  for (uint8_t v : m.mask.v) EXPECT_EQ(v, 0);
  // Every other kind holds the default access pattern.
  const Operand& dst = sh.ops[op::stream_shuffle::dst];
  EXPECT_EQ(dst.payload, Payload::ap);
  EXPECT_EQ(dst.ap.space, MemSpace::none);
  EXPECT_EQ(dst.ap.dtype, DType::fp32);
  EXPECT_EQ(dst.ap.ndims, 1);
  EXPECT_EQ(dst.ap.part_count, 1);
  EXPECT_EQ(dst.ap.dims[3].count, 1u);
  EXPECT_EQ(io.ops[op::iota::offset].payload, Payload::ap);
  EXPECT_EQ(io.ops[op::iota::offset].ap, AccessPattern{});
  EXPECT_EQ(Operand{}.ap, AccessPattern{});
}

TEST(Operand, CopyAndCompareEachPayload) {
  Operand a;
  a.ap = busy_ap();
  const Operand a2 = a;
  EXPECT_EQ(a2, a);
  EXPECT_EQ(a2.ap.offset, 0xFEDCBA9876543210ull);
  EXPECT_EQ(a2.ap.vidx.offset, 3u);
  EXPECT_EQ(a2.ap.dims[3].stride, 7);
  Operand a3 = a;
  a3.ap.vidx.part_count = 5; // the last field
  EXPECT_NE(a3, a);

  Operand p;
  p.set_pat() = AffinePattern{4, {{{1, 2}, {-3, 4}, {5, 6}, {7, 8}}}};
  const Operand p2 = p;
  EXPECT_EQ(p2, p);
  EXPECT_EQ(p2.pat.n, 4);
  EXPECT_EQ(p2.pat.d[3][1], 8);
  Operand p3 = p;
  p3.pat.d[3][1] = 9;
  EXPECT_NE(p3, p);

  Operand m;
  m.set_mask();
  for (int k = 0; k < 32; ++k) m.mask.v[size_t(k)] = uint8_t(31 - k);
  m.mask.v[31] = 255;
  const Operand m2 = m;
  EXPECT_EQ(m2, m);
  EXPECT_EQ(m2.mask.v[0], 31);
  EXPECT_EQ(m2.mask.v[31], 255);
  Operand m3 = m;
  m3.mask.v[31] = 0;
  EXPECT_NE(m3, m);

  Operand f;
  f.f = std::numeric_limits<float>::quiet_NaN(); // compared by bits: equal to itself
  EXPECT_EQ(Operand(f), f);
  Operand f2 = f;
  f2.f = 1.5f;
  EXPECT_NE(f2, f);
  Operand i;
  i.i = -7;
  EXPECT_NE(i, Operand{});
  i.i = 0;
  EXPECT_EQ(i, Operand{});
}

// Bytes a former payload left behind do not count; the payload itself does.
TEST(Operand, OnlyTheLivePayloadCounts) {
  const AffinePattern pat{2, {{{3, 4}, {-1, 5}, {0, 0}, {0, 0}}}};
  Operand a;
  a.ap = busy_ap();
  a.set_pat() = pat;
  Operand b;
  b.set_pat() = pat;
  EXPECT_EQ(a, b);
  a.ap = busy_ap();
  a.set_mask().v[4] = 6;
  b.set_mask().v[4] = 6;
  EXPECT_EQ(a, b);
  // A default pattern or mask is not a default access pattern.
  Operand zero_pat, zero_mask;
  zero_pat.set_pat();
  zero_mask.set_mask();
  EXPECT_NE(zero_pat, Operand{});
  EXPECT_NE(zero_mask, Operand{});
  EXPECT_NE(zero_pat, zero_mask);
  // Absent operands are equal whatever they hold (as before).
  Operand x, y;
  x.present = y.present = false;
  x.ap = busy_ap();
  EXPECT_EQ(x, y);
}

TEST(Operand, CheckWantsTheKindsPayload) {
  Inst io = make_inst(Opcode::iota, Engine::pool);
  io.ops[op::iota::dst].ap.space = MemSpace::sbuf;
  io.ops[op::iota::pattern].pat = AffinePattern{1, {{{1, 8}}}};
  EXPECT_EQ(check_msg(io), "<valid>");
  Inst bad = io;
  bad.ops[op::iota::pattern] = Operand{};
  EXPECT_EQ(check_msg(bad), "operand 'pattern' of pool.iota: pattern not set (Operand::set_pat)");
  bad = io;
  bad.ops[op::iota::offset].set_pat();
  EXPECT_EQ(check_msg(bad), "operand 'offset' of pool.iota: unused pattern set");
  bad = io;
  bad.ops[op::iota::offset].ap.offset = 64;
  EXPECT_EQ(check_msg(bad), "operand 'offset' of pool.iota: unused access pattern set");

  Inst sh = make_inst(Opcode::stream_shuffle, Engine::dve);
  sh.ops[op::stream_shuffle::dst].ap.space = sh.ops[op::stream_shuffle::src].ap.space =
      MemSpace::sbuf;
  EXPECT_EQ(check_msg(sh), "<valid>");
  bad = sh;
  bad.ops[op::stream_shuffle::mask] = Operand{};
  EXPECT_EQ(check_msg(bad),
            "operand 'mask' of dve.stream_shuffle: mask not set (Operand::set_mask)");
  bad = sh;
  bad.ops[op::stream_shuffle::src].set_mask();
  EXPECT_EQ(check_msg(bad), "operand 'src' of dve.stream_shuffle: unused mask set");
}

TEST(Operand, CodecKeepsEachPayload) {
  Inst io = make_inst(Opcode::iota, Engine::pool);
  io.ops[op::iota::dst].ap.space = MemSpace::sbuf;
  io.ops[op::iota::dst].ap.dtype = DType::int32;
  io.ops[op::iota::dst].ap.part_count = 128;
  io.ops[op::iota::pattern].pat = AffinePattern{3, {{{-2, 3}, {7, 1}, {0, 4}, {0, 0}}}};
  io.ops[op::iota::offset].i = -9;
  ASSERT_EQ(check_msg(io), "<valid>");
  const Inst io2 = roundtrip(io);
  EXPECT_EQ(io2, io);
  EXPECT_EQ(io2.ops[op::iota::pattern].payload, Payload::pat);
  EXPECT_EQ(io2.ops[op::iota::pattern].pat.n, 3);
  EXPECT_EQ(io2.ops[op::iota::pattern].pat.d[0], (std::array<int32_t, 2>{-2, 3}));
  EXPECT_EQ(io2.ops[op::iota::pattern].pat.d[2], (std::array<int32_t, 2>{0, 4}));
  EXPECT_EQ(io2.ops[op::iota::dst].ap.part_count, 128);
  EXPECT_EQ(io2.ops[op::iota::offset].i, -9);

  Inst sh = make_inst(Opcode::stream_shuffle, Engine::dve);
  sh.ops[op::stream_shuffle::dst].ap.space = sh.ops[op::stream_shuffle::src].ap.space =
      MemSpace::sbuf;
  for (int k = 0; k < 32; ++k) sh.ops[op::stream_shuffle::mask].mask.v[size_t(k)] = uint8_t(k ^ 5);
  sh.ops[op::stream_shuffle::mask].mask.v[9] = 255;
  ASSERT_EQ(check_msg(sh), "<valid>");
  const Inst sh2 = roundtrip(sh);
  EXPECT_EQ(sh2, sh);
  EXPECT_EQ(sh2.ops[op::stream_shuffle::mask].payload, Payload::mask);
  EXPECT_EQ(sh2.ops[op::stream_shuffle::mask].mask.v[0], 5);
  EXPECT_EQ(sh2.ops[op::stream_shuffle::mask].mask.v[9], 255);
  EXPECT_EQ(sh2.ops[op::stream_shuffle::mask].mask.v[31], 26);
  EXPECT_EQ(sh2.ops[op::stream_shuffle::src].ap.space, MemSpace::sbuf);
}

TEST(Inst, MostWaitsAndSignalsRoundTrip) {
  Inst in = make_inst(Opcode::nop, Engine::act);
  for (int k = 0; k < kMaxWaits; ++k)
    in.waits.push_back({uint16_t(100 + k), k % 2 ? WaitCmp::eq : WaitCmp::ge, 1000u * k + 7});
  for (int k = 0; k < kMaxSignals; ++k) in.signals.push_back({uint16_t(200 + k), uint32_t(k + 1)});
  ASSERT_EQ(check_msg(in), "<valid>");
  std::vector<uint8_t> b;
  encode_inst(in, b);
  EXPECT_EQ(b.size(), 8u + 8 * 8 + 8 * 8); // header, 8-byte waits and signals (docs/encoding.md)
  const Inst out = roundtrip(in);
  EXPECT_EQ(out, in);
  ASSERT_EQ(out.waits.size(), 8u);
  ASSERT_EQ(out.signals.size(), 8u);
  EXPECT_EQ(out.waits[7].sem, 107);
  EXPECT_EQ(out.waits[7].cmp, WaitCmp::eq);
  EXPECT_EQ(out.waits[7].value, 7007u);
  EXPECT_EQ(out.waits[0].cmp, WaitCmp::ge);
  EXPECT_EQ(out.signals[7].sem, 207);
  EXPECT_EQ(out.signals[7].delta, 8u);
  Inst more = in;
  more.waits.push_back({1, WaitCmp::ge, 1});
  EXPECT_NE(check_msg(more), "<valid>");
}

// Waits and signals inline (up to 4 and 1) or on the heap (more) survive copies, moves and
// the growth of a vector of instructions.
TEST(Inst, SyncSurvivesCopyMoveAndGrowth) {
  auto make = [](int k) {
    Inst in = make_inst(Opcode::nop, Engine::pool);
    const int nw = k % 7, ns = k % 3; // 0..6 waits, 0..2 signals
    for (int j = 0; j < nw; ++j)
      in.waits.push_back({uint16_t(k + j), WaitCmp::ge, uint32_t(k * j)});
    for (int j = 0; j < ns; ++j) in.signals.push_back({uint16_t(k + 50 + j), uint32_t(j + 2)});
    return in;
  };
  std::vector<Inst> v;
  for (int k = 0; k < 200; ++k) v.push_back(make(k));
  for (int k = 0; k < 200; ++k) {
    ASSERT_EQ(v[size_t(k)].waits.size(), size_t(k % 7)) << k;
    ASSERT_EQ(v[size_t(k)].signals.size(), size_t(k % 3)) << k;
    for (int j = 0; j < k % 7; ++j) {
      EXPECT_EQ(v[size_t(k)].waits[size_t(j)].sem, k + j);
      EXPECT_EQ(v[size_t(k)].waits[size_t(j)].value, uint32_t(k * j));
    }
    for (int j = 0; j < k % 3; ++j)
      EXPECT_EQ(v[size_t(k)].signals[size_t(j)].delta, uint32_t(j + 2));
  }
  Inst heap = make(6), inl = make(4);
  const Inst heap_copy = heap, inl_copy = inl;
  Inst a = std::move(heap), b = std::move(inl);
  EXPECT_EQ(a, heap_copy);
  EXPECT_EQ(b, inl_copy);
  EXPECT_NE(a, b);
  a = b;
  EXPECT_EQ(a, inl_copy);
  b = heap_copy;
  EXPECT_EQ(b, heap_copy);
}

// Every instruction at its largest (every access pattern with four free dims and a vector
// index, four-step patterns, the most waits and signals) encodes to the sizes docs/encoding.md
// gives field by field: the encoder makes room for an instruction once, from a bound per
// operand kind, and aborts if an encoding outgrows it.
TEST(Inst, LargestEncodingOfEveryRow) {
  auto kind_bytes = [](OperandKind k) -> size_t {
    const size_t ap = 4 + 2 + 2 + 8 + 8 + 8 * 4 + (2 + 2 + 4 + 1) + (8 + 4); // busy_ap()
    switch (k) {
    case OperandKind::Dst:
    case OperandKind::Src: return ap;
    case OperandKind::Scalar: return 1 + ap;
    case OperandKind::ImmF:
    case OperandKind::ImmI:
    case OperandKind::Label: return 4;
    case OperandKind::Bool:
    case OperandKind::Enum:
    case OperandKind::Reg:
    case OperandKind::Queue: return 1;
    case OperandKind::RegOrImm: return 1 + 4;
    case OperandKind::Sem:
    case OperandKind::Group: return 2;
    case OperandKind::Pattern: return 1 + 4 * 8;
    case OperandKind::Mask: return 32;
    }
    return 0;
  };
  for (const InstDesc& d : inst_table()) {
    Inst in = make_inst(d.op, static_cast<Engine>(std::countr_zero(d.engines)));
    size_t want = 8 + 8 * (kMaxWaits + kMaxSignals);
    for (int k = 0; k < kMaxWaits; ++k) in.waits.push_back({uint16_t(k), WaitCmp::ge, 9u});
    for (int k = 0; k < kMaxSignals; ++k) in.signals.push_back({uint16_t(k), 1u});
    for (size_t k = 0; k < d.operands.size(); ++k) {
      const OperandKind kind = d.operands[k].kind;
      Operand& o = in.ops[k];
      if (kind == OperandKind::Dst || kind == OperandKind::Src || kind == OperandKind::Scalar) {
        o.present = true;
        o.is_ap = kind == OperandKind::Scalar;
        o.ap = busy_ap();
      } else if (kind == OperandKind::Pattern) {
        o.set_pat() = AffinePattern{4, {{{1, 2}, {3, 4}, {5, 6}, {7, 8}}}};
      }
      want += kind_bytes(kind);
    }
    std::vector<uint8_t> b;
    encode_inst(in, b);
    EXPECT_EQ(b.size(), want) << d.mnemonic;
  }
}

} // namespace
} // namespace nisa
