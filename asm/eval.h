// Compile-time expressions (docs/asm.md §3): the evaluator, its builtin functions, and the
// expressions that make access patterns (tensor slices, ap(...)). Expressions are node indices
// of the current unit's file.
#pragma once
#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

#include "asm/sources.h"
#include "asm/symbols.h"
#include "asm/value.h"

namespace nisa::nasm {

class Functions;
class Slices;

// One operation of a compiled integer expression (Evaluator::try_int). AndJump (of &&): a 0 on
// top decides (it stays, and the end is `arg` operations on), else it is popped; OrJump (of ||)
// likewise for non-zero (1 stays); Bool: the right side's 0 or 1. Min .. AlignUp take `n`
// arguments; a binary operator with `n` = 1 takes its right operand from `k`, not the stack (a
// constant folded into it). Fixed: a name bound to a global .equ or .param integer when compiled
// (their values never change), `k`, unless a local of that name hides it.
struct IntOp {
  enum Code : uint8_t {
    Const,
    Name,
    Fixed,
    Fail,
    Neg,
    Not,
    Tilde,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Shl,
    Shr,
    And,
    Or,
    Xor,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    AndJump,
    OrJump,
    Bool,
    Min,
    Max,
    Cdiv,
    AlignUp,
    End
  };
  Code code = End;
  uint8_t n = 0;
  uint32_t arg = 0; // Name, Fixed: the node; AndJump/OrJump: the distance to the end
  int64_t k = 0;    // Const, Fixed
  const Symbols::NodeInfo* in = nullptr; // Name, Fixed
};

// The integer operators, as both the compiled programs (Evaluator::run) and the tree walk
// (Evaluator::tree_int) compute them: false where they give up (an overflow, a division by zero,
// a shift out of range) and eval() decides, with its diagnostics.
inline bool int_apply1(IntOp::Code c, int64_t x, int64_t& out) {
  switch (c) {
  case IntOp::Neg:
    if (x == std::numeric_limits<int64_t>::min()) return false;
    return out = -x, true;
  case IntOp::Tilde: return out = ~x, true;
  case IntOp::Not: return out = x == 0, true;
  default: return false;
  }
}
inline bool int_apply2(IntOp::Code c, int64_t l, int64_t r, int64_t& out) {
  switch (c) {
  case IntOp::Lt: return out = l < r, true;
  case IntOp::Le: return out = l <= r, true;
  case IntOp::Gt: return out = l > r, true;
  case IntOp::Ge: return out = l >= r, true;
  case IntOp::Eq: return out = l == r, true;
  case IntOp::Ne: return out = l != r, true;
  case IntOp::Add: return !__builtin_add_overflow(l, r, &out);
  case IntOp::Sub: return !__builtin_sub_overflow(l, r, &out);
  case IntOp::Mul: return !__builtin_mul_overflow(l, r, &out);
  case IntOp::Div:
  case IntOp::Mod:
    if (r == 0 || (l == std::numeric_limits<int64_t>::min() && r == -1)) return false;
    return out = c == IntOp::Div ? l / r : l % r, true;
  case IntOp::Shl: {
    if (r < 0 || r > 63) return false;
    const int64_t v = static_cast<int64_t>(static_cast<uint64_t>(l) << r);
    if ((v >> r) != l) return false; // bits (or the sign) shifted out
    return out = v, true;
  }
  case IntOp::Shr:
    if (r < 0 || r > 63) return false;
    return out = l >> r, true;
  case IntOp::And: return out = l & r, true;
  case IntOp::Or: return out = l | r, true;
  case IntOp::Xor: return out = l ^ r, true;
  default: return false;
  }
}
// min, max (compared as Functions::call does: as doubles, the first wins), cdiv and align_up
// of `n` integers at `a` (`out` may alias a[0]).
inline bool int_call(IntOp::Code c, const int64_t* a, int n, int64_t& out) {
  if (c == IntOp::Min || c == IntOp::Max) {
    int best = 0;
    for (int k = 1; k < n; ++k)
      if (c == IntOp::Min ? double(a[k]) < double(a[best]) : double(a[k]) > double(a[best]))
        best = k;
    return out = a[best], true;
  }
  const int64_t x = a[0], b = a[1];
  if (b <= 0) return false;
  const int64_t q = x / b + (x > 0 && x % b != 0 ? 1 : 0);
  if (c == IntOp::Cdiv) return out = q, true;
  return !__builtin_mul_overflow(q, b, &out);
}
// The operator of a unary (binary) token, the builtin of a call `f` with `nargs` arguments;
// IntOp::Fail for anything else (unary `+` is no operator).
IntOp::Code int_unary_code(Tok t);
IntOp::Code int_binary_code(Tok t);
IntOp::Code int_call_code(std::string_view f, uint32_t nargs);

// The names eval() gives as numbers when no variable holds them (inf, nan, true, false); any
// other unbound name evaluates to itself (a Name value of its text).
inline bool is_literal_name(std::string_view s) {
  return s == "inf" || s == "nan" || s == "true" || s == "false";
}

// Numbers, names, lists, operators; calls and slices are handed to Functions and Slices.
class Evaluator {
public:
  Evaluator(const Sources& src, Symbols& sym, Functions& fn, Slices& sl)
      : src_(src), sym_(sym), fn_(fn), sl_(sl) {}
  Value eval(uint32_t e);
  int64_t eval_int(uint32_t e, const char* what) {
    if (int64_t v; sub_int(e, v)) return v;
    return eval_int_slow(e, what);
  }
  void need_num(const Value& v, uint32_t at) const; // StmtError unless a number

