// A tensor slice's usual case, planned once per Index node (Slices::SlicePlan): its indices are
// evaluated and lowered in one pass, as lower_index and lower_slice_fast (asm/layout.cpp) would
// lower them. Anything out of the usual (a step other than 1, an index out of its dim, more free
// dims than an access pattern holds) gives up before reporting anything, and lower_index's
// general path evaluates the slice again and decides, with its errors: evaluating is free of
// side effects, and the general path evaluates the indices in the same order.
#include "asm/eval.h"
#include "asm/layout.h"
#include "isa/enums.h"

namespace nisa::nasm {

// plan() when the unit has changed or the node has no plan yet.
uint32_t Slices::make_plan(uint32_t e, const TensorDecl& t) const {
  plan_unit_ = src_.cur_unit();
  plan_cur_ = plan_of_.row(plan_unit_, src_.file().nodes.size());
  uint32_t* of = plan_cur_;
  if (of[e] != 0) return of[e] == kNoPlan || plans_[of[e] - 1].t != &t ? kNoPlan : of[e] - 1;
  of[e] = kNoPlan;
  const Node& x = src_.node(e);
  const size_t rank = t.shape.size();
  if (rank == 0 || rank > 8 || x.nkids > rank) return kNoPlan;
  SlicePlan p;
  p.t = &t;
  p.dims = static_cast<uint32_t>(plan_dims_.size());
  p.nidx = static_cast<uint8_t>(x.nkids);
  p.kept = static_cast<uint8_t>(rank - x.nkids);
  std::vector<PlanDim> dims;
  for (uint32_t k = 0; k < x.nkids; ++k) {
    const Node& s = src_.node(src_.file().kid_begin(x)[k]);
    if (s.kind != NodeKind::RangeSlice) return kNoPlan; // a dynamic offset
    PlanDim d;
    d.point = !(s.flags & Node::kFirstColon);
    if (d.point && s.a == kNone) return kNoPlan; // an error
    d.lo = s.a, d.hi = s.b, d.step = s.c;
    auto literal = [&](uint32_t x, int bit, int64_t& k) {
      if (x == kNone) return;
      const Node& n = src_.node(x);
      if (n.kind != NodeKind::Number || !(n.flags & Node::kIntValue)) return;
      k = static_cast<int64_t>(uint64_t{n.b} << 32 | n.a);
      d.fixed |= uint8_t(1u << bit);
    };
    literal(d.lo, 0, d.klo);
    literal(d.hi, 1, d.khi);
    auto name = [&](uint32_t x) -> const Symbols::NodeInfo* {
      if (x == kNone || src_.node(x).kind != NodeKind::Name) return nullptr;
      return sym_.node_info(x, src_.file().text(src_.node(x)));
    };
    d.nlo = name(d.lo);
    d.nhi = name(d.hi);
    literal(d.step, 2, d.kstep);
    p.kept += !d.point;
    dims.push_back(d);
  }
  p.elem_stride[rank - 1] = 1;
  for (size_t k = rank; k-- > 1;) p.elem_stride[k - 1] = p.elem_stride[k] * t.shape[k];
  if (t.space != MemSpace::hbm) p.elem_stride[0] = 0; // partitions are not addressed so
  plan_dims_.insert(plan_dims_.end(), dims.begin(), dims.end());
  plans_.push_back(p);
  of[e] = static_cast<uint32_t>(plans_.size());
  return of[e] - 1;
}

// eval_int(e, what) of a point's or range's bound; a Name node with its NodeInfo `in` is read as
// eval_int's leaf reads it (the variable visible now, an integer), without the call.
inline int64_t Slices::planned_int(uint32_t e, const Symbols::NodeInfo* in,
                                   const char* what) const {
  if (in)
    if (const Var* v = sym_.lookup_info(*in, e); v && v->v.kind == Value::Int) return v->v.i;
  return ev_.eval_int(e, what);
}

bool Slices::lower_planned(const SlicePlan& p, AccessPattern& ap) const {
  const TensorDecl& t = *p.t;
  const size_t rank = t.shape.size();
  FastApBuilder b(t, p.kept, ap);
  const PlanDim* dims = plan_dims_.data() + p.dims;
  for (size_t k = 0; k < rank; ++k) {
    const int64_t n = t.shape[k];
    int64_t start = 0, count = 1;
    const bool point = k < p.nidx && dims[k].point;
    if (point) {
      start = dims[k].fixed & 1 ? dims[k].klo : planned_int(dims[k].lo, dims[k].nlo, "index");
      if (start < 0 || start >= n) return false;
    } else {
      int64_t lo = 0, hi = n;
      if (k < p.nidx) {
        const PlanDim& d = dims[k];
        if (d.lo != kNone) lo = d.fixed & 1 ? d.klo : planned_int(d.lo, d.nlo, "slice start");
        if (d.hi != kNone) hi = d.fixed & 2 ? d.khi : planned_int(d.hi, d.nhi, "slice stop");
        if (d.step != kNone && (d.fixed & 4 ? d.kstep : ev_.eval_int(d.step, "slice step")) != 1)
          return false;
      }
      if (lo < 0 || hi > n || lo >= hi) return false;
      start = lo;
      count = hi - lo;
    }
    if (!b.place(k, start, count, point, 1, p.elem_stride[k])) return false;
  }
  b.finish();
  return true;
}

bool Slices::planned_index(uint32_t self, AccessPattern& ap) const {
  const Node& x = src_.node(self);
  const Node& b = src_.node(x.a);
  if (b.kind != NodeKind::Name) return false;
  const Symbols::NodeInfo* in = sym_.node_info(x.a, src_.file().text(b));
  const TensorDecl* t;
  if (const Var* v = sym_.lookup_info(*in, x.a)) { // a variable holding a tensor's name
    if (v->v.kind != Value::Name) return false;
    t = sym_.find_tensor(v->v.s);
  } else {
    t = in->tensor ? in->tensor : sym_.find_tensor_node(x.a, src_.file().text(b));
  }
  if (!t) return false;
  const uint32_t p = plan(self, *t);
  return p != kNoPlan && lower_planned(plans_[p], ap);
}

// ap(...)'s usual case, planned once per Call node (Slices::RawPlan): every field read as
// raw_pattern's general path would read it, the space's and dtype's names through their
// NodeInfo at each expansion (a visible variable's value wins, as there). Anything out of the
// usual (a field not an integer or out of its range, a name naming no space or dtype) gives up
// before reporting anything, and the general path evaluates ap() again and decides, with its
// errors: evaluating is free of side effects.
uint32_t Slices::raw_plan(uint32_t e) const {
  if (src_.cur_unit() != raw_unit_ || !raw_cur_) {
    raw_unit_ = src_.cur_unit();
    raw_cur_ = raw_of_.row(raw_unit_, src_.file().nodes.size());
  }
  uint32_t& of = raw_cur_[e];
  if (of != 0) return of == kNoPlan ? kNoPlan : of - 1;
  of = kNoPlan;
  const Node& c = src_.node(e);
  const uint32_t* args = src_.file().kid_begin(c);
  RawPlan p;
  uint32_t npos = 0;
  for (uint32_t k = 0; k < c.nkids; ++k) {
    const Node& a = src_.node(args[k]);
    if (a.b == kNone) {
      if (npos == 6) return kNoPlan;
      p.pos[npos++] = a.a;
      continue;
    }
    const std::string_view n = src_.text(a.b);
    uint32_t* field = n == "pstride" ? &p.pstride
                      : n == "mult"  ? &p.mult
                      : n == "limit" ? &p.limit
                                     : nullptr;
    if (!field || *field != kNone) return kNoPlan; // dyn=, vidx=, unknown or given twice
    *field = a.a;
  }
  if (npos != 6) return kNoPlan;
  for (int k = 0; k < 2; ++k) {
    const Node& n = src_.node(p.pos[k]);
    if (n.kind != NodeKind::Name) return kNoPlan;
    const std::string_view t = src_.file().text(n);
    (k == 0 ? p.nsp : p.ndt) = sym_.node_info(p.pos[k], t);
    if (is_literal_name(t)) continue; // not a name's value
    if (k == 0) {
      if (auto sp = enum_parse(EnumType::MemSpace, t)) p.ksp = *sp;
    } else if (auto dt = parse_dtype(t)) {
      p.kdt = static_cast<int>(*dt);
    }
  }
  raw_plans_.push_back(p);
  of = static_cast<uint32_t>(raw_plans_.size());
  return of - 1;
}

bool Slices::raw_planned(const RawPlan& p, AccessPattern& ap) const {
  // The space's and dtype's names: a visible variable holding a name, else the node's text.
  if (const Var* v = sym_.lookup_info(*p.nsp, p.pos[0])) {
    if (v->v.kind != Value::Name) return false;
    auto sp = enum_parse(EnumType::MemSpace, v->v.s);
    if (!sp) return false;
    ap.space = static_cast<MemSpace>(*sp);
  } else if (p.ksp >= 0) {
    ap.space = static_cast<MemSpace>(p.ksp);
  } else {
    return false;
  }
  if (const Var* v = sym_.lookup_info(*p.ndt, p.pos[1])) {
    if (v->v.kind != Value::Name) return false;
    auto dt = parse_dtype(v->v.s);
    if (!dt) return false;
    ap.dtype = *dt;
  } else if (p.kdt >= 0) {
    ap.dtype = static_cast<DType>(p.kdt);
  } else {
    return false;
  }
  int64_t ps, pc, off;
  if (!ev_.try_int(p.pos[2], ps) || ps < 0 || ps > 0xffff || !ev_.try_int(p.pos[3], pc) || pc < 0 ||
      pc > 0xffff || !ev_.try_int(p.pos[4], off) || off < 0)
    return false;
  ap.part_start = static_cast<uint16_t>(ps);
  ap.part_count = static_cast<uint16_t>(pc);
  ap.offset = static_cast<uint64_t>(off);
  if (!int_dims(p.pos[5], ap)) return false;
  if (p.pstride != kNone && !ev_.try_int(p.pstride, ap.part_stride)) return false;
  if (p.mult != kNone && !ev_.try_int(p.mult, ap.dyn_mult)) return false;
  if (p.limit != kNone) {
    int64_t l;
    if (!ev_.try_int(p.limit, l) || l < 0 || l > UINT32_MAX) return false;
    ap.dyn_limit = static_cast<uint32_t>(l);
  }
  return true;
}

} // namespace nisa::nasm
