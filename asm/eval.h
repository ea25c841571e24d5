// Compile-time expressions (docs/asm.md §3): the evaluator, its builtin functions, and the
// expressions that make access patterns (tensor slices, ap(...)). Expressions are node indices
// of the current unit's file.
#pragma once
#include <cstdint>
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
  std::vector<IntOp> ops_;                  // every program, one after another
  std::vector<std::vector<uint32_t>> prog_; // per unit and node
  uint32_t* prog_cur_ = nullptr;            // prog_ of prog_unit_
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
  Value raw_ap(uint32_t e); // a Call node of ap()
  // A slice, or a tensor named by a value (all of it); `raw`: written as ap(...).
  AccessPattern to_ap(const Value& v, uint32_t e, bool& raw) const;

private:
  bool int_dims(uint32_t e, AccessPattern& ap);

  // Per unit and Index node whose base names a tensor and whose indices are all points and
  // ranges: the tensor, its element strides and the indices' expressions, made once, so that
  // lower_index evaluates and lowers them in one pass (asm/slice_plan.cpp) at each expansion.
  struct PlanDim {
    uint32_t lo = kNone, hi = kNone, step = kNone; // expressions (a point: lo)
    bool point = false;
    uint8_t fixed = 0;                   // bit 0, 1, 2: lo, hi, step is an integer literal ...
    int64_t klo = 0, khi = 0, kstep = 0; // ... of this value (not evaluated)
  };
  struct SlicePlan {
    const TensorDecl* t = nullptr;
    uint32_t dims = 0;          // its indices at plan_dims_[dims, dims + nidx)
    uint8_t nidx = 0, kept = 0; // indices; dims kept (ranges and dims not indexed)
    int64_t elem_stride[8] = {};
  };
  static constexpr uint32_t kNoPlan = UINT32_MAX; // plan_of_: 0 not made, else 1 + index
  uint32_t plan(uint32_t e, const TensorDecl& t) const;
  bool lower_planned(const SlicePlan& p, AccessPattern& ap) const;
  mutable std::vector<std::vector<uint32_t>> plan_of_;
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

} // namespace nisa::nasm
