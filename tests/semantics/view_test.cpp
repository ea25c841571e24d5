// Access-pattern resolution: addresses, bounds (incl. negative strides), partition limits,
// dynamic offsets from registers and index tiles, and the start-partition rule.
#include "harness.h"

namespace nisa::interp::test {
namespace {

TEST(View, AddressesFollowThePattern) {
  Bench b;
  AccessPattern ap =
      Bench::sb(DType::fp32, 16, 8, 32, 32); // as docs/machine.md "Access patterns and DMA offsets"
  ap.ndims = 2;
  ap.dims[0] = {16, 2};
  ap.dims[1] = {2, 4};
  const View v = b.cx.view(ap, Access::read);
  EXPECT_EQ(v.parts, 16u);
  EXPECT_EQ(v.free_elems, 8u);
  EXPECT_FALSE(v.contiguous());
  EXPECT_EQ(v.row(0), b.st.sbuf + 32 * b.st.sbuf_stride + 32); // host stride, not the size
  EXPECT_EQ(v.row(3) - v.row(0), int64_t(3 * b.st.sbuf_stride));
  // Flat element 5 = (i0 = 1, i1 = 1): 16 + 2 elements in.
  EXPECT_EQ(v.at(2, 5), v.row(2) + 18 * 4);
  EXPECT_TRUE(b.cx.view(Bench::sb(DType::bf16, 4, 100), Access::read).contiguous());
}

TEST(View, NegativeStrideBoundsAreChecked) {
  Bench b;
  AccessPattern ap = Bench::sb(DType::fp32, 1, 4, 12); // elements 3, 2, 1, 0
  ap.dims[0] = {-1, 4};
  const View v = b.cx.view(ap, Access::read);
  EXPECT_EQ(v.at(0, 3), b.st.sbuf);
  ap.offset = 8; // would reach element -1
  EXPECT_FAULT(b.cx.view(ap, Access::read), "sbuf read of bytes -4..11 is outside");
}

TEST(View, PartitionAndByteLimits) {
  Bench b(Target::trn2, 212984);
  EXPECT_FAULT(b.cx.view(Bench::sb(DType::fp32, 16, 4, 0, 120), Access::write),
               "sbuf write of partitions 120..135 exceeds the 128 partitions");
  // Last byte of the usable partition is fine, one more is not.
  EXPECT_NO_THROW(b.cx.view(Bench::sb(DType::uint8, 128, 1, 212983), Access::read));
  EXPECT_FAULT(b.cx.view(Bench::sb(DType::fp32, 128, 2, 212980), Access::read),
               "is outside [0, 212984) of a partition");
  EXPECT_FAULT(b.cx.view(Bench::ps(DType::fp32, 1, 4097), Access::read), "[0, 16384)");
  AccessPattern none = Bench::sb(DType::fp32, 1, 1);
  none.space = MemSpace::none;
  EXPECT_FAULT(b.cx.view(none, Access::read), "no memory space");
}

TEST(View, RegisterDynamicOffset) {
  Bench b;
  AccessPattern ap = Bench::sb(DType::fp32, 2, 4);
  ap.dyn = DynKind::reg;
  ap.dyn_reg = 3;
  ap.dyn_mult = 4; // one "row" of 4 elements per unit
  ap.dyn_limit = 64;
  b.cx.regs[3] = 5;
  EXPECT_EQ(b.cx.view(ap, Access::read).row(1), b.st.sbuf + b.st.sbuf_stride + 5 * 16);
  b.cx.regs[3] = 70;
  EXPECT_FAULT(b.cx.view(ap, Access::read),
               "register r3 = 70 is outside [0, 64) for dynamic offset");
  b.cx.regs[3] = -1;
  EXPECT_FAULT(b.cx.view(ap, Access::read), "register r3 = -1 is outside [0, 64)");
}

TEST(View, VectorOffsetGatherAndSkip) {
  Bench b;
  // HBM A (16, 8) fp32 at 0; idx (4,1) int32 in SBUF partitions 0..3 = [3, 0, 15, 7].
  AccessPattern idx = Bench::sb(DType::int32, 4, 1, 64);
  b.put_int(idx, {3, 0, 15, 7});
  AccessPattern a;
  a.space = MemSpace::hbm;
  a.dtype = DType::fp32;
  a.part_count = 4;
  a.part_stride =
      0; // rows come from the index tile (docs/machine.md "Access patterns and DMA offsets")
  a.dims[0] = {1, 8};
  a.dyn = DynKind::vec;
  a.dyn_mult = 8;
  a.dyn_limit = 16;
  a.vidx = {0, 4, 64, DType::int32};
  const View v = b.cx.view(a, Access::read);
  EXPECT_EQ(v.row(0), b.cx.hbm + 3 * 32);
  EXPECT_EQ(v.row(2), b.cx.hbm + 15 * 32);
  b.put_int(idx, {3, 16, 15, -2});
  EXPECT_FAULT(b.cx.view(a, Access::read), "vector offset of row 1 = 16 is outside [0, 16)");
  const View s = b.cx.view(a, Access::read, /*oob_skip=*/true);
  ASSERT_EQ(s.row_skip.size(), 4u);
  EXPECT_EQ(std::vector<uint8_t>(s.row_skip.begin(), s.row_skip.end()),
            (std::vector<uint8_t>{0, 1, 0, 1}));
  EXPECT_EQ(s.row(2), b.cx.hbm + 15 * 32);
}

TEST(View, StartPartitionRuleForComputeEngines) {
  Bench b;
  auto copy = [&](uint16_t p0, uint16_t n) {
    Inst in = make(Opcode::copy, Engine::dve);
    set_ap(in, "dst", Bench::sb(DType::fp32, n, 4, 0, p0));
    set_ap(in, "src", Bench::sb(DType::fp32, n, 4, 64, p0));
    b.run(in);
  };
  EXPECT_NO_THROW(copy(96, 32));
  EXPECT_NO_THROW(copy(64, 64));
  EXPECT_NO_THROW(copy(0, 128));
  EXPECT_FAULT(copy(5, 1), "dve.copy operand `dst`: starts at partition 5, but an access of 1 "
                           "partitions must start at partition 0, 32, 64 or 96");
  EXPECT_FAULT(copy(32, 40), "must start at partition 0 or 64");
  EXPECT_FAULT(copy(64, 65), "must start at partition 0");
}

} // namespace
} // namespace nisa::interp::test
