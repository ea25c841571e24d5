// The builtin functions of expressions: arithmetic, q(), rank_groups(), tensor queries.
#include <fmt/format.h>

#include <algorithm>
#include <boost/container/small_vector.hpp>
#include <cmath>
#include <limits>

#include "asm/eval.h"
#include "asm/layout.h"

namespace nisa::nasm {

Value Functions::call(uint32_t self) {
  const Node& c = src_.node(self);
  const std::string_view f = src_.file().text(c);
  if (f == "ap") return sl_.raw_ap(self);
  static const std::vector<std::string_view> kFuncsView = {
      "cdiv", "min", "max",   "align_up", "log2",  "abs", "ap",   "rank_groups", "sqrt", "exp",
      "log",  "pow", "floor", "ceil",     "round", "q",   "addr", "size",        "dim",  "part"};
  static const std::vector<std::string> kFuncs(kFuncsView.begin(), kFuncsView.end());
  if (f == "vec")
    src_.fail_at(self,
                 "@vec(...) is a dynamic index: write it inside a slice, e.g. x[@vec(idx), :]");
  if (std::find(kFuncsView.begin(), kFuncsView.end(), f) == kFuncsView.end()) {
    std::string s = suggest(f, kFuncs);
    src_.fail_at(self, fmt::format("unknown function '{}'{}", f,
                                   s.empty() ? "" : "; did you mean '" + s + "'?"));
  }
  const uint32_t* args = src_.file().kid_begin(c);
  // A tensor's placement and size: addr(t) (HBM: byte address; on chip: byte offset within
  // each partition), size(t) (bytes; on chip: bytes per partition), part(t) (first
  // partition), dim(t, k) (the size of dim k).
  if (f == "addr" || f == "size" || f == "dim" || f == "part") {
    const size_t want = f == "dim" ? 2 : 1;
    if (c.nkids != want)
      src_.fail_at(self, fmt::format("{}() takes {} argument(s), got {}", f, want, c.nkids));
    const Node& arg = src_.node(args[0]);
    const TensorDecl* t = nullptr;
    if (arg.b == kNone && src_.node(arg.a).kind == NodeKind::Name)
      t = sym_.find_tensor(src_.file().text(src_.node(arg.a)));
    if (!t) {
      Value v = ev_.eval(arg.a);
      if (v.kind == Value::Name) t = sym_.find_tensor(v.s);
      if (!t) {
        const std::vector<std::string> names = sym_.tensor_names();
        std::string sg = v.kind == Value::Name ? suggest(v.s, names) : "";
        const std::string msg = fmt::format("{}() needs a tensor, not {}{}", f, v.str(),
                                            sg.empty() ? "" : "; did you mean '" + sg + "'?");
        if (v.kind == Value::Name) sym_.fail_unknown_tensor(args[0], v.s, msg); // silent: failed
        src_.fail_at(args[0], msg);
      }
    }
    if (f == "addr") return Value::of_int(static_cast<int64_t>(t->address));
    if (f == "part") return Value::of_int(t->part_start);
    if (f == "size") return Value::of_int(static_cast<int64_t>(tensor_bytes(*t))); // checked

    const int64_t k = ev_.eval_int(src_.node(args[1]).a, "dimension index");
    if (k < 0 || k >= static_cast<int64_t>(t->shape.size()))
      src_.fail_at(args[1], fmt::format("dim(): tensor '{}' has {} dimension(s), not {}", t->name,
                                        t->shape.size(), k));
    return Value::of_int(t->shape[static_cast<size_t>(k)]);
  }
  boost::container::small_vector<Value, 4> a;
  a.reserve(c.nkids);
  for (uint32_t k = 0; k < c.nkids; ++k) {
    const Node& arg = src_.node(args[k]);
    if (arg.b != kNone)
      src_.fail_at(args[k], fmt::format("function '{}' takes no named arguments", f));
    a.push_back(ev_.eval(arg.a));
    ev_.need_num(a.back(), args[k]);
  }
  auto arity = [&](size_t n) {
    if (a.size() != n)
      src_.fail_at(self, fmt::format("{}() takes {} argument(s), got {}", f, n, a.size()));
  };
  const bool ints =
      std::all_of(a.begin(), a.end(), [](const Value& v) { return v.kind == Value::Int; });
  if (f == "min" || f == "max") {
    if (a.empty()) src_.fail_at(self, fmt::format("{}() needs at least one argument", f));
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
      src_.fail_at(self, "integer overflow in abs()");
    return ints ? Value::of_int(a[0].i < 0 ? -a[0].i : a[0].i)
                : Value::of_float(std::abs(a[0].num()));
  }
  if (f == "q") { // a computed DMA queue name: q(i % 16) is q0..q15
    arity(1);
    if (!ints || a[0].i < 0 || a[0].i >= kNumDmaQueues)
      src_.fail_at(self, fmt::format("q() needs an integer queue number in [0, {}), got {}",
                                     kNumDmaQueues, a[0].str()));
    return Value::of_name("q" + std::to_string(a[0].i));
  }
  if (f == "sqrt" || f == "exp" || f == "log") {
    arity(1);
    const double x = a[0].num();
    if (f == "sqrt" && x < 0) src_.fail_at(self, "sqrt() of a negative value");
    if (f == "log" && x <= 0) src_.fail_at(self, "log() of a non-positive value");
    return Value::of_float(f == "sqrt" ? std::sqrt(x) : f == "exp" ? std::exp(x) : std::log(x));
  }
  if (f == "pow") {
    arity(2);
    const double r = std::pow(a[0].num(), a[1].num());
    if (!std::isfinite(r) && std::isfinite(a[0].num()) && std::isfinite(a[1].num()))
      src_.fail_at(self, "pow() overflows or is undefined for these arguments");
    return Value::of_float(r);
  }
  if (f == "floor" || f == "ceil" || f == "round") {
    arity(1);
    if (ints) return a[0];
    const double r = f == "floor"  ? std::floor(a[0].f)
                     : f == "ceil" ? std::ceil(a[0].f)
                                   : std::round(a[0].f);
    if (!(r >= -9.2e18 && r <= 9.2e18)) src_.fail_at(self, fmt::format("{}() is outside int64", f));
    return Value::of_int(static_cast<int64_t>(r));
  }
  if (f == "log2") {
    arity(1);
    if (a[0].num() <= 0) src_.fail_at(self, "log2() of a non-positive value");
    if (ints) return Value::of_int(63 - __builtin_clzll(static_cast<uint64_t>(a[0].i)));
    return Value::of_float(std::log2(a[0].f));
  }
  if (f == "rank_groups") { // [[0 .. n/g-1], [n/g .. 2n/g-1], ...]: g groups of consecutive ranks
    arity(2);
    if (!ints || a[0].i < 1 || a[1].i < 1 || a[0].i > 65536 || a[0].i % a[1].i != 0)
      src_.fail_at(self, "rank_groups(n, g) needs integers n in [1, 65536] and g >= 1 dividing n");
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
  if (!ints) src_.fail_at(self, fmt::format("{}() needs integer arguments", f));
  if (a[1].i <= 0) src_.fail_at(args[1], fmt::format("{}() needs a positive divisor", f));
  // Rounds up: q = ceil(a / b) (a / b truncates towards zero, which is up for a < 0).
  const int64_t q = a[0].i / a[1].i + (a[0].i > 0 && a[0].i % a[1].i != 0 ? 1 : 0);
  int64_t up = 0;
  if (f != "cdiv" && __builtin_mul_overflow(q, a[1].i, &up))
    src_.fail_at(self, "integer overflow in align_up()");
  return Value::of_int(f == "cdiv" ? q : up);
}

} // namespace nisa::nasm
