// Compile-time expressions: numbers, names, lists, builtin functions, tensor slices.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "asm/assembler.h"

namespace nisa::nasm {
using P = Parser;

int64_t Assembler::eval_int(P::ExprContext* e, const char* what) {
  Value v = eval(e);
  need_num(v, e);
  if (v.kind == Value::Float) {
    if (v.f != std::floor(v.f) || std::abs(v.f) > 9e18)
      fail(e, fmt::format("{} must be an integer, not {}", what, v.str()));
    return static_cast<int64_t>(v.f);
  }
  return v.i;
}

double Assembler::eval_num(P::ExprContext* e, const char*) {
  Value v = eval(e);
  need_num(v, e);
  return v.num();
}

void Assembler::need_num(const Value& v, antlr4::ParserRuleContext* at) {
  if (v.is_num()) return;
  if (v.kind == Value::Name) {
    if (find_tensor(v.s)) fail(at, fmt::format("tensor '{}' used where a number is expected", v.s));
    fail(at, fmt::format("undefined symbol '{}'{}", v.s, [&] {
           std::string s = suggest(v.s, visible_names());
           return s.empty() ? std::string() : "; did you mean '" + s + "'?";
         }()));
  }
  fail(at, fmt::format("expected a number, not {}", v.str()));
}

Value Assembler::eval(P::ExprContext* e) {
  if (auto* p = dynamic_cast<P::PrimaryExprContext*>(e)) return eval_primary(p->primary());
  if (auto* b = dynamic_cast<P::BinaryExprContext*>(e)) return eval_binary(b);
  if (auto* x = dynamic_cast<P::IndexExprContext*>(e)) return eval_index(x);
  if (auto* u = dynamic_cast<P::UnaryExprContext*>(e)) {
    Value v = eval(u->expr());
    const char op = u->op->getText()[0];
    if (op == '!') {
      need_num(v, u->expr());
      return Value::of_int(v.num() == 0);
    }
    need_num(v, u->expr());
    if (op == '+') return v;
    if (op == '~') {
      if (v.kind != Value::Int) fail(u, "'~' needs an integer");
      return Value::of_int(~v.i);
    }
    if (v.kind == Value::Float) return Value::of_float(-v.f);
    if (v.i == std::numeric_limits<int64_t>::min()) fail(u, "integer overflow");
    return Value::of_int(-v.i);
  }
  fail(e, "malformed expression");
}

Value Assembler::eval_primary(P::PrimaryContext* p) {
  if (auto* n = dynamic_cast<P::NamePrimContext*>(p)) {
    const std::string s = n->name->getText();
    if (const Var* v = lookup(s)) return v->v;
    if (s == "inf") return Value::of_float(std::numeric_limits<double>::infinity());
    if (s == "nan") return Value::of_float(std::numeric_limits<double>::quiet_NaN());
    if (s == "true") return Value::of_int(1);
    if (s == "false") return Value::of_int(0);
    return Value::of_name(s);
  }
  if (auto* n = dynamic_cast<P::NumberPrimContext*>(p)) {
    const std::string t = n->NUMBER()->getText();
    auto v = parse_number_text(t);
    if (!v) fail(p, fmt::format("invalid number '{}'", t));
    return *v;
  }
  if (auto* x = dynamic_cast<P::ParenPrimContext*>(p)) return eval(x->expr());
  if (auto* x = dynamic_cast<P::ListPrimContext*>(p)) {
    Value v;
    v.kind = Value::List;
    if (x->expr().size() > 4096) fail(p, "list too long (at most 4096 elements)");
    for (auto* e : x->expr()) v.list.push_back(eval(e));
    return v;
  }
  if (auto* x = dynamic_cast<P::StringPrimContext*>(p)) {
    std::string t = x->STRING()->getText();
    return Value::of_name(t.substr(1, t.size() - 2), Value::Str);
  }
  if (auto* c = dynamic_cast<P::CallPrimContext*>(p)) return eval_call(c);
  fail(p, "malformed expression");
}

Value Assembler::eval_binary(P::BinaryExprContext* b) {
  const std::string op = b->op->getText();
  if (op == "&&" || op == "||") {
    Value l = eval(b->expr(0));
    need_num(l, b->expr(0));
    const bool lv = l.num() != 0;
    if (op == "&&" ? !lv : lv) return Value::of_int(lv);
    Value r = eval(b->expr(1));
    need_num(r, b->expr(1));
    return Value::of_int(r.num() != 0);
  }
  Value l = eval(b->expr(0)), r = eval(b->expr(1));
  if (op == "==" || op == "!=") {
    // Names (dtypes, enumerators held by params) compare by spelling.
    if ((l.kind == Value::Name || l.kind == Value::Str) &&
        (r.kind == Value::Name || r.kind == Value::Str))
      return Value::of_int((l.s == r.s) == (op == "=="));
  }
  need_num(l, b->expr(0));
  need_num(r, b->expr(1));
  const bool ints = l.kind == Value::Int && r.kind == Value::Int;
  const double x = l.num(), y = r.num();
  auto cmp = [&](bool v) { return Value::of_int(v); };
  if (op == "<") return cmp(ints ? l.i < r.i : x < y);
  if (op == "<=") return cmp(ints ? l.i <= r.i : x <= y);
  if (op == ">") return cmp(ints ? l.i > r.i : x > y);
  if (op == ">=") return cmp(ints ? l.i >= r.i : x >= y);
  if (op == "==") return cmp(ints ? l.i == r.i : x == y);
  if (op == "!=") return cmp(ints ? l.i != r.i : x != y);
  if ((op == "/" || op == "%") && y == 0) fail(b->expr(1), "division by zero");
  if (ints) {
    int64_t out = 0;
    bool ovf = false;
    if (op == "+")
      ovf = __builtin_add_overflow(l.i, r.i, &out);
    else if (op == "-")
      ovf = __builtin_sub_overflow(l.i, r.i, &out);
    else if (op == "*")
      ovf = __builtin_mul_overflow(l.i, r.i, &out);
    else if (op == "/" || op == "%") {
      if (l.i == std::numeric_limits<int64_t>::min() && r.i == -1)
        ovf = true;
      else
        out = op == "/" ? l.i / r.i : l.i % r.i;
    } else if (op == "<<" || op == ">>") {
      if (r.i < 0 || r.i > 63)
        fail(b->expr(1), fmt::format("shift count {} is outside [0, 63]", r.i));
      out = op == "<<" ? static_cast<int64_t>(static_cast<uint64_t>(l.i) << r.i) : l.i >> r.i;
    } else if (op == "&")
      out = l.i & r.i;
    else if (op == "|")
      out = l.i | r.i;
    else if (op == "^")
      out = l.i ^ r.i;
    if (ovf) fail(b, "integer overflow in compile-time expression");
    return Value::of_int(out);
  }
  if (op == "+") return Value::of_float(x + y);
  if (op == "-") return Value::of_float(x - y);
  if (op == "*") return Value::of_float(x * y);
  if (op == "/") return Value::of_float(x / y);
  if (op == "%") return Value::of_float(std::fmod(x, y));
  fail(b, fmt::format("operator '{}' needs integer operands", op));
}

Value Assembler::eval_call(P::CallPrimContext* c) {
  const std::string f = c->name->getText();
  if (f == "ap") return eval_raw_ap(c);
  static const std::vector<std::string> kFuncs = {"cdiv", "min", "max", "align_up",
                                                  "log2", "abs", "ap"};
  if (f == "vec")
    fail(c, "@vec(...) is a dynamic index: write it inside a slice, e.g. x[@vec(idx), :]");
  if (std::find(kFuncs.begin(), kFuncs.end(), f) == kFuncs.end()) {
    std::string s = suggest(f, kFuncs);
    fail(c,
         fmt::format("unknown function '{}'{}", f, s.empty() ? "" : "; did you mean '" + s + "'?"));
  }
  std::vector<Value> a;
  for (auto* arg : c->callArg()) {
    if (arg->name) fail(arg, fmt::format("function '{}' takes no named arguments", f));
    Value v = eval(arg->expr());
    need_num(v, arg);
    a.push_back(v);
  }
  auto arity = [&](size_t n) {
    if (a.size() != n) fail(c, fmt::format("{}() takes {} argument(s), got {}", f, n, a.size()));
  };
  const bool ints =
      std::all_of(a.begin(), a.end(), [](const Value& v) { return v.kind == Value::Int; });
  if (f == "min" || f == "max") {
    if (a.empty()) fail(c, fmt::format("{}() needs at least one argument", f));
    Value best = a[0];
    for (const auto& v : a)
      if (f == "min" ? v.num() < best.num() : v.num() > best.num()) best = v;
    if (!ints) return Value::of_float(best.num());
    return best;
  }
  if (f == "abs") {
    arity(1);
    return ints ? Value::of_int(a[0].i < 0 ? -a[0].i : a[0].i)
                : Value::of_float(std::abs(a[0].num()));
  }
  if (f == "log2") {
    arity(1);
    if (a[0].num() <= 0) fail(c, "log2() of a non-positive value");
    if (ints) return Value::of_int(63 - __builtin_clzll(static_cast<uint64_t>(a[0].i)));
    return Value::of_float(std::log2(a[0].f));
  }
  arity(2);
  if (!ints) fail(c, fmt::format("{}() needs integer arguments", f));
  if (a[1].i <= 0) fail(c->callArg(1), fmt::format("{}() needs a positive divisor", f));
  const int64_t q = a[0].i >= 0 ? (a[0].i + a[1].i - 1) / a[1].i : a[0].i / a[1].i;
  return Value::of_int(f == "cdiv" ? q : q * a[1].i);
}

// x[...] : lower a tensor slice to an access pattern.
Value Assembler::eval_index(P::IndexExprContext* x) {
  Value base = eval(x->expr());
  if (base.kind != Value::Name)
    fail(x->expr(), fmt::format("only tensors can be sliced, not {}", base.str()));
  const TensorDecl* t = find_tensor(base.s);
  if (!t) {
    std::vector<std::string> names;
    for (const auto& [n, d] : tensors_) names.push_back(n);
    std::string s = suggest(base.s, names);
    fail(x->expr(), fmt::format("unknown tensor '{}'{}", base.s,
                                s.empty() ? "" : "; did you mean '" + s + "'?"));
  }
  std::vector<SliceIndex> idx;
  for (auto* s : x->slice()) {
    SliceIndex si;
    if (auto* r = dynamic_cast<P::RangeSliceContext*>(s)) {
      if (!r->c1) {
        if (!r->lo) fail(s, "empty index: write ':' for a whole dimension");
        si.kind = SliceIndex::Point;
        si.lo = eval_int(r->lo, "index");
      } else {
        si.kind = SliceIndex::Range;
        if (r->lo) si.has_lo = true, si.lo = eval_int(r->lo, "slice start");
        if (r->hi) si.has_hi = true, si.hi = eval_int(r->hi, "slice stop");
        if (r->step) si.step = eval_int(r->step, "slice step");
      }
    } else if (auto* d = dynamic_cast<P::DynSliceContext*>(s)) {
      auto* call = dynamic_cast<P::PrimaryExprContext*>(d->expr());
      auto* cp = call ? dynamic_cast<P::CallPrimContext*>(call->primary()) : nullptr;
      if (cp && cp->name->getText() == "vec") {
        if (cp->callArg().size() != 1) fail(cp, "@vec takes one SBUF index tile");
        Value v = eval(cp->callArg(0)->expr());
        if (v.kind == Value::Name && find_tensor(v.s)) {
          auto w = lower_slice(*find_tensor(v.s), {});
          if (auto* e = std::get_if<LowerError>(&w)) fail(cp, e->message);
          v.kind = Value::Ap;
          v.ap = std::get<AccessPattern>(w);
        }
        if (v.kind != Value::Ap) fail(cp->callArg(0), "@vec needs an SBUF index tile");
        si.kind = SliceIndex::DynVec;
        si.vec = v.ap;
      } else {
        Value v = eval(d->expr());
        auto r = v.kind == Value::Name && v.s.size() >= 2 && v.s[0] == 'r' ? std::optional<int>()
                                                                           : std::nullopt;
        int reg = -1;
        if (v.kind == Value::Name && v.s.size() >= 2 && v.s[0] == 'r') {
          reg = 0;
          for (char ch : v.s.substr(1))
            reg = std::isdigit(static_cast<unsigned char>(ch)) && reg < 1000 ? reg * 10 + (ch - '0')
                                                                             : 9999;
        }
        (void)r;
        if (reg < 0 || reg >= kNumRegs)
          fail(d->expr(),
               fmt::format("a dynamic offset is a register r0..r{} or @vec(tile), not '{}'",
                           kNumRegs - 1, v.str()));
        si.kind = SliceIndex::DynReg;
        si.reg = static_cast<uint8_t>(reg);
      }
    }
    idx.push_back(si);
  }
  auto r = lower_slice(*t, idx);
  if (auto* e = std::get_if<LowerError>(&r)) {
    antlr4::ParserRuleContext* at = x;
    if (e->index >= 0 && static_cast<size_t>(e->index) < x->slice().size()) at = x->slice(e->index);
    fail(at, e->message);
  }
  Value v;
  v.kind = Value::Ap;
  v.ap = std::get<AccessPattern>(r);
  v.s = base.s;
  return v;
}

// ap(SPACE, DTYPE, PSTART, PCOUNT, OFFSET, [[stride, count], ...], pstride=, dyn=, mult=,
//    limit=, vidx=[pstart, pcount, offset, dtype]): every AccessPattern field, exactly.
Value Assembler::eval_raw_ap(P::CallPrimContext* c) {
  AccessPattern ap;
  auto args = c->callArg();
  std::vector<P::CallArgContext*> pos;
  for (auto* a : args)
    if (!a->name) pos.push_back(a);
  if (pos.size() != 6)
    fail(c, "ap() takes 6 positional arguments: ap(space, dtype, part_start, part_count, offset, "
            "[[stride, count], ...])");
  auto name_arg = [&](P::CallArgContext* a) {
    Value v = eval(a->expr());
    if (v.kind != Value::Name) fail(a, fmt::format("expected a name, not {}", v.str()));
    return v.s;
  };
  auto int_arg = [&](P::ExprContext* e, int64_t lo, int64_t hi, const char* what) {
    int64_t v = eval_int(e, what);
    if (v < lo || v > hi) fail(e, fmt::format("{} {} is outside [{}, {}]", what, v, lo, hi));
    return v;
  };
  const std::string sp = name_arg(pos[0]);
  auto space = enum_parse(EnumType::MemSpace, sp);
  if (!space) fail(pos[0], fmt::format("unknown memory space '{}'", sp));
  ap.space = static_cast<MemSpace>(*space);
  const std::string dt = name_arg(pos[1]);
  auto dtype = parse_dtype(dt);
  if (!dtype) fail(pos[1], fmt::format("unknown dtype '{}'", dt));
  ap.dtype = *dtype;
  ap.part_start = static_cast<uint16_t>(int_arg(pos[2]->expr(), 0, 0xffff, "part_start"));
  ap.part_count = static_cast<uint16_t>(int_arg(pos[3]->expr(), 0, 0xffff, "part_count"));
  ap.offset = static_cast<uint64_t>(
      int_arg(pos[4]->expr(), 0, std::numeric_limits<int64_t>::max(), "offset"));
  Value dims = eval(pos[5]->expr());
  const char* dims_msg = "dims are a list of 1 to 4 [stride, count] pairs";
  if (dims.kind != Value::List || dims.list.empty() || dims.list.size() > kMaxFreeDims)
    fail(pos[5], dims_msg);
  ap.ndims = static_cast<uint8_t>(dims.list.size());
  for (size_t k = 0; k < dims.list.size(); ++k) {
    const Value& d = dims.list[k];
    if (d.kind != Value::List || d.list.size() != 2 || d.list[0].kind != Value::Int ||
        d.list[1].kind != Value::Int || d.list[0].i < INT32_MIN || d.list[0].i > INT32_MAX ||
        d.list[1].i < 0 || d.list[1].i > UINT32_MAX)
      fail(pos[5], dims_msg);
    ap.dims[k] = {static_cast<int32_t>(d.list[0].i), static_cast<uint32_t>(d.list[1].i)};
  }
  for (auto* a : args) {
    if (!a->name) continue;
    const std::string n = a->name->getText();
    if (n == "pstride") {
      ap.part_stride = eval_int(a->expr(), "pstride");
    } else if (n == "dyn") {
      const std::string d = name_arg(a);
      if (d == "vec") {
        ap.dyn = DynKind::vec;
      } else {
        int reg = d.size() >= 2 && d[0] == 'r' && d.size() <= 3 ? std::atoi(d.c_str() + 1) : -1;
        if (reg < 0 || reg >= kNumRegs || d.find_first_not_of("0123456789", 1) != std::string::npos)
          fail(a, "dyn is a register r0..r63 or vec");
        ap.dyn = DynKind::reg;
        ap.dyn_reg = static_cast<uint8_t>(reg);
      }
    } else if (n == "mult") {
      ap.dyn_mult = eval_int(a->expr(), "mult");
    } else if (n == "limit") {
      ap.dyn_limit = static_cast<uint32_t>(int_arg(a->expr(), 0, UINT32_MAX, "limit"));
    } else if (n == "vidx") {
      Value v = eval(a->expr());
      if (v.kind != Value::List || v.list.size() != 4 || v.list[0].kind != Value::Int ||
          v.list[1].kind != Value::Int || v.list[2].kind != Value::Int ||
          v.list[3].kind != Value::Name || !parse_dtype(v.list[3].s) || v.list[0].i < 0 ||
          v.list[0].i > 0xffff || v.list[1].i < 0 || v.list[1].i > 0xffff || v.list[2].i < 0 ||
          v.list[2].i > UINT32_MAX)
        fail(a, "vidx is [part_start, part_count, offset, dtype]");
      ap.vidx = {static_cast<uint16_t>(v.list[0].i), static_cast<uint16_t>(v.list[1].i),
                 static_cast<uint32_t>(v.list[2].i), *parse_dtype(v.list[3].s)};
    } else {
      std::string s = suggest(n, {"pstride", "dyn", "mult", "limit", "vidx"});
      fail(a, fmt::format("unknown ap() field '{}'{}", n,
                          s.empty() ? "" : "; did you mean '" + s + "'?"));
    }
  }
  Value v;
  v.kind = Value::Ap;
  v.ap = ap;
  v.raw = true;
  return v;
}

std::optional<Value> parse_number_text(const std::string& t) {
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
  char* end = nullptr;
  double d = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size() || !std::isfinite(d)) return std::nullopt;
  return Value::of_float(d);
}

} // namespace nisa::nasm
