// Round-trip properties: encode -> decode -> equal for every opcode, object write -> read ->
// equal, plus hand-assembled golden encodings that pin the byte layout of docs/encoding.md.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "isa/encode.h"
#include "isa/object.h"
#include "isa/reference.h"
#include "tests/isa/random_inst.h"

namespace nisa {
namespace {

constexpr int kInstancesPerOpcode = 500;

TEST(RoundTrip, EveryOpcodeEncodeDecodeEqual) {
  std::mt19937_64 rng(0x5eed0001);
  for (const auto& d : inst_table()) {
    std::vector<uint8_t> stream;
    std::vector<Inst> insts;
    for (int k = 0; k < kInstancesPerOpcode; ++k) {
      Inst in = testing::random_inst(rng, d.op);
      ASSERT_EQ(check_inst(in), std::nullopt) << "generator produced an invalid " << d.ident;
      // A random prefix checks that offsets are absolute and nothing reads before `offset`.
      std::vector<uint8_t> buf(static_cast<size_t>(rng() % 5), 0xA5);
      const size_t at = buf.size();
      encode_inst(in, buf);
      auto r = decode_inst(buf, at);
      ASSERT_TRUE(r.ok()) << d.ident << ": " << r.error().str();
      ASSERT_EQ(r->length, buf.size() - at) << d.ident;
      ASSERT_EQ(r->inst, in) << d.ident << " instance " << k;
      encode_inst(in, stream);
      insts.push_back(std::move(in));
    }
    auto all = decode_stream(stream, 0, stream.size());
    ASSERT_TRUE(all.ok()) << d.ident << ": " << all.error().str();
    EXPECT_EQ(*all, insts) << d.ident;
  }
}

// The size bounds printed in docs/encoding.md hold for every encoded instance.
TEST(RoundTrip, LengthsWithinDocumentedBounds) {
  std::mt19937_64 rng(0x5eed0005);
  for (const auto& d : inst_table()) {
    const SizeBounds b = encoded_size_bounds(d);
    std::vector<uint8_t> min_bytes;
    Inst smallest = make_inst(d.op, testing::RandomGen(rng).engine(d.engines));
    for (size_t k = 0; k < d.operands.size(); ++k) { // required APs at their smallest
      const auto& o = d.operands[k];
      if ((o.kind == OperandKind::Dst || o.kind == OperandKind::Src) && !o.optional)
        smallest.ops[k].ap.space = (o.spaces & kSpaceS)   ? MemSpace::sbuf
                                   : (o.spaces & kSpaceH) ? MemSpace::hbm
                                                          : MemSpace::psum;
      if (o.kind == OperandKind::Pattern) {
        smallest.ops[k].pat.n = 1;
        smallest.ops[k].pat.d[0] = {0, 1};
      }
    }
    ASSERT_EQ(check_inst(smallest), std::nullopt) << d.ident;
    encode_inst(smallest, min_bytes);
    EXPECT_EQ(static_cast<int>(min_bytes.size()), b.min) << d.ident;
    for (int k = 0; k < 200; ++k) {
      std::vector<uint8_t> bytes;
      encode_inst(testing::random_inst(rng, d.op), bytes);
      EXPECT_GE(static_cast<int>(bytes.size()), b.min) << d.ident;
      EXPECT_LE(static_cast<int>(bytes.size()), b.max) << d.ident;
    }
  }
}

TEST(RoundTrip, EncodingIsCanonical) {
  // Re-encoding what was decoded gives back the same bytes (one encoding per instruction).
  std::mt19937_64 rng(0x5eed0002);
  for (const auto& d : inst_table()) {
    for (int k = 0; k < 50; ++k) {
      std::vector<uint8_t> a, b;
      encode_inst(testing::random_inst(rng, d.op), a);
      auto r = decode_inst(a, 0);
      ASSERT_TRUE(r.ok()) << r.error().str();
      encode_inst(r->inst, b);
      EXPECT_EQ(a, b) << d.ident;
    }
  }
}

// Launch settings (.ranks, .lnc) on a third of the modules, drawn after the module so that
// the modules are those of the other tests.
void random_launch(std::mt19937_64& rng, Module& m) {
  if (rng() % 3 != 0) return;
  auto loc = [&] {
    return DebugLoc{static_cast<uint32_t>(rng() % m.files.size()),
                    static_cast<uint32_t>(1 + rng() % 500), static_cast<uint32_t>(1 + rng() % 80),
                    static_cast<int32_t>(rng() % (m.frames.size() + 1)) - 1};
  };
  m.ranks = {static_cast<uint32_t>(1 + rng() % 128), loc()};
  if (rng() % 2) m.lnc = {static_cast<uint32_t>(1 + rng() % 2), loc()};
}

TEST(RoundTrip, ObjectWriteReadEqual) {
  std::mt19937_64 rng(0x5eed0003);
  for (int k = 0; k < 300; ++k) {
    Module m = testing::random_module(rng);
    random_launch(rng, m);
    const auto bytes = write_object(m);
    auto r = read_object(bytes);
    ASSERT_TRUE(r.ok()) << "module " << k << ": " << r.error().str();
    ASSERT_EQ(*r, m) << "module " << k;
    EXPECT_EQ(write_object(*r), bytes) << "writer is not deterministic";
  }
}

TEST(RoundTrip, EmptyModule) {
  const Module m;
  auto r = read_object(write_object(m));
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(*r, m);
}

TEST(RoundTrip, SaveAndLoadFile) {
  std::mt19937_64 rng(0x5eed0004);
  const Module m = testing::random_module(rng);
  const std::string path = ::testing::TempDir() + "roundtrip.nbin";
  ASSERT_EQ(save_object(path, m), std::nullopt);
  auto r = load_object(path);
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(*r, m);
  std::remove(path.c_str());
}

// ---- golden encodings, assembled by hand from docs/encoding.md ------------------------------

std::vector<uint8_t> enc(const Inst& in) {
  std::vector<uint8_t> b;
  encode_inst(in, b);
  return b;
}

TEST(Golden, NopWithWaitAndSignal) {
  Inst in = make_inst(Opcode::nop, Engine::sp);
  in.waits.push_back({0x0102, WaitCmp::eq, 0x0A0B0C0D});
  in.signals.push_back({0x0003, 7});
  const std::vector<uint8_t> want = {
      0x01, 0x00, 24, 0x00, 4,    0x11, 0,    0,    // opcode 1, length 24, sp, 1 wait 1 signal
      0x02, 0x01, 1,  0,    0x0D, 0x0C, 0x0B, 0x0A, // wait s258 == 0x0A0B0C0D
      0x03, 0x00, 0,  0,    7,    0,    0,    0,    // signal s3 += 7
  };
  EXPECT_EQ(enc(in), want);
}

TEST(Golden, RegisterAluWithImmediate) {
  Inst in = make_inst(Opcode::sub, Engine::act);
  in.ops[0].i = 5;                                                         // rd
  in.ops[1].i = 63;                                                        // rs
  in.ops[2].i = -2;                                                        // rt immediate
  const std::vector<uint8_t> want = {0x12, 0x00, 15,   0,    1,   0, 0, 0, // header
                                     5,    63,                             // rd, rs
                                     0,    0xFE, 0xFF, 0xFF, 0xFF};        // tag imm, -2
  EXPECT_EQ(enc(in), want);
}

TEST(Golden, TensorTensorAccessPatterns) {
  Inst in = make_inst(Opcode::tensor_tensor, Engine::pool);
  AccessPattern a;
  a.space = MemSpace::sbuf;
  a.dtype = DType::bf16;
  a.ndims = 2;
  a.part_start = 32;
  a.part_count = 64;
  a.offset = 0x1000;
  a.dims[0] = {-3, 5};
  a.dims[1] = {1, 16};
  in.ops[0].ap = a;
  AccessPattern h;
  h.space = MemSpace::psum;
  h.ndims = 1;
  h.part_count = 1;
  h.dims[0] = {1, 2};
  h.dyn = DynKind::reg;
  h.dyn_reg = 9;
  h.dyn_mult = 256;
  h.dyn_limit = 10;
  in.ops[1].ap = h;
  in.ops[2].ap = a;
  in.ops[3].i = static_cast<int>(AluOp::max);
  std::vector<uint8_t> ap_a = {2,    1,    2,    0,    32, 0, 64, 0, 0, 0, 0, 0, 0, 0, 0, 0, // hdr
                               0x00, 0x10, 0,    0,    0,  0, 0,  0,            // offset
                               0xFD, 0xFF, 0xFF, 0xFF, 5,  0, 0,  0,            // [-3, 5]
                               1,    0,    0,    0,    16, 0, 0,  0};           // [1, 16]
  std::vector<uint8_t> ap_h = {3,  0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, // hdr
                               0,  0, 0, 0, 0, 0, 0, 0,                         // offset
                               1,  0, 0, 0, 2, 0, 0, 0,                         // [1, 2]
                               9,                                               // r9
                               0,  1, 0, 0, 0, 0, 0, 0,                         // mult 256
                               10, 0, 0, 0};                                    // limit
  std::vector<uint8_t> want = {0x00, 0x03, 0, 0, 3, 0, 0, 0};
  want.insert(want.end(), ap_a.begin(), ap_a.end());
  want.insert(want.end(), ap_h.begin(), ap_h.end());
  want.insert(want.end(), ap_a.begin(), ap_a.end());
  want.push_back(4); // op = max
  want[2] = static_cast<uint8_t>(want.size());
  EXPECT_EQ(enc(in), want);
}

TEST(Golden, ActivationScalarsAndAbsentOptional) {
  Inst in = make_inst(Opcode::activation, Engine::act);
  in.ops[0].ap.space = MemSpace::sbuf; // minimal APs: fp32, 1 dim [0, 1], 1 partition
  in.ops[1].ap.space = MemSpace::sbuf;
  in.ops[2].i = static_cast<int>(ActFunc::exp);
  // scale keeps 1.0, bias 0.0, reduce_cmd idle, reduce_res absent
  std::vector<uint8_t> ap = {2, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                             0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0};
  std::vector<uint8_t> want = {0x00, 0x02, 0, 0, 1, 0, 0, 0};
  want.insert(want.end(), ap.begin(), ap.end());
  want.insert(want.end(), ap.begin(), ap.end());
  for (uint8_t b : {1, 0, 0, 0, 0x80, 0x3F, 0, 0, 0, 0, 0, 0, 0}) want.push_back(b);
  // func exp, scale tag imm 1.0f, bias tag imm 0.0f, reduce_cmd idle, reduce_res absent
  want[2] = static_cast<uint8_t>(want.size());
  EXPECT_EQ(enc(in), want);
}

} // namespace
} // namespace nisa