  // The integer value of `e` when it and every node under it are plain integers (numbers,
  // integer variables, arithmetic, comparisons, min/max/cdiv/align_up of integers) and nothing
  // would fail; else false, and eval() decides (with its errors). Never throws. Most of a
  // kernel's expressions are such: this skips building a Value per node.
  bool try_int(uint32_t e, int64_t& out);

private:
  int leaf_int(const Node& n, uint32_t e, int64_t& out);
  bool sub_int(uint32_t e, int64_t& out);
  int64_t eval_int_slow(uint32_t e, const char* what);
  Value eval_binary(uint32_t e);
  // try_int by walking the tree (an expression too deep for a program's stack).
  bool tree_int(uint32_t e, int64_t& out);
  bool tree_int_call(const Node& c, int64_t& out);

  // try_int of an operator or call node runs the node's program: its tree compiled once (per
  // unit and node, asm/expr_program.cpp) into postfix IntOps over an integer stack, names
  // resolved through their Symbols::NodeInfo, constants folded. It gives what tree_int gives.
  static constexpr int kMaxStack = 128;
  static constexpr uint32_t kUncompiled = 0, kTreeWalk = 1; // prog_ entries; else start + 2
  bool op_int(uint32_t e, int64_t& out);                    // try_int of a node that is not a leaf
  bool op_int_slow(uint32_t e, int64_t& out);
  uint32_t program(uint32_t e);
  bool compile(uint32_t e, int sp, int& max_sp); // true: the node is one Const
  bool run(const IntOp* prog, int64_t& out) const;
  std::vector<IntOp> ops_;       // every program, one after another
  UnitTable<uint32_t> prog_;     // per unit and node
  uint32_t* prog_cur_ = nullptr; // prog_ of prog_unit_
  uint32_t prog_unit_ = 0;

  const Sources& src_;
  Symbols& sym_;
  Functions& fn_;
  Slices& sl_;
};

// The builtin functions: arithmetic (cdiv, min, align_up, ...), q(), rank_groups(), and the
// tensor queries addr(), size(), dim(), part().
class Functions {
public:
  Functions(const Sources& src, const Symbols& sym, Evaluator& ev, Slices& sl)
      : src_(src), sym_(sym), ev_(ev), sl_(sl) {}
  Value call(uint32_t e); // a Call node

private:
  const Sources& src_;
  const Symbols& sym_;
  Evaluator& ev_;
  Slices& sl_;
};

// Access patterns: a tensor slice x[...], a raw ap(...), a tensor's whole extent.
class Slices {
public:
  Slices(const Sources& src, Symbols& sym, Evaluator& ev) : src_(src), sym_(sym), ev_(ev) {}
  Value index(uint32_t e); // an Index node
  // index() without its Value: the access pattern, and the tensor's name in `name_out` if given.
  AccessPattern lower_index(uint32_t e, std::string* name_out) const;
  // lower_index()'s planned case into `ap` (a slice of a tensor named directly or by a visible
  // variable holding its name, lowered by the node's plan for that tensor); false for anything
  // else (`ap` then undefined), which lower_index decides. It throws only what lower_index would.
  bool planned_index(uint32_t e, AccessPattern& ap) const;
  Value raw_ap(uint32_t e); // a Call node of ap()
  // raw_ap() without its Value: the access pattern (what to_ap of raw_ap's Value gives, raw).
  AccessPattern raw_pattern(uint32_t e) const;
  // A slice, or a tensor named by a value (all of it); `raw`: written as ap(...).
  AccessPattern to_ap(const Value& v, uint32_t e, bool& raw) const;

private:
  bool int_dims(uint32_t e, AccessPattern& ap) const;

