// Shared helpers of the compute-engine semantics (pe/act/dve/pool.cpp):
//  - operand lookup by name, views with engine rules (spaces, start partition) and messages
//    that name the operand;
//  - typed row loads/stores (one dtype switch per row, tight loops inside);
//  - the fp32 ALU (templated per operator so loops hold no switch) and the integer ALU;
//  - the pure per-row algorithms (max8, find_index8, match_replace8, scan, activation
//    functions) that tests call directly.
//
// Aliasing rule (all elementwise instructions): an instruction behaves as if it read all its
// sources before writing dst. Same-layout in-place operands need no copy (element j is read
// before it is written); any other overlap makes the sources snapshot first.
#pragma once
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string_view>
#include <type_traits>
#include <vector>

#include "interp/core/exec.h"
#include "interp/simd/simd.h"
#include "isa/legality.h"
#include "isa/op_index.h"

namespace nisa::interp::ew {

// ---- operands ----------------------------------------------------------------------------------
// Operands by their index in the table (isa/op_index.h: nisa::op::<ident>::<operand>).
// operand_index looks a name up (tests build instructions by name).
int operand_index(const Inst& in, std::string_view name);
// Operand k of the record; a Fault when the record is short of the table (a malformed record).
const Operand& operand(const Inst& in, int k);
template <class E> E enum_operand(const Inst& in, int k) {
  return static_cast<E>(operand(in, k).i);
}
inline bool flag(const Inst& in, int k) { return operand(in, k).i != 0; }
inline bool present(const Inst& in, int k) { return operand(in, k).present; }

// "matmul operand `moving`: " prefix for faults.
std::string where(const Inst& in, int k);
[[noreturn]] void fault(const Inst& in, int k, const std::string& msg);
[[noreturn]] void fault(const Inst& in, const std::string& msg);

// The view of an AP operand, checked against the instruction's engine: memory spaces the
// table allows, POOL never touching PSUM, and (compute engines) the start-partition rule
// of docs/machine.md "Start partitions". Faults name the operand.
View operand_view(ExecCtx& cx, const Inst& in, int k, Access how);
// Every static rule of isa/legality.h (generation, operands, shapes) for the executing target:
// a Fault naming the instruction (and the operand) when one is broken.
void require_legal(const ExecCtx& cx, const Inst& in);
// A non-matmul write into PSUM: the next auto-mode matmul there overwrites (see pe.cpp).
void note_psum_write(ExecCtx& cx, const AccessPattern& ap);
// Same base, element size and pattern: element j of dst is element j of src.
bool same_layout(const View& a, const View& b);
// Whether any byte of dst may be a byte of src (conservative where partitions are unknown).
bool views_overlap(const ExecCtx& cx, const View& dst, const View& src);
// True when writing dst could change what is later read from src (see aliasing rule above).
bool needs_snapshot(const ExecCtx& cx, const View& dst, const View& src);

// ---- scalar operands (fp32 immediate or per-partition [P,1] tile) ------------------------------
struct ScalarOp {
  bool is_ap = false;
  float imm = 0.0f;
  std::vector<float> f; // per partition
  std::vector<int64_t> i;
  float at(uint32_t p) const { return is_ap ? f[p] : imm; }
  int64_t at_int(uint32_t p) const { return is_ap ? i[p] : static_cast<int64_t>(imm); }
};
ScalarOp scalar_operand(ExecCtx& cx, const Inst& in, int k, uint32_t parts);

// ---- dtype traits and dispatch ---------------------------------------------------------------
template <class S> inline S ld(const uint8_t* p) {
  S v;
  std::memcpy(&v, p, sizeof(S));
  return v;
}
template <class S> inline void st(uint8_t* p, S v) { std::memcpy(p, &v, sizeof(S)); }

template <DType T> struct Traits;
#define NISA_FLOAT_TRAITS(T, S_, TO, FROM)                                                         \
  template <> struct Traits<DType::T> {                                                            \
    using S = S_;                                                                                  \
    static float to(S v) { return TO(v); }                                                         \
    static S from(float f) { return FROM(f); }                                                     \
  };
inline float id_f(float f) { return f; }
NISA_FLOAT_TRAITS(fp32, float, id_f, id_f)
NISA_FLOAT_TRAITS(bf16, uint16_t, bf16_to_f32, f32_to_bf16)
NISA_FLOAT_TRAITS(fp16, uint16_t, fp16_to_f32, f32_to_fp16)
NISA_FLOAT_TRAITS(fp8e4m3, uint8_t, fp8e4m3_to_f32, f32_to_fp8e4m3)
NISA_FLOAT_TRAITS(fp8e5m2, uint8_t, fp8e5m2_to_f32, f32_to_fp8e5m2)
#undef NISA_FLOAT_TRAITS
#define NISA_INT_TRAITS(T, S_)                                                                     \
  template <> struct Traits<DType::T> {                                                            \
    using S = S_;                                                                                  \
    static float to(S v) { return static_cast<float>(v); }                                         \
    static S from(float f) {                                                                       \
      return static_cast<S>(                                                                       \
          f32_to_int_rne_sat(f, std::numeric_limits<S>::min(), std::numeric_limits<S>::max()));    \
    }                                                                                              \
  };
NISA_INT_TRAITS(int8, int8_t)
NISA_INT_TRAITS(uint8, uint8_t)
NISA_INT_TRAITS(int16, int16_t)
NISA_INT_TRAITS(uint16, uint16_t)
NISA_INT_TRAITS(int32, int32_t)
NISA_INT_TRAITS(uint32, uint32_t)
#undef NISA_INT_TRAITS

template <DType T> using DT = std::integral_constant<DType, T>;
template <class F> decltype(auto) with_dtype(DType t, F&& f) {
  switch (t) {
  case DType::fp32: return f(DT<DType::fp32>{});
  case DType::bf16: return f(DT<DType::bf16>{});
  case DType::fp16: return f(DT<DType::fp16>{});
  case DType::fp8e4m3: return f(DT<DType::fp8e4m3>{});
  case DType::fp8e5m2: return f(DT<DType::fp8e5m2>{});
  case DType::int8: return f(DT<DType::int8>{});
  case DType::uint8: return f(DT<DType::uint8>{});
  case DType::int16: return f(DT<DType::int16>{});
  case DType::uint16: return f(DT<DType::uint16>{});
  case DType::int32: return f(DT<DType::int32>{});
  case DType::uint32: return f(DT<DType::uint32>{});
  }
  return f(DT<DType::fp32>{});
}

// Calls f(ptr) for every element of row p, row-major over the view's dims.
template <class F> inline void for_each_elem(const View& v, uint32_t p, F&& f) {
  uint8_t* r = v.row(p);
  for (uint32_t i0 = 0; i0 < v.count[0]; ++i0)
    for (uint32_t i1 = 0; i1 < v.count[1]; ++i1)
      for (uint32_t i2 = 0; i2 < v.count[2]; ++i2) {
        uint8_t* q = r + i0 * v.stride[0] + i1 * v.stride[1] + i2 * v.stride[2];
        const int64_t s3 = v.stride[3];
        for (uint32_t i3 = 0; i3 < v.count[3]; ++i3, q += s3) f(q);
      }
}

// ---- row loads and stores ----------------------------------------------------------------------
template <DType T> void load_row_t(const View& v, uint32_t p, float* out) {
  using Tr = Traits<T>;
  using S = typename Tr::S;
  if (v.contiguous()) {
    const uint8_t* r = v.row(p);
    const uint64_t n = v.free_elems; // a local: stores cannot change the trip count
    for (uint64_t j = 0; j < n; ++j) out[j] = Tr::to(ld<S>(r + j * sizeof(S)));
    return;
  }
  for_each_elem(v, p, [&](const uint8_t* q) { *out++ = Tr::to(ld<S>(q)); });
}
template <DType T> void store_row_t(const View& v, uint32_t p, const float* in) {
  using Tr = Traits<T>;
  using S = typename Tr::S;
  if (v.contiguous()) {
    uint8_t* r = v.row(p);
    const uint64_t n = v.free_elems;
    for (uint64_t j = 0; j < n; ++j) st<S>(r + j * sizeof(S), Tr::from(in[j]));
    return;
  }
  for_each_elem(v, p, [&](uint8_t* q) { st<S>(q, Tr::from(*in++)); });
}
// Contiguous bf16 rows convert in the vector kernels (simd.h convert_row; the same bits).
inline void load_row(const View& v, uint32_t p, float* out) {
  if (v.dtype == DType::bf16 && v.contiguous()) {
    simd::convert_row(simd::level(), DType::bf16, v.row(p), DType::fp32,
                      reinterpret_cast<uint8_t*>(out), v.free_elems);
    return;
  }
  with_dtype(v.dtype, [&](auto t) { load_row_t<decltype(t)::value>(v, p, out); });
}
inline void store_row(const View& v, uint32_t p, const float* in) {
  if (v.dtype == DType::bf16 && v.contiguous()) {
    simd::convert_row(simd::level(), DType::fp32, reinterpret_cast<const uint8_t*>(in), DType::bf16,
                      v.row(p), v.free_elems);
    return;
  }
  with_dtype(v.dtype, [&](auto t) { store_row_t<decltype(t)::value>(v, p, in); });
}
// Raw integer view (sign-extended for signed dtypes) and truncating stores.
void load_row_int(const View& v, uint32_t p, int64_t* out);
void store_row_int(const View& v, uint32_t p, const int64_t* in);
// All rows' elements packed (row-major, dtype-sized), and the inverse for one row.
std::vector<uint8_t> gather_bits(const View& v);
void scatter_bits_row(const View& v, uint32_t p, const uint8_t* in);
// Bit-exact copy of row p (same dtype size).
void copy_row_bits(const View& dst, uint32_t pd, const View& src, uint32_t ps);

inline bool fp32_direct(const View& v) {
  return v.dtype == DType::fp32 && v.contiguous() && !v.rows &&
         reinterpret_cast<uintptr_t>(v.base) % alignof(float) == 0 && v.pstride % 4 == 0;
}

// A source row as fp32: memory itself for aligned contiguous fp32, else a converted copy.
// With snapshot=true every row is converted up front (used when dst may alias the source).
class F32Rows {
public:
  F32Rows(const View& v, bool snapshot = false);
  const float* get(uint32_t p);

private:
  const View& v_;
  bool direct_, snap_;
  std::vector<float> buf_;
};

// A destination row as fp32: memory itself for aligned contiguous fp32, else a buffer that
// commit() rounds into the destination dtype.
class F32Out {
public:
  explicit F32Out(const View& v) : v_(v), direct_(fp32_direct(v)) {
    if (!direct_) buf_.resize(v.free_elems);
  }
  float* get(uint32_t p) { return direct_ ? reinterpret_cast<float*>(v_.row(p)) : buf_.data(); }
  void commit(uint32_t p) {
    if (!direct_) store_row(v_, p, buf_.data());
  }

private:
  const View& v_;
  bool direct_;
  std::vector<float> buf_;
};

// ---- ALU -------------------------------------------------------------------------------------
// is_bitvec, is_unary, is_compare: isa/legality.h.

// NaN-propagating max/min (poisoned memory stays visible).
inline float fmax_nan(float a, float b) { return (a != a || b != b) ? a + b : (a > b ? a : b); }
inline float fmin_nan(float a, float b) { return (a != a || b != b) ? a + b : (a < b ? a : b); }

// fp32 ALU; unary ops use a only. bypass passes a through.
template <AluOp O> inline float alu(float a, float b) {
  if constexpr (O == AluOp::add)
    return a + b;
  else if constexpr (O == AluOp::subtract)
    return a - b;
  else if constexpr (O == AluOp::multiply)
    return a * b;
  else if constexpr (O == AluOp::max)
    return fmax_nan(a, b);
  else if constexpr (O == AluOp::min)
    return fmin_nan(a, b);
  else if constexpr (O == AluOp::equal)
    return a == b ? 1.0f : 0.0f;
  else if constexpr (O == AluOp::not_equal)
    return a != b ? 1.0f : 0.0f;
  else if constexpr (O == AluOp::greater_equal)
    return a >= b ? 1.0f : 0.0f;
  else if constexpr (O == AluOp::greater)
    return a > b ? 1.0f : 0.0f;
  else if constexpr (O == AluOp::less_equal)
    return a <= b ? 1.0f : 0.0f;
  else if constexpr (O == AluOp::less)
    return a < b ? 1.0f : 0.0f;
  else if constexpr (O == AluOp::logical_and)
    return (a != 0.0f && b != 0.0f) ? 1.0f : 0.0f;
  else if constexpr (O == AluOp::logical_or)
    return (a != 0.0f || b != 0.0f) ? 1.0f : 0.0f;
  else if constexpr (O == AluOp::logical_xor)
    return ((a != 0.0f) != (b != 0.0f)) ? 1.0f : 0.0f;
  else if constexpr (O == AluOp::power)
    return std::pow(a, b);
  else if constexpr (O == AluOp::abs_max)
    return std::fabs(a) > std::fabs(b) ? a : b;
  else if constexpr (O == AluOp::abs_min)
    return std::fabs(a) < std::fabs(b) ? a : b;
  else if constexpr (O == AluOp::abs)
    return std::fabs(a);
  else if constexpr (O == AluOp::square)
    return a * a;
  else if constexpr (O == AluOp::relu)
    return a > 0.0f ? a : (a != a ? a : 0.0f);
  else if constexpr (O == AluOp::rsqrt)
    return 1.0f / std::sqrt(a);
  else if constexpr (O == AluOp::reciprocal)
    return 1.0f / a;
  else if constexpr (O == AluOp::average)
    return (a + b) * 0.5f;
  else
    return a; // bypass
}

template <AluOp O> using OpC = std::integral_constant<AluOp, O>;
// Calls f(OpC<op>) for the fp32 ALU operators (everything but the bitvec ones).
template <class F> decltype(auto) with_alu(AluOp op, F&& f) {
  switch (op) {
#define NISA_ALU_CASE(o)                                                                           \
  case AluOp::o: return f(OpC<AluOp::o>{});
    NISA_ALU_CASE(bypass)
    NISA_ALU_CASE(add)
    NISA_ALU_CASE(subtract)
    NISA_ALU_CASE(multiply)
    NISA_ALU_CASE(max)
    NISA_ALU_CASE(min)
    NISA_ALU_CASE(equal)
    NISA_ALU_CASE(not_equal)
    NISA_ALU_CASE(greater_equal)
    NISA_ALU_CASE(greater)
    NISA_ALU_CASE(less_equal)
    NISA_ALU_CASE(less)
    NISA_ALU_CASE(logical_and)
    NISA_ALU_CASE(logical_or)
    NISA_ALU_CASE(logical_xor)
    NISA_ALU_CASE(power)
    NISA_ALU_CASE(abs_max)
    NISA_ALU_CASE(abs_min)
    NISA_ALU_CASE(abs)
    NISA_ALU_CASE(square)
    NISA_ALU_CASE(relu)
    NISA_ALU_CASE(rsqrt)
    NISA_ALU_CASE(reciprocal)
    NISA_ALU_CASE(average)
#undef NISA_ALU_CASE
  default: break;
  }
  return f(OpC<AluOp::bypass>{});
}
// Per-element fp32 ALU for scalar (non-loop) uses such as the scan recurrence.
float alu_f32(AluOp op, float a, float b);

// Integer ALU on raw values of `bits` width: bitvec ops (shifts are logical on that width),
// plus exact integer arithmetic (GpSimd int32 path: results wrap when stored).
template <AluOp O> inline int64_t alu_i(int64_t a, int64_t b, int bits) {
  if constexpr (O == AluOp::bitwise_and)
    return a & b;
  else if constexpr (O == AluOp::bitwise_or)
    return a | b;
  else if constexpr (O == AluOp::bitwise_xor)
    return a ^ b;
  else if constexpr (O == AluOp::invert)
    return ~a;
  else if constexpr (O == AluOp::left_shift)
    return (b < 0 || b >= bits) ? 0 : int64_t(uint64_t(a) << b);
  else if constexpr (O == AluOp::right_shift) {
    const uint64_t mask = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
    return (b < 0 || b >= bits) ? 0 : int64_t((uint64_t(a) & mask) >> b);
  } else if constexpr (O == AluOp::add)
    return int64_t(uint64_t(a) + uint64_t(b));
  else if constexpr (O == AluOp::subtract)
    return int64_t(uint64_t(a) - uint64_t(b));
  else if constexpr (O == AluOp::multiply)
    return int64_t(uint64_t(a) * uint64_t(b));
  else if constexpr (O == AluOp::max)
    return a > b ? a : b;
  else if constexpr (O == AluOp::min)
    return a < b ? a : b;
  else if constexpr (O == AluOp::equal)
    return a == b;
  else if constexpr (O == AluOp::not_equal)
    return a != b;
  else if constexpr (O == AluOp::greater_equal)
    return a >= b;
  else if constexpr (O == AluOp::greater)
    return a > b;
  else if constexpr (O == AluOp::less_equal)
    return a <= b;
  else if constexpr (O == AluOp::less)
    return a < b;
  else if constexpr (O == AluOp::logical_and)
    return a != 0 && b != 0;
  else if constexpr (O == AluOp::logical_or)
    return a != 0 || b != 0;
  else if constexpr (O == AluOp::logical_xor)
    return (a != 0) != (b != 0);
  else if constexpr (O == AluOp::abs)
    return a < 0 ? -a : a;
  else if constexpr (O == AluOp::square)
    return int64_t(uint64_t(a) * uint64_t(a));
  else if constexpr (O == AluOp::relu)
    return a > 0 ? a : 0;
  else
    return a; // bypass
}
// Calls f(OpC<op>) for operators with an integer form; false (f not called) otherwise.
template <class F> bool with_int_alu(AluOp op, F&& f) {
  switch (op) {
#define NISA_INT_CASE(o)                                                                           \
  case AluOp::o: f(OpC<AluOp::o>{}); return true;
    NISA_INT_CASE(bypass)
    NISA_INT_CASE(bitwise_and)
    NISA_INT_CASE(bitwise_or)
    NISA_INT_CASE(bitwise_xor)
    NISA_INT_CASE(invert)
    NISA_INT_CASE(left_shift)
    NISA_INT_CASE(right_shift)
    NISA_INT_CASE(add)
    NISA_INT_CASE(subtract)
    NISA_INT_CASE(multiply)
    NISA_INT_CASE(max)
    NISA_INT_CASE(min)
    NISA_INT_CASE(equal)
    NISA_INT_CASE(not_equal)
    NISA_INT_CASE(greater_equal)
    NISA_INT_CASE(greater)
    NISA_INT_CASE(less_equal)
    NISA_INT_CASE(less)
    NISA_INT_CASE(logical_and)
    NISA_INT_CASE(logical_or)
    NISA_INT_CASE(logical_xor)
    NISA_INT_CASE(abs)
    NISA_INT_CASE(square)
    NISA_INT_CASE(relu)
#undef NISA_INT_CASE
  default: return false;
  }
}
// The same, one element at a time (throws for operators without an integer form).
int64_t alu_int(AluOp op, int64_t a, int64_t b, int bits);

// ---- pure per-row algorithms (tests call these directly) --------------------------------------
// The 8 largest of x[0..n), descending. NaN ranks above +inf; equal values keep index order.
// next (optional): the row read after this one, as many bytes (a prefetch hint, simd.h).
void max8_row(const float* x, uint64_t n, float out[8], const void* next = nullptr);
// Position of each val's first occurrence; the j-th duplicate of a value takes its j-th
// occurrence; -1 when absent.
void find_index8_row(const float* data, uint64_t n, const float vals[8], int64_t out[8]);
// Positions match_replace8 replaces: slots processed 7..0, each taking the first position
// equal to its value not taken by an earlier-processed slot; -1 when absent.
void match_replace8_row(const float* data, uint64_t n, const float vals[8], int64_t out[8]);
// r = init; r = op1(op0(d0[i], r), d1[i]) (rev0/rev1 swap the operands); out[i] = r.
void scan_row(const float* d0, const float* d1, uint64_t n, float init, AluOp op0, AluOp op1,
              bool rev0, bool rev1, float* out);
// c[m][n] = fma chain over k of s[k][m] * v[k][n] (s: k_n x m_n, v: k_n x n_n, c: m_n x n_n,
// row-major); m_n % 4 == 0 and n_n % 16 == 0. Bit-identical on every host (see pe.cpp).
// Output rows [m0, m1) (m1 < 0: all); m0 and m1 multiples of 4 unless m1 == m_n.
void matmul_f32(const float* s, int m_n, const float* v, int n_n, int k_n, float* c, int m0 = 0,
                int m1 = -1);
// The same with a chosen kernel (tests compare them); false if the host lacks it.
enum class MatmulKernel : uint8_t { scalar, avx2, avx512 };
bool matmul_f32_with(MatmulKernel k, const float* s, int m_n, const float* v, int n_n, int k_n,
                     float* c, int m0 = 0, int m1 = -1);
// One activation function (docs/machine.md "Activation functions") at x, evaluated in double and
// rounded to fp32.
float act_fn(ActFunc f, float x);
// out[i] = f(x[i] * scale + bias) (the affine part in fp32).
void act_row(ActFunc f, const float* x, uint64_t n, float scale, float bias, float* out);

} // namespace nisa::interp::ew
