// Integer expressions compiled once into flat programs (Evaluator::try_int): a macro body's or a
// loop body's expressions are evaluated at every expansion, and walking their trees node by
// node (each name looked up, each operator dispatched by its token) was most of the cost. A
// program gives exactly what the tree walk (tree_int) gives: any step that is not plain integer
// arithmetic (a float, a name that is not an integer, an overflow, a division by zero) makes it
// give up, and eval() then decides, with its diagnostics.
#include <algorithm>
#include <limits>

#include "asm/eval.h"

namespace nisa::nasm {

IntOp::Code int_unary_code(Tok t) {
  switch (t) {
  case Tok::Not: return IntOp::Not;
  case Tok::Tilde: return IntOp::Tilde;
  case Tok::Minus: return IntOp::Neg;
  default: return IntOp::Fail;
  }
}

IntOp::Code int_binary_code(Tok t) {
  switch (t) {
  case Tok::Lt: return IntOp::Lt;
  case Tok::Le: return IntOp::Le;
  case Tok::Gt: return IntOp::Gt;
  case Tok::Ge: return IntOp::Ge;
  case Tok::EqEq: return IntOp::Eq;
  case Tok::Ne: return IntOp::Ne;
  case Tok::Plus: return IntOp::Add;
  case Tok::Minus: return IntOp::Sub;
  case Tok::Star: return IntOp::Mul;
  case Tok::Slash: return IntOp::Div;
  case Tok::Percent: return IntOp::Mod;
  case Tok::Shl: return IntOp::Shl;
  case Tok::Shr: return IntOp::Shr;
  case Tok::Amp: return IntOp::And;
  case Tok::Pipe: return IntOp::Or;
  case Tok::Caret: return IntOp::Xor;
  default: return IntOp::Fail;
  }
}

IntOp::Code int_call_code(std::string_view f, uint32_t nargs) {
  const IntOp::Code c = f == "min"        ? IntOp::Min
                        : f == "max"      ? IntOp::Max
                        : f == "cdiv"     ? IntOp::Cdiv
                        : f == "align_up" ? IntOp::AlignUp
                                          : IntOp::Fail;
  if (nargs == 0 || nargs > 8 || ((c == IntOp::Cdiv || c == IntOp::AlignUp) && nargs != 2))
    return IntOp::Fail;
  return c;
}

bool Evaluator::try_int(uint32_t e, int64_t& out) {
  const Node& n = src_.node(e);
  if (const int r = leaf_int(n, e, out); r >= 0) return r != 0;
  return op_int(e, out);
}

bool Evaluator::op_int_slow(uint32_t e, int64_t& out) {
  const uint32_t p = program(e);
  if (p == kTreeWalk) return tree_int(e, out);
  return run(ops_.data() + (p - 2), out);
}

uint32_t Evaluator::program(uint32_t e) {
  if (src_.cur_unit() != prog_unit_ || !prog_cur_) {
    const uint32_t unit = src_.cur_unit();
    prog_cur_ = prog_.row(unit, src_.file().nodes.size()); // kUncompiled is 0: T{}
    prog_unit_ = unit;
  }
  if (prog_cur_[e] != kUncompiled) return prog_cur_[e];
  const size_t start = ops_.size();
  int max_sp = 0;
  compile(e, 0, max_sp);
  ops_.push_back(IntOp{});
  if (max_sp > kMaxStack) { // deeper than run()'s stack (brackets nest at most 64 deep)
    ops_.resize(start);
    return prog_cur_[e] = kTreeWalk;
  }
  return prog_cur_[e] = static_cast<uint32_t>(start + 2);
}

// Appends node e's operations; `sp`: the stack's height before them (they leave one more).
bool Evaluator::compile(uint32_t e, int sp, int& max_sp) {
  const Node& n = src_.node(e);
  max_sp = std::max(max_sp, sp + 1);
  auto emit = [&](IntOp::Code c) {
    IntOp op;
    op.code = c;
    ops_.push_back(op);
  };
  auto constant = [&](int64_t k) {
    IntOp op;
    op.code = IntOp::Const;
    op.k = k;
    ops_.push_back(op);
    return true;
  };
  auto give_up = [&] { // tree_int gives false, whatever the rest gives
    emit(IntOp::Fail);
    return false;
  };
  switch (n.kind) {
  case NodeKind::Number:
    if (!(n.flags & Node::kIntValue)) return give_up();
    return constant(static_cast<int64_t>(uint64_t{n.b} << 32 | n.a));
  case NodeKind::Name: {
    IntOp op;
    op.code = IntOp::Name;
    op.arg = e;
    op.in = sym_.node_info(e, src_.file().text(n));
    if (const Var* v = sym_.lookup_info(*op.in, e);
        v && v == op.in->global && (v->kind == Var::Equ || v->kind == Var::Param) &&
        v->v.kind == Value::Int)
      op.code = IntOp::Fixed, op.k = v->v.i;
    ops_.push_back(op);
    return false;
  }
  case NodeKind::Paren: return compile(n.a, sp, max_sp);
  case NodeKind::Unary: {
    if (n.op == Tok::Plus) return compile(n.a, sp, max_sp);
    const IntOp::Code c = int_unary_code(n.op);
    if (c == IntOp::Fail) return give_up();
    const size_t at = ops_.size();
    if (int64_t r; compile(n.a, sp, max_sp) && int_apply1(c, ops_[at].k, r)) {
      ops_.resize(at);
      return constant(r);
    }
    emit(c);
    return false;
  }
  case NodeKind::Binary: {
    if (n.op == Tok::AndAnd || n.op == Tok::OrOr) { // the right side only when it decides
      compile(n.a, sp, max_sp);
      const size_t jump = ops_.size();
      emit(n.op == Tok::AndAnd ? IntOp::AndJump : IntOp::OrJump);
      compile(n.b, sp, max_sp);
      emit(IntOp::Bool);
      ops_[jump].arg = static_cast<uint32_t>(ops_.size() - jump);
      return false;
    }
    const IntOp::Code c = int_binary_code(n.op);
    if (c == IntOp::Fail) return give_up();
    const size_t at = ops_.size();
    const bool ka = compile(n.a, sp, max_sp);
    const bool kb = compile(n.b, sp + 1, max_sp);
    if (int64_t r; ka && kb && int_apply2(c, ops_[at].k, ops_[at + 1].k, r)) {
      ops_.resize(at);
      return constant(r);
    }
    if (kb) { // the constant right operand into the operation
      IntOp& op = ops_.back();
      op.code = c;
      op.n = 1;
      return false;
    }
    emit(c);
    return false;
  }
  case NodeKind::Call: { // min, max, cdiv and align_up of integers, as tree_int_call
    const IntOp::Code c = int_call_code(src_.file().text(n), n.nkids);
    if (c == IntOp::Fail) return give_up();
    const uint32_t* args = src_.file().kid_begin(n);
    for (uint32_t k = 0; k < n.nkids; ++k)
      if (src_.node(args[k]).b != kNone) return give_up(); // a named argument
    for (uint32_t k = 0; k < n.nkids; ++k)
      compile(src_.node(args[k]).a, sp + static_cast<int>(k), max_sp);
    IntOp op;
    op.code = c;
    op.n = static_cast<uint8_t>(n.nkids);
    ops_.push_back(op);
    return false;
  }
  default: return give_up();
  }
}

bool Evaluator::run(const IntOp* op, int64_t& out) const {
  int64_t st[kMaxStack];
  int64_t* sp = st; // the next free slot
  const Var* v;
  int64_t r;
  for (;; ++op) {
    switch (op->code) {
    case IntOp::Const: *sp++ = op->k; continue;
    case IntOp::Fixed:
      if (!sym_.shadowed(*op->in)) {
        *sp++ = op->k;
        continue;
      }
      [[fallthrough]];
    case IntOp::Name:
      v = sym_.lookup_info(*op->in, op->arg);
      if (!v || v->v.kind != Value::Int) return false;
      *sp++ = v->v.i;
      continue;
    case IntOp::Fail: return false;
    case IntOp::Neg:
    case IntOp::Not:
    case IntOp::Tilde:
      if (!int_apply1(op->code, sp[-1], sp[-1])) return false;
      continue;
    case IntOp::Add:
      r = op->n ? op->k : *--sp;
      if (__builtin_add_overflow(sp[-1], r, &sp[-1])) return false;
      continue;
    case IntOp::Sub:
      r = op->n ? op->k : *--sp;
      if (__builtin_sub_overflow(sp[-1], r, &sp[-1])) return false;
      continue;
    case IntOp::Mul:
      r = op->n ? op->k : *--sp;
      if (__builtin_mul_overflow(sp[-1], r, &sp[-1])) return false;
      continue;
    case IntOp::AndJump:
      if (sp[-1] == 0)
        op += op->arg - 1;
      else
        --sp;
      continue;
    case IntOp::OrJump:
      if (sp[-1] != 0)
        sp[-1] = 1, op += op->arg - 1;
      else
        --sp;
      continue;
    case IntOp::Bool: sp[-1] = sp[-1] != 0; continue;
    case IntOp::Min:
    case IntOp::Max:
    case IntOp::Cdiv:
    case IntOp::AlignUp:
      sp -= op->n;
      if (!int_call(op->code, sp, op->n, sp[0])) return false;
      ++sp;
      continue;
    case IntOp::End: out = st[0]; return true;
    default: // the other binary operators
      r = op->n ? op->k : *--sp;
      if (!int_apply2(op->code, sp[-1], r, sp[-1])) return false;
      continue;
    }
  }
}

} // namespace nisa::nasm
