// Vector engine (DVE) semantics: the search instructions (max8, find_index8, match_replace8).
// Their row kernels are in interp/simd/ (simd_max8*.cpp, simd_find.cpp), one form per vector
// level; these functions resolve the operands and hand each partition row to them.
#pragma GCC optimize("O3")
#include <algorithm>

#include "interp/core/host_pool.h"
#include "interp/core/target.h"
#include "interp/engines/elementwise.h"
#include "interp/engines/engines.h"
#include "interp/simd/simd.h"

namespace nisa::interp {

// ---- pure row algorithms ---------------------------------------------------------------------
namespace ew {

// The search kernels live in interp/simd/ (simd_max8*.cpp, simd_find.cpp, simd_fold.cpp), one
// form per vector level.
void max8_row(const float* x, uint64_t n, float out[8], const void* next) {
  simd::max8_row(simd::level(), x, n, out, next);
}
void find_index8_row(const float* data, uint64_t n, const float vals[8], int64_t out[8]) {
  simd::find_index8_row(simd::level(), data, n, vals, out);
}
void match_replace8_row(const float* data, uint64_t n, const float vals[8], int64_t out[8]) {
  simd::match_replace8_row(simd::level(), data, n, vals, out);
}

} // namespace ew

using namespace ew;

void sem_max8(ExecCtx& cx, const Inst& in) {
  require_legal(cx, in);
  const View d = operand_view(cx, in, nisa::op::max8::dst, Access::write);
  const View s = operand_view(cx, in, nisa::op::max8::src, Access::read);
  // Rows are independent: ranges of them on the host threads (a snapshot: one range).
  const bool snap = views_overlap(cx, d, s);
  // Contiguous bf16 rows: the vector forms read the bf16 bytes (no fp32 copy of the row);
  // rows they decline are converted as below.
  const simd::Level lv = simd::level();
  if (s.dtype == DType::bf16 && s.contiguous() && s.row_skip.empty() && !snap &&
      lv != simd::Level::scalar) {
    for_row_ranges(cx.pool, s.parts, s.free_elems, [&](uint32_t p0, uint32_t p1) {
      F32Rows rs(s, false);
      for (uint32_t p = p0; p < p1; ++p) {
        float top[8];
        if (!simd::max8_bf16_row(lv, s.row(p), s.free_elems, top,
                                 p + 1 < p1 ? s.row(p + 1) : nullptr))
          max8_row(rs.get(p), s.free_elems, top);
        store_row(d, p, top);
      }
    });
    note_psum_write(cx, operand(in, nisa::op::max8::dst).ap);
    return;
  }
  // Rows read in place (fp32_direct): each call prefetches the next one.
  const bool direct = !snap && fp32_direct(s);
  for_row_ranges(snap ? nullptr : cx.pool, s.parts, s.free_elems, [&](uint32_t p0, uint32_t p1) {
    F32Rows rs(s, snap);
    for (uint32_t p = p0; p < p1; ++p) {
      float top[8];
      max8_row(rs.get(p), s.free_elems, top, direct && p + 1 < p1 ? s.row(p + 1) : nullptr);
      store_row(d, p, top);
    }
  });
  note_psum_write(cx, operand(in, nisa::op::max8::dst).ap);
}

void sem_find_index8(ExecCtx& cx, const Inst& in) {
  require_legal(cx, in);
  const View d = operand_view(cx, in, nisa::op::find_index8::dst, Access::write);
  const View data = operand_view(cx, in, nisa::op::find_index8::data, Access::read);
  const View vals = operand_view(cx, in, nisa::op::find_index8::vals, Access::read);
  const bool snap_d = views_overlap(cx, d, data), snap_v = views_overlap(cx, d, vals);
  // Contiguous bf16 data rows: the vector forms read the bf16 bytes (no fp32 copy).
  const bool bf16_rows = data.dtype == DType::bf16 && data.contiguous() && data.row_skip.empty() &&
                         !snap_d && !snap_v && simd::level() != simd::Level::scalar;
  for_row_ranges(snap_d || snap_v ? nullptr : cx.pool, data.parts, data.free_elems,
                 [&](uint32_t p0, uint32_t p1) {
                   F32Rows rd(data, snap_d), rv(vals, snap_v);
                   for (uint32_t p = p0; p < p1; ++p) {
                     float v8[8];
                     std::memcpy(v8, rv.get(p), sizeof v8);
                     int64_t idx[8];
                     if (!bf16_rows || !simd::find_index8_bf16_row(simd::level(), data.row(p),
                                                                   data.free_elems, v8, idx))
                       find_index8_row(rd.get(p), data.free_elems, v8, idx);
                     store_row_int(d, p, idx); // -1 truncates to all ones: "not found"
                   }
                 });
  note_psum_write(cx, operand(in, nisa::op::find_index8::dst).ap);
}

void sem_match_replace8(ExecCtx& cx, const Inst& in) {
  require_legal(cx, in);
  const View d = operand_view(cx, in, nisa::op::match_replace8::dst, Access::write);
  const View data = operand_view(cx, in, nisa::op::match_replace8::data, Access::read);
  const View vals = operand_view(cx, in, nisa::op::match_replace8::vals, Access::read);
  std::optional<View> idx;
  if (present(in, nisa::op::match_replace8::idx))
    idx.emplace(operand_view(cx, in, nisa::op::match_replace8::idx, Access::write));
  const float imm = operand(in, nisa::op::match_replace8::imm).f;
  const bool bits = d.dtype == data.dtype;
  // Row p of data and vals is read whole before row p of dst is written; other overlaps
  // snapshot everything first.
  const bool snap = needs_snapshot(cx, d, data) || views_overlap(cx, d, vals);
  std::vector<uint8_t> data_bits;
  if (bits && snap) data_bits = gather_bits(data);
  const size_t row_bytes = data.free_elems * dtype_bytes(data.dtype);
  uint8_t imm_bytes[4];
  store_from_f32(d.dtype, imm_bytes, imm);
  // Contiguous bf16 data rows copied as bits: the vector forms read the bf16 bytes (no fp32
  // copy).
  const bool bf16_rows = bits && !snap && data.dtype == DType::bf16 && data.contiguous() &&
                         data.row_skip.empty() && simd::level() != simd::Level::scalar;
  const bool d_contig = d.contiguous(); // the replaced positions by address, not View::at
  const bool same = bits && !snap && same_layout(d, data); // once, not per row
  for_row_ranges(snap ? nullptr : cx.pool, data.parts, data.free_elems,
                 [&](uint32_t p0, uint32_t p1) {
                   F32Rows rd(data, snap), rv(vals, snap);
                   for (uint32_t p = p0; p < p1; ++p) {
                     float v8[8];
                     std::memcpy(v8, rv.get(p), sizeof v8);
                     int64_t pos[8];
                     const float* x = nullptr;
                     if (!bf16_rows || !simd::match_replace8_bf16_row(simd::level(), data.row(p),
                                                                      data.free_elems, v8, pos)) {
                       x = rd.get(p);
                       match_replace8_row(x, data.free_elems, v8, pos);
                     }
                     if (!bits)
                       store_row(d, p, x);
                     else if (snap)
                       scatter_bits_row(d, p, data_bits.data() + p * row_bytes);
                     else if (!same)
                       copy_row_bits(d, p, data, p);
                     const size_t eb = dtype_bytes(d.dtype);
                     uint8_t* const drow = d_contig ? d.row(p) : nullptr;
                     // Fixed-size copies for the 2- and 4-byte dtypes (a memcpy of eb bytes
                     // became a byte loop).
                     for (int64_t k : pos) {
                       if (k < 0) continue;
                       uint8_t* q = drow ? drow + k * eb : d.at(p, k);
                       if (eb == 2)
                         std::memcpy(q, imm_bytes, 2);
                       else if (eb == 4)
                         std::memcpy(q, imm_bytes, 4);
                       else
                         std::memcpy(q, imm_bytes, eb);
                     }
                     if (idx) store_row_int(*idx, p, pos);
                   }
                 });
  note_psum_write(cx, operand(in, nisa::op::match_replace8::dst).ap);
  if (idx) note_psum_write(cx, operand(in, nisa::op::match_replace8::idx).ap);
}

} // namespace nisa::interp
