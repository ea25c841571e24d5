// DMA semantics: copy, transpose, compute (sum of two sources), and the LNC send/receive.
// They run when the transfer completes on its queue (the scheduler calls them).
// O3: vectorise the row conversion loops of the typed paths.
#pragma GCC optimize("O3")
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "interp/core/host_pool.h"
#include "interp/engines/collective.h"
#include "interp/engines/elementwise.h"
#include "interp/engines/engines.h"
#include "interp/engines/xfer.h"
#include "interp/simd/simd.h"

namespace nisa::interp {

namespace {
// The lowest and the highest row start of a view: its first and last rows when the rows are a
// stride apart (no per-row walk), else the extremes of the per-row offsets.
std::pair<const uint8_t*, const uint8_t*> row_starts(const View& v) {
  const uint8_t* lo = v.row(0);
  const uint8_t* hi = lo;
  if (!v.rows) {
    const uint8_t* last = v.parts > 1 ? v.row(v.parts - 1) : lo;
    return {std::min(lo, last), std::max(hi, last)};
  }
  for (uint32_t p = 1; p < v.parts; ++p) {
    lo = std::min<const uint8_t*>(lo, v.row(p));
    hi = std::max<const uint8_t*>(hi, v.row(p));
  }
  return {lo, hi};
}
// Whether two views of contiguous rows may share a byte. On-chip rows repeat every pstride
// bytes: rows that sit in disjoint byte ranges of a partition never meet. Otherwise compare
// the whole extents (lowest to highest row).
bool extents_overlap(const View& a, const View& b) {
  const int64_t la = int64_t(a.free_elems) * dtype_bytes(a.dtype);
  const int64_t lb = int64_t(b.free_elems) * dtype_bytes(b.dtype);
  const int64_t ps = a.pstride;
  if (!a.rows && !b.rows && ps > 0 && b.pstride == ps && la <= ps && lb <= ps) {
    const int64_t r = (((b.base - a.base) % ps) + ps) % ps; // b's row start within a's period
    if (r >= la && r + lb <= ps) return false;
  }
  auto extent = [](const View& v) {
    const auto [lo, hi] = row_starts(v);
    return std::pair{lo, hi + v.free_elems * dtype_bytes(v.dtype)};
  };
  const auto [a0, a1] = extent(a);
  const auto [b0, b1] = extent(b);
  return a0 < b1 && b0 < a1;
}
// The bytes [lo, hi) any element of a (possibly strided) view may touch.
std::pair<const uint8_t*, const uint8_t*> byte_span(const View& v) {
  int64_t lo = 0, hi = 0;
  for (int k = 0; k < 4; ++k) {
    const int64_t r = v.stride[k] * int64_t(v.count[k] - 1);
    (r < 0 ? lo : hi) += r;
  }
  const auto [a, b] = row_starts(v);
  return {a + lo, b + hi + dtype_bytes(v.dtype)};
}

// Rows [p0, p1) of src (any strides) into dst's contiguous rows of the same length: element
// j of row p is src's flat element j of row p (row-major over its 4 dims).
template <int W> void gather_rows(const View& dst, const View& src, uint32_t p0, uint32_t p1) {
  const int64_t* st = src.stride;
  const uint32_t* c = src.count;
  for (uint32_t p = p0; p < p1; ++p) {
    uint8_t* d = dst.row(p);
    const uint8_t* r = src.row(p);
    for (uint32_t i0 = 0; i0 < c[0]; ++i0)
      for (uint32_t i1 = 0; i1 < c[1]; ++i1)
        for (uint32_t i2 = 0; i2 < c[2]; ++i2) {
          const uint8_t* q = r + st[0] * int64_t(i0) + st[1] * int64_t(i1) + st[2] * int64_t(i2);
          for (uint32_t j = 0; j < c[3]; ++j, d += W, q += st[3]) std::memcpy(d, q, W);
        }
  }
}

} // namespace

void copy_elems(const View& dst, const View& src, HostPool* pool) {
  const int dw = dtype_bytes(dst.dtype);
  const bool same = dst.dtype == src.dtype;
  // Fast path: same dtype, same row shape, contiguous rows, no skipped rows.
  if (same && dst.parts == src.parts && dst.free_elems == src.free_elems && dst.contiguous() &&
      src.contiguous() && dst.row_skip.empty() && src.row_skip.empty()) {
    // Rows in order (an overlapping copy depends on it), in ranges when nothing overlaps.
    for_row_ranges(extents_overlap(dst, src) ? nullptr : pool, dst.parts, dst.free_elems,
                   [&](uint32_t p0, uint32_t p1) {
                     for (uint32_t p = p0; p < p1; ++p)
                       std::memmove(dst.row(p), src.row(p), dst.free_elems * dw);
                   });
    return;
  }
  // Conversion of equal-shaped contiguous rows that do not overlap: a row at a time (the
  // element-wise order below only matters when they overlap).
  if (!same && dst.parts == src.parts && dst.free_elems == src.free_elems && dst.contiguous() &&
      src.contiguous() && dst.row_skip.empty() && src.row_skip.empty() &&
      !extents_overlap(dst, src)) {
    const simd::Level lv = simd::level();
    for_row_ranges(pool, dst.parts, dst.free_elems, [&](uint32_t p0, uint32_t p1) {
      thread_local std::vector<float> buf;
      for (uint32_t p = p0; p < p1; ++p) {
        if (simd::convert_row(lv, src.dtype, src.row(p), dst.dtype, dst.row(p), dst.free_elems))
          continue;
        buf.resize(src.free_elems);
        ew::load_row(src, p, buf.data());
        ew::store_row(dst, p, buf.data());
      }
    });
    return;
  }
  // Same dtype, no skipped rows, disjoint bytes: runs of adjacent elements at a time (the
  // element order matters only when the views share bytes).
  if (same && dst.row_skip.empty() && src.row_skip.empty() && dst.parts && src.parts &&
      dst.free_elems && src.free_elems) {
    const auto [d0, d1] = byte_span(dst);
    const auto [s0, s1] = byte_span(src);
    if ((d1 <= s0 || s1 <= d0) && dst.parts == src.parts && dst.free_elems == src.free_elems &&
        dst.contiguous() && src.stride[3] != dw && (dw == 1 || dw == 2 || dw == 4)) {
      // Contiguous rows from a strided source (a column of HBM rows, a transposing read):
      // row by row, the element size a constant (the run loop below copies one element per
      // call there). Host threads only where no two dst rows meet (a vector-offset dst may
      // repeat a row: then rows go in order, the last one wins as in the loop below).
      const bool apart =
          !dst.rows && (dst.parts == 1 || dst.pstride >= int64_t(dst.free_elems) * dw);
      for_row_ranges(apart ? pool : nullptr, dst.parts, dst.free_elems,
                     [&](uint32_t p0, uint32_t p1) {
                       switch (dw) {
                       case 1: gather_rows<1>(dst, src, p0, p1); break;
                       case 2: gather_rows<2>(dst, src, p0, p1); break;
                       default: gather_rows<4>(dst, src, p0, p1); break;
                       }
                     });
      return;
    }
    if (d1 <= s0 || s1 <= d0) {
      Cursor d(dst), s(src);
      while (!d.done() && !s.done()) {
        const uint32_t n = std::min(d.run(), s.run());
        std::memcpy(d.ptr(), s.ptr(), size_t(n) * size_t(dw));
        d.advance(n);
        s.advance(n);
      }
      return;
    }
  }
  Cursor d(dst), s(src);
  for (; !d.done() && !s.done(); d.next(), s.next()) {
    if (d.row_skipped() || s.row_skipped()) continue;
    if (same)
      std::memmove(d.ptr(), s.ptr(), dw);
    else
      store_from_f32(dst.dtype, d.ptr(), load_as_f32(src.dtype, s.ptr()));
  }
}

std::vector<uint8_t> gather_bytes(const View& v) {
  const int w = dtype_bytes(v.dtype);
  std::vector<uint8_t> out(total_elems(v) * w);
  uint8_t* o = out.data();
  // Runs of adjacent elements at a time (the same bytes in the same order).
  for (Cursor c(v); !c.done();) {
    const uint32_t n = c.run();
    std::memcpy(o, c.ptr(), size_t(n) * size_t(w));
    o += size_t(n) * size_t(w);
    c.advance(n);
  }
  return out;
}

void scatter_bytes(const View& dst, const uint8_t* bytes, DType src_dtype) {
  const int sw = dtype_bytes(src_dtype), dw = dtype_bytes(dst.dtype);
  if (src_dtype == dst.dtype && dst.row_skip.empty()) { // runs, as gather_bytes
    for (Cursor c(dst); !c.done();) {
      const uint32_t n = c.run();
      std::memcpy(c.ptr(), bytes, size_t(n) * size_t(dw));
      bytes += size_t(n) * size_t(dw);
      c.advance(n);
    }
    return;
  }
  for (Cursor c(dst); !c.done(); c.next(), bytes += sw) {
    if (c.row_skipped()) continue;
    if (src_dtype == dst.dtype)
      std::memcpy(c.ptr(), bytes, dw);
    else
      store_from_f32(dst.dtype, c.ptr(), load_as_f32(src_dtype, bytes));
  }
}

void scatter_pieces(const View& dst, const BytePieces& pieces, DType src_dtype) {
  if (src_dtype != dst.dtype || !dst.row_skip.empty()) { // casts and skips: the plain way
    std::vector<uint8_t> all;
    for (auto [p, n] : pieces) all.insert(all.end(), p, p + n);
    scatter_bytes(dst, all.data(), src_dtype);
    return;
  }
  const size_t w = size_t(dtype_bytes(dst.dtype));
  size_t k = 0, at = 0; // the next source byte: pieces[k].first + at
  for (Cursor c(dst); !c.done();) {
    size_t left = size_t(c.run()) * w;
    uint8_t* d = c.ptr();
    c.advance(c.run());
    while (left > 0) { // the caller checked the sizes: the pieces hold every byte
      while (at == pieces[k].second) ++k, at = 0;
      const size_t n = std::min(left, pieces[k].second - at);
      std::memcpy(d, pieces[k].first + at, n);
      d += n, at += n, left -= n;
    }
  }
}

namespace {

bool oob_skip(const Operand& o) { return o.i == static_cast<int>(OobMode::skip); }

} // namespace

// Spaces (PSUM never), element counts and dtypes: ew::require_legal.
void sem_dma(ExecCtx& cx, const Inst& in) {
  ew::require_legal(cx, in);
  bool skip = oob_skip(in.ops[op::dma::oob]);
  View src = cx.view(in.ops[op::dma::src].ap, Access::read, skip);
  View dst = cx.view(in.ops[op::dma::dst].ap, Access::write, skip);
  copy_elems(dst, src, cx.pool);
}

// 2-D: src is [rows, cols] (partitions or HBM rows x free elements); dst is [cols, rows].
void sem_dma_transpose(ExecCtx& cx, const Inst& in) {
  ew::require_legal(cx, in);
  View src = cx.view(in.ops[op::dma_transpose::src].ap, Access::read);
  View dst = cx.view(in.ops[op::dma_transpose::dst].ap, Access::write);
  std::vector<uint8_t> s = gather_bytes(src); // src and dst may overlap
  const int w = dtype_bytes(src.dtype);
  const uint64_t n = dst.free_elems, ld = src.free_elems;
  auto rows = [&](auto tag) { // contiguous dst rows: the columns of s, kB at a time
    using T = decltype(tag);
    // kB dst rows per pass: each source row p gives kB adjacent elements (one cache line or
    // two), stored at column p of kB dst rows; a column walk one dst row at a time touched a
    // new line of s per element.
    constexpr uint32_t kB = 16;
    for (uint32_t f0 = 0; f0 < dst.parts; f0 += kB) {
      const uint32_t nb = std::min(kB, dst.parts - f0);
      uint8_t* r[kB];
      for (uint32_t i = 0; i < nb; ++i) r[i] = dst.row(f0 + i);
      const uint8_t* c = s.data() + size_t(f0) * sizeof(T);
      for (uint64_t p = 0; p < n; ++p, c += ld * sizeof(T)) {
        T x[kB];
        std::memcpy(x, c, nb * sizeof(T));
        for (uint32_t i = 0; i < nb; ++i) std::memcpy(r[i] + p * sizeof(T), &x[i], sizeof(T));
      }
    }
  };
  if (dst.contiguous() && w == 2) return rows(uint16_t{});
  if (dst.contiguous() && w == 4) return rows(uint32_t{});
  for (uint32_t f = 0; f < dst.parts; ++f)
    for (uint64_t p = 0; p < n; ++p) std::memcpy(dst.at(f, p), &s[(p * ld + f) * w], w);
}

namespace {
// The same elements at the same addresses (dst written in place of a source).
bool same_layout(const View& x, const View& y) {
  if (x.dtype != y.dtype || x.parts != y.parts || x.free_elems != y.free_elems) return false;
  for (int k = 0; k < 4; ++k)
    if (x.count[k] != y.count[k] || (x.count[k] > 1 && x.stride[k] != y.stride[k])) return false;
  for (uint32_t p = 0; p < x.parts; ++p)
    if (x.row(p) != y.row(p)) return false;
  return true;
}
// Whether dst may be computed a row at a time from src: no byte shared, or the very same
// elements (each is read before it is written, as in the element-by-element order).
bool row_safe(const View& dst, const View& src) {
  if (same_layout(dst, src)) return true;
  const auto [d0, d1] = byte_span(dst);
  const auto [s0, s1] = byte_span(src);
  return d1 <= s0 || s1 <= d0;
}
} // namespace

void sem_dma_compute(ExecCtx& cx, const Inst& in) {
  ew::require_legal(cx, in);
  bool skip = oob_skip(in.ops[op::dma_compute::oob]);
  View a = cx.view(in.ops[op::dma_compute::src0].ap, Access::read, skip);
  View b = cx.view(in.ops[op::dma_compute::src1].ap, Access::read, skip);
  View dst = cx.view(in.ops[op::dma_compute::dst].ap, Access::write, skip);
  // Rows of equal shape: converted a row at a time (the same per-element fp32 sum and rounding).
  if (dst.parts == a.parts && dst.parts == b.parts && dst.free_elems == a.free_elems &&
      dst.free_elems == b.free_elems && dst.free_elems && row_safe(dst, a) && row_safe(dst, b)) {
    // Equal shapes walk in lockstep: a row skipped (oob=skip) on any side is left out whole.
    auto skipped = [](const View& v, uint32_t p) { return !v.row_skip.empty() && v.row_skip[p]; };
    thread_local std::vector<float> fa, fb;
    fa.resize(dst.free_elems);
    fb.resize(dst.free_elems);
    const uint64_t n = dst.free_elems;
    for (uint32_t p = 0; p < dst.parts; ++p) {
      if (skipped(dst, p) || skipped(a, p) || skipped(b, p)) continue;
      ew::load_row(a, p, fa.data());
      ew::load_row(b, p, fb.data());
      float* x = fa.data();
      const float* y = fb.data();
      for (uint64_t j = 0; j < n; ++j) x[j] += y[j];
      ew::store_row(dst, p, fa.data());
    }
    return;
  }
  Cursor d(dst), s0(a), s1(b);
  for (; !d.done(); d.next(), s0.next(), s1.next()) {
    if (d.row_skipped() || s0.row_skipped() || s1.row_skipped()) continue;
    float v = load_as_f32(a.dtype, s0.ptr()) + load_as_f32(b.dtype, s1.ptr());
    store_from_f32(dst.dtype, d.ptr(), v);
  }
}

// send_recv meets its peer in the scheduler, which calls exchange_send_recv for both sides.
void sem_send_recv(ExecCtx&, const Inst&) {
  throw Fault("send_recv runs only through the scheduler (both cores must issue it)");
}

void exchange_send_recv(ExecCtx& a, const Inst& ia, ExecCtx& b, const Inst& ib) {
  constexpr int S = op::send_recv::src, D = op::send_recv::dst;
  View as = a.view(ia.ops[S].ap, Access::read), bs = b.view(ib.ops[S].ap, Access::read);
  View ad = a.view(ia.ops[D].ap, Access::write), bd = b.view(ib.ops[D].ap, Access::write);
  auto check = [](const View& d, const View& s, int dc, int sc) {
    if (d.dtype != s.dtype || d.parts != s.parts || d.free_elems != s.free_elems)
      throw Fault(
          fmt::format("send_recv: core {} sends {}[{} x {}] but core {} receives into {}[{} x {}]",
                      sc, dtype_name(s.dtype), s.parts, s.free_elems, dc, dtype_name(d.dtype),
                      d.parts, d.free_elems));
  };
  check(bd, as, b.core_id, a.core_id);
  check(ad, bs, a.core_id, b.core_id);
  std::vector<uint8_t> from_a = gather_bytes(as), from_b = gather_bytes(bs);
  scatter_bytes(bd, from_a.data(), as.dtype);
  scatter_bytes(ad, from_b.data(), bs.dtype);
}

} // namespace nisa::interp