  // Per unit and Index node whose base names a tensor and whose indices are all points and
  // ranges: the tensor, its element strides and the indices' expressions, made once, so that
  // lower_index evaluates and lowers them in one pass (asm/slice_plan.cpp) at each expansion.
  struct PlanDim {
    uint32_t lo = kNone, hi = kNone, step = kNone; // expressions (a point: lo)
    bool point = false;
    uint8_t fixed = 0;                   // bit 0, 1, 2: lo, hi, step is an integer literal ...
    int64_t klo = 0, khi = 0, kstep = 0; // ... of this value (not evaluated)
    // lo, hi: a Name node's NodeInfo (of the plan's unit), read as eval_int's leaf would read it
    const Symbols::NodeInfo *nlo = nullptr, *nhi = nullptr;
  };
  struct SlicePlan {
    const TensorDecl* t = nullptr;
    uint32_t dims = 0;          // its indices at plan_dims_[dims, dims + nidx)
    uint8_t nidx = 0, kept = 0; // indices; dims kept (ranges and dims not indexed)
    int64_t elem_stride[8] = {};
  };
  static constexpr uint32_t kNoPlan = UINT32_MAX; // plan_of_: 0 not made, else 1 + index
  uint32_t plan(uint32_t e, const TensorDecl& t) const;
  uint32_t make_plan(uint32_t e, const TensorDecl& t) const;
  bool lower_planned(const SlicePlan& p, AccessPattern& ap) const;
  int64_t planned_int(uint32_t e, const Symbols::NodeInfo* in, const char* what) const;
  // Per unit and Call node of ap() whose space and dtype are written as names and whose named
  // fields are pstride=, mult= or limit= (each at most once): the fields' expressions and the
  // space and dtype the names' texts give, made once, so that raw_pattern reads them without a
  // Value when no variable of those names is visible (asm/slice_plan.cpp raw_planned).
  struct RawPlan {
    uint32_t pos[6] = {};                                   // the positional fields' expressions
    const Symbols::NodeInfo *nsp = nullptr, *ndt = nullptr; // the space's, dtype's Name node
    int ksp = -1, kdt = -1; // the space, dtype its text names (-1: none, or not a name's value)
    uint32_t pstride = kNone, mult = kNone, limit = kNone; // named fields' expressions
  };
  uint32_t raw_plan(uint32_t e) const;
  bool raw_planned(const RawPlan& p, AccessPattern& ap) const;
  mutable UnitTable<uint32_t> raw_of_;  // 0 not made, else 1 + index in raw_plans_ (or kNoPlan)
  mutable uint32_t* raw_cur_ = nullptr; // raw_of_ of raw_unit_
  mutable uint32_t raw_unit_ = 0;
  mutable std::vector<RawPlan> raw_plans_;
  mutable UnitTable<uint32_t> plan_of_;
  mutable uint32_t* plan_cur_ = nullptr; // plan_of_ of plan_unit_
  mutable uint32_t plan_unit_ = 0;
  mutable std::vector<SlicePlan> plans_;
  mutable std::vector<PlanDim> plan_dims_;

  const Sources& src_;
  Symbols& sym_;
  Evaluator& ev_;
};

// A leaf's integer (a number, a name): 1 when set, 0 when not an integer (eval() decides), -1
// when `n` is not a leaf. Inline: most operands of an operator are leaves.
inline int Evaluator::leaf_int(const Node& n, uint32_t e, int64_t& out) {
  if (n.kind == NodeKind::Number) {
    if (!(n.flags & Node::kIntValue)) return 0;
    out = static_cast<int64_t>(uint64_t{n.b} << 32 | n.a);
    return 1;
  }
  if (n.kind == NodeKind::Name) {
    const Var* v = sym_.lookup_node(e, src_.file().text(n));
    if (!v || v->v.kind != Value::Int) return 0;
    out = v->v.i;
    return 1;
  }
  return -1;
}

// try_int of an operand: a leaf without a call.
inline bool Evaluator::sub_int(uint32_t e, int64_t& out) {
  const int r = leaf_int(src_.node(e), e, out);
  return r >= 0 ? r != 0 : op_int(e, out);
}

// The node's program when it is compiled (inline: the usual case).
inline bool Evaluator::op_int(uint32_t e, int64_t& out) {
  if (src_.cur_unit() == prog_unit_ && prog_cur_)
    if (const uint32_t p = prog_cur_[e]; p >= 2) return run(ops_.data() + (p - 2), out);
  return op_int_slow(e, out);
}

// The node's plan when it is made (inline: the usual case); else make_plan.
inline uint32_t Slices::plan(uint32_t e, const TensorDecl& t) const {
  if (src_.cur_unit() == plan_unit_ && plan_cur_)
    if (const uint32_t p = plan_cur_[e]; p != 0)
      return p == kNoPlan || plans_[p - 1].t != &t ? kNoPlan : p - 1;
  return make_plan(e, t);
}

} // namespace nisa::nasm
