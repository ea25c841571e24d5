#include "asm/layout.h"

#include <fmt/format.h>

#include <algorithm>

#include <boost/container/small_vector.hpp>

#include "isa/limits.h"

namespace nisa::nasm {
namespace {

constexpr uint64_t kAlign = 64;
uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }
int space_index(MemSpace s) { return static_cast<int>(s); }
// a + b in decimal, exact even past 2^64.
std::string text_sum(uint64_t a, uint64_t b) {
  uint64_t r;
  if (!__builtin_add_overflow(a, b, &r)) return std::to_string(r);
  return fmt::format("{} + {}", a, b);
}

} // namespace

TargetLimits target_limits(Target t) {
  switch (t) {
  case Target::trn1: return {180224, 16384, 2048};
  case Target::trn2: return {212984, 16384, 2048};
  case Target::trn3: return {245752, 16384, 2048};
  }
  return {212984, 16384, 2048};
}

uint64_t tensor_bytes(const TensorDecl& t) {
  uint64_t n = static_cast<uint64_t>(dtype_bytes(t.dtype));
  size_t first = t.space == MemSpace::hbm ? 0 : 1;
  for (size_t k = first; k < t.shape.size(); ++k) n *= static_cast<uint64_t>(t.shape[k]);
  return n;
}

std::optional<std::string> Allocator::place(TensorDecl& decl, std::optional<uint64_t> pinned) {
  if (decl.space != MemSpace::hbm) return place_on_chip(decl, pinned);
  auto& next = next_[space_index(MemSpace::hbm)];
  decl.address = pinned ? *pinned : next;
  // Checked: the size may overflow and the end pass the address space (isa/limits.h); then
  // the next tensor's address below cannot wrap.
  if (auto err = tensor_extent_error(decl)) return err;
  if (!pinned) next = align_up(decl.address + *checked_tensor_bytes(decl), kAlign);
  return std::nullopt;
}

std::optional<std::string> Allocator::place_on_chip(TensorDecl& decl,
                                                    std::optional<uint64_t> pinned) {
  bool psum = decl.space == MemSpace::psum;
  const auto row = checked_row_bytes(decl);
  if (!row)
    return fmt::format("{} tensor '{}': its bytes per partition overflow 64 bits",
                       psum ? "PSUM" : "SBUF", decl.name);
  uint64_t size = *row;
  uint64_t cap = psum ? limits_.psum_bytes : limits_.sbuf_bytes;
  uint64_t bank = limits_.psum_bank_bytes;
  std::string_view sp = psum ? "PSUM" : "SBUF";
  if (size > cap)
    return fmt::format("{} tensor '{}' needs {} bytes per partition; the {} has {}", sp, decl.name,
                       size, sp, cap);
  if (psum && size > bank && size % bank != 0)
    return fmt::format("PSUM tensor '{}' needs {} bytes per partition: larger than a {}-byte bank "
                       "but not a whole number of banks",
                       decl.name, size, bank);
  auto fits_bank = [&](uint64_t a) {
    return !psum || (size <= bank ? a / bank == (a + size - 1) / bank : a % bank == 0);
  };
  auto& pins = pinned_[space_index(decl.space)];
  if (pinned) {
    if (*pinned > cap || size > cap - *pinned) // no wrap for a pin near 2^64
      return fmt::format("{} tensor '{}' pinned at {} ends at byte {}, past the {} bytes per "
                         "partition",
                         sp, decl.name, *pinned, text_sum(*pinned, size), cap);
    if (!fits_bank(*pinned))
      return fmt::format("PSUM tensor '{}' pinned at {} straddles a {}-byte bank", decl.name,
                         *pinned, bank);
    decl.address = *pinned;
    pins.emplace_back(*pinned, *pinned + size);
    return std::nullopt;
  }
  uint64_t a = next_[space_index(decl.space)];
  for (bool moved = true; moved;) {
    moved = false;
    a = align_up(a, kAlign);
    if (!fits_bank(a)) a = align_up(a, bank);
    for (auto [b, e] : pins)
      if (a < e && b < a + size) {
        a = e;
        moved = true;
      }
  }
  // A tensor that does not fit takes no space: the next one is tried at the same offset, and
  // is reported only if it does not fit there on its own (the message says what is left, so a
  // second error at the same offset reads as its own overflow, not as a repeat).
  if (a + size > cap)
    return fmt::format("{} over capacity: tensor '{}' needs {} bytes per partition at offset {} "
                       "(after the tensors placed before it), where {} of the {}'s {} usable "
                       "bytes per partition are left",
                       sp, decl.name, size, a, a < cap ? cap - a : 0, sp, cap);
  decl.address = a;
  next_[space_index(decl.space)] = a + size;
  return std::nullopt;
}

