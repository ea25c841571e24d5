// Definitions of the shared compute-engine helpers (see elementwise.h).
// O3: vectorise the row conversion loops (see dve.cpp).
#pragma GCC optimize("O3")
#include "interp/engines/elementwise.h"

#include <algorithm>

#include "isa/exec_kind.h"

namespace nisa::interp::ew {

int operand_index(const Inst& in, std::string_view name) {
  const auto ops = desc(in.op).operands;
  for (size_t k = 0; k < ops.size(); ++k)
    if (ops[k].name == name) {
      if (k >= in.ops.size())
        throw Fault(fmt::format("{}: operand `{}` missing from the instruction record",
                                desc(in.op).mnemonic, name));
      return static_cast<int>(k);
    }
  throw Fault(fmt::format("{}: no operand `{}` (internal error)", desc(in.op).mnemonic, name));
}

const Operand& operand(const Inst& in, int k) {
  if (k < 0 || size_t(k) >= in.ops.size())
    throw Fault(fmt::format("{}: operand #{} missing from the instruction record",
                            desc(in.op).mnemonic, k));
  return in.ops[size_t(k)];
}

std::string where(const Inst& in, int k) {
  const auto ops = desc(in.op).operands;
  const std::string_view name = k >= 0 && size_t(k) < ops.size() ? ops[size_t(k)].name : "?";
  return fmt::format("{}.{} operand `{}`", name_of(in.engine), desc(in.op).mnemonic, name);
}
void fault(const Inst& in, int k, const std::string& msg) {
  throw Fault(fmt::format("{}: {}", where(in, k), msg));
}
void fault(const Inst& in, const std::string& msg) {
  throw Fault(fmt::format("{}.{}: {}", name_of(in.engine), desc(in.op).mnemonic, msg));
}

void require_legal(const ExecCtx& cx, const Inst& in) {
  if (cx.legal) return; // checked once when the stream was decoded
  if (auto e = legality_error(in, cx.target)) throw Fault(legality_text(in, *e));
}

View operand_view(ExecCtx& cx, const Inst& in, int k, Access how) {
  const Operand& o = operand(in, k);
  if (!o.present) fault(in, k, "is required but absent");
  if (!cx.legal)
    if (auto e = ap_operand_error(in, size_t(k), o.ap)) fault(in, k, *e);
  try {
    return cx.view(o.ap, how);
  } catch (const Fault& f) {
    fault(in, k, f.what());
  }
}

void note_psum_write(ExecCtx& cx, const AccessPattern& ap) {
  CoreState* st = cx.state;
  if (ap.space != MemSpace::psum || st->psum_written.empty()) return;
  const int64_t eb = dtype_bytes(ap.dtype);
  const ApSpan sp = ap_free_span(ap);
  const int64_t lo = int64_t(sp.lo), hi = int64_t(sp.hi);
  // Flags are per host word: a row of words starts every psum_stride / 4 flags.
  const uint64_t words = st->psum_part_bytes / 4, row = st->psum_stride / 4;
  const uint64_t w0 = (ap.offset + lo * eb) / 4, w1 = (ap.offset + (hi + 1) * eb + 3) / 4;
  for (uint32_t p = ap.part_start; p < ap.part_start + ap.part_count; ++p)
    std::fill(st->psum_written.begin() + p * row + w0,
              st->psum_written.begin() + p * row + std::min(w1, words), 0);
}

namespace {
struct Placement {
  bool on_chip = false;
  const uint8_t* mem = nullptr;
  uint64_t stride = 0; // host bytes from a partition to the next
};
Placement placement(const ExecCtx& cx, const View& v) {
  const CoreState* st = cx.state;
  auto inside = [&](const uint8_t* mem, uint64_t stride) {
    return mem && v.base >= mem && v.base < mem + stride * kNumPartitions;
  };
  if (st && inside(st->sbuf, st->sbuf_stride)) return {true, st->sbuf, st->sbuf_stride};
  if (st && inside(st->psum, st->psum_stride)) return {true, st->psum, st->psum_stride};
  return {};
}
// Byte range [lo, hi) of one row relative to row(p).
std::pair<int64_t, int64_t> row_span(const View& v) {
  int64_t lo = 0, hi = 0;
  for (int k = 0; k < 4; ++k) {
    const int64_t r = v.stride[k] * (v.count[k] - 1);
    (r < 0 ? lo : hi) += r;
  }
  return {lo, hi + dtype_bytes(v.dtype)};
}
} // namespace

bool same_layout(const View& a, const View& b) {
  return a.base == b.base && a.pstride == b.pstride && !a.rows && !b.rows &&
         dtype_bytes(a.dtype) == dtype_bytes(b.dtype) &&
         std::equal(a.stride, a.stride + 4, b.stride) && std::equal(a.count, a.count + 4, b.count);
}

bool needs_snapshot(const ExecCtx& cx, const View& dst, const View& src) {
  return !same_layout(dst, src) && views_overlap(cx, dst, src);
}

bool views_overlap(const ExecCtx& cx, const View& dst, const View& src) {
  const auto [dlo, dhi] = row_span(dst);
  const auto [slo, shi] = row_span(src);
  const Placement pd = placement(cx, dst), ps = placement(cx, src);
  if (pd.on_chip && ps.on_chip && pd.mem == ps.mem && !dst.rows && !src.rows) {
    const int64_t P = static_cast<int64_t>(pd.stride);
    const int64_t od = dst.base - pd.mem, os = src.base - ps.mem;
    const int64_t pd0 = od / P, ps0 = os / P;
    const bool parts = pd0 < ps0 + src.parts && ps0 < pd0 + dst.parts;
    const bool bytes = od % P + dlo < os % P + shi && os % P + slo < od % P + dhi;
    return parts && bytes;
  }
  // Anything else: compare whole address extents (conservative).
  auto extent = [](const View& v, int64_t lo, int64_t hi) {
    int64_t rlo = 0, rhi = 0;
    for (uint32_t p = 0; p < v.parts; ++p) {
      const int64_t r = v.row(p) - v.base;
      rlo = std::min(rlo, r);
      rhi = std::max(rhi, r);
    }
    return std::pair<const uint8_t*, const uint8_t*>{v.base + rlo + lo, v.base + rhi + hi};
  };
  const auto [a0, a1] = extent(dst, dlo, dhi);
  const auto [b0, b1] = extent(src, slo, shi);
  return a0 < b1 && b0 < a1;
}

ScalarOp scalar_operand(ExecCtx& cx, const Inst& in, int k, uint32_t parts) {
  const Operand& o = operand(in, k);
  ScalarOp s;
  if (!o.is_ap) {
    s.imm = o.f;
    return s;
  }
  const View v = operand_view(cx, in, k, Access::read); // [parts, 1]: require_legal
  s.is_ap = true;
  s.f.resize(parts);
  s.i.resize(parts);
  for (uint32_t p = 0; p < parts; ++p) {
    s.f[p] = load_as_f32(v.dtype, v.row(p));
    s.i[p] = load_as_int(v.dtype, v.row(p));
  }
  return s;
}

// ---- rows ------------------------------------------------------------------------------------
void load_row_int(const View& v, uint32_t p, int64_t* out) {
  with_dtype(v.dtype, [&](auto t) {
    constexpr DType T = decltype(t)::value;
    using S = typename Traits<T>::S;
    if constexpr (info(T).is_float) {
      for_each_elem(v, p, [&](const uint8_t* q) { *out++ = load_as_int(T, q); });
    } else {
      for_each_elem(v, p, [&](const uint8_t* q) { *out++ = static_cast<int64_t>(ld<S>(q)); });
    }
  });
}

void store_row_int(const View& v, uint32_t p, const int64_t* in) {
  // Contiguous rows (a search row's 8 indices, the common case) without the element walk.
  if (v.contiguous() && dtype_bytes(v.dtype) <= 4) {
    uint8_t* q = v.row(p);
    const uint64_t n = v.free_elems;
    switch (dtype_bytes(v.dtype)) {
    case 1:
      for (uint64_t j = 0; j < n; ++j) st<uint8_t>(q + j, uint8_t(in[j]));
      return;
    case 2:
      for (uint64_t j = 0; j < n; ++j) st<uint16_t>(q + 2 * j, uint16_t(in[j]));
      return;
    default:
      for (uint64_t j = 0; j < n; ++j) st<uint32_t>(q + 4 * j, uint32_t(in[j]));
      return;
    }
  }
  switch (dtype_bytes(v.dtype)) {
  case 1: for_each_elem(v, p, [&](uint8_t* q) { st<uint8_t>(q, uint8_t(*in++)); }); break;
  case 2: for_each_elem(v, p, [&](uint8_t* q) { st<uint16_t>(q, uint16_t(*in++)); }); break;
  default: for_each_elem(v, p, [&](uint8_t* q) { st<uint32_t>(q, uint32_t(*in++)); }); break;
  }
}

namespace {
template <class S> void copy_elems(const View& dst, uint32_t pd, const View& src, uint32_t ps) {
  // Walk src into a small staging array, then dst, so the two patterns may differ in shape.
  thread_local std::vector<S> tmp;
  tmp.resize(src.free_elems);
  S* w = tmp.data();
  for_each_elem(src, ps, [&](const uint8_t* q) { *w++ = ld<S>(q); });
  const S* r = tmp.data();
  for_each_elem(dst, pd, [&](uint8_t* q) { st<S>(q, *r++); });
}
} // namespace

std::vector<uint8_t> gather_bits(const View& v) {
  const size_t eb = dtype_bytes(v.dtype);
  std::vector<uint8_t> out(v.parts * v.free_elems * eb);
  uint8_t* w = out.data();
  for (uint32_t p = 0; p < v.parts; ++p) {
    if (v.contiguous()) {
      std::memcpy(w, v.row(p), v.free_elems * eb);
      w += v.free_elems * eb;
      continue;
    }
    for_each_elem(v, p, [&](const uint8_t* q) {
      std::memcpy(w, q, eb);
      w += eb;
    });
  }
  return out;
}

void scatter_bits_row(const View& v, uint32_t p, const uint8_t* in) {
  const size_t eb = dtype_bytes(v.dtype);
  if (v.contiguous()) {
    std::memmove(v.row(p), in, v.free_elems * eb);
    return;
  }
  for_each_elem(v, p, [&](uint8_t* q) {
    std::memcpy(q, in, eb);
    in += eb;
  });
}

void copy_row_bits(const View& dst, uint32_t pd, const View& src, uint32_t ps) {
  if (dst.contiguous() && src.contiguous()) {
    std::memmove(dst.row(pd), src.row(ps), src.free_elems * dtype_bytes(src.dtype));
    return;
  }
  switch (dtype_bytes(src.dtype)) {
  case 1: copy_elems<uint8_t>(dst, pd, src, ps); break;
  case 2: copy_elems<uint16_t>(dst, pd, src, ps); break;
  default: copy_elems<uint32_t>(dst, pd, src, ps); break;
  }
}

F32Rows::F32Rows(const View& v, bool snapshot)
    : v_(v), direct_(fp32_direct(v) && !snapshot), snap_(snapshot) {
  if (direct_) return;
  if (!snap_) {
    buf_.resize(v.free_elems);
    return;
  }
  buf_.resize(v.free_elems * v.parts);
  for (uint32_t p = 0; p < v.parts; ++p) load_row(v, p, buf_.data() + p * v.free_elems);
}

const float* F32Rows::get(uint32_t p) {
  if (direct_) return reinterpret_cast<const float*>(v_.row(p));
  if (snap_) return buf_.data() + p * v_.free_elems;
  load_row(v_, p, buf_.data());
  return buf_.data();
}

// ---- ALU -------------------------------------------------------------------------------------
float alu_f32(AluOp op, float a, float b) {
  return with_alu(op, [&](auto o) { return alu<decltype(o)::value>(a, b); });
}

int64_t alu_int(AluOp op, int64_t a, int64_t b, int bits) {
  int64_t r = 0;
  if (!with_int_alu(op, [&](auto o) { r = alu_i<decltype(o)::value>(a, b, bits); }))
    throw Fault(fmt::format("ALU operator {} has no integer form", name_of(op)));
  return r;
}

} // namespace nisa::interp::ew
