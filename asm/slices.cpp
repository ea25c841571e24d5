// Expressions that make access patterns: tensor slices x[...] (lowered by asm/layout.h's
// lower_slice), raw ap(...) with every field, and a tensor named whole.
#include <fmt/format.h>

#include <array>
#include <boost/container/small_vector.hpp>
#include <limits>

#include "asm/assembler_util.h"
#include "asm/eval.h"
#include "asm/layout.h"

namespace nisa::nasm {
using namespace detail;

// x[...] : lower a tensor slice to an access pattern.
Value Slices::index(uint32_t self) {
  Value v;
  v.kind = Value::Ap;
  v.ap = lower_index(self, &v.s);
  return v;
}

AccessPattern Slices::lower_index(uint32_t self, std::string* name_out) const {
  const Node& x = src_.node(self);
  const TensorDecl* t = nullptr;
  std::string base_name;
  const Node& b = src_.node(x.a);
  if (b.kind == NodeKind::Name) {
    const Symbols::NodeInfo* in = sym_.node_info(x.a, src_.file().text(b));
    if (!sym_.lookup_info(*in, x.a)) {
      // The common case, a tensor named directly: no Value built.
      t = in->tensor ? in->tensor : sym_.find_tensor_node(x.a, src_.file().text(b));
      if (t && name_out) base_name = t->name;
      if (const uint32_t p = t ? plan(self, *t) : kNoPlan; p != kNoPlan)
        if (AccessPattern ap; lower_planned(plans_[p], ap)) {
          if (name_out) *name_out = std::move(base_name);
          return ap;
        }
    }
  }
  if (!t) {
    Value base = ev_.eval(x.a);
    if (base.kind != Value::Name)
      src_.fail_at(x.a, fmt::format("only tensors can be sliced, not {}", base.str()));
    t = sym_.find_tensor(base.s);
    base_name = std::move(base.s);
  }
  if (!t) {
    const std::vector<std::string> names = sym_.tensor_names();
    std::string s = suggest(base_name, names);
    sym_.fail_unknown_tensor(x.a, base_name,
                             fmt::format("unknown tensor '{}'{}", base_name,
                                         s.empty() ? "" : "; did you mean '" + s + "'?"));
  }
  const uint32_t* slices = src_.file().kid_begin(x);
  // Most slices have a few indices: those live on the stack.
  std::array<SliceIndex, 4> small;
  std::vector<SliceIndex> big;
  if (x.nkids > small.size()) big.resize(x.nkids);
  SliceIndex* idx = x.nkids > small.size() ? big.data() : small.data();
  std::vector<AccessPattern> vecs; // the @vec tiles (reserved: the indices point into it)
  for (uint32_t k = 0; k < x.nkids; ++k) {
    const Node& s = src_.node(slices[k]);
    SliceIndex& si = idx[k];
    if (s.kind == NodeKind::RangeSlice) {
      if (!(s.flags & Node::kFirstColon)) {
        if (s.a == kNone) src_.fail_at(slices[k], "empty index: write ':' for a whole dimension");
        si.kind = SliceIndex::Point;
        si.lo = ev_.eval_int(s.a, "index");
      } else {
        si.kind = SliceIndex::Range;
        if (s.a != kNone) si.has_lo = true, si.lo = ev_.eval_int(s.a, "slice start");
        if (s.b != kNone) si.has_hi = true, si.hi = ev_.eval_int(s.b, "slice stop");
        if (s.c != kNone) si.step = ev_.eval_int(s.c, "slice step");
      }
      continue;
    }
    // '@' expr: @vec(tile) or a register.
    const Node& d = src_.node(s.a);
    if (d.kind == NodeKind::Call && src_.file().text(d) == "vec") {
      if (d.nkids != 1) src_.fail_at(s.a, "@vec takes one SBUF index tile");
      const uint32_t arg = src_.node(src_.file().kid_begin(d)[0]).a;
      Value v = ev_.eval(arg);
      if (v.kind == Value::Name && sym_.find_tensor(v.s)) {
        auto w = lower_slice(*sym_.find_tensor(v.s), {});
        if (auto* e = std::get_if<LowerError>(&w)) src_.fail_at(s.a, e->message);
        v.kind = Value::Ap;
        v.ap = std::get<AccessPattern>(w);
      }
      if (v.kind != Value::Ap)
        src_.fail_at(src_.file().kid_begin(d)[0], "@vec needs an SBUF index tile");
      si.kind = SliceIndex::DynVec;
      if (vecs.empty()) vecs.reserve(x.nkids);
      vecs.push_back(v.ap);
      si.vec = &vecs.back();
      continue;
    }
    Value v = ev_.eval(s.a);
    int reg = -1;
    if (v.kind == Value::Name && v.s.size() >= 2 && v.s[0] == 'r') {
      reg = 0;
      for (char ch : v.s.substr(1))
        reg = std::isdigit(static_cast<unsigned char>(ch)) && reg < 1000 ? reg * 10 + (ch - '0')
                                                                         : 9999;
    }
    if (reg < 0 || reg >= kNumRegs)
      src_.fail_at(s.a,
                   fmt::format("a dynamic offset is a register r0..r{} or @vec(tile), not '{}'",
                               kNumRegs - 1, v.str()));
    si.kind = SliceIndex::DynReg;
    si.reg = static_cast<uint8_t>(reg);
  }
  if (AccessPattern ap; lower_slice_fast(*t, {idx, x.nkids}, ap)) { // (no variant to copy out of)
    if (name_out) *name_out = std::move(base_name);
    return ap;
  }
  auto r = lower_slice(*t, {idx, x.nkids});
  if (auto* e = std::get_if<LowerError>(&r)) {
    uint32_t at = self;
    if (e->index >= 0 && static_cast<uint32_t>(e->index) < x.nkids) at = slices[e->index];
    src_.fail_at(at, e->message);
  }
  if (name_out) *name_out = std::move(base_name);
  return std::get<AccessPattern>(r);
}

// ap()'s dims written as a list literal of [stride, count] lists of integer expressions, each
// in range: set in `ap` without a Value per node. Anything else (or out of range): false, and
// raw_ap evaluates the list the general way, with its errors.
bool Slices::int_dims(uint32_t e, AccessPattern& ap) const {
  const Node& l = src_.node(e);
  if (l.kind != NodeKind::List || l.nkids < 1 || l.nkids > kMaxFreeDims) return false;
  std::array<FreeDim, kMaxFreeDims> dims{};
  for (uint32_t k = 0; k < l.nkids; ++k) {
    const Node& p = src_.node(src_.file().kid_begin(l)[k]);
    int64_t st, n;
    if (p.kind != NodeKind::List || p.nkids != 2 || !ev_.try_int(src_.file().kid_begin(p)[0], st) ||
        !ev_.try_int(src_.file().kid_begin(p)[1], n) || st < INT32_MIN || st > INT32_MAX || n < 0 ||
        n > UINT32_MAX)
      return false;
    dims[k] = {static_cast<int32_t>(st), static_cast<uint32_t>(n)};
  }
  ap.ndims = static_cast<uint8_t>(l.nkids);
  for (uint32_t k = 0; k < l.nkids; ++k) ap.dims[k] = dims[k];
  return true;
}

// ap(SPACE, DTYPE, PSTART, PCOUNT, OFFSET, [[stride, count], ...], pstride=, dyn=, mult=,
//    limit=, vidx=[pstart, pcount, offset, dtype]): every AccessPattern field, exactly.
Value Slices::raw_ap(uint32_t self) {
  Value v;
  v.kind = Value::Ap;
  v.ap = raw_pattern(self);
  v.raw = true;
  return v;
}

AccessPattern Slices::raw_pattern(uint32_t self) const {
  if (const uint32_t p = raw_plan(self); p != kNoPlan)
    if (AccessPattern ap; raw_planned(raw_plans_[p], ap)) return ap;
  const Node& c = src_.node(self);
  AccessPattern ap;
  const uint32_t* args = src_.file().kid_begin(c);
  boost::container::small_vector<uint32_t, 8> pos; // CallArg nodes
  for (uint32_t k = 0; k < c.nkids; ++k)
    if (src_.node(args[k]).b == kNone) pos.push_back(args[k]);
  if (pos.size() != 6)
    src_.fail_at(self,
                 "ap() takes 6 positional arguments: ap(space, dtype, part_start, part_count, "
                 "offset, [[stride, count], ...])");
  auto value = [&](uint32_t arg) { return src_.node(arg).a; };
  auto name_arg = [&](uint32_t arg) {
    Value v = ev_.eval(value(arg));
    if (v.kind != Value::Name) src_.fail_at(arg, fmt::format("expected a name, not {}", v.str()));
    return v.s;
  };
  auto int_arg = [&](uint32_t e, int64_t lo, int64_t hi, const char* what) {
    int64_t v = ev_.eval_int(e, what);
    if (v < lo || v > hi)
      src_.fail_at(e, fmt::format("{} {} is outside [{}, {}]", what, v, lo, hi));
    return v;
  };
  // name_arg() without a Value when the argument is a Name node: the name a variable holds, or
  // the name itself when it is not bound (what eval() gives); else name_arg() with its errors.
  auto name_view = [&](uint32_t arg, std::string& keep) -> std::string_view {
    const uint32_t e = value(arg);
    const Node& n = src_.node(e);
    if (n.kind == NodeKind::Name) {
      const std::string_view t = src_.file().text(n);
      if (const Var* v = sym_.lookup_node(e, t)) {
        if (v->v.kind == Value::Name) return v->v.s;
      } else if (!is_literal_name(t)) {
        return t;
      }
    }
    return keep = name_arg(arg);
  };
  std::string keep_sp, keep_dt;
  const std::string_view sp = name_view(pos[0], keep_sp);
  auto space = enum_parse(EnumType::MemSpace, sp);
  if (!space)
    src_.fail_at(pos[0], fmt::format("unknown memory space '{}'{}", sp,
                                     enum_did_you_mean(EnumType::MemSpace, sp)));
  ap.space = static_cast<MemSpace>(*space);
  const std::string_view dt = name_view(pos[1], keep_dt);
  auto dtype = parse_dtype(dt);
  if (!dtype) src_.fail_at(pos[1], fmt::format("unknown dtype '{}'{}", dt, dtype_did_you_mean(dt)));
  ap.dtype = *dtype;
  ap.part_start = static_cast<uint16_t>(int_arg(value(pos[2]), 0, 0xffff, "part_start"));
  ap.part_count = static_cast<uint16_t>(int_arg(value(pos[3]), 0, 0xffff, "part_count"));
  ap.offset = static_cast<uint64_t>(
      int_arg(value(pos[4]), 0, std::numeric_limits<int64_t>::max(), "offset"));
  if (!int_dims(value(pos[5]), ap)) {
    Value dims = ev_.eval(value(pos[5]));
    const char* dims_msg = "dims are a list of 1 to 4 [stride, count] pairs";
    if (dims.kind != Value::List || dims.list.empty() || dims.list.size() > kMaxFreeDims)
      src_.fail_at(pos[5], dims_msg);
    ap.ndims = static_cast<uint8_t>(dims.list.size());
    for (size_t k = 0; k < dims.list.size(); ++k) {
      const Value& d = dims.list[k];
      if (d.kind != Value::List || d.list.size() != 2 || d.list[0].kind != Value::Int ||
          d.list[1].kind != Value::Int || d.list[0].i < INT32_MIN || d.list[0].i > INT32_MAX ||
          d.list[1].i < 0 || d.list[1].i > UINT32_MAX)
        src_.fail_at(pos[5], dims_msg);
      ap.dims[k] = {static_cast<int32_t>(d.list[0].i), static_cast<uint32_t>(d.list[1].i)};
    }
  }
  for (uint32_t k = 0; k < c.nkids; ++k) {
    const uint32_t a = args[k];
    if (src_.node(a).b == kNone) continue;
    const std::string_view n = src_.text(src_.node(a).b);
    if (n == "pstride") {
      ap.part_stride = ev_.eval_int(value(a), "pstride");
    } else if (n == "dyn") {
      const std::string d = name_arg(a);
      if (d == "vec") {
        ap.dyn = DynKind::vec;
      } else {
        int reg = d.size() >= 2 && d[0] == 'r' && d.size() <= 3 ? std::atoi(d.c_str() + 1) : -1;
        if (reg < 0 || reg >= kNumRegs || d.find_first_not_of("0123456789", 1) != std::string::npos)
          src_.fail_at(a, "dyn is a register r0..r63 or vec");
        ap.dyn = DynKind::reg;
        ap.dyn_reg = static_cast<uint8_t>(reg);
      }
    } else if (n == "mult") {
      ap.dyn_mult = ev_.eval_int(value(a), "mult");
    } else if (n == "limit") {
      ap.dyn_limit = static_cast<uint32_t>(int_arg(value(a), 0, UINT32_MAX, "limit"));
    } else if (n == "vidx") {
      Value v = ev_.eval(value(a));
      if (v.kind != Value::List || v.list.size() != 4 || v.list[0].kind != Value::Int ||
          v.list[1].kind != Value::Int || v.list[2].kind != Value::Int ||
          v.list[3].kind != Value::Name || !parse_dtype(v.list[3].s) || v.list[0].i < 0 ||
          v.list[0].i > 0xffff || v.list[1].i < 0 || v.list[1].i > 0xffff || v.list[2].i < 0 ||
          v.list[2].i > UINT32_MAX)
        src_.fail_at(a, "vidx is [part_start, part_count, offset, dtype]");
      ap.vidx = {static_cast<uint16_t>(v.list[0].i), static_cast<uint16_t>(v.list[1].i),
                 static_cast<uint32_t>(v.list[2].i), *parse_dtype(v.list[3].s)};
    } else {
      std::string s = suggest(n, {"pstride", "dyn", "mult", "limit", "vidx"});
      src_.fail_at(a, fmt::format("unknown ap() field '{}'{}", n,
                                  s.empty() ? "" : "; did you mean '" + s + "'?"));
    }
  }
  return ap;
}

AccessPattern Slices::to_ap(const Value& v, uint32_t e, bool& raw) const {
  if (v.kind == Value::Ap) {
    raw = v.raw;
    return v.ap;
  }
  if (v.kind == Value::Name) {
    if (const TensorDecl* t = sym_.find_tensor(v.s)) {
      auto r = lower_slice(*t, {});
      if (auto* err = std::get_if<LowerError>(&r)) src_.fail_at(e, err->message);
      return std::get<AccessPattern>(r);
    }
    const std::vector<std::string> names = sym_.tensor_names();
    sym_.fail_unknown_tensor(e, v.s,
                             fmt::format("unknown tensor '{}'{}", v.s, did_you_mean(v.s, names)));
  }
  src_.fail_at(e, fmt::format("expected a tensor or a slice, not {}", v.str()));
}

} // namespace nisa::nasm
