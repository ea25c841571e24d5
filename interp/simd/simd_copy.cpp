// fp32 <-> bf16 row conversion of the DMA copies (simd.h convert_row): the same per-element
// code (isa/dtype.h f32_to_bf16 / bf16_to_f32) compiled once per target and vectorised by the
// compiler at that width.
#pragma GCC optimize("O3")
// GCC 12 reports the intrinsics' internal _mm512_undefined_*() as maybe-uninitialized at O3.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized" // the same at -O0 (Debug, ASan)
#include <cstring>

#include "interp/simd/simd.h"
#include "isa/dtype.h"

namespace nisa::interp::simd {

namespace {

__attribute__((always_inline)) inline void to_bf16(const uint8_t* s, uint8_t* d, uint64_t n) {
  for (uint64_t j = 0; j < n; ++j) {
    float f;
    std::memcpy(&f, s + 4 * j, 4);
    const uint16_t h = f32_to_bf16(f);
    std::memcpy(d + 2 * j, &h, 2);
  }
}
__attribute__((always_inline)) inline void from_bf16(const uint8_t* s, uint8_t* d, uint64_t n) {
  for (uint64_t j = 0; j < n; ++j) {
    uint16_t h;
    std::memcpy(&h, s + 2 * j, 2);
    const float f = bf16_to_f32(h);
    std::memcpy(d + 4 * j, &f, 4);
  }
}

NISA_AVX512 void to_bf16_avx512(const uint8_t* s, uint8_t* d, uint64_t n) { to_bf16(s, d, n); }
NISA_AVX512 void from_bf16_avx512(const uint8_t* s, uint8_t* d, uint64_t n) { from_bf16(s, d, n); }
NISA_AVX2 void to_bf16_avx2(const uint8_t* s, uint8_t* d, uint64_t n) { to_bf16(s, d, n); }
NISA_AVX2 void from_bf16_avx2(const uint8_t* s, uint8_t* d, uint64_t n) { from_bf16(s, d, n); }
void to_bf16_scalar(const uint8_t* s, uint8_t* d, uint64_t n) { to_bf16(s, d, n); }
void from_bf16_scalar(const uint8_t* s, uint8_t* d, uint64_t n) { from_bf16(s, d, n); }

// iota runs: v0 + j * step (int32, wrapping) for j < n, stored as int32 or as fp32 (the
// int -> float conversion rounds to nearest even in every form: cvtsi2ss / cvtdq2ps). The
// output need not be 4-byte aligned (any SBUF byte offset): stored by memcpy, which the
// compiler still vectorises.
__attribute__((always_inline)) inline void iota_i32(uint8_t* o, uint32_t v0, uint32_t step,
                                                    uint64_t n) {
  for (uint64_t j = 0; j < n; ++j) {
    const int32_t v = int32_t(v0 + uint32_t(j) * step);
    std::memcpy(o + 4 * j, &v, 4);
  }
}
__attribute__((always_inline)) inline void iota_f32(uint8_t* o, uint32_t v0, uint32_t step,
                                                    uint64_t n) {
  for (uint64_t j = 0; j < n; ++j) {
    const float v = float(int32_t(v0 + uint32_t(j) * step));
    std::memcpy(o + 4 * j, &v, 4);
  }
}
NISA_AVX512 void iota_i32_avx512(uint8_t* o, uint32_t v0, uint32_t s, uint64_t n) {
  iota_i32(o, v0, s, n);
}
NISA_AVX512 void iota_f32_avx512(uint8_t* o, uint32_t v0, uint32_t s, uint64_t n) {
  iota_f32(o, v0, s, n);
}
NISA_AVX2 void iota_i32_avx2(uint8_t* o, uint32_t v0, uint32_t s, uint64_t n) {
  iota_i32(o, v0, s, n);
}
NISA_AVX2 void iota_f32_avx2(uint8_t* o, uint32_t v0, uint32_t s, uint64_t n) {
  iota_f32(o, v0, s, n);
}
void iota_i32_scalar(uint8_t* o, uint32_t v0, uint32_t s, uint64_t n) { iota_i32(o, v0, s, n); }
void iota_f32_scalar(uint8_t* o, uint32_t v0, uint32_t s, uint64_t n) { iota_f32(o, v0, s, n); }

} // namespace

bool iota_run(Level l, DType d, uint8_t* out, uint32_t v0, uint32_t step, uint64_t n) {
  if (d == DType::int32) {
    if (l == Level::avx512)
      iota_i32_avx512(out, v0, step, n);
    else if (l == Level::avx2)
      iota_i32_avx2(out, v0, step, n);
    else
      iota_i32_scalar(out, v0, step, n);
    return true;
  }
  if (d == DType::fp32) {
    if (l == Level::avx512)
      iota_f32_avx512(out, v0, step, n);
    else if (l == Level::avx2)
      iota_f32_avx2(out, v0, step, n);
    else
      iota_f32_scalar(out, v0, step, n);
    return true;
  }
  return false;
}

bool convert_row(Level l, DType st, const uint8_t* src, DType dt, uint8_t* dst, uint64_t n) {
  if (st == DType::fp32 && dt == DType::bf16) {
    if (l == Level::avx512)
      to_bf16_avx512(src, dst, n);
    else if (l == Level::avx2)
      to_bf16_avx2(src, dst, n);
    else
      to_bf16_scalar(src, dst, n);
    return true;
  }
  if (st == DType::bf16 && dt == DType::fp32) {
    if (l == Level::avx512)
      from_bf16_avx512(src, dst, n);
    else if (l == Level::avx2)
      from_bf16_avx2(src, dst, n);
    else
      from_bf16_scalar(src, dst, n);
    return true;
  }
  return false;
}

} // namespace nisa::interp::simd
