// Resolving access patterns into views (interp/core/exec.h): dynamic offsets, bounds and
// partition checks, once per operand per instruction.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "interp/core/exec.h"
#include "interp/core/lazy_pages.h"

namespace nisa::interp {

bool View::contiguous() const {
  int64_t expect = dtype_bytes(dtype);
  for (int k = 3; k >= 0; --k) {
    if (count[k] == 1) continue;
    if (stride[k] != expect) return false;
    expect *= count[k];
  }
  return true;
}

uint8_t* View::at(uint32_t p, uint64_t j) const {
  int64_t off = 0;
  for (int k = 3; k >= 0; --k) {
    off += static_cast<int64_t>(j % count[k]) * stride[k];
    j /= count[k];
  }
  return row(p) + off;
}

namespace {

const char* verb(Access how) { return how == Access::read ? "read" : "write"; }

// The memory an access pattern addresses: its bytes and, on chip, the partition size (every
// bound) and the host stride between partitions (every host address).
struct Region {
  uint8_t* mem;
  uint64_t part_bytes; // on chip: bytes per partition; hbm: total bytes
  uint64_t stride;     // on chip: host bytes from a partition to the next; hbm: unused
  bool on_chip;
  const LazyPages* lazy = nullptr; // on chip, a lazy poison buffer
};

Region region_of(const ExecCtx& cx, const AccessPattern& ap, Access how) {
  const CoreState* st = cx.state;
  switch (ap.space) {
  case MemSpace::sbuf:
    if (!st || !st->sbuf) throw Fault("sbuf is not available to this instruction");
    return {st->sbuf, st->sbuf_part_bytes, st->sbuf_stride, true, st->sbuf_lazy};
  case MemSpace::psum:
    if (!st || !st->psum) throw Fault("psum is not available to this instruction");
    return {st->psum, st->psum_part_bytes, st->psum_stride, true, st->psum_lazy};
  case MemSpace::hbm:
    if (!cx.hbm) throw Fault("hbm is not available to this instruction");
    return {cx.hbm, cx.hbm_bytes, 0, false};
  case MemSpace::none: break;
  }
  throw Fault(fmt::format("{} operand has no memory space", verb(how)));
}

__extension__ typedef __int128 i128;

// Floor of the element cap of one access (see view()): room for broadcasts into a small HBM.
constexpr int64_t kMinElemCap = int64_t(1) << 25;

constexpr i128 kMaxDynOffset = i128(1) << 64;

// The rows [first, end) of `rows` partitions `stride` apart made private in a lazy buffer: a
// memo per host thread of the last spans done (a reused machine's writes repeat the same few
// spans every run; the test of every row's pages was ~2% of a DMA-bound run). A span stays
// private until the buffer's clear() (a new id); a stale entry could only cost page faults.
void populate_rows(const LazyPages& lazy, uint8_t* row0, uint64_t stride, uint32_t rows,
                   int64_t first, int64_t end) {
  struct Span {
    uint64_t id;
    const uint8_t* lo;
    int64_t len;
    uint32_t rows;
  };
  constexpr unsigned kSpans = 16;
  thread_local Span memo[kSpans] = {};
  thread_local unsigned next = 0;
  const uint8_t* lo = row0 + first;
  const uint64_t id = lazy.id();
  for (const Span& s : memo)
    if (s.lo == lo && s.id == id && s.len == end - first && s.rows == rows) return;
  for (uint32_t p = 0; p < rows; ++p) {
    uint8_t* row = row0 + uint64_t(p) * stride;
    lazy.populate(row + first, row + end);
  }
  memo[next++ % kSpans] = Span{id, lo, end - first, rows};
}

std::string text(i128 v) {
  if (v >= INT64_MIN && v <= INT64_MAX) return std::to_string(int64_t(v));
  return v < 0 ? "-(more than 2^63)" : "(more than 2^63)";
}

i128 register_offset(const ExecCtx& cx, const AccessPattern& ap) {
  if (ap.dyn_reg >= kNumRegs) throw Fault(fmt::format("dynamic offset register r{}", ap.dyn_reg));
  if (!cx.regs) throw Fault("dynamic offset needs registers but none are available");
  const int64_t value = cx.regs[ap.dyn_reg];
  if (ap.dyn_limit > 0 && (value < 0 || value >= ap.dyn_limit))
    throw Fault(fmt::format("register r{} = {} is outside [0, {}) for dynamic offset", ap.dyn_reg,
                            value, ap.dyn_limit));
  const i128 r = i128(value) * ap.dyn_mult;    // |value|, |dyn_mult| <= 2^63: fits
  if (r > kMaxDynOffset || r < -kMaxDynOffset) // keeps r * dtype bytes inside 128 bits
    throw Fault(fmt::format("register r{} = {} times {} elements is outside every memory",
                            ap.dyn_reg, value, ap.dyn_mult));
  return r;
}

// Per-row index values of a vector offset, read from the SBUF index tile.
int64_t vector_index(const ExecCtx& cx, const AccessPattern& ap, uint32_t p) {
  const VecIndex& vi = ap.vidx;
  const CoreState* st = cx.state;
  if (!st || !st->sbuf) throw Fault("vector offset needs sbuf but none is available");
  if (info(vi.dtype).is_float)
    throw Fault(fmt::format("vector offset index tile must be an integer dtype, not {}",
                            dtype_name(vi.dtype)));
  if (vi.part_count < ap.part_count || vi.part_start + vi.part_count > kNumPartitions)
    throw Fault(fmt::format("vector offset index tile partitions {}..{} do not cover the {} rows "
                            "of the access",
                            vi.part_start, vi.part_start + vi.part_count - 1, ap.part_count));
  if (vi.offset + dtype_bytes(vi.dtype) > st->sbuf_part_bytes)
    throw Fault(fmt::format("vector offset index tile at byte {} is outside the {} bytes of a "
                            "partition",
                            vi.offset, st->sbuf_part_bytes));
  const uint8_t* at = st->sbuf + (vi.part_start + p) * st->sbuf_stride + vi.offset;
  return load_as_int(vi.dtype, at);
}

} // namespace

View ExecCtx::view(const AccessPattern& ap, Access how, bool oob_skip) const {
  const char* space = ap.space == MemSpace::sbuf   ? "sbuf"
                      : ap.space == MemSpace::psum ? "psum"
                                                   : "hbm";
  if (ap.ndims < 1 || ap.ndims > kMaxFreeDims)
    throw Fault(fmt::format("{} {} has {} free dims (1..{} allowed)", space, verb(how), ap.ndims,
                            kMaxFreeDims));
  if (ap.part_count == 0) throw Fault(fmt::format("{} {} of 0 partitions", space, verb(how)));
  const Region rg = region_of(*this, ap, how);
  const int64_t eb = dtype_bytes(ap.dtype);

  View v;
  v.dtype = ap.dtype;
  v.parts = ap.part_count;
  // Hand-written operands may hold any 64-bit values: every byte range below is computed in
  // 128 bits (4 dims x 2^63 x 4 bytes and 2^63 x 2^16 rows cannot overflow it), so a bad
  // operand faults instead of wrapping past the bounds check.
  i128 lo = 0, hi = 0, elems = 1; // element-offset span of the free pattern; free elements
  // AP dims are outer -> inner; the view keeps the innermost in slot 3.
  for (int k = 0; k < ap.ndims; ++k) {
    const FreeDim& d = ap.dims[k];
    if (d.count == 0)
      throw Fault(fmt::format("{} {} free dim {} has count 0", space, verb(how), k));
    const i128 reach = i128(d.stride) * (d.count - 1);
    (reach < 0 ? lo : hi) += reach;
    const int slot = kMaxFreeDims - ap.ndims + k;
    v.stride[slot] = int64_t(d.stride) * eb;
    v.count[slot] = d.count;
    // Saturated at 2^64: four counts of 2^32 - 1 would overflow even 128 bits.
    elems = std::min<i128>(elems * d.count, i128(1) << 64);
  }
  // A legal access moves at most one element per byte of a memory (a broadcast source moves
  // as many as its destination); more would only make the semantics allocate without bound.
  const i128 region_total = rg.on_chip ? i128(rg.part_bytes) * kNumPartitions : rg.part_bytes;
  const i128 max_elems = std::max<i128>(region_total, kMinElemCap);
  if (elems * ap.part_count > max_elems)
    throw Fault(fmt::format("{} {} of {} x {} elements exceeds the {} elements one access may "
                            "move",
                            space, verb(how), uint64_t(ap.part_count), text(elems),
                            text(max_elems)));
  v.free_elems = uint64_t(elems);

  // oob=skip with a register (scalar) offset outside its dimension drops the whole transfer
  // (docs/machine.md "Access patterns and DMA offsets"), as a vector offset drops one row.
  if (oob_skip && ap.dyn == DynKind::reg && ap.dyn_reg < kNumRegs && regs && ap.dyn_limit > 0 &&
      (regs[ap.dyn_reg] < 0 || int64_t(regs[ap.dyn_reg]) >= int64_t(ap.dyn_limit))) {
    v.base = rg.mem;
    v.pstride = 0;
    v.row_skip.assign(ap.part_count, 1);
    return v;
  }
  const i128 dyn = ap.dyn == DynKind::reg ? register_offset(*this, ap) : 0;
  const i128 off = i128(ap.offset) + dyn * eb; // bytes
  const i128 first = off + lo * eb, end = off + (hi + 1) * eb;

  if (rg.on_chip) {
    if (ap.part_start + ap.part_count > kNumPartitions)
      throw Fault(fmt::format("{} {} of partitions {}..{} exceeds the {} partitions", space,
                              verb(how), ap.part_start, ap.part_start + ap.part_count - 1,
                              kNumPartitions));
    v.pstride = static_cast<int64_t>(rg.stride);
  }
  // Whole-access byte range for the static part (rows by pstride). what(): the text after the
  // range in the fault, made only on a fault (a string per operand was 2% of a DMA-bound run).
  auto check_range = [&](i128 row_first, i128 row_end, auto&& what) {
    if (row_first < 0 || row_end > i128(rg.part_bytes))
      throw Fault(fmt::format("{} {} of bytes {}..{}{} is outside [0, {}){}", space, verb(how),
                              text(row_first), text(row_end - 1), what(), rg.part_bytes,
                              rg.on_chip ? " of a partition" : ""));
  };
  const auto none = [] { return std::string(); };

  if (ap.dyn != DynKind::vec) {
    if (rg.on_chip) {
      check_range(first, end, none);
      v.base = rg.mem + ap.part_start * rg.stride + int64_t(off);
      // A write into a lazy buffer copies its pages in one call per row, not a fault per
      // page: when the row's span is dense (a sparse one would copy pages never written).
      if (how == Access::write && rg.lazy &&
          (end - first <= 8192 || (end - first) <= 2 * elems * eb))
        populate_rows(*rg.lazy, rg.mem + ap.part_start * rg.stride, rg.stride, ap.part_count,
                      int64_t(first), int64_t(end));
    } else {
      const i128 preach = i128(ap.part_stride) * eb * (ap.part_count - 1);
      check_range(first + std::min<i128>(preach, 0), end + std::max<i128>(preach, 0), [&] {
        return fmt::format(" ({} rows of stride {})", ap.part_count, ap.part_stride);
      });
      // In range, so the row stride fits (a single row never uses it).
      v.pstride = ap.part_count > 1 ? ap.part_stride * eb : 0;
      v.base = rg.mem + int64_t(off);
    }
    return v;
  }

  // Vector offset: each row moves by its own index; rows are checked one by one.
  if (!rg.on_chip) {
    const i128 ps = i128(ap.part_stride) * eb * (ap.part_count - 1);
    if (ps > i128(rg.part_bytes) || ps < -i128(rg.part_bytes))
      throw Fault(fmt::format("{} {} rows of stride {} span more than the {} bytes of hbm", space,
                              verb(how), ap.part_stride, rg.part_bytes));
    v.pstride = ap.part_count > 1 ? ap.part_stride * eb : 0;
  }
  v.base = rg.mem + (rg.on_chip ? ap.part_start * rg.stride : 0);
  v.row_storage.resize(ap.part_count);
  for (uint32_t p = 0; p < ap.part_count; ++p) {
    const int64_t idx = vector_index(*this, ap, p);
    const i128 row_base = rg.on_chip ? 0 : i128(p) * v.pstride;
    const i128 row_off = off + i128(idx) * ap.dyn_mult * eb + row_base; // bytes from v.base
    const bool idx_bad = ap.dyn_limit > 0 && (idx < 0 || idx >= ap.dyn_limit);
    const bool oob = row_off + lo * eb < 0 || row_off + (hi + 1) * eb > i128(rg.part_bytes);
    if (idx_bad || oob) {
      if (!oob_skip) {
        if (idx_bad)
          throw Fault(
              fmt::format("vector offset of row {} = {} is outside [0, {})", p, idx, ap.dyn_limit));
        check_range(row_off + lo * eb, row_off + (hi + 1) * eb,
                    [&] { return fmt::format(" (row {} with vector offset {})", p, idx); });
      }
      if (v.row_skip.empty()) v.row_skip.assign(ap.part_count, 0);
      v.row_skip[p] = 1;
      v.row_storage[p] = 0; // never dereferenced: the row is skipped
      continue;
    }
    v.row_storage[p] = int64_t(row_off) + (rg.on_chip ? int64_t(p) * v.pstride : 0);
  }
  v.rows = v.row_storage.data();
  return v;
}

} // namespace nisa::interp
