// Compile-time expressions: numbers, names, lists, builtin functions, tensor slices.
#include <fmt/format.h>

#include <algorithm>
#include <boost/container/small_vector.hpp>
#include <cmath>
#include <limits>

#include "asm/assembler.h"

namespace nisa::nasm {

int64_t Assembler::eval_int(uint32_t e, const char* what) {
  Value v = eval(e);
  need_num(v, e);
  if (v.kind == Value::Float) {
    if (v.f != std::floor(v.f) || std::abs(v.f) > 9e18)
      fail_at(e, fmt::format("{} must be an integer, not {}", what, v.str()));
    return static_cast<int64_t>(v.f);
  }
  return v.i;
}

void Assembler::need_num(const Value& v, uint32_t at) {
  if (v.is_num()) return;
  if (v.kind == Value::Name) {
    if (find_tensor(v.s))
      fail_at(at, fmt::format("tensor '{}' used where a number is expected (addr({}) is its "
                              "address, size({}) its size in bytes)",
                              v.s, v.s, v.s));
    fail_at(at, fmt::format("undefined symbol '{}'{}", v.s, [&] {
              std::string s = suggest(v.s, visible_names());
              return s.empty() ? std::string() : "; did you mean '" + s + "'?";
            }()));
  }
  fail_at(at, fmt::format("expected a number, not {}", v.str()));
}

Value Assembler::eval(uint32_t e) {
  const Node& n = node(e);
  switch (n.kind) {
  case NodeKind::Name: {
    const std::string_view s = file().text(n);
    if (const Var* v = lookup_node(e, s)) return v->v;
    if (s == "inf") return Value::of_float(std::numeric_limits<double>::infinity());
    if (s == "nan") return Value::of_float(std::numeric_limits<double>::quiet_NaN());
    if (s == "true") return Value::of_int(1);
    if (s == "false") return Value::of_int(0);
    return Value::of_name(std::string(s));
  }
  case NodeKind::Number: {
    if (n.flags & Node::kIntValue)
      return Value::of_int(static_cast<int64_t>(uint64_t{n.b} << 32 | n.a));
    const std::string_view t = file().text(n);
    auto v = parse_number_text(t);
    if (!v) fail_at(e, fmt::format("invalid number '{}'", t));
    return *v;
  }
  case NodeKind::Binary: return eval_binary(e);
  case NodeKind::Index: return eval_index(e);
  case NodeKind::Paren: return eval(n.a);
  case NodeKind::Call: return eval_call(e);
  case NodeKind::String: {
    const std::string_view t = file().text(n);
    return Value::of_name(std::string(t.substr(1, t.size() - 2)), Value::Str);
  }
  case NodeKind::List: {
    Value v;
    v.kind = Value::List;
    if (n.nkids > 4096) fail_at(e, "list too long (at most 4096 elements)");
    v.list.reserve(n.nkids);
    for (uint32_t k = 0; k < n.nkids; ++k) v.list.push_back(eval(file().kid_begin(n)[k]));
    return v;
  }
  case NodeKind::Unary: {
    Value v = eval(n.a);
    need_num(v, n.a);
    switch (n.op) {
    case Tok::Not: return Value::of_int(v.num() == 0);
    case Tok::Plus: return v;
    case Tok::Tilde:
      if (v.kind != Value::Int) fail_at(e, "'~' needs an integer");
      return Value::of_int(~v.i);
    default: break;
    }
    if (v.kind == Value::Float) return Value::of_float(-v.f);
    if (v.i == std::numeric_limits<int64_t>::min()) fail_at(e, "integer overflow");
    return Value::of_int(-v.i);
  }
  default: break;
  }
  fail_at(e, "malformed expression");
}

Value Assembler::eval_binary(uint32_t self) {
  const Node& b = node(self);
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
  if ((op == Tok::Slash || op == Tok::Percent) && y == 0) fail_at(b.b, "division by zero");
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
      if (r.i < 0 || r.i > 63) fail_at(b.b, fmt::format("shift count {} is outside [0, 63]", r.i));
      out = op == Tok::Shl ? static_cast<int64_t>(static_cast<uint64_t>(l.i) << r.i) : l.i >> r.i;
      ovf = op == Tok::Shl && (out >> r.i) != l.i; // bits (or the sign) shifted out
      break;
    case Tok::Amp: out = l.i & r.i; break;
    case Tok::Pipe: out = l.i | r.i; break;
    case Tok::Caret: out = l.i ^ r.i; break;
    default: break;
    }
    if (ovf) fail_at(self, "integer overflow in compile-time expression");
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
  fail_at(self, fmt::format("operator '{}' needs integer operands", tok_spelling(op)));
}

