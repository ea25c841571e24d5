// The 16-row lane kernels (simd_lanes16.inc) for the avx512 level.
#pragma GCC optimize("O3")
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include "interp/simd/simd_lanes.h"

namespace nisa::interp::simd::lanes::l512 {
#define NISA_LT NISA_AVX512
#define NISA_LT_AVX512 1
#include "interp/simd/simd_lanes16.inc"
#undef NISA_LT_AVX512
#undef NISA_LT
} // namespace nisa::interp::simd::lanes::l512
