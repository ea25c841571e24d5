// Building Modules by hand for the interpreter tests (no assembler involved).
#pragma once
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "interp/core/machine.h"
#include "interp/sched/scheduler.h"
#include "isa/module.h"

namespace nisa::test {

struct KB { // kernel builder
  Module m;
  explicit KB(Target t = Target::trn2) {
    m.kernel = "k";
    m.target = t;
    m.files = {"k.nasm"};
  }
  uint64_t hbm_top = 0;
  // An HBM tensor [rows, cols] (row-major), returns its index.
  int hbm(const std::string& name, DType dt, std::vector<int64_t> shape, Role role = Role::scratch);
  uint16_t sem(const std::string& name, uint32_t init = 0);
  // Appends to a stream with a debug line (line = 100 * engine + index + 1).
  Inst& add(Engine e, Inst in);
};

// Whole HBM tensor as [shape0 rows, rest as one free dim].
AccessPattern hbm_ap(const TensorDecl& t);
// Row `row` of an HBM [R, C] tensor.
AccessPattern hbm_row(const TensorDecl& t, int64_t row);
AccessPattern sbuf_ap(uint16_t p0, uint16_t parts, uint64_t off, DType dt, uint32_t free);
AccessPattern psum_ap(uint16_t p0, uint16_t parts, uint64_t off, DType dt, uint32_t free);

Inst dma(Engine e, int q, const AccessPattern& dst, const AccessPattern& src);
Inst nop(Engine e);
Inst with_wait(Inst in, uint16_t sem, uint32_t v, WaitCmp c = WaitCmp::ge);
Inst with_signal(Inst in, uint16_t sem, uint32_t d = 1);

std::vector<float> random_floats(size_t n, uint32_t seed);
std::vector<uint8_t> random_bytes(size_t n, uint32_t seed);
// The bytes of an HBM tensor of one rank.
std::vector<uint8_t> hbm_bytes(const interp::Machine& m, const TensorDecl& t, int rank = 0);

// A fresh temporary directory (unique per process and object), removed with its files.
struct TmpDir {
  std::filesystem::path p;
  TmpDir();
  ~TmpDir();
  TmpDir(const TmpDir&) = delete;
  TmpDir& operator=(const TmpDir&) = delete;
  std::string operator/(const std::string& f) const { return (p / f).string(); }
};
std::vector<uint8_t> as_bytes(const std::vector<float>& v);
std::vector<float> read_f32(const interp::Machine& m, const TensorDecl& t, int rank = 0);
// A .npy file written by hand (independent of format_npy): version 1.0 header.
std::string handmade(const std::string& descr, bool fortran, const std::string& shape,
                     const std::vector<uint8_t>& data);

} // namespace nisa::test
