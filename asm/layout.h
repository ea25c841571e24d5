// Tensor allocation per target and lowering of numpy-style slices to access patterns.
// Pure functions over declarations; errors are returned as messages (the caller adds the
// source location).
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "isa/module.h"

namespace nisa::nasm {

struct TargetLimits {
  uint64_t sbuf_bytes; // usable bytes per partition
  uint64_t psum_bytes; // bytes per partition
  uint64_t psum_bank_bytes;
};
TargetLimits target_limits(Target t);

// Allocates tensors in declaration order: SBUF and PSUM per-partition byte ranges (64-byte
// aligned; a PSUM tensor stays inside one 2 KiB bank unless it is a whole number of banks),
// HBM byte addresses per rank. Pinned addresses (`@ addr`) are kept as given.
class Allocator {
public:
  explicit Allocator(Target t) : limits_(target_limits(t)) {}
  // Sets decl.address; returns an error message when the tensor cannot be placed.
  std::optional<std::string> place(TensorDecl& decl, std::optional<uint64_t> pinned);

private:
  std::optional<std::string> place_on_chip(TensorDecl& decl, std::optional<uint64_t> pinned);
  TargetLimits limits_;
  uint64_t next_[4] = {0, 0, 0, 0};                      // per MemSpace
  std::vector<std::pair<uint64_t, uint64_t>> pinned_[4]; // [begin, end) per space
};

// Bytes of one partition's row (on chip) or of the whole tensor (hbm).
uint64_t tensor_bytes(const TensorDecl& t);

// One index of a slice, already evaluated.
struct SliceIndex {
  enum Kind { Range, Point, DynReg, DynVec } kind = Range;
  bool has_lo = false, has_hi = false;
  int64_t lo = 0, hi = 0, step = 1;   // Range; Point uses lo
  uint8_t reg = 0;                    // DynReg
  const AccessPattern* vec = nullptr; // DynVec: the index tile (held by the caller)
};

struct LowerError {
  int index = -1; // which slice index is wrong (-1: the whole slice)
  std::string message;
};

// Lowers t[slices] to the canonical access pattern (isa/isa.h).
std::variant<AccessPattern, LowerError> lower_slice(const TensorDecl& t,
                                                    std::span<const SliceIndex> slices);
// lower_slice's usual case (points and ranges within their dims, no dynamic offset, at most 4
// free dims before merging) into `ap`; false for anything else, which lower_slice decides.
bool lower_slice_fast(const TensorDecl& t, std::span<const SliceIndex> slices, AccessPattern& ap);

// The common part of the fast slice paths (lower_slice_fast, Slices::lower_planned): the dims of
// t[...] placed in order into `ap` (on chip: dim 0 is the partition range; HBM: the first kept dim
// is the row dim), then the free dims and the offset. place() is false for anything the fast
// paths do not take (a strided partition range, more than 65535 HBM rows, more than 4 free dims,
// a stride or count out of range): the general path then decides, with its errors.
class FastApBuilder {
public:
  // kept: how many dims stay (not points); a single kept HBM dim is one row of n elements.
  FastApBuilder(const TensorDecl& t, size_t kept, AccessPattern& ap)
      : t_(t), ap_(ap), hbm_(t.space == MemSpace::hbm) {
    ap = AccessPattern{};
    ap.space = t.space;
    ap.dtype = t.dtype;
    if (hbm_ && kept == 1) {
      ap.part_count = 1;
      ap.part_stride = 0;
      have_rows_ = true;
    }
  }
  // Dim k at [start, start + count) (a point: count 1, dropped), `step` apart, its elements
  // `elem_stride` apart in the tensor.
  bool place(size_t k, int64_t start, int64_t count, bool point, int64_t step,
             int64_t elem_stride) {
    if (!hbm_ && k == 0) { // the partition dim
      if (!point && step != 1) return false;
      ap_.part_start = static_cast<uint16_t>(t_.part_start + start);
      ap_.part_count = static_cast<uint16_t>(count);
      return true;
    }
    elem_off_ += start * elem_stride;
    if (point) return true;
    const int64_t stride = step * elem_stride;
    if (hbm_ && !have_rows_) {
      if (count > 0xffff) return false;
      ap_.part_count = static_cast<uint16_t>(count);
      ap_.part_stride = stride;
      have_rows_ = true;
      return true;
    }
    if (nfree_ == kMaxFreeDims || stride < INT32_MIN || stride > INT32_MAX || count > UINT32_MAX)
      return false; // fit_free_dims may merge them, or an error
    ap_.dims[nfree_++] = {static_cast<int32_t>(stride), static_cast<uint32_t>(count)};
    return true;
  }
  void finish() {
    if (nfree_ == 0) ap_.dims[nfree_++] = {1, 1};
    ap_.ndims = static_cast<uint8_t>(nfree_);
    ap_.offset =
        static_cast<uint64_t>(static_cast<int64_t>(t_.address) + elem_off_ * dtype_bytes(t_.dtype));
  }

private:
  const TensorDecl& t_;
  AccessPattern& ap_;
  const bool hbm_;
  bool have_rows_ = false;
  int64_t elem_off_ = 0;
  size_t nfree_ = 0;
};

} // namespace nisa::nasm