Value Assembler::eval_call(uint32_t self) {
  const Node& c = node(self);
  const std::string_view f = file().text(c);
  if (f == "ap") return eval_raw_ap(self);
  static const std::vector<std::string_view> kFuncsView = {
      "cdiv", "min", "max",   "align_up", "log2",  "abs", "ap",   "rank_groups", "sqrt", "exp",
      "log",  "pow", "floor", "ceil",     "round", "q",   "addr", "size",        "dim",  "part"};
  static const std::vector<std::string> kFuncs(kFuncsView.begin(), kFuncsView.end());
  if (f == "vec")
    fail_at(self, "@vec(...) is a dynamic index: write it inside a slice, e.g. x[@vec(idx), :]");
  if (std::find(kFuncsView.begin(), kFuncsView.end(), f) == kFuncsView.end()) {
    std::string s = suggest(f, kFuncs);
    fail_at(self, fmt::format("unknown function '{}'{}", f,
                              s.empty() ? "" : "; did you mean '" + s + "'?"));
  }
  const uint32_t* args = file().kid_begin(c);
  // A tensor's placement and size: addr(t) (HBM: byte address; on chip: byte offset within
  // each partition), size(t) (bytes; on chip: bytes per partition), part(t) (first
  // partition), dim(t, k) (the size of dim k).
  if (f == "addr" || f == "size" || f == "dim" || f == "part") {
    const size_t want = f == "dim" ? 2 : 1;
    if (c.nkids != want)
      fail_at(self, fmt::format("{}() takes {} argument(s), got {}", f, want, c.nkids));
    const Node& arg = node(args[0]);
    const TensorDecl* t = nullptr;
    if (arg.b == kNone && node(arg.a).kind == NodeKind::Name)
      t = find_tensor(file().text(node(arg.a)));
    if (!t) {
      Value v = eval(arg.a);
      if (v.kind == Value::Name) t = find_tensor(v.s);
      if (!t) {
        std::vector<std::string> names;
        for (const auto& [n, d] : tensors_) names.push_back(n);
        std::string sg = v.kind == Value::Name ? suggest(v.s, names) : "";
        fail_at(args[0], fmt::format("{}() needs a tensor, not {}{}", f, v.str(),
                                     sg.empty() ? "" : "; did you mean '" + sg + "'?"));
      }
    }
    if (f == "addr") return Value::of_int(static_cast<int64_t>(t->address));
    if (f == "part") return Value::of_int(t->part_start);
    if (f == "size") return Value::of_int(static_cast<int64_t>(tensor_bytes(*t))); // checked

    const int64_t k = eval_int(node(args[1]).a, "dimension index");
    if (k < 0 || k >= static_cast<int64_t>(t->shape.size()))
      fail_at(args[1], fmt::format("dim(): tensor '{}' has {} dimension(s), not {}", t->name,
                                   t->shape.size(), k));
    return Value::of_int(t->shape[static_cast<size_t>(k)]);
  }
  boost::container::small_vector<Value, 4> a;
  a.reserve(c.nkids);
  for (uint32_t k = 0; k < c.nkids; ++k) {
    const Node& arg = node(args[k]);
    if (arg.b != kNone) fail_at(args[k], fmt::format("function '{}' takes no named arguments", f));
    a.push_back(eval(arg.a));
    need_num(a.back(), args[k]);
  }
  auto arity = [&](size_t n) {
    if (a.size() != n)
      fail_at(self, fmt::format("{}() takes {} argument(s), got {}", f, n, a.size()));
  };
  const bool ints =
      std::all_of(a.begin(), a.end(), [](const Value& v) { return v.kind == Value::Int; });
  if (f == "min" || f == "max") {
    if (a.empty()) fail_at(self, fmt::format("{}() needs at least one argument", f));
    size_t best = 0;
    const bool mn = f == "min";
    for (size_t k = 1; k < a.size(); ++k)
      if (mn ? a[k].num() < a[best].num() : a[k].num() > a[best].num()) best = k;
    if (!ints) return Value::of_float(a[best].num());
    return std::move(a[best]);
  }
  if (f == "abs") {
    arity(1);
    if (ints && a[0].i == std::numeric_limits<int64_t>::min())
      fail_at(self, "integer overflow in abs()");
    return ints ? Value::of_int(a[0].i < 0 ? -a[0].i : a[0].i)
                : Value::of_float(std::abs(a[0].num()));
  }
  if (f == "q") { // a computed DMA queue name: q(i % 16) is q0..q15
    arity(1);
    if (!ints || a[0].i < 0 || a[0].i >= kNumDmaQueues)
      fail_at(self, fmt::format("q() needs an integer queue number in [0, {}), got {}",
                                kNumDmaQueues, a[0].str()));
    return Value::of_name("q" + std::to_string(a[0].i));
  }
  if (f == "sqrt" || f == "exp" || f == "log") {
    arity(1);
    const double x = a[0].num();
    if (f == "sqrt" && x < 0) fail_at(self, "sqrt() of a negative value");
    if (f == "log" && x <= 0) fail_at(self, "log() of a non-positive value");
    return Value::of_float(f == "sqrt" ? std::sqrt(x) : f == "exp" ? std::exp(x) : std::log(x));
  }
  if (f == "pow") {
    arity(2);
    const double r = std::pow(a[0].num(), a[1].num());
    if (!std::isfinite(r) && std::isfinite(a[0].num()) && std::isfinite(a[1].num()))
      fail_at(self, "pow() overflows or is undefined for these arguments");
    return Value::of_float(r);
  }
  if (f == "floor" || f == "ceil" || f == "round") {
    arity(1);
    if (ints) return a[0];
    const double r = f == "floor"  ? std::floor(a[0].f)
                     : f == "ceil" ? std::ceil(a[0].f)
                                   : std::round(a[0].f);
    if (!(r >= -9.2e18 && r <= 9.2e18)) fail_at(self, fmt::format("{}() is outside int64", f));
    return Value::of_int(static_cast<int64_t>(r));
  }
  if (f == "log2") {
    arity(1);
    if (a[0].num() <= 0) fail_at(self, "log2() of a non-positive value");
    if (ints) return Value::of_int(63 - __builtin_clzll(static_cast<uint64_t>(a[0].i)));
    return Value::of_float(std::log2(a[0].f));
  }
  if (f == "rank_groups") { // [[0 .. n/g-1], [n/g .. 2n/g-1], ...]: g groups of consecutive ranks
    arity(2);
    if (!ints || a[0].i < 1 || a[1].i < 1 || a[0].i > 65536 || a[0].i % a[1].i != 0)
      fail_at(self, "rank_groups(n, g) needs integers n in [1, 65536] and g >= 1 dividing n");
    const int64_t size = a[0].i / a[1].i;
    Value out;
    out.kind = Value::List;
    for (int64_t k = 0; k < a[1].i; ++k) {
      Value l;
      l.kind = Value::List;
      for (int64_t r = 0; r < size; ++r) l.list.push_back(Value::of_int(k * size + r));
      out.list.push_back(std::move(l));
    }
    return out;
  }
  arity(2);
  if (!ints) fail_at(self, fmt::format("{}() needs integer arguments", f));
  if (a[1].i <= 0) fail_at(args[1], fmt::format("{}() needs a positive divisor", f));
  // Rounds up: q = ceil(a / b) (a / b truncates towards zero, which is up for a < 0).
  const int64_t q = a[0].i / a[1].i + (a[0].i > 0 && a[0].i % a[1].i != 0 ? 1 : 0);
  int64_t up = 0;
  if (f != "cdiv" && __builtin_mul_overflow(q, a[1].i, &up))
    fail_at(self, "integer overflow in align_up()");
  return Value::of_int(f == "cdiv" ? q : up);
}

