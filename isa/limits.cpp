#include "isa/limits.h"

#include <fmt/format.h>

#include "isa/quote.h"

namespace nisa {
namespace {

std::optional<uint64_t> product(const TensorDecl& t, size_t first) {
  uint64_t n = static_cast<uint64_t>(dtype_bytes(t.dtype));
  for (size_t k = first; k < t.shape.size(); ++k) {
    if (t.shape[k] < 1) return std::nullopt;
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(t.shape[k]), &n)) return std::nullopt;
  }
  return n;
}

} // namespace

std::optional<uint64_t> checked_tensor_bytes(const TensorDecl& t) { return product(t, 0); }
std::optional<uint64_t> checked_row_bytes(const TensorDecl& t) { return product(t, 1); }

std::optional<std::string> tensor_extent_error(const TensorDecl& t) {
  const std::string name = elide(t.name);
  const auto bytes = t.space == MemSpace::hbm ? checked_tensor_bytes(t) : checked_row_bytes(t);
  if (!bytes)
    return fmt::format("tensor '{}': its size in bytes overflows 64 bits (or a dimension is < 1)",
                       name);
  if (t.space == MemSpace::hbm) {
    if (t.address >= kMaxHbmExtent || *bytes > kMaxHbmExtent - t.address)
      return fmt::format("hbm tensor '{}' of {} bytes at address 0x{:x} ends past the {} TiB "
                         "address space",
                         name, *bytes, t.address, kMaxHbmExtent >> 40);
    return std::nullopt;
  }
  if (t.shape.empty() || t.shape[0] < 1 || t.shape[0] > int64_t{kNumPartitions} - t.part_start)
    return fmt::format("tensor '{}' spans partitions beyond {}", name, kNumPartitions);
  if (t.address >= kMaxOnChipExtent || *bytes > kMaxOnChipExtent - t.address)
    return fmt::format("tensor '{}' of {} bytes per partition at offset 0x{:x} ends past any "
                       "partition",
                       name, *bytes, t.address);
  return std::nullopt;
}

} // namespace nisa
