// Compile-time expressions: numbers, names, lists, operators (docs/asm.md §3).
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "asm/assembler_util.h"
#include "asm/eval.h"

namespace nisa::nasm {
using namespace detail;

std::string Value::str() const {
  switch (kind) {
  case Int: return std::to_string(i);
  case Float: return fmt::format("{}", f);
  case Name: return s;
  case Str: return "\"" + s + "\"";
  case List: {
    std::vector<std::string> v;
    for (const auto& e : list) v.push_back(e.str());
    return "[" + join(v) + "]";
  }
  case Ap: return "<access pattern>";
  }
  return "?";
}

bool Evaluator::tree_int(uint32_t e, int64_t& out) {
  const Node& n = src_.node(e);
  if (const int r = leaf_int(n, e, out); r >= 0) return r != 0;
  switch (n.kind) {
  case NodeKind::Paren: return sub_int(n.a, out);
  case NodeKind::Unary: {
    int64_t x;
    if (!sub_int(n.a, x)) return false;
    if (n.op == Tok::Plus) return out = x, true;
    return int_apply1(int_unary_code(n.op), x, out);
  }
  case NodeKind::Binary: {
    int64_t l, r;
    if (!sub_int(n.a, l)) return false;
    if (n.op == Tok::AndAnd || n.op == Tok::OrOr) { // the right side only when it decides
      const bool lv = l != 0;
      if (n.op == Tok::AndAnd ? !lv : lv) return out = lv, true;
      if (!sub_int(n.b, r)) return false;
      return out = r != 0, true;
    }
    if (!sub_int(n.b, r)) return false;
    return int_apply2(int_binary_code(n.op), l, r, out);
  }
  case NodeKind::Call: return tree_int_call(n, out);
  default: return false;
  }
}

// min, max, cdiv and align_up of integers, as Functions::call computes them.
bool Evaluator::tree_int_call(const Node& c, int64_t& out) {
  const IntOp::Code fn = int_call_code(src_.file().text(c), c.nkids);
  if (fn == IntOp::Fail) return false;
  int64_t a[8];
  const uint32_t* args = src_.file().kid_begin(c);
  for (uint32_t k = 0; k < c.nkids; ++k) {
    const Node& arg = src_.node(args[k]);
    if (arg.b != kNone || !sub_int(arg.a, a[k])) return false;
  }
  return int_call(fn, a, static_cast<int>(c.nkids), out);
}

int64_t Evaluator::eval_int_slow(uint32_t e, const char* what) {
  Value v = eval(e);
  need_num(v, e);
  if (v.kind == Value::Float) {
    if (v.f != std::floor(v.f) || std::abs(v.f) > 9e18)
      src_.fail_at(e, fmt::format("{} must be an integer, not {}", what, v.str()));
    return static_cast<int64_t>(v.f);
  }
  return v.i;
}

void Evaluator::need_num(const Value& v, uint32_t at) const {
  if (v.is_num()) return;
  if (v.kind == Value::Name) {
    if (sym_.find_tensor(v.s))
      src_.fail_at(at, fmt::format("tensor '{}' used where a number is expected (addr({}) is its "
                                   "address, size({}) its size in bytes)",
                                   v.s, v.s, v.s));
    if (sym_.failed(v.s)) fail(src_.loc_of(at), ""); // its declaration's error was reported
    src_.fail_at(at, fmt::format("undefined symbol '{}'{}", v.s, [&] {
                   std::string s = suggest(v.s, sym_.visible_names());
                   return s.empty() ? std::string() : "; did you mean '" + s + "'?";
                 }()));
  }
  src_.fail_at(at, fmt::format("expected a number, not {}", v.str()));
}

Value Evaluator::eval(uint32_t e) {
  const Node& n = src_.node(e);
  if (n.kind == NodeKind::Binary || n.kind == NodeKind::Call || n.kind == NodeKind::Unary)
    if (int64_t v; try_int(e, v)) return Value::of_int(v);
  switch (n.kind) {
  case NodeKind::Name: {
    const std::string_view s = src_.file().text(n);
    if (const Var* v = sym_.lookup_node(e, s)) return v->v;
    if (s == "inf") return Value::of_float(std::numeric_limits<double>::infinity());
    if (s == "nan") return Value::of_float(std::numeric_limits<double>::quiet_NaN());
    if (s == "true") return Value::of_int(1);
    if (s == "false") return Value::of_int(0);
    return Value::of_name(std::string(s));
  }
  case NodeKind::Number: {
    if (n.flags & Node::kIntValue)
      return Value::of_int(static_cast<int64_t>(uint64_t{n.b} << 32 | n.a));
    const std::string_view t = src_.file().text(n);
    auto v = parse_number_text(t);
    if (!v) src_.fail_at(e, fmt::format("invalid number '{}'", t));
    return *v;
  }
  case NodeKind::Binary: return eval_binary(e);
  case NodeKind::Index: return sl_.index(e);
  case NodeKind::Paren: return eval(n.a);
  case NodeKind::Call: return fn_.call(e);
  case NodeKind::String: {
    const std::string_view t = src_.file().text(n);
    return Value::of_name(std::string(t.substr(1, t.size() - 2)), Value::Str);
  }
  case NodeKind::List: {
    Value v;
    v.kind = Value::List;
    if (n.nkids > 4096) src_.fail_at(e, "list too long (at most 4096 elements)");
    v.list.reserve(n.nkids);
    for (uint32_t k = 0; k < n.nkids; ++k) v.list.push_back(eval(src_.file().kid_begin(n)[k]));
    return v;
  }
  case NodeKind::Unary: {
    Value v = eval(n.a);
    need_num(v, n.a);
    switch (n.op) {
    case Tok::Not: return Value::of_int(v.num() == 0);
    case Tok::Plus: return v;
    case Tok::Tilde:
      if (v.kind != Value::Int) src_.fail_at(e, "'~' needs an integer");
      return Value::of_int(~v.i);
    default: break;
    }
    if (v.kind == Value::Float) return Value::of_float(-v.f);
    if (v.i == std::numeric_limits<int64_t>::min()) src_.fail_at(e, "integer overflow");
    return Value::of_int(-v.i);
  }
  default: break;
  }
  src_.fail_at(e, "malformed expression");
}

Value Evaluator::eval_binary(uint32_t self) {
  const Node& b = src_.node(self);
  const Tok op = b.op;
  if (op == Tok::AndAnd || op == Tok::OrOr) {
    Value l = eval(b.a);
    need_num(l, b.a);
    const bool lv = l.num() != 0;
    if (op == Tok::AndAnd ? !lv : lv) return Value::of_int(lv);
    Value r = eval(b.b);
    need_num(r, b.b);
    return Value::of_int(r.num() != 0);
  }
  Value l = eval(b.a), r = eval(b.b);
  if (op == Tok::EqEq || op == Tok::Ne) {
    // Names (dtypes, enumerators held by params) compare by spelling.
    if ((l.kind == Value::Name || l.kind == Value::Str) &&
        (r.kind == Value::Name || r.kind == Value::Str))
      return Value::of_int((l.s == r.s) == (op == Tok::EqEq));
  }
  need_num(l, b.a);
  need_num(r, b.b);
  const bool ints = l.kind == Value::Int && r.kind == Value::Int;
  const double x = l.num(), y = r.num();
  auto cmp = [&](bool v) { return Value::of_int(v); };
  switch (op) {
  case Tok::Lt: return cmp(ints ? l.i < r.i : x < y);
  case Tok::Le: return cmp(ints ? l.i <= r.i : x <= y);
  case Tok::Gt: return cmp(ints ? l.i > r.i : x > y);
  case Tok::Ge: return cmp(ints ? l.i >= r.i : x >= y);
  case Tok::EqEq: return cmp(ints ? l.i == r.i : x == y);
  case Tok::Ne: return cmp(ints ? l.i != r.i : x != y);
  default: break;
  }
  if ((op == Tok::Slash || op == Tok::Percent) && y == 0) src_.fail_at(b.b, "division by zero");
  if (ints) {
    int64_t out = 0;
    bool ovf = false;
    switch (op) {
    case Tok::Plus: ovf = __builtin_add_overflow(l.i, r.i, &out); break;
    case Tok::Minus: ovf = __builtin_sub_overflow(l.i, r.i, &out); break;
    case Tok::Star: ovf = __builtin_mul_overflow(l.i, r.i, &out); break;
    case Tok::Slash:
    case Tok::Percent:
      if (l.i == std::numeric_limits<int64_t>::min() && r.i == -1)
        ovf = true;
      else
        out = op == Tok::Slash ? l.i / r.i : l.i % r.i;
      break;
    case Tok::Shl:
    case Tok::Shr:
      if (r.i < 0 || r.i > 63)
        src_.fail_at(b.b, fmt::format("shift count {} is outside [0, 63]", r.i));
      out = op == Tok::Shl ? static_cast<int64_t>(static_cast<uint64_t>(l.i) << r.i) : l.i >> r.i;
      ovf = op == Tok::Shl && (out >> r.i) != l.i; // bits (or the sign) shifted out
      break;
    case Tok::Amp: out = l.i & r.i; break;
    case Tok::Pipe: out = l.i | r.i; break;
    case Tok::Caret: out = l.i ^ r.i; break;
    default: break;
    }
    if (ovf) src_.fail_at(self, "integer overflow in compile-time expression");
    return Value::of_int(out);
  }
  switch (op) {
  case Tok::Plus: return Value::of_float(x + y);
  case Tok::Minus: return Value::of_float(x - y);
  case Tok::Star: return Value::of_float(x * y);
  case Tok::Slash: return Value::of_float(x / y);
  case Tok::Percent: return Value::of_float(std::fmod(x, y));
  default: break;
  }
  src_.fail_at(self, fmt::format("operator '{}' needs integer operands", tok_spelling(op)));
}

std::optional<Value> parse_number_text(std::string_view t) {
  auto parse_int = [](std::string_view digits, int base) -> std::optional<Value> {
    if (digits.empty()) return std::nullopt;
    uint64_t v = 0;
    for (char ch : digits) {
      int d = ch >= '0' && ch <= '9'   ? ch - '0'
              : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
              : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                       : 99;
      if (d >= base) return std::nullopt;
      if (v > (std::numeric_limits<uint64_t>::max() - static_cast<uint64_t>(d)) /
                  static_cast<uint64_t>(base))
        return std::nullopt;
      v = v * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
    }
    return Value::of_int(static_cast<int64_t>(v));
  };
  std::string_view s = t;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
    return parse_int(s.substr(2), 16);
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'b' || s[1] == 'B')) return parse_int(s.substr(2), 2);
  if (s.find_first_of(".eE") == std::string_view::npos) {
    auto v = parse_int(s, 10);
    if (v && v->i < 0) return std::nullopt; // above INT64_MAX
    return v;
  }
  if (s.find_first_not_of("0123456789.eE+-") != std::string_view::npos) return std::nullopt;
  const std::string z(t); // strtod needs a terminated string
  char* end = nullptr;
  double d = std::strtod(z.c_str(), &end);
  if (end != z.c_str() + z.size() || !std::isfinite(d)) return std::nullopt;
  return Value::of_float(d);
}

} // namespace nisa::nasm