// x[...] : lower a tensor slice to an access pattern.
Value Assembler::eval_index(uint32_t self) {
  const Node& x = node(self);
  const TensorDecl* t = nullptr;
  std::string base_name;
  const Node& b = node(x.a);
  if (b.kind == NodeKind::Name && !lookup(file().text(b))) {
    // The common case, a tensor named directly: no Value built.
    t = find_tensor(file().text(b));
    if (t) base_name = t->name;
  }
  if (!t) {
    Value base = eval(x.a);
    if (base.kind != Value::Name)
      fail_at(x.a, fmt::format("only tensors can be sliced, not {}", base.str()));
    t = find_tensor(base.s);
    base_name = std::move(base.s);
  }
  if (!t) {
    std::vector<std::string> names;
    for (const auto& [n, d] : tensors_) names.push_back(n);
    std::string s = suggest(base_name, names);
    fail_unknown_tensor(x.a, base_name,
                        fmt::format("unknown tensor '{}'{}", base_name,
                                    s.empty() ? "" : "; did you mean '" + s + "'?"));
  }
  const uint32_t* slices = file().kid_begin(x);
  boost::container::small_vector<SliceIndex, 4> idx(x.nkids);
  for (uint32_t k = 0; k < x.nkids; ++k) {
    const Node& s = node(slices[k]);
    SliceIndex& si = idx[k];
    if (s.kind == NodeKind::RangeSlice) {
      if (!(s.flags & Node::kFirstColon)) {
        if (s.a == kNone) fail_at(slices[k], "empty index: write ':' for a whole dimension");
        si.kind = SliceIndex::Point;
        si.lo = eval_int(s.a, "index");
      } else {
        si.kind = SliceIndex::Range;
        if (s.a != kNone) si.has_lo = true, si.lo = eval_int(s.a, "slice start");
        if (s.b != kNone) si.has_hi = true, si.hi = eval_int(s.b, "slice stop");
        if (s.c != kNone) si.step = eval_int(s.c, "slice step");
      }
      continue;
    }
    // '@' expr: @vec(tile) or a register.
    const Node& d = node(s.a);
    if (d.kind == NodeKind::Call && file().text(d) == "vec") {
      if (d.nkids != 1) fail_at(s.a, "@vec takes one SBUF index tile");
      const uint32_t arg = node(file().kid_begin(d)[0]).a;
      Value v = eval(arg);
      if (v.kind == Value::Name && find_tensor(v.s)) {
        auto w = lower_slice(*find_tensor(v.s), {});
        if (auto* e = std::get_if<LowerError>(&w)) fail_at(s.a, e->message);
        v.kind = Value::Ap;
        v.ap = std::get<AccessPattern>(w);
      }
      if (v.kind != Value::Ap) fail_at(file().kid_begin(d)[0], "@vec needs an SBUF index tile");
      si.kind = SliceIndex::DynVec;
      si.vec = v.ap;
      continue;
    }
    Value v = eval(s.a);
    int reg = -1;
    if (v.kind == Value::Name && v.s.size() >= 2 && v.s[0] == 'r') {
      reg = 0;
      for (char ch : v.s.substr(1))
        reg = std::isdigit(static_cast<unsigned char>(ch)) && reg < 1000 ? reg * 10 + (ch - '0')
                                                                         : 9999;
    }
    if (reg < 0 || reg >= kNumRegs)
      fail_at(s.a, fmt::format("a dynamic offset is a register r0..r{} or @vec(tile), not '{}'",
                               kNumRegs - 1, v.str()));
    si.kind = SliceIndex::DynReg;
    si.reg = static_cast<uint8_t>(reg);
  }
  auto r = lower_slice(*t, {idx.data(), idx.size()});
  if (auto* e = std::get_if<LowerError>(&r)) {
    uint32_t at = self;
    if (e->index >= 0 && static_cast<uint32_t>(e->index) < x.nkids) at = slices[e->index];
    fail_at(at, e->message);
  }
  Value v;
  v.kind = Value::Ap;
  v.ap = std::get<AccessPattern>(r);
  v.s = std::move(base_name);
  return v;
}

