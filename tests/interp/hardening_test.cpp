// Issue 11 (part A): hostile sizes, addresses and operands are clear errors or faults, never
// a crash, a wrapped bounds check or an allocation without bound.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "builders.h"
#include "isa/limits.h"
#include "isa/object.h"

namespace nisa::test {
namespace {

using interp::Machine;
using interp::MachineOptions;
using interp::RunStatus;

interp::RunResult run_one(const Module& mod) {
  Machine m(mod, {});
  return interp::run(m);
}

// One DMA from `src` to `dst` after writing nothing: the operands alone decide the outcome.
KB one_dma(const AccessPattern& dst, const AccessPattern& src) {
  KB k;
  k.hbm("x", DType::fp32, {4, 8}, Role::input);
  k.add(Engine::sp, dma(Engine::sp, 0, dst, src));
  return k;
}

void expect_fault(const interp::RunResult& r, const std::string& what) {
  EXPECT_EQ(r.status, RunStatus::fault);
  EXPECT_EQ(r.exit_code, interp::kExitFault);
  EXPECT_NE(r.report.find(what), std::string::npos) << "[" << r.report << "]";
}

TEST(Hardening, HostileOffsetsAndStridesFaultInsteadOfWrapping) {
  KB base;
  const TensorDecl x = base.m.tensors.at(base.hbm("x", DType::fp32, {4, 8}, Role::input));
  const AccessPattern dst = sbuf_ap(0, 4, 0, DType::fp32, 8);
  // Offset 2^63 - 1: offset + span used to wrap negative past the check.
  AccessPattern a = hbm_ap(x);
  a.offset = 0x7fffffffffffffffull;
  expect_fault(run_one(one_dma(dst, a).m), "hbm read of bytes 9223372036854775807..");
  // Row stride 2^61 + 1 elements: x 4 bytes x 3 rows overflows 64 bits.
  a = hbm_ap(x);
  a.part_stride = (int64_t(1) << 61) + 1;
  expect_fault(run_one(one_dma(dst, a).m),
               "(4 rows of stride 2305843009213693953) is outside [0, 4096)");
  a.part_stride = -a.part_stride;
  expect_fault(run_one(one_dma(dst, a).m),
               "(4 rows of stride -2305843009213693953) is outside [0, 4096)");
  // An offset past 2^63 (negative as int64) on chip.
  AccessPattern s = sbuf_ap(0, 4, 0, DType::fp32, 8);
  s.offset = 0xfffffffffffffff0ull;
  expect_fault(run_one(one_dma(s, hbm_ap(x)).m), "sbuf write of bytes");
}

TEST(Hardening, HugeFreeDimsFaultBeforeAnyAllocation) {
  KB base;
  const TensorDecl x = base.m.tensors.at(base.hbm("x", DType::fp32, {4, 8}, Role::input));
  // [[2^31 - 1, 2^32 - 1]]: the reach is ~2^63 elements, x 4 bytes.
  AccessPattern s = sbuf_ap(0, 1, 0, DType::fp32, 1);
  s.dims[0] = {INT32_MAX, UINT32_MAX};
  // (The static rules see the element counts differ before any view is made.)
  expect_fault(run_one(one_dma(s, hbm_ap(x)).m), "element counts differ");
  // Stride 0 (a broadcast) of 2^32 - 1 in each of 4 dims: ~2^128 elements (past even 128-bit
  // arithmetic), span 0 bytes. The element cap of one access stops it, on either side.
  AccessPattern b = sbuf_ap(0, 1, 0, DType::fp32, 1);
  b.ndims = 4;
  for (auto& d : b.dims) d = {0, UINT32_MAX};
  expect_fault(run_one(one_dma(sbuf_ap(0, 4, 0, DType::fp32, 8), b).m), "element counts differ");
  expect_fault(run_one(one_dma(b, b).m), "exceeds the");
  // A dynamic offset: register value x multiplier past 2^64 elements.
  AccessPattern r = hbm_ap(x);
  r.dyn = DynKind::reg;
  r.dyn_reg = 0;
  r.dyn_mult = INT64_MAX;
  KB k = one_dma(sbuf_ap(0, 4, 0, DType::fp32, 8), r);
  Machine m(k.m, {});
  for (auto& c : m.cores) c.st.regs[static_cast<int>(Engine::sp)][0] = 7;
  expect_fault(interp::run(m), "is outside");
}

// An HBM tensor ending past the address space, an SBUF tensor at an address near 2^64: the
// object reader rejects both (naming the tensor), and so does a Machine given such a Module
// directly (the debugger's `print` used to crash on the second).
TEST(Hardening, ObjectsWithTensorsPastTheAddressSpaceAreRejected) {
  for (int kind = 0; kind < 3; ++kind) {
    KB k;
    k.hbm("x", DType::fp32, {4, 8}, Role::input);
    TensorDecl t;
    t.name = "bad";
    t.dtype = DType::fp32;
    if (kind == 0) { // hbm near 2^64
      t.space = MemSpace::hbm;
      t.shape = {4, 8};
      t.address = ~uint64_t(0) - 64;
    } else if (kind == 1) { // hbm whose size wraps to 0 bytes
      t.space = MemSpace::hbm;
      t.shape = {int64_t(1) << 40, int64_t(1) << 40, 16};
      t.address = 4096;
    } else { // sbuf at a per-partition offset near 2^64
      t.space = MemSpace::sbuf;
      t.shape = {128, 4};
      t.address = ~uint64_t(0) - 8;
    }
    k.m.tensors.push_back(t);
    auto r = read_object(write_object(k.m));
    ASSERT_FALSE(r.ok()) << kind;
    EXPECT_NE(r.error().message.find("tensor 'bad'"), std::string::npos) << r.error().str();
    try {
      Machine m(k.m, {});
      FAIL() << kind;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("tensor 'bad'"), std::string::npos) << e.what();
    }
  }
}

TEST(Hardening, HbmLimitIsCheckedBeforeAllocating) {
  KB k;
  k.hbm("x", DType::fp32, {4, 8}, Role::input);
  k.hbm("big", DType::fp32, {int64_t(1) << 20, int64_t(1) << 20}); // 4 TiB
  try {
    Machine m(k.m, {});
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("needs 4398046515200 bytes of HBM per rank (tensor "
                                         "'big' ends at byte 4398046511232), more than the "
                                         "limit of 4294967296 bytes (--max-hbm)"),
              std::string::npos)
        << e.what();
  }
  // The limit is an option: 8 KiB fits a small module, 4 KiB does not.
  KB s;
  s.hbm("x", DType::fp32, {32, 64}, Role::input); // 8 KiB
  MachineOptions mo;
  mo.max_hbm = 8192;
  EXPECT_NO_THROW(Machine(s.m, mo));
  mo.max_hbm = 4096;
  EXPECT_THROW(Machine(s.m, mo), std::runtime_error);
  EXPECT_EQ(Machine::hbm_size(s.m, MachineOptions{}), 8192u);
}

