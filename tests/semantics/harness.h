// A one-core test bench for instruction semantics: owns SBUF/PSUM/HBM, builds access
// patterns and instructions, reads and writes tiles as fp32 or integers.
#pragma once
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <random>
#include <string_view>
#include <utility>
#include <vector>

#include "interp/core/exec.h"
#include "interp/core/target.h"
#include "interp/engines/elementwise.h"
#include "interp/engines/engines.h"

namespace nisa::interp::test {

struct FreeMem {
  void operator()(uint8_t* p) const { std::free(p); }
};

class Bench {
public:
  explicit Bench(Target t = Target::trn2, uint64_t sbuf_part_bytes = 96 * 1024,
                 uint64_t hbm_bytes = 1 << 20) {
    // The host layout of `nisa run`: partitions host_stride() apart, more than their size.
    const uint64_t sbuf_stride = host_stride(sbuf_part_bytes), psum_stride = host_stride(16384);
    sbuf_.reset(static_cast<uint8_t*>(std::calloc(kNumPartitions, sbuf_stride)));
    psum_.reset(static_cast<uint8_t*>(std::calloc(kNumPartitions, psum_stride)));
    hbm_.reset(static_cast<uint8_t*>(std::calloc(1, hbm_bytes)));
    st.sbuf = sbuf_.get();
    st.sbuf_part_bytes = sbuf_part_bytes;
    st.sbuf_stride = sbuf_stride;
    st.psum = psum_.get();
    st.psum_part_bytes = 16384;
    st.psum_stride = psum_stride;
    st.psum_written.assign(kNumPartitions * psum_stride / 4, 0);
    cx.target = t;
    cx.state = &st;
    cx.hbm = hbm_.get();
    cx.hbm_bytes = hbm_bytes;
    cx.regs = st.regs[0];
  }

  CoreState st;
  ExecCtx cx;

  // [parts, free] contiguous tile (or a 2-D [a, b] free shape when b > 0).
  static AccessPattern tile(MemSpace sp, DType dt, uint16_t p0, uint16_t parts, uint64_t byte_off,
                            uint32_t free, uint32_t inner = 0) {
    AccessPattern ap;
    ap.space = sp;
    ap.dtype = dt;
    ap.part_start = p0;
    ap.part_count = parts;
    ap.offset = byte_off;
    if (inner) {
      ap.ndims = 2;
      ap.dims[0] = {static_cast<int32_t>(inner), free / inner};
      ap.dims[1] = {1, inner};
    } else {
      ap.ndims = 1;
      ap.dims[0] = {1, free};
    }
    return ap;
  }
  static AccessPattern sb(DType dt, uint16_t parts, uint32_t free, uint64_t off = 0,
                          uint16_t p0 = 0) {
    return tile(MemSpace::sbuf, dt, p0, parts, off, free);
  }
  static AccessPattern ps(DType dt, uint16_t parts, uint32_t free, uint64_t off = 0,
                          uint16_t p0 = 0) {
    return tile(MemSpace::psum, dt, p0, parts, off, free);
  }

  // Row-major values over (partition, flat free index).
  void put(const AccessPattern& ap, const std::vector<float>& vals) {
    const View v = cx.view(ap, Access::write);
    ASSERT_EQ(vals.size(), v.parts * v.free_elems);
    for (uint32_t p = 0; p < v.parts; ++p)
      for (uint64_t j = 0; j < v.free_elems; ++j)
        store_from_f32(v.dtype, v.at(p, j), vals[p * v.free_elems + j]);
  }
  void put_int(const AccessPattern& ap, const std::vector<int64_t>& vals) {
    const View v = cx.view(ap, Access::write);
    ASSERT_EQ(vals.size(), v.parts * v.free_elems);
    for (uint32_t p = 0; p < v.parts; ++p)
      for (uint64_t j = 0; j < v.free_elems; ++j)
        store_from_int(v.dtype, v.at(p, j), vals[p * v.free_elems + j]);
  }
  std::vector<float> get(const AccessPattern& ap) {
    const View v = cx.view(ap, Access::read);
    std::vector<float> out;
    for (uint32_t p = 0; p < v.parts; ++p)
      for (uint64_t j = 0; j < v.free_elems; ++j) out.push_back(load_as_f32(v.dtype, v.at(p, j)));
    return out;
  }
  std::vector<int64_t> get_int(const AccessPattern& ap) {
    const View v = cx.view(ap, Access::read);
    std::vector<int64_t> out;
    for (uint32_t p = 0; p < v.parts; ++p)
      for (uint64_t j = 0; j < v.free_elems; ++j) out.push_back(load_as_int(v.dtype, v.at(p, j)));
    return out;
  }

