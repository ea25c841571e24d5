// Malformed instructions and objects: each error names the right byte offset and reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <random>

#include <fmt/format.h>

#include "isa/encode.h"
#include "isa/object.h"
#include "tests/isa/random_inst.h"

namespace nisa {
namespace {

// A valid act.activation and its encoding; offsets below follow docs/encoding.md.
struct Act {
  Inst in;
  std::vector<uint8_t> bytes;
  Act() : in(make_inst(Opcode::activation, Engine::act)) {
    in.ops[0].ap.space = in.ops[1].ap.space = MemSpace::sbuf;
    encode_inst(in, bytes);
  }
};
constexpr size_t kAp = 32; // bytes of a minimal 1-dim access pattern
constexpr size_t kDst = 8, kSrc = kDst + kAp, kFunc = kSrc + kAp, kScaleTag = kFunc + 1;

DecodeError decode_fails(const std::vector<uint8_t>& b, uint64_t at = 0) {
  auto r = decode_inst(b, at);
  EXPECT_FALSE(r.ok()) << "decoded unexpectedly";
  return r.ok() ? DecodeError{~0ull, ""} : r.error();
}

#define EXPECT_DECODE_ERROR(bytes, off, msg)                                                       \
  {                                                                                                \
    DecodeError e_ = decode_fails(bytes);                                                          \
    EXPECT_EQ(e_.offset, static_cast<uint64_t>(off));                                              \
    EXPECT_EQ(e_.message, msg);                                                                    \
  }

TEST(DecodeError, Baseline) {
  Act a;
  auto r = decode_inst(a.bytes, 0);
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(r->inst, a.in);
}

TEST(DecodeError, UnknownOpcode) {
  Act a;
  a.bytes[0] = 0xEE;
  a.bytes[1] = 0x7E;
  EXPECT_DECODE_ERROR(a.bytes, 0, "unknown opcode 0x7eee");
}

TEST(DecodeError, LengthFields) {
  Act a;
  auto b = a.bytes;
  b[2] = 7, b[3] = 0;
  EXPECT_DECODE_ERROR(b, 2, "length field 7 is shorter than the 8-byte header");
  b = a.bytes;
  b[2] = static_cast<uint8_t>(b.size() + 1);
  EXPECT_DECODE_ERROR(b, 2,
                      fmt::format("length field {} runs past the end of the buffer ({} "
                                  "bytes left)",
                                  b.size() + 1, b.size()));
  b = a.bytes;
  b.push_back(0);
  b[2] = static_cast<uint8_t>(b.size());
  EXPECT_DECODE_ERROR(b, 2,
                      fmt::format("length field inconsistent: act.activation says {} "
                                  "bytes, the operands end after {}",
                                  b.size(), b.size() - 1));
  b = a.bytes;
  b[2] = static_cast<uint8_t>(b.size() - 1);
  DecodeError e = decode_fails(b);
  EXPECT_LT(e.offset, b.size());
  EXPECT_NE(e.message.find("truncated"), std::string::npos) << e.message;
}

TEST(DecodeError, HeaderFields) {
  Act a;
  auto b = a.bytes;
  b[4] = 2; // dve
  EXPECT_DECODE_ERROR(b, 4, "engine dve not allowed for activation");
  b[4] = 9;
  EXPECT_DECODE_ERROR(b, 4, "unknown engine 9");
  b = a.bytes;
  b[5] = 0x90;
  EXPECT_DECODE_ERROR(b, 5, "act.activation: 9 waits, 0 signals (at most 8 each)");
  b = a.bytes;
  b[7] = 0x40;
  EXPECT_DECODE_ERROR(b, 7, "reserved bits set in the instruction header");
}

TEST(DecodeError, WaitAndSignalFields) {
  Act a;
  a.in.waits.push_back({1, WaitCmp::ge, 5});
  a.in.signals.push_back({2, 1});
  std::vector<uint8_t> b;
  encode_inst(a.in, b);
  auto c = b;
  c[10] = 2;
  EXPECT_DECODE_ERROR(c, 10, "unknown wait comparison 2");
  c = b;
  c[11] = 1;
  EXPECT_DECODE_ERROR(c, 11, "reserved bits set in a wait");
  c = b;
  c[19] = 1;
  EXPECT_DECODE_ERROR(c, 19, "reserved bits set in a signal");
}

TEST(DecodeError, AccessPatternFields) {
  Act a;
  auto b = a.bytes;
  b[kDst] = 1;
  EXPECT_DECODE_ERROR(b, kDst,
                      "space hbm not allowed for operand 'dst' of act.activation "
                      "(sbuf|psum)");
  b[kDst] = 7;
  EXPECT_DECODE_ERROR(b, kDst, "unknown memory space 7 in operand 'dst' of act.activation");
  b[kDst] = 0;
  EXPECT_DECODE_ERROR(b, kDst, "required operand 'dst' of act.activation is absent");
  b = a.bytes;
  b[kSrc + 1] = 11;
  EXPECT_DECODE_ERROR(b, kSrc + 1, "unknown dtype 11 in operand 'src' of act.activation");
  b = a.bytes;
  b[kSrc + 2] = 5;
  EXPECT_DECODE_ERROR(b, kSrc + 2, "ndims 5 outside 1..4 in operand 'src' of act.activation");
  b = a.bytes;
  b[kSrc + 3] = 3;
  EXPECT_DECODE_ERROR(b, kSrc + 3,
                      "unknown dynamic-offset kind 3 in operand 'src' of act.activation");
  b = a.bytes;
  b[kSrc + 4] = 128; // part_start 128 + part_count 1
  EXPECT_DECODE_ERROR(b, kSrc,
                      "operand 'src' of act.activation: partitions [128, 129) outside "
                      "0..128");
  b = a.bytes;
  b[kSrc + 28] = 0; // count of dim 0
  EXPECT_DECODE_ERROR(b, kSrc, "operand 'src' of act.activation: free dim 0 has count 0");
}

TEST(DecodeError, EnumsTagsAndFlags) {
  Act a;
  auto b = a.bytes;
  b[kFunc] = 99;
  EXPECT_DECODE_ERROR(b, kFunc,
                      "enum value 99 out of range for operand 'func' of act.activation "
                      "(ActFunc)");
  b = a.bytes;
  b[kScaleTag] = 2;
  EXPECT_DECODE_ERROR(b, kScaleTag, "scalar tag 2 > 1 in operand 'scale' of act.activation");
  Inst mm = make_inst(Opcode::matmul, Engine::pe);
  mm.ops[0].ap.space = MemSpace::psum;
  mm.ops[1].ap.space = mm.ops[2].ap.space = MemSpace::sbuf;
  std::vector<uint8_t> m;
  encode_inst(mm, m);
  m.back() = 2; // transpose flag
  EXPECT_DECODE_ERROR(m, m.size() - 1, "flag 2 > 1 in operand 'transpose' of pe.matmul");
}

TEST(DecodeError, RegistersAndQueues) {
  Inst li = make_inst(Opcode::li, Engine::dve);
  std::vector<uint8_t> b;
  encode_inst(li, b);
  b[8] = 64;
  EXPECT_DECODE_ERROR(b, 8, "register 64 > 63 in operand 'rd' of dve.li");
  Inst dma = make_inst(Opcode::dma, Engine::pool);
  dma.ops[1].ap.space = dma.ops[2].ap.space = MemSpace::hbm;
  std::vector<uint8_t> d;
  encode_inst(dma, d);
  d[8] = 16;
  EXPECT_DECODE_ERROR(d, 8, "queue 16 > 15 in operand 'queue' of pool.dma");
}

TEST(DecodeError, OffsetsAreAbsolute) {
  Act a;
  std::vector<uint8_t> b(100, 0);
  b.insert(b.end(), a.bytes.begin(), a.bytes.end());
  b[100 + kFunc] = 77;
  auto r = decode_inst(b, 100);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().offset, 100 + kFunc);
  EXPECT_EQ(r.error().str(), fmt::format("byte {} (0x{:x}): enum value 77 out of range for "
                                         "operand 'func' of act.activation (ActFunc)",
                                         100 + kFunc, 100 + kFunc));
  auto past = decode_inst(b, b.size());
  ASSERT_FALSE(past.ok());
  EXPECT_LT(past.error().offset, b.size());
}

// ---- object errors --------------------------------------------------------------------------

// Recomputes the trailing checksum so a deliberate corruption reaches the section parsers.
void fix_checksum(std::vector<uint8_t>& b) {
  const uint64_t h = object_body_checksum(uint16_t(b[4] | b[5] << 8),
                                          std::span<const uint8_t>(b).first(b.size() - 8));
  for (int k = 0; k < 8; ++k) b[b.size() - 8 + k] = static_cast<uint8_t>(h >> (8 * k));
}

Module small_module() {
  Module m;
  m.kernel = "k";
  m.files = {"k.nasm"};
  m.sems = {{"s0", 0}};
  Inst nop = make_inst(Opcode::nop, Engine::sp);
  nop.waits.push_back({0, WaitCmp::ge, 1});
  m.streams[int(Engine::sp)] = {nop, make_inst(Opcode::halt, Engine::sp)};
  m.debug[int(Engine::sp)] = {{0, 3, 1, -1}, {0, 4, 1, -1}};
  return m;
}

DecodeError object_fails(const std::vector<uint8_t>& b) {
  auto r = read_object(b);
  EXPECT_FALSE(r.ok());
  return r.ok() ? DecodeError{~0ull, ""} : r.error();
}

TEST(ObjectError, HeaderChecks) {
  const auto good = write_object(small_module());
  ASSERT_TRUE(read_object(good).ok());
  auto b = good;
  b[0] = 'X';
  EXPECT_EQ(object_fails(b).offset, 0u);
  EXPECT_EQ(object_fails(b).message, "bad magic: not a .nbin object (expected \"NISA\")");
  b = good;
  b[4] = 9;
  EXPECT_EQ(object_fails(b).offset, 4u);
  EXPECT_EQ(object_fails(b).message,
            "unsupported format version 9 (this nisa reads versions 1 to 3)");
  b = good;
  b[4] = 0;
  EXPECT_EQ(object_fails(b).message,
            "unsupported format version 0 (this nisa reads versions 1 to 3)");
  b = good;
  b[12] = 11; // version 3 with version 1's section count
  EXPECT_EQ(object_fails(b).offset, 12u);
  EXPECT_EQ(object_fails(b).message, "section count 11 (version 3 has 12)");
  b = good;
  b[8] = 7;
  EXPECT_EQ(object_fails(b).message, "unknown target 7");
  b = good;
  b.pop_back();
  EXPECT_EQ(object_fails(b).offset, 16u);
  EXPECT_EQ(object_fails(b).message,
            fmt::format("header says the object is {} bytes but it is {} (truncated)", good.size(),
                        b.size()));
  b = good;
  b[good.size() - 20] ^= 0x10;
  EXPECT_EQ(object_fails(b).offset, good.size() - 8);
  EXPECT_EQ(object_fails(b).message, "checksum mismatch: the object is corrupt");
  EXPECT_EQ(object_fails({}).offset, 0u);
}

// Finds the first occurrence of `pattern` at or after `from`.
size_t find(const std::vector<uint8_t>& b, std::vector<uint8_t> pattern, size_t from = 0) {
  auto it = std::search(b.begin() + static_cast<std::ptrdiff_t>(from), b.end(), pattern.begin(),
                        pattern.end());
  EXPECT_NE(it, b.end());
  return static_cast<size_t>(it - b.begin());
}

TEST(ObjectError, UndeclaredSemaphore) {
  Module m = small_module();
  m.streams[int(Engine::sp)][0].waits[0].sem = 1;
  auto b = write_object(m);
  const size_t nop_at = find(b, {0x01, 0x00, 16, 0, 4, 0x10}); // nop, 16 bytes, sp, 1 wait
  DecodeError e = object_fails(b);
  EXPECT_EQ(e.offset, nop_at);
  EXPECT_EQ(e.message, "sp.nop: wait on undeclared semaphore 1");
}

TEST(ObjectError, InstructionOnWrongTarget) {
  Module m = small_module();
  m.target = Target::trn1;
  m.streams[int(Engine::sp)][1] = make_inst(Opcode::core_barrier, Engine::sp);
  DecodeError e = object_fails(write_object(m));
  EXPECT_EQ(e.message, "sp.core_barrier is not available on trn1");
}

TEST(ObjectError, BranchTargetAndLabelRanges) {
  Module m = small_module();
  Inst br = make_inst(Opcode::br, Engine::sp);
  br.ops[0].i = 3; // stream has 2 instructions (index 2 = end is allowed)
  m.streams[int(Engine::sp)][1] = br;
  EXPECT_EQ(object_fails(write_object(m)).message,
            "sp.br: operand 'target': branch target 3 beyond the 2-instruction stream");
  m = small_module();
  m.labels[int(Engine::sp)] = {{"loop", 5}};
  EXPECT_EQ(object_fails(write_object(m)).message,
            "label 'loop' points at instruction 5 of a 2-instruction stream");
}

TEST(ObjectError, DebugInfoIndices) {
  Module m = small_module();
  m.debug[int(Engine::sp)][1].file = 4;
  EXPECT_EQ(object_fails(write_object(m)).message, "file index 4 out of range (1 files)");
  m = small_module();
  m.debug[int(Engine::sp)][1].frame = 0;
  EXPECT_EQ(object_fails(write_object(m)).message, "expansion frame 0 out of range (0 frames)");
  m = small_module();
  m.debug[int(Engine::sp)].pop_back();
  EXPECT_EQ(object_fails(write_object(m)).message,
            "sp debug info has 1 entries for 2 instructions");
  m = small_module();
  m.frames = {{ExpansionFrame::Macro, "m", 0, 1, 1, 0}}; // its own parent
  EXPECT_EQ(object_fails(write_object(m)).message, "frame 0 has parent 0 (must be -1..-1)");
}

// The launch section (version 2): values in range, locations inside the files and frames, and
// no location for a setting not declared.
TEST(ObjectError, LaunchChecks) {
  Module m = small_module();
  m.ranks = {4, {0, 2, 1, -1}};
  m.lnc = {2, {0, 3, 1, -1}};
  auto ok = read_object(write_object(m));
  ASSERT_TRUE(ok.ok()) << ok.error().str();
  EXPECT_EQ(*ok, m);
  m.ranks.value = 129;
  DecodeError e = object_fails(write_object(m));
  const auto bytes = write_object(m);
  EXPECT_EQ(e.offset, bytes.size() - 8 - 40); // the launch payload: 2 x 20 bytes
  EXPECT_EQ(e.message, ".ranks 129: expected 1..128");
  m.ranks.value = 4;
  m.lnc.value = 3;
  EXPECT_EQ(object_fails(write_object(m)).message, ".lnc 3: expected 1 or 2");
  m.lnc.value = 2;
  m.lnc.loc.file = 1;
  EXPECT_EQ(object_fails(write_object(m)).message, "file index 1 out of range (1 files)");
  m.lnc.loc = {0, 3, 1, 0};
  EXPECT_EQ(object_fails(write_object(m)).message, "expansion frame 0 out of range (0 frames)");
  m.lnc = {0, {0, 3, 1, -1}};
  EXPECT_EQ(object_fails(write_object(m)).message, ".lnc is not declared but has a location");
  // Declared without a location (line 0): read, and named without one.
  m.lnc = {2, {}};
  ASSERT_TRUE(read_object(write_object(m)).ok());
}

TEST(ObjectError, DeclarationChecks) {
  Module m = small_module();
  m.sems.push_back({"s0", 1});
  EXPECT_EQ(object_fails(write_object(m)).message, "duplicate semaphore 's0'");
  m = small_module();
  m.tensors.push_back({"t", MemSpace::sbuf, DType::fp32, {120, 4}, Role::input, 0, 16});
  EXPECT_EQ(object_fails(write_object(m)).message,
            "tensor 't' spans partitions [16, 136) beyond 128");
  m = small_module();
  m.tensors.push_back({"t", MemSpace::hbm, DType::fp32, {0, 4}, Role::input, 0, 0});
  EXPECT_EQ(object_fails(write_object(m)).message, "tensor 't': dimension 0 is 0");
}

TEST(ObjectError, CorruptCountsDoNotAllocate) {
  // The strings count is the first field after the 24-byte header and 8-byte section header.
  auto b = write_object(small_module());
  for (int k = 0; k < 4; ++k) b[32 + k] = 0xFF;
  fix_checksum(b);
  DecodeError e = object_fails(b);
  EXPECT_EQ(e.offset, 32u);
  EXPECT_NE(e.message.find("string count 4294967295 needs at least"), std::string::npos)
      << e.message;
}

TEST(ObjectError, StreamCountMismatch) {
  auto b = write_object(small_module());
  // sp stream: the 5th (count, length) pair of the streams section; find by the nop header.
  const size_t nop_at = find(b, {0x01, 0x00, 16, 0, 4, 0x10});
  const size_t count_at = nop_at - 8;
  ASSERT_EQ(b[count_at], 2);
  b[count_at] = 3;
  fix_checksum(b);
  DecodeError e = object_fails(b);
  EXPECT_EQ(e.offset, count_at);
  EXPECT_EQ(e.message, "sp stream count says 3 instructions, its bytes hold 2");
}

TEST(ObjectError, LoadNamesTheFile) {
  auto r = load_object("/nonexistent/dir/k.nbin");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().str(), "/nonexistent/dir/k.nbin: cannot open: No such file or directory");
  const std::string path = ::testing::TempDir() + "corrupt.nbin";
  auto b = write_object(small_module());
  b[5] = 1;
  {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  }
  auto c = load_object(path);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().str(), path + ": byte 4 (0x4): unsupported format version 259 (this nisa "
                                    "reads versions 1 to 3)");
  std::remove(path.c_str());
}

} // namespace
} // namespace nisa