// --hbm-spill auto spills when the ranks' HBM exceeds half of the host's RAM (decided before
// anything is allocated); on and off are what they say.
TEST(Hardening, HbmSpillRule) {
  MachineOptions o;
  o.ranks = 2;
  EXPECT_FALSE(Machine::spill_hbm(uint64_t(1) << 20, o)); // 2 MiB: in memory
  o.ranks = 128;
  EXPECT_TRUE(Machine::spill_hbm(uint64_t(1) << 40, o)); // 128 TiB: spilled
  o.hbm_spill = interp::HbmSpill::off;
  EXPECT_FALSE(Machine::spill_hbm(uint64_t(1) << 40, o));
  o.hbm_spill = interp::HbmSpill::on;
  EXPECT_TRUE(Machine::spill_hbm(4096, o));
}

TEST(Hardening, CheckedTensorBytes) {
  TensorDecl t;
  t.space = MemSpace::hbm;
  t.dtype = DType::fp32;
  t.shape = {int64_t(1) << 31, int64_t(1) << 31}; // 2^62 elements x 4 = 2^64
  EXPECT_FALSE(checked_tensor_bytes(t));
  t.shape = {int64_t(1) << 31, (int64_t(1) << 31) - 1};
  ASSERT_TRUE(checked_tensor_bytes(t));
  EXPECT_EQ(*checked_tensor_bytes(t), (uint64_t(1) << 33) * ((uint64_t(1) << 31) - 1));
  EXPECT_TRUE(tensor_extent_error(t)); // 2^64 - 2^33 bytes: past the 2^48 address space
  t.shape = {1024, 1024};
  t.address = kMaxHbmExtent - 4 * 1024 * 1024;
  EXPECT_FALSE(tensor_extent_error(t)); // ends exactly at the limit
  t.address += 1;
  EXPECT_TRUE(tensor_extent_error(t));
}

} // namespace
} // namespace nisa::test