  void run(const Inst& in) {
    cx.engine = in.engine;
    cx.regs = st.regs[static_cast<int>(in.engine)];
    semantics_of(in.op)(cx, in);
  }

private:
  static SemFn semantics_of(Opcode op);
  std::unique_ptr<uint8_t[], FreeMem> sbuf_, psum_, hbm_;
};

// Instruction builders.
inline Inst make(Opcode op, Engine e) { return make_inst(op, e); }
inline void set_ap(Inst& in, std::string_view name, const AccessPattern& ap) {
  Operand& o = in.ops[ew::operand_index(in, name)];
  o.present = true;
  o.is_ap = true;
  o.ap = ap;
}
inline void set_f(Inst& in, std::string_view name, float f) {
  Operand& o = in.ops[ew::operand_index(in, name)];
  o.is_ap = false;
  o.f = f;
}
inline void set_i(Inst& in, std::string_view name, int64_t i) {
  in.ops[ew::operand_index(in, name)].i = i;
}
template <class E> void set_e(Inst& in, std::string_view name, E e) {
  set_i(in, name, static_cast<int64_t>(e));
}
// One tensor_reduce of src into dst over its innermost `axes` free axes (1: the whole free
// axis of a [P, n] tile into [P, 1]), the result negated when `negate`.
inline Inst tensor_reduce(const AccessPattern& dst, const AccessPattern& src, AluOp op, bool negate,
                          int64_t axes = 1) {
  Inst in = make(Opcode::tensor_reduce, Engine::dve);
  set_ap(in, "dst", dst);
  set_ap(in, "src", src);
  set_e(in, "op", op);
  set_i(in, "axes", axes);
  set_i(in, "negate", negate);
  return in;
}
// One copy_predicated: dst = src where pred's element is non-zero (zero when `reverse`).
inline Inst copy_predicated(const AccessPattern& dst, const AccessPattern& src,
                            const AccessPattern& pred, bool reverse) {
  Inst in = make(Opcode::copy_predicated, Engine::dve);
  set_ap(in, "dst", dst);
  set_ap(in, "src", src);
  set_ap(in, "pred", pred);
  set_i(in, "reverse", reverse);
  return in;
}

// Seeded random values (never constant).
inline std::vector<float> randoms(size_t n, uint32_t seed, float lo = -4.0f, float hi = 4.0f) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}
inline std::vector<int64_t> random_ints(size_t n, uint32_t seed, int64_t lo, int64_t hi) {
  std::mt19937_64 g(seed);
  std::uniform_int_distribution<int64_t> d(lo, hi);
  std::vector<int64_t> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

// Input range on which each activation function is sampled (inside the ranges of
// docs/machine.md "Activation functions" where the hardware's polynomials hold).
inline std::pair<float, float> act_range(ActFunc f) {
  switch (f) {
  case ActFunc::log:
  case ActFunc::rsqrt:
  case ActFunc::sqrt: return {0.01f, 50.0f};
  case ActFunc::reciprocal: return {0.05f, 20.0f};
  case ActFunc::sin:
  case ActFunc::arctan: return {-1.5f, 1.5f};
  case ActFunc::exp: return {-20.0f, 20.0f};
  default: return {-8.0f, 8.0f};
  }
}

// Expect a Fault whose message contains `part`.
#define EXPECT_FAULT(stmt, part)                                                                   \
  do {                                                                                             \
    try {                                                                                          \
      stmt;                                                                                        \
      ADD_FAILURE() << "expected a fault containing: " << (part);                                  \
    } catch (const ::nisa::interp::Fault& f) {                                                     \
      EXPECT_NE(std::string(f.what()).find(part), std::string::npos) << "message: " << f.what();   \
    }                                                                                              \
  } while (0)

} // namespace nisa::interp::test
