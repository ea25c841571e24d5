// check_inst / check_inst_for_target: each rule rejects what it should, with a clear message.
#include <gtest/gtest.h>

#include <random>

#include "isa/encode.h"
#include "tests/isa/random_inst.h"

namespace nisa {
namespace {

// A valid dve.tensor_tensor to break one field at a time.
Inst valid_tt() {
  Inst in = make_inst(Opcode::tensor_tensor, Engine::dve);
  for (int k = 0; k < 3; ++k) in.ops[k].ap.space = MemSpace::sbuf;
  in.ops[3].i = static_cast<int>(AluOp::add);
  return in;
}

std::string check_msg(const Inst& in) {
  auto e = check_inst(in);
  return e ? *e : "<valid>";
}

TEST(Check, ValidBaseline) { EXPECT_EQ(check_inst(valid_tt()), std::nullopt); }

TEST(Check, EngineNotAllowed) {
  Inst in = valid_tt();
  in.engine = Engine::pe;
  EXPECT_EQ(check_msg(in), "tensor_tensor is not available on engine pe");
}

TEST(Check, OperandCount) {
  Inst in = valid_tt();
  in.ops.pop_back();
  EXPECT_EQ(check_msg(in), "dve.tensor_tensor: 3 operands, the table has 4");
}

TEST(Check, TooManyWaits) {
  Inst in = valid_tt();
  in.waits.resize(9);
  EXPECT_EQ(check_msg(in), "dve.tensor_tensor: 9 waits (at most 8)");
}

TEST(Check, EnumOutOfRange) {
  Inst in = valid_tt();
  in.ops[3].i = 200;
  EXPECT_EQ(check_msg(in),
            "operand 'op' of dve.tensor_tensor: enum value 200 out of range (AluOp)");
}

TEST(Check, SpaceNotAllowed) {
  Inst in = valid_tt();
  in.ops[1].ap.space = MemSpace::hbm;
  EXPECT_EQ(check_msg(in), "operand 'in0' of dve.tensor_tensor: space hbm not allowed (sbuf|psum)");
}

TEST(Check, AccessPatternRules) {
  struct Case {
    void (*mutate)(AccessPattern&);
    const char* why;
  };
  const Case cases[] = {
      {[](AccessPattern& a) { a.ndims = 0; }, "ndims 0 outside 1..4"},
      {[](AccessPattern& a) { a.ndims = 5; }, "ndims 5 outside 1..4"},
      {[](AccessPattern& a) { a.dims[0].count = 0; }, "free dim 0 has count 0"},
      {[](AccessPattern& a) { a.dims[2].stride = 4; }, "unused free dim 2 is not [0, 1]"},
      {[](AccessPattern& a) { a.part_count = 0; }, "partition count 0"},
      {[](AccessPattern& a) { a.part_start = 100, a.part_count = 29; },
       "partitions [100, 129) outside 0..128"},
      {[](AccessPattern& a) { a.part_stride = 8; }, "row stride set on an on-chip access pattern"},
      {[](AccessPattern& a) { a.dtype = static_cast<DType>(kNumDTypes); }, "unknown dtype 11"},
      {[](AccessPattern& a) { a.dyn_mult = 3; },
       "dynamic-offset fields set without a dynamic offset"},
      {[](AccessPattern& a) { a.dyn = DynKind::reg, a.dyn_reg = 64; }, "register r64 > r63"},
      {[](AccessPattern& a) { a.dyn = DynKind::vec; }, "vector offset on a non-hbm access pattern"},
  };
  for (const auto& c : cases) {
    Inst in = valid_tt();
    c.mutate(in.ops[0].ap);
    EXPECT_EQ(check_msg(in), std::string("operand 'dst' of dve.tensor_tensor: ") + c.why);
  }
}

TEST(Check, VectorOffsetNeedsIntegerIndexTile) {
  Inst in = make_inst(Opcode::dma, Engine::sp);
  in.ops[1].ap.space = MemSpace::hbm;
  in.ops[2].ap.space = MemSpace::sbuf;
  in.ops[1].ap.dyn = DynKind::vec;
  in.ops[1].ap.vidx.part_count = 4;
  EXPECT_EQ(check_inst(in), std::nullopt);
  in.ops[1].ap.vidx.dtype = DType::bf16;
  EXPECT_EQ(check_msg(in),
            "operand 'dst' of sp.dma: vector-index dtype bf16 is not an integer type");
}

TEST(Check, NonCanonicalUnusedFields) {
  Inst in = valid_tt();
  in.ops[3].f = 1.0f;
  EXPECT_EQ(check_msg(in), "operand 'op' of dve.tensor_tensor: unused float field is not 0");
  in = valid_tt();
  in.ops[0].is_ap = true;
  EXPECT_EQ(check_msg(in),
            "operand 'dst' of dve.tensor_tensor: is_ap/is_reg flag set on an access pattern");
  Inst act = make_inst(Opcode::activation, Engine::act);
  act.ops[0].ap.space = act.ops[1].ap.space = MemSpace::sbuf;
  act.ops[3].is_ap = true; // scale as an AP, but f still holds the default 1.0
  act.ops[3].ap.space = MemSpace::sbuf;
  EXPECT_EQ(check_msg(act), "operand 'scale' of act.activation: unused float field is not 0");
  act.ops[3].f = 0.0f;
  EXPECT_EQ(check_inst(act), std::nullopt);
}

TEST(Check, ScalarKindRanges) {
  Inst li = make_inst(Opcode::li, Engine::pe);
  li.ops[0].i = 64;
  EXPECT_EQ(check_msg(li), "operand 'rd' of pe.li: register 64 outside 0..63");
  li.ops[0].i = 1;
  li.ops[1].i = int64_t{1} << 31;
  EXPECT_EQ(check_msg(li),
            "operand 'imm' of pe.li: value 2147483648 outside -2147483648..2147483647");
  Inst dma = make_inst(Opcode::dma, Engine::sp);
  dma.ops[1].ap.space = dma.ops[2].ap.space = MemSpace::hbm;
  dma.ops[0].i = 16;
  EXPECT_EQ(check_msg(dma), "operand 'queue' of sp.dma: queue 16 outside 0..15");
  Inst mm = make_inst(Opcode::matmul, Engine::pe);
  mm.ops[0].ap.space = MemSpace::psum;
  mm.ops[1].ap.space = mm.ops[2].ap.space = MemSpace::sbuf;
  mm.ops[4].i = 2;
  EXPECT_EQ(check_msg(mm), "operand 'transpose' of pe.matmul: flag 2 outside 0..1");
}

TEST(Check, PatternAndMask) {
  Inst iota = make_inst(Opcode::iota, Engine::pool);
  iota.ops[0].ap.space = MemSpace::sbuf;
  EXPECT_EQ(check_msg(iota), "operand 'pattern' of pool.iota: pattern has 0 pairs (1..4)");
  iota.ops[1].pat.n = 1;
  iota.ops[1].pat.d[0] = {2, 0};
  EXPECT_EQ(check_msg(iota), "operand 'pattern' of pool.iota: pattern pair 0 has num 0 < 1");
  Inst sh = make_inst(Opcode::stream_shuffle, Engine::dve);
  sh.ops[0].ap.space = sh.ops[1].ap.space = MemSpace::sbuf;
  sh.ops[2].mask.v[7] = 40;
  EXPECT_EQ(check_msg(sh),
            "operand 'mask' of dve.stream_shuffle: mask entry 7 is 40 (0..31 or 255)");
}

TEST(Check, MissingRequiredOperand) {
  Inst in = valid_tt();
  in.ops[1].present = false;
  EXPECT_EQ(check_msg(in), "operand 'in0' of dve.tensor_tensor: missing");
  in = valid_tt();
  in.ops[3].present = false;
  EXPECT_EQ(check_msg(in), "operand 'op' of dve.tensor_tensor: marked absent (only optional "
                           "access patterns may be)");
}

TEST(Check, TargetRules) {
  Inst bar = make_inst(Opcode::core_barrier, Engine::sp);
  EXPECT_EQ(check_inst_for_target(bar, Target::trn2), std::nullopt);
  EXPECT_EQ(check_inst_for_target(bar, Target::trn1), "sp.core_barrier is not available on trn1");
  Inst mr = make_inst(Opcode::match_replace8, Engine::dve);
  for (int k = 0; k < 3; ++k) mr.ops[k].ap.space = MemSpace::sbuf;
  EXPECT_EQ(check_inst_for_target(mr, Target::trn1), std::nullopt);
  mr.ops[4].present = true; // idx output: gen3+
  mr.ops[4].ap.space = MemSpace::sbuf;
  EXPECT_EQ(check_inst_for_target(mr, Target::trn3), std::nullopt);
  EXPECT_EQ(check_inst_for_target(mr, Target::trn1),
            "operand 'idx' of dve.match_replace8: not available on trn1");
}

TEST(Check, GeneratorOutputIsValidForItsTarget) {
  std::mt19937_64 rng(0xc0ffee);
  for (const auto& d : inst_table())
    for (const auto& t : enum_members(EnumType::Target)) {
      if (!(d.gens & (1u << (t.value - 2)))) continue;
      const auto target = static_cast<Target>(t.value);
      for (int k = 0; k < 20; ++k) {
        Inst in = testing::RandomGen(rng).inst(d.op, target);
        EXPECT_EQ(check_inst_for_target(in, target), std::nullopt) << d.ident;
      }
    }
}

} // namespace
} // namespace nisa
