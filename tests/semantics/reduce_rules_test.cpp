// The rules docs/isa.md gives for tensor_reduce (isa/formulas.def: NISA_REDUCE_RULES,
// NISA_REDUCE_COMMON, NISA_REDUCE_NEGATE) are what the interpreter computes: the operators it
// accepts are exactly the table's rows, negate negates the result (not the inputs), the
// logical folds count nonzero elements, and a fold of one element passes it through.
#include <cmath>
#include <string>

#include "harness.h"
#include "isa/formulas.h"

namespace nisa::interp::test {
namespace {

TEST(ReduceRules, TheTableListsExactlyTheOperatorsTensorReduceAccepts) {
  int rows = 0;
  for (const auto& m : enum_members(EnumType::AluOp)) {
    const auto op = static_cast<AluOp>(m.value);
    SCOPED_TRACE(std::string(m.name));
    Bench b;
    const auto S = Bench::sb(DType::int32, 2, 4), D = Bench::sb(DType::int32, 2, 1, 1024);
    b.put_int(S, {1, 2, 3, 4, 5, 6, 7, 8});
    bool accepted = true;
    try {
      b.run(tensor_reduce(D, S, op, false));
    } catch (const Fault& f) {
      accepted = std::string(f.what()).find("is not a reduction operator") == std::string::npos;
    }
    EXPECT_EQ(accepted, !reduce_rule(op).empty());
    rows += !reduce_rule(op).empty();
  }
  EXPECT_EQ(rows, 10); // add multiply max min, logical_and/or/xor, bitwise_and/or/xor
}

// negate=1: dst = -(the fold). With max that is -max(x), which differs from max(-x) = -min(x).
TEST(ReduceRules, NegateNegatesTheResultNotTheInputs) {
  Bench b;
  const auto S = Bench::sb(DType::fp32, 2, 4), D = Bench::sb(DType::fp32, 2, 1, 1024);
  b.put(S, {3, -7, 5, 1, -2, -9, -4, -3});
  b.run(tensor_reduce(D, S, AluOp::max, true));
  EXPECT_EQ(b.get(D), (std::vector<float>{-5, 2})); // -max, not max(-x) = 7 and 9
  b.run(tensor_reduce(D, S, AluOp::min, true));
  EXPECT_EQ(b.get(D), (std::vector<float>{7, 9}));
  b.run(tensor_reduce(D, S, AluOp::add, true));
  EXPECT_EQ(b.get(D), (std::vector<float>{-2, 18}));
  b.run(tensor_reduce(D, S, AluOp::multiply, true));
  EXPECT_EQ(b.get(D), (std::vector<float>{105, -216}));
  // bitwise: the integer result negated in two's complement, wrapped to dst's width
  const auto SI = Bench::sb(DType::int32, 1, 3, 2048);
  b.put_int(SI, {1, 2, 4});
  const auto D8 = Bench::sb(DType::uint8, 1, 1, 3072), D32 = Bench::sb(DType::int32, 1, 1, 3136);
  b.run(tensor_reduce(D32, SI, AluOp::bitwise_or, true));
  EXPECT_EQ(b.get_int(D32), (std::vector<int64_t>{-7}));
  b.run(tensor_reduce(D8, SI, AluOp::bitwise_or, true));
  EXPECT_EQ(b.get_int(D8), (std::vector<int64_t>{256 - 7}));
}

// logical_and: every element nonzero; logical_or: some; logical_xor: an odd count (0.5 and -3
// are nonzero).
TEST(ReduceRules, LogicalFoldsCountNonzeroElements) {
  Bench b;
  const auto S = Bench::sb(DType::fp32, 4, 3), D = Bench::sb(DType::fp32, 4, 1, 1024);
  b.put(S, {0.5f, -3, 2, 0, 0, 0, 0, 4, 0, 1, 1, 0});
  b.run(tensor_reduce(D, S, AluOp::logical_and, false));
  EXPECT_EQ(b.get(D), (std::vector<float>{1, 0, 0, 0}));
  b.run(tensor_reduce(D, S, AluOp::logical_or, false));
  EXPECT_EQ(b.get(D), (std::vector<float>{1, 0, 1, 1}));
  b.run(tensor_reduce(D, S, AluOp::logical_xor, false));
  EXPECT_EQ(b.get(D), (std::vector<float>{1, 0, 1, 0}));
}

// n = 1: the element itself, whatever the operator (a logical fold of one element is not
// turned into 1 or 0).
TEST(ReduceRules, AFoldOfOneElementIsThatElement) {
  Bench b;
  const auto S = Bench::sb(DType::fp32, 2, 1), D = Bench::sb(DType::fp32, 2, 1, 1024);
  b.put(S, {5, -0.25f});
  for (AluOp op : {AluOp::add, AluOp::multiply, AluOp::max, AluOp::min, AluOp::logical_and,
                   AluOp::logical_or, AluOp::logical_xor}) {
    b.run(tensor_reduce(D, S, op, false));
    EXPECT_EQ(b.get(D), (std::vector<float>{5, -0.25f})) << name_of(op);
  }
}

// add and multiply fold left to right in fp32; max and min give NaN when an element is NaN.
TEST(ReduceRules, OrderAndNaN) {
  Bench b;
  const auto S = Bench::sb(DType::fp32, 1, 3), D = Bench::sb(DType::fp32, 1, 1, 1024);
  b.put(S, {1e8f, 1, -1e8f}); // (1e8 + 1) - 1e8 = 0 in fp32, left to right
  b.run(tensor_reduce(D, S, AluOp::add, false));
  EXPECT_EQ(b.get(D), (std::vector<float>{0}));
  b.put(S, {1, NAN, 3});
  for (AluOp op : {AluOp::max, AluOp::min}) {
    b.run(tensor_reduce(D, S, op, false));
    EXPECT_TRUE(std::isnan(b.get(D)[0])) << name_of(op);
  }
}

} // namespace
} // namespace nisa::interp::test
