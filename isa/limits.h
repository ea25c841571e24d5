// Checked extents of tensor declarations, shared by the assembler, the object reader and the
// machine: every size and end address is computed without overflow, and a declaration whose
// bytes or placement do not fit is an error naming the tensor.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "isa/module.h"

namespace nisa {

// HBM addresses of any declaration end below 2^48 (256 TiB; the largest chip has 144 GiB):
// sums and products of in-range values then stay far from 2^64. The machine's own limit on a
// rank's HBM (`--max-hbm`) is far lower.
inline constexpr uint64_t kMaxHbmExtent = uint64_t(1) << 48;
// On-chip tensors: per-partition ends below this (every target has far less; the machine
// checks its own target's size).
inline constexpr uint64_t kMaxOnChipExtent = uint64_t(1) << 24;

// Bytes of the whole tensor (all dims), or nullopt when the product overflows 64 bits or a
// dimension is not positive.
std::optional<uint64_t> checked_tensor_bytes(const TensorDecl& t);
// Bytes of one partition's row of an on-chip tensor (dims 1..), same rules.
std::optional<uint64_t> checked_row_bytes(const TensorDecl& t);

// Why the declaration cannot be placed (nullopt when it can): its size overflows, an HBM
// tensor ends past kMaxHbmExtent, an on-chip one past kMaxOnChipExtent or partition 128.
std::optional<std::string> tensor_extent_error(const TensorDecl& t);

} // namespace nisa
