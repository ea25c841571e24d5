// Compile-time expressions (docs/asm.md §3): the evaluator, its builtin functions, and the
// expressions that make access patterns (tensor slices, ap(...)). Expressions are node indices
// of the current unit's file.
#pragma once
#include <cstdint>

#include "asm/sources.h"
#include "asm/symbols.h"
#include "asm/value.h"

namespace nisa::nasm {

class Functions;
class Slices;

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
  bool try_int_call(const Node& c, int64_t& out);

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
  return r >= 0 ? r != 0 : try_int(e, out);
}

} // namespace nisa::nasm
