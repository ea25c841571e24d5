// Byte regions of the machine's memories: what an access touches, for the race checker, the
// trace, watchpoints and the static checker.
#pragma once
#include <cstdint>
#include <string>

#include "isa/module.h"

namespace nisa::interp {

struct Machine;

enum class MemKind : uint8_t { sbuf, psum, hbm };

// A rectangle of bytes: partitions [p0, p1) x byte offsets [b0, b1) within each partition
// (sbuf, psum of core `unit`), or p0 = 0, p1 = 1 and byte addresses [b0, b1) (hbm of rank `unit`).
struct Region {
  MemKind kind = MemKind::sbuf;
  uint16_t unit = 0;
  uint32_t p0 = 0, p1 = 0;
  uint64_t b0 = 0, b1 = 0;
  bool write = false;
  bool overlaps(const Region& o) const {
    return kind == o.kind && unit == o.unit && p0 < o.p1 && o.p0 < p1 && b0 < o.b1 && o.b0 < b1;
  }
  bool covers(const Region& o) const {
    return kind == o.kind && unit == o.unit && p0 <= o.p0 && o.p1 <= p1 && b0 <= o.b0 && o.b1 <= b1;
  }
  Region intersect(const Region& o) const;
};

// "sbuf core 0 partitions 0..127 bytes [0x0, 0x2000)" plus the tensor it falls in, if any.
std::string region_text(const Machine& m, const Region& r);
// " (tensor NAME)" for every declared tensor of `mod` that the region overlaps (race reports
// and nisa check name the tensors behind a byte range).
std::string tensors_in(const Module& mod, const Region& r);

} // namespace nisa::interp
