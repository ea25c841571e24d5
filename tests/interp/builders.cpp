#include "builders.h"

#include <unistd.h>

#include <atomic>
#include <cstring>

namespace nisa::test {

int KB::hbm(const std::string& name, DType dt, std::vector<int64_t> shape, Role role) {
  TensorDecl t;
  t.name = name;
  t.space = MemSpace::hbm;
  t.dtype = dt;
  t.shape = std::move(shape);
  t.role = role;
  t.address = hbm_top;
  hbm_top += (interp::Machine::tensor_bytes(t) + 63) / 64 * 64;
  m.tensors.push_back(t);
  return static_cast<int>(m.tensors.size()) - 1;
}

uint16_t KB::sem(const std::string& name, uint32_t init) {
  m.sems.push_back({name, init});
  return static_cast<uint16_t>(m.sems.size() - 1);
}

Inst& KB::add(Engine e, Inst in) {
  int ei = static_cast<int>(e);
  in.engine = e;
  DebugLoc d;
  d.file = 0;
  d.line = uint32_t(100 * ei + m.streams[ei].size() + 1);
  d.col = 1;
  m.debug[ei].push_back(d);
  m.streams[ei].push_back(std::move(in));
  return m.streams[ei].back();
}

AccessPattern hbm_ap(const TensorDecl& t) {
  AccessPattern ap;
  ap.space = MemSpace::hbm;
  ap.dtype = t.dtype;
  int64_t rows = t.shape.empty() ? 1 : t.shape[0], cols = 1;
  for (size_t i = 1; i < t.shape.size(); ++i) cols *= t.shape[i];
  ap.part_count = uint16_t(rows);
  ap.part_stride = cols;
  ap.offset = t.address;
  ap.ndims = 1;
  ap.dims[0] = {1, uint32_t(cols)};
  return ap;
}

AccessPattern hbm_row(const TensorDecl& t, int64_t row) {
  AccessPattern ap = hbm_ap(t);
  ap.part_count = 1;
  ap.offset = t.address + uint64_t(row * ap.part_stride * dtype_bytes(t.dtype));
  return ap;
}

static AccessPattern chip_ap(MemSpace s, uint16_t p0, uint16_t parts, uint64_t off, DType dt,
                             uint32_t free) {
  AccessPattern ap;
  ap.space = s;
  ap.dtype = dt;
  ap.part_start = p0;
  ap.part_count = parts;
  ap.offset = off;
  ap.ndims = 1;
  ap.dims[0] = {1, free};
  return ap;
}
AccessPattern sbuf_ap(uint16_t p0, uint16_t parts, uint64_t off, DType dt, uint32_t free) {
  return chip_ap(MemSpace::sbuf, p0, parts, off, dt, free);
}
AccessPattern psum_ap(uint16_t p0, uint16_t parts, uint64_t off, DType dt, uint32_t free) {
  return chip_ap(MemSpace::psum, p0, parts, off, dt, free);
}

Inst dma(Engine e, int q, const AccessPattern& dst, const AccessPattern& src) {
  Inst in = make_inst(Opcode::dma, e);
  in.ops[0].i = q;
  in.ops[1].ap = dst;
  in.ops[2].ap = src;
  return in;
}
Inst nop(Engine e) { return make_inst(Opcode::nop, e); }
Inst with_wait(Inst in, uint16_t sem, uint32_t v, WaitCmp c) {
  in.waits.push_back({sem, c, v});
  return in;
}
Inst with_signal(Inst in, uint16_t sem, uint32_t d) {
  in.signals.push_back({sem, d});
  return in;
}

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-100.0f, 100.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}
std::vector<uint8_t> as_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}
std::vector<float> read_f32(const interp::Machine& m, const TensorDecl& t, int rank) {
  std::vector<float> v(interp::Machine::tensor_bytes(t) / 4);
  std::memcpy(v.data(), m.hbm_tensor(rank, t), v.size() * 4);
  return v;
}

// A .npy file written by hand (independent of format_npy): version 1.0 header.
std::string handmade(const std::string& descr, bool fortran, const std::string& shape,
                     const std::vector<uint8_t>& data) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
                     ", 'shape': " + shape + ", }";
  while ((10 + dict.size() + 1) % 64) dict += ' ';
  dict += '\n';
  std::string f = "\x93NUMPY";
  f += '\x01';
  f += '\x00';
  f += char(dict.size() & 0xff);
  f += char(dict.size() >> 8);
  return f + dict + std::string(data.begin(), data.end());
}

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = uint8_t(rng());
  return v;
}

std::vector<uint8_t> hbm_bytes(const interp::Machine& m, const TensorDecl& t, int rank) {
  const uint8_t* p = m.hbm_tensor(rank, t);
  return {p, p + interp::Machine::tensor_bytes(t)};
}

TmpDir::TmpDir() {
  static std::atomic<int> next{0};
  p = std::filesystem::temp_directory_path() /
      ("nisa_test_" + std::to_string(::getpid()) + "_" + std::to_string(next++));
  std::filesystem::create_directories(p);
}
TmpDir::~TmpDir() { std::filesystem::remove_all(p); }

} // namespace nisa::test