namespace {

struct Dim {
  int64_t stride; // elements
  int64_t count;
};

// Range of a slice index within a dim of size n: start and count; error text if out of range.
std::optional<std::string> resolve_range(const SliceIndex& s, int64_t n, int64_t& start,
                                         int64_t& count) {
  if (s.step == 0) { // a broadcast: element `start` repeated stop - start times
    const int64_t lo = s.has_lo ? s.lo : 0;
    if (!s.has_hi)
      return std::string("a broadcast slice a:b:0 needs its stop (element a repeated b - a times)");
    if (lo < 0 || lo >= n)
      return fmt::format("broadcast index {} is outside the dimension of size {}", lo, n);
    if (s.hi <= lo) return fmt::format("broadcast slice {}:{}:0 repeats nothing", lo, s.hi);
    start = lo;
    count = s.hi - lo;
    return std::nullopt;
  }
  if (s.step > 0) {
    int64_t lo = s.has_lo ? s.lo : 0, hi = s.has_hi ? s.hi : n;
    if (lo < 0 || hi > n || lo > hi)
      return fmt::format("slice {}:{} is outside the dimension of size {}", lo, hi, n);
    start = lo;
    count = s.step == 1 ? hi - lo : (hi - lo + s.step - 1) / s.step; // (no division for 1)
  } else {
    int64_t lo = s.has_lo ? s.lo : n - 1, hi = s.has_hi ? s.hi : -1;
    if (lo >= n || hi < -1 || lo < hi)
      return fmt::format("slice {}:{}:{} is outside the dimension of size {}", lo, hi, s.step, n);
    start = lo;
    count = (lo - hi + (-s.step) - 1) / (-s.step);
  }
  if (count == 0) return "empty slice";
  return std::nullopt;
}

using DimList = boost::container::small_vector<Dim, 8>;

// Fits the free dims into the hardware's 4: drop unit dims, then merge contiguous neighbours.
bool fit_free_dims(DimList& dims) {
  if (dims.size() <= kMaxFreeDims) return true;
  dims.erase(std::remove_if(dims.begin(), dims.end(), [](const Dim& d) { return d.count == 1; }),
             dims.end());
  for (size_t k = dims.size(); dims.size() > kMaxFreeDims && k-- > 1;) {
    Dim& outer = dims[k - 1];
    const Dim& inner = dims[k];
    if (outer.stride == inner.stride * inner.count) {
      outer = {inner.stride, outer.count * inner.count};
      dims.erase(dims.begin() + static_cast<long>(k));
    }
  }
  return dims.size() <= kMaxFreeDims;
}

} // namespace

bool lower_slice_fast(const TensorDecl& t, std::span<const SliceIndex> slices, AccessPattern& ap) {
  const size_t rank = t.shape.size();
  if (slices.size() > rank || rank == 0 || rank > 8) return false;
  const bool hbm = t.space == MemSpace::hbm;
  int64_t elem_stride[8];
  elem_stride[rank - 1] = 1;
  for (size_t k = rank; k-- > 1;) elem_stride[k - 1] = elem_stride[k] * t.shape[k];
  if (!hbm) elem_stride[0] = 0;
  size_t kept = rank - slices.size();
  for (const SliceIndex& s : slices) {
    if (s.kind != SliceIndex::Range && s.kind != SliceIndex::Point) return false;
    kept += s.kind == SliceIndex::Range;
  }
  FastApBuilder b(t, kept, ap);
  static const SliceIndex kWhole{};
  for (size_t k = 0; k < rank; ++k) {
    const SliceIndex& s = k < slices.size() ? slices[k] : kWhole;
    const int64_t n = t.shape[k];
    int64_t start = 0, count = 1;
    const bool point = s.kind == SliceIndex::Point;
    if (point) {
      if (s.lo < 0 || s.lo >= n) return false;
      start = s.lo;
    } else if (s.step == 1) { // resolve_range's usual case, inline
      const int64_t lo = s.has_lo ? s.lo : 0, hi = s.has_hi ? s.hi : n;
      if (lo < 0 || hi > n || lo >= hi) return false;
      start = lo;
      count = hi - lo;
    } else if (resolve_range(s, n, start, count)) {
      return false;
    }
    if (!b.place(k, start, count, point, s.step, elem_stride[k])) return false;
  }
  b.finish();
  return true;
}

