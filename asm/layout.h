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

} // namespace nisa::nasm
