// nisa check: access extents without memory (check_extents.h).
#include "interp/check/check_extents.h"

#include <algorithm>

#include "interp/core/mem_operands.h"

namespace nisa::interp::check_detail {

__extension__ typedef __int128 i128;

void access_regions(int core, int lnc, const Inst& in, const int32_t* regs, uint64_t unknown,
                    std::vector<Region>& out) {
  const int rank = core / lnc;
  for_each_mem_operand(in, [&](const OperandDesc&, const Operand& o, bool is_write) {
    const AccessPattern& ap = o.ap;
    if (ap.space == MemSpace::none || ap.ndims < 1 || ap.ndims > kMaxFreeDims) return;
    bool hull_dyn = false;
    const i128 eb = dtype_bytes(ap.dtype);
    const ApSpan span = ap_free_span(ap);
    i128 lo = span.lo, hi = span.hi;
    // The dynamic part: a known register, or every value in [0, limit) for an unknown
    // register or a vector index (each row may take any of them).
    std::vector<i128> dyn{0};
    bool unbounded = false;
    auto any_of_limit = [&]() {
      if (ap.dyn_limit == 0) {
        unbounded = true;
        return;
      }
      dyn.clear();
      if (ap.dyn_limit > 1024) { // too many: their hull
        dyn.push_back(0);
        dyn.push_back(i128(ap.dyn_limit - 1) * ap.dyn_mult);
        hull_dyn = true;
        return;
      }
      for (uint32_t d = 0; d < ap.dyn_limit; ++d) dyn.push_back(i128(d) * ap.dyn_mult);
    };
    if (ap.dyn == DynKind::reg) {
      if (ap.dyn_reg < kNumRegs && !((unknown >> ap.dyn_reg) & 1))
        dyn[0] = i128(regs[ap.dyn_reg]) * ap.dyn_mult;
      else
        any_of_limit();
    } else if (ap.dyn == DynKind::vec) {
      any_of_limit();
      Region ix; // the index tile is read
      ix.kind = MemKind::sbuf, ix.unit = uint16_t(core), ix.write = false;
      ix.p0 = ap.vidx.part_start;
      ix.p1 = std::min<uint32_t>(kNumPartitions, uint32_t(ap.vidx.part_start) + ap.part_count);
      ix.b0 = ap.vidx.offset, ix.b1 = uint64_t(ap.vidx.offset) + dtype_bytes(ap.vidx.dtype);
      if (ix.p1 > ix.p0) out.push_back(ix);
    }
    auto clampu = [](i128 v) -> uint64_t {
      if (v < 0) return 0;
      if (v > i128(INT64_MAX)) return uint64_t(INT64_MAX);
      return uint64_t(v);
    };
    const i128 off = i128(ap.offset);
    Region r;
    r.write = is_write;
    const bool on_chip = ap.space == MemSpace::sbuf || ap.space == MemSpace::psum;
    if (on_chip) {
      r.kind = ap.space == MemSpace::sbuf ? MemKind::sbuf : MemKind::psum;
      r.unit = uint16_t(core);
      r.p0 = ap.part_start;
      r.p1 = std::min<uint32_t>(kNumPartitions, uint32_t(ap.part_start) + ap.part_count);
      if (r.p1 <= r.p0) return;
    } else {
      r.kind = MemKind::hbm, r.unit = uint16_t(rank), r.p0 = 0, r.p1 = 1;
    }
    if (unbounded) {
      r.b0 = 0, r.b1 = uint64_t(INT64_MAX);
      out.push_back(r);
      return;
    }
    // Shifts (elements): every row of an HBM pattern, plus every dynamic value.
    const uint32_t nrows = std::max<uint32_t>(1, ap.part_count);
    const uint32_t erows = on_chip ? 1 : nrows;
    const bool grid_ok = !hull_dyn && !on_chip && nrows > 1 && dyn.size() > 1 && ap.dyn_mult > 0 &&
                         ap.part_stride % ap.dyn_mult == 0;
    if (!grid_ok && (hull_dyn || uint64_t(erows) * dyn.size() > 1024)) { // their hull
      const i128 pr = i128(ap.part_stride) * (erows - 1);
      const i128 mn = std::min<i128>(0, pr) + std::min(dyn.front(), dyn.back());
      const i128 mx = std::max<i128>(0, pr) + std::max(dyn.front(), dyn.back());
      r.b0 = clampu(off + (mn + lo) * eb), r.b1 = clampu(off + (mx + hi + 1) * eb);
      if (r.b1 > r.b0) out.push_back(r);
      return;
    }
    std::vector<i128> rows{0};
    if (!on_chip && nrows > 1) {
      rows.clear();
      for (uint32_t p = 0; p < nrows; ++p) rows.push_back(i128(p) * ap.part_stride);
    }
    std::vector<std::pair<i128, i128>> iv; // byte intervals
    // Rows and dynamic values on one grid (the row stride a multiple of the dynamic step, as
    // in a gather of whole rows): the distinct shifts, not their product.
    const i128 ps_el = i128(ap.part_stride);
    const i128 mult = ap.dyn_mult;
    if (!hull_dyn && !on_chip && nrows > 1 && dyn.size() > 1 && mult > 0 && ps_el % mult == 0 &&
        rows.size() * dyn.size() > 1024) {
      const i128 q = ps_el / mult;
      const i128 qa = q < 0 ? -q : q;
      const i128 span = qa * (nrows - 1) + i128(dyn.size());
      if (span <= (i128(1) << 16)) {
        std::vector<uint8_t> hit(size_t(span), 0);
        const i128 base = q < 0 ? qa * (nrows - 1) : 0;
        for (uint32_t p = 0; p < nrows; ++p)
          for (size_t d = 0; d < dyn.size(); ++d) {
            const i128 k = base + q * p + i128(d);
            if (hit[size_t(k)]) break; // the rest of this row's run is marked already
            hit[size_t(k)] = 1;
          }
        rows.clear();
        dyn.assign(1, 0);
        for (size_t k = 0; k < hit.size(); ++k)
          if (hit[k]) rows.push_back((i128(k) - base) * mult);
      }
    }
    if (hull_dyn || rows.size() * dyn.size() > 1024) {
      i128 mn = 0, mx = 0;
      bool first = true;
      for (i128 a : {rows.front(), rows.back()})
        for (i128 d : {dyn.front(), dyn.back()}) {
          mn = first ? a + d : std::min(mn, a + d);
          mx = first ? a + d : std::max(mx, a + d);
          first = false;
        }
      iv.push_back({off + (mn + lo) * eb, off + (mx + hi + 1) * eb});
    } else {
      for (i128 a : rows)
        for (i128 d : dyn) iv.push_back({off + (a + d + lo) * eb, off + (a + d + hi + 1) * eb});
      std::sort(iv.begin(), iv.end());
      size_t w = 0;
      for (size_t i = 1; i < iv.size(); ++i) {
        if (iv[i].first <= iv[w].second)
          iv[w].second = std::max(iv[w].second, iv[i].second);
        else
          iv[++w] = iv[i];
      }
      iv.resize(w + 1);
    }
    for (auto [b0, b1] : iv) {
      r.b0 = clampu(b0), r.b1 = clampu(b1);
      if (r.b1 > r.b0) out.push_back(r);
    }
  });
}

} // namespace nisa::interp::check_detail