// ap(SPACE, DTYPE, PSTART, PCOUNT, OFFSET, [[stride, count], ...], pstride=, dyn=, mult=,
//    limit=, vidx=[pstart, pcount, offset, dtype]): every AccessPattern field, exactly.
Value Assembler::eval_raw_ap(uint32_t self) {
  const Node& c = node(self);
  AccessPattern ap;
  const uint32_t* args = file().kid_begin(c);
  std::vector<uint32_t> pos; // CallArg nodes
  for (uint32_t k = 0; k < c.nkids; ++k)
    if (node(args[k]).b == kNone) pos.push_back(args[k]);
  if (pos.size() != 6)
    fail_at(self, "ap() takes 6 positional arguments: ap(space, dtype, part_start, part_count, "
                  "offset, [[stride, count], ...])");
  auto value = [&](uint32_t arg) { return node(arg).a; };
  auto name_arg = [&](uint32_t arg) {
    Value v = eval(value(arg));
    if (v.kind != Value::Name) fail_at(arg, fmt::format("expected a name, not {}", v.str()));
    return v.s;
  };
  auto int_arg = [&](uint32_t e, int64_t lo, int64_t hi, const char* what) {
    int64_t v = eval_int(e, what);
    if (v < lo || v > hi) fail_at(e, fmt::format("{} {} is outside [{}, {}]", what, v, lo, hi));
    return v;
  };
  const std::string sp = name_arg(pos[0]);
  auto space = enum_parse(EnumType::MemSpace, sp);
  if (!space) fail_at(pos[0], fmt::format("unknown memory space '{}'", sp));
  ap.space = static_cast<MemSpace>(*space);
  const std::string dt = name_arg(pos[1]);
  auto dtype = parse_dtype(dt);
  if (!dtype) fail_at(pos[1], fmt::format("unknown dtype '{}'", dt));
  ap.dtype = *dtype;
  ap.part_start = static_cast<uint16_t>(int_arg(value(pos[2]), 0, 0xffff, "part_start"));
  ap.part_count = static_cast<uint16_t>(int_arg(value(pos[3]), 0, 0xffff, "part_count"));
  ap.offset = static_cast<uint64_t>(
      int_arg(value(pos[4]), 0, std::numeric_limits<int64_t>::max(), "offset"));
  Value dims = eval(value(pos[5]));
  const char* dims_msg = "dims are a list of 1 to 4 [stride, count] pairs";
  if (dims.kind != Value::List || dims.list.empty() || dims.list.size() > kMaxFreeDims)
    fail_at(pos[5], dims_msg);
  ap.ndims = static_cast<uint8_t>(dims.list.size());
  for (size_t k = 0; k < dims.list.size(); ++k) {
    const Value& d = dims.list[k];
    if (d.kind != Value::List || d.list.size() != 2 || d.list[0].kind != Value::Int ||
        d.list[1].kind != Value::Int || d.list[0].i < INT32_MIN || d.list[0].i > INT32_MAX ||
        d.list[1].i < 0 || d.list[1].i > UINT32_MAX)
      fail_at(pos[5], dims_msg);
    ap.dims[k] = {static_cast<int32_t>(d.list[0].i), static_cast<uint32_t>(d.list[1].i)};
  }
  for (uint32_t k = 0; k < c.nkids; ++k) {
    const uint32_t a = args[k];
    if (node(a).b == kNone) continue;
    const std::string_view n = text(node(a).b);
    if (n == "pstride") {
      ap.part_stride = eval_int(value(a), "pstride");
    } else if (n == "dyn") {
      const std::string d = name_arg(a);
      if (d == "vec") {
        ap.dyn = DynKind::vec;
      } else {
        int reg = d.size() >= 2 && d[0] == 'r' && d.size() <= 3 ? std::atoi(d.c_str() + 1) : -1;
        if (reg < 0 || reg >= kNumRegs || d.find_first_not_of("0123456789", 1) != std::string::npos)
          fail_at(a, "dyn is a register r0..r63 or vec");
        ap.dyn = DynKind::reg;
        ap.dyn_reg = static_cast<uint8_t>(reg);
      }
    } else if (n == "mult") {
      ap.dyn_mult = eval_int(value(a), "mult");
    } else if (n == "limit") {
      ap.dyn_limit = static_cast<uint32_t>(int_arg(value(a), 0, UINT32_MAX, "limit"));
    } else if (n == "vidx") {
      Value v = eval(value(a));
      if (v.kind != Value::List || v.list.size() != 4 || v.list[0].kind != Value::Int ||
          v.list[1].kind != Value::Int || v.list[2].kind != Value::Int ||
          v.list[3].kind != Value::Name || !parse_dtype(v.list[3].s) || v.list[0].i < 0 ||
          v.list[0].i > 0xffff || v.list[1].i < 0 || v.list[1].i > 0xffff || v.list[2].i < 0 ||
          v.list[2].i > UINT32_MAX)
        fail_at(a, "vidx is [part_start, part_count, offset, dtype]");
      ap.vidx = {static_cast<uint16_t>(v.list[0].i), static_cast<uint16_t>(v.list[1].i),
                 static_cast<uint32_t>(v.list[2].i), *parse_dtype(v.list[3].s)};
    } else {
      std::string s = suggest(n, {"pstride", "dyn", "mult", "limit", "vidx"});
      fail_at(a, fmt::format("unknown ap() field '{}'{}", n,
                             s.empty() ? "" : "; did you mean '" + s + "'?"));
    }
  }
  Value v;
  v.kind = Value::Ap;
  v.ap = ap;
  v.raw = true;
  return v;
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
