// Slices and raw memory: parsing `name[a:b, c]` and `sbuf:P:OFF`, the bytes of a slice on a
// core, the byte extents a watchpoint covers, and raw reads.
#include <sstream>

#include <fmt/format.h>

#include "interp/debug/internal.h"

namespace nisa::interp::debug {

uint64_t Slice::elems() const {
  uint64_t n = 1;
  for (auto [a, b] : dims) n *= uint64_t(b - a);
  return n;
}

Slice parse_slice(const Module& m, const std::string& text) {
  std::string t = trim(text);
  size_t br = t.find('[');
  std::string name = trim(t.substr(0, br));
  Slice s;
  for (const TensorDecl& d : m.tensors)
    if (d.name == name) s.tensor = &d;
  if (!s.tensor) throw Error(fmt::format("no tensor '{}' (info tensors lists them)", name));
  const auto& shape = s.tensor->shape;
  for (int64_t n : shape) s.dims.emplace_back(0, n);
  if (br == std::string::npos) return s;
  if (t.back() != ']') throw Error(fmt::format("'{}': expected ']' at the end", t));
  std::string body = t.substr(br + 1, t.size() - br - 2);
  std::vector<std::string> items;
  std::stringstream ss(body);
  for (std::string it; std::getline(ss, it, ',');) items.push_back(trim(it));
  if (items.size() > shape.size())
    throw Error(
        fmt::format("'{}': {} indices for a tensor of rank {}", t, items.size(), shape.size()));
  for (size_t k = 0; k < items.size(); ++k) {
    const std::string& it = items[k];
    size_t colon = it.find(':');
    int64_t lo, hi;
    if (colon == std::string::npos) {
      lo = to_int(it, "slice index", INT64_MIN, INT64_MAX - 1);
      hi = lo + 1;
    } else {
      std::string a = trim(it.substr(0, colon)), b = trim(it.substr(colon + 1));
      lo = a.empty() ? 0 : to_int(a, "slice start");
      hi = b.empty() ? shape[k] : to_int(b, "slice end");
    }
    if (lo < 0 || hi > shape[k] || lo >= hi)
      throw Error(fmt::format("'{}': index {} range {}:{} is outside 0:{} or empty", t, k, lo, hi,
                              shape[k]));
    s.dims[k] = {lo, hi};
  }
  return s;
}

const uint8_t* SliceValues::at(size_t k) const {
  return bytes.data() + k * size_t(dtype_bytes(slice.tensor->dtype));
}

double SliceValues::number(size_t k) const {
  DType t = slice.tensor->dtype;
  return info(t).is_float ? double(load_as_f32(t, at(k))) : double(load_as_int(t, at(k)));
}

std::string SliceValues::text(size_t k, char fmt) const {
  DType t = slice.tensor->dtype;
  return format_value(t, at(k), fmt ? fmt : info(t).is_float ? 'f' : 'd');
}

std::vector<double> SliceValues::numbers() const {
  std::vector<double> v;
  for (size_t k = 0; k < size(); ++k) v.push_back(number(k));
  return v;
}

std::string MemRef::text() const {
  return space == MemSpace::hbm ? fmt::format("hbm:{:#x}", offset)
                                : fmt::format("{}:{}:{:#x}", name_of(space), partition, offset);
}

MemRef parse_memref(const std::string& text) {
  std::string arg = trim(text);
  size_t c1 = arg.find(':');
  if (c1 == std::string::npos)
    throw Error("x: expected SPACE:ADDR (sbuf:P:OFF, psum:P:OFF, hbm:ADDR)");
  std::string space = arg.substr(0, c1), rest = arg.substr(c1 + 1);
  MemRef r;
  if (space == "hbm") {
    r.space = MemSpace::hbm;
    r.offset = uint64_t(to_int(rest, "x: address", 0));
  } else if (space == "sbuf" || space == "psum") {
    r.space = space == "sbuf" ? MemSpace::sbuf : MemSpace::psum;
    size_t c2 = rest.find(':');
    if (c2 == std::string::npos) throw Error("x: expected sbuf:PARTITION:OFFSET");
    r.partition = to_int(rest.substr(0, c2), "x: partition");
    r.offset = uint64_t(to_int(rest.substr(c2 + 1), "x: offset", 0));
  } else {
    throw Error(fmt::format("x: unknown space '{}' (sbuf, psum, hbm)", space));
  }
  return r;
}

std::vector<uint8_t> Model::read_memory(const MemRef& ref, uint64_t n) const {
  return read_bytes(*m_, cur_core_, ref, n);
}

std::vector<uint8_t> read_bytes(const Machine& m, int core, const MemRef& ref, uint64_t n) {
  const uint8_t* base = nullptr;
  uint64_t limit = 0;
  if (ref.space == MemSpace::hbm) {
    const RankSlot& r = m.ranks[size_t(m.cores[size_t(core)].rank)];
    if (ref.offset >= r.hbm_bytes)
      throw Error(fmt::format("x: hbm address {:#x} is outside the {} bytes of HBM", ref.offset,
                              r.hbm_bytes));
    base = r.hbm.data() + ref.offset;
    limit = r.hbm_bytes - ref.offset;
  } else {
    const CoreState& st = m.cores[size_t(core)].st;
    bool sbuf = ref.space == MemSpace::sbuf;
    uint64_t pb = sbuf ? st.sbuf_part_bytes : st.psum_part_bytes;
    if (ref.partition < 0 || ref.partition >= kNumPartitions || ref.offset >= pb)
      throw Error(fmt::format("x: {}:{}:{:#x} is outside 128 partitions of {} bytes",
                              name_of(ref.space), ref.partition, ref.offset, pb));
    base = (sbuf ? st.sbuf : st.psum) +
           uint64_t(ref.partition) * (sbuf ? st.sbuf_stride : st.psum_stride) + ref.offset;
    limit = pb - ref.offset;
  }
  return std::vector<uint8_t>(base, base + std::min(n, limit));
}

std::vector<uint8_t> read_element(const Machine& m, const Slice& s, int core, uint64_t k) {
  if (core < 0 || core >= m.num_cores())
    throw RangeError(fmt::format("core {} is outside 0..{}", core, m.num_cores() - 1));
  if (k >= s.elems())
    throw RangeError(fmt::format("element {} is outside the {} of the slice", k, s.elems()));
  std::vector<int64_t> idx(s.dims.size());
  for (size_t d = s.dims.size(); d-- > 0;) {
    const uint64_t n = uint64_t(s.dims[d].second - s.dims[d].first);
    idx[d] = s.dims[d].first + int64_t(k % n);
    k /= n;
  }
  const uint8_t* p = elem_ptr(m, *s.tensor, idx, core);
  return std::vector<uint8_t>(p, p + dtype_bytes(s.tensor->dtype));
}

uint8_t* elem_ptr(const Machine& m, const TensorDecl& t, const std::vector<int64_t>& idx,
                  int core) {
  uint64_t w = uint64_t(dtype_bytes(t.dtype));
  if (t.space == MemSpace::hbm) {
    uint64_t flat = 0;
    for (size_t k = 0; k < idx.size(); ++k) flat = flat * uint64_t(t.shape[k]) + uint64_t(idx[k]);
    return m.hbm_tensor(m.cores[size_t(core)].rank, t) + flat * w;
  }
  uint64_t flat = 0;
  for (size_t k = 1; k < idx.size(); ++k) flat = flat * uint64_t(t.shape[k]) + uint64_t(idx[k]);
  const CoreState& st = m.cores[size_t(core)].st;
  bool sbuf = t.space == MemSpace::sbuf;
  uint64_t stride = sbuf ? st.sbuf_stride : st.psum_stride; // host layout
  return (sbuf ? st.sbuf : st.psum) + (uint64_t(t.part_start) + uint64_t(idx[0])) * stride +
         t.address + flat * w;
}

std::vector<uint8_t> read_slice(const Machine& m, const Slice& s, int core) {
  std::vector<uint8_t> out;
  int w = dtype_bytes(s.tensor->dtype);
  out.reserve(s.elems() * uint64_t(w));
  for_each_index(s, [&](const std::vector<int64_t>& idx) {
    const uint8_t* p = elem_ptr(m, *s.tensor, idx, core);
    out.insert(out.end(), p, p + w);
  });
  return out;
}

std::vector<Region> slice_regions(const Machine& m, const Slice& s, int core) {
  const TensorDecl& t = *s.tensor;
  uint64_t w = uint64_t(dtype_bytes(t.dtype));
  std::vector<Region> out;
  std::vector<int64_t> first, last;
  for (auto [a, b] : s.dims) first.push_back(a), last.push_back(b - 1);
  if (t.space != MemSpace::hbm) {
    const CoreState& st = m.cores[size_t(core)].st;
    bool sbuf = t.space == MemSpace::sbuf;
    uint64_t pb = sbuf ? st.sbuf_stride : st.psum_stride; // host pointer -> modelled byte
    const uint8_t* base = sbuf ? st.sbuf : st.psum;
    Region r;
    r.kind = sbuf ? MemKind::sbuf : MemKind::psum;
    r.unit = uint16_t(core);
    r.p0 = uint32_t(t.part_start + s.dims[0].first);
    r.p1 = uint32_t(t.part_start + s.dims[0].second);
    first[0] = last[0] = s.dims[0].first;
    r.b0 = uint64_t(elem_ptr(m, t, first, core) - base) % pb;
    r.b1 = uint64_t(elem_ptr(m, t, last, core) - base) % pb + w;
    out.push_back(r);
    return out;
  }
  // hbm: one byte range per run of the last dimension, merged when adjacent.
  Slice rows = s;
  rows.dims.back() = {s.dims.back().first, s.dims.back().first + 1};
  const uint8_t* hbm = m.ranks[size_t(m.cores[size_t(core)].rank)].hbm.data();
  uint64_t run = uint64_t(s.dims.back().second - s.dims.back().first) * w;
  for_each_index(rows, [&](const std::vector<int64_t>& idx) {
    uint64_t b0 = uint64_t(elem_ptr(m, t, idx, core) - hbm);
    if (!out.empty() && out.back().b1 == b0) {
      out.back().b1 += run;
      return;
    }
    Region r;
    r.kind = MemKind::hbm;
    r.unit = uint16_t(m.cores[size_t(core)].rank);
    r.p0 = 0, r.p1 = 1, r.b0 = b0, r.b1 = b0 + run;
    out.push_back(r);
  });
  return out;
}

} // namespace nisa::interp::debug
