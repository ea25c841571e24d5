#include "interp/core/region.h"

#include <algorithm>

#include <fmt/format.h>

#include "interp/core/machine.h"

namespace nisa::interp {

Region Region::intersect(const Region& o) const {
  Region r = *this;
  r.p0 = std::max(p0, o.p0), r.p1 = std::min(p1, o.p1);
  r.b0 = std::max(b0, o.b0), r.b1 = std::min(b1, o.b1);
  return r;
}

std::string region_text(const Machine& m, const Region& r) {
  std::string s;
  if (r.kind == MemKind::hbm) {
    s = fmt::format("hbm{} bytes [{:#x}, {:#x})",
                    m.opt.ranks > 1 ? fmt::format(" rank {}", r.unit) : "", r.b0, r.b1);
  } else {
    std::string who = m.num_cores() > 1 ? fmt::format(" core {}", r.unit) : "";
    s = fmt::format("{}{} partitions {}..{} bytes [{:#x}, {:#x})",
                    r.kind == MemKind::sbuf ? "sbuf" : "psum", who, r.p0, r.p1 - 1, r.b0, r.b1);
  }
  return s + tensors_in(*m.mod, r);
}

std::string tensors_in(const Module& mod, const Region& r) {
  std::string s;
  MemSpace want = r.kind == MemKind::hbm    ? MemSpace::hbm
                  : r.kind == MemKind::sbuf ? MemSpace::sbuf
                                            : MemSpace::psum;
  for (const TensorDecl& t : mod.tensors) {
    if (t.space != want) continue;
    uint64_t bytes = uint64_t(dtype_bytes(t.dtype));
    for (int64_t d : t.shape) bytes *= uint64_t(std::max<int64_t>(d, 0));
    if (want == MemSpace::hbm) {
      if (t.address < r.b1 && r.b0 < t.address + bytes) s += fmt::format(" (tensor {})", t.name);
    } else {
      uint64_t rows = t.shape.empty() ? 1 : uint64_t(t.shape[0]);
      uint64_t per = rows ? bytes / rows : 0;
      if (t.part_start < r.p1 && r.p0 < t.part_start + rows && t.address < r.b1 &&
          r.b0 < t.address + per)
        s += fmt::format(" (tensor {})", t.name);
    }
  }
  return s;
}

} // namespace nisa::interp