std::variant<AccessPattern, LowerError> lower_slice(const TensorDecl& t,
                                                    std::span<const SliceIndex> slices) {
  if (AccessPattern ap; lower_slice_fast(t, slices, ap)) return ap;
  const size_t rank = t.shape.size();
  if (slices.size() > rank)
    return LowerError{
        static_cast<int>(rank),
        fmt::format("too many indices: tensor '{}' has {} dimension(s)", t.name, rank)};
  const bool hbm = t.space == MemSpace::hbm;
  // Small vectors: one slice per operand of every instruction, no allocation for rank <= 8.
  boost::container::small_vector<int64_t, 8> elem_stride(rank, 1);
  for (size_t k = rank; k-- > 1;) elem_stride[k - 1] = elem_stride[k] * t.shape[k];
  if (!hbm) elem_stride[0] = 0; // partitions are not addressed by element offset

  AccessPattern ap;
  ap.space = t.space;
  ap.dtype = t.dtype;
  int64_t elem_off = 0;
  DimList free;
  bool have_rows = false;
  // A single kept HBM dim (e.g. x[r, a:b]) is one row of n elements, not n rows of one.
  size_t kept = 0;
  for (size_t k = 0; k < rank; ++k)
    kept += k >= slices.size() || slices[k].kind == SliceIndex::Range;
  if (hbm && kept == 1) {
    ap.part_count = 1;
    ap.part_stride = 0;
    have_rows = true;
  }
  for (size_t k = 0; k < rank; ++k) {
    static const SliceIndex kWhole{};
    const SliceIndex& s = k < slices.size() ? slices[k] : kWhole;
    const int idx = static_cast<int>(k);
    const int64_t n = t.shape[k];
    const bool part_dim = !hbm && k == 0;
    if (s.kind == SliceIndex::DynReg || s.kind == SliceIndex::DynVec) {
      if (ap.dyn != DynKind::none) return LowerError{idx, "only one dynamic offset per operand"};
      if (part_dim) return LowerError{idx, "the partition dim cannot take a dynamic offset"};
      ap.dyn_mult = elem_stride[k];
      ap.dyn_limit = static_cast<uint32_t>(n);
      if (s.kind == SliceIndex::DynReg) {
        ap.dyn = DynKind::reg;
        ap.dyn_reg = s.reg;
        continue;
      }
      if (!hbm || k != 0)
        return LowerError{idx, "a vector offset (@vec) applies to dim 0 of an HBM tensor only"};
      const AccessPattern& v = *s.vec;
      if (v.space != MemSpace::sbuf || info(v.dtype).is_float || v.free_elems() != 1 ||
          v.dyn != DynKind::none)
        return LowerError{idx, "the @vec index must be an SBUF tile of one integer per partition"};
      ap.dyn = DynKind::vec;
      ap.vidx = {v.part_start, v.part_count, static_cast<uint32_t>(v.offset), v.dtype};
      ap.part_count = v.part_count;
      ap.part_stride = 0;
      have_rows = true;
      continue;
    }
    int64_t start = 0, count = 1;
    if (s.kind == SliceIndex::Point) {
      if (s.lo < 0 || s.lo >= n)
        return LowerError{idx,
                          fmt::format("index {} is outside the dimension of size {}", s.lo, n)};
      start = s.lo;
    } else if (auto err = resolve_range(s, n, start, count)) {
      return LowerError{idx, *err};
    }
    if (part_dim) {
      if (s.kind == SliceIndex::Range && s.step == 0)
        return LowerError{idx, "the partition dim of an on-chip tensor cannot be broadcast "
                               "(partitions are contiguous); broadcast an HBM tensor's rows "
                               "through a DMA"};
      if (s.kind == SliceIndex::Range && s.step != 1)
        return LowerError{idx, "the partition dim cannot be strided (partitions are contiguous)"};
      ap.part_start = static_cast<uint16_t>(t.part_start + start);
      ap.part_count = static_cast<uint16_t>(count);
      continue;
    }
    elem_off += start * elem_stride[k];
    if (s.kind == SliceIndex::Point) continue;
    const int64_t stride = s.step * elem_stride[k];
    if (hbm && !have_rows) {
      if (count > 0xffff)
        return LowerError{idx, fmt::format("{} rows: an HBM row dim holds at most 65535", count)};
      ap.part_count = static_cast<uint16_t>(count);
      ap.part_stride = stride;
      have_rows = true;
      continue;
    }
    free.push_back({stride, count});
  }
  if (!fit_free_dims(free))
    return LowerError{-1, fmt::format("the slice needs {} free dims; an access pattern has at most "
                                      "4 (and they cannot be merged)",
                                      free.size())};
  for (const Dim& d : free)
    if (d.stride < INT32_MIN || d.stride > INT32_MAX || d.count > UINT32_MAX)
      return LowerError{-1, "a free-dim stride or count does not fit in 32 bits"};
  if (free.empty()) free.push_back({1, 1});
  ap.ndims = static_cast<uint8_t>(free.size());
  for (size_t k = 0; k < free.size(); ++k)
    ap.dims[k] = {static_cast<int32_t>(free[k].stride), static_cast<uint32_t>(free[k].count)};
  int64_t byte_off = static_cast<int64_t>(t.address) + elem_off * dtype_bytes(t.dtype);
  ap.offset = static_cast<uint64_t>(byte_off);
  return ap;
}

} // namespace nisa::nasm
