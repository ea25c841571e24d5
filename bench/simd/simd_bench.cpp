// Issue 16: the instructions with vector kernels (interp/simd/simd.h), each at every
// dispatch level the host has, on a realistic tile (128 partitions x 2048 / 8192 elements,
// fp32 and bf16), next to a streaming-read baseline measured in the same run: an AVX-512 (or
// AVX2) loop OR-ing the bytes the instruction must read. Counters: bytes_per_second (the
// instruction's bytes over its time) and ratio = that / the baseline's bytes per second
// (target >= 0.4).
// GCC 12 reports the intrinsics' internal _mm512_undefined_*() as maybe-uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "interp/core/target.h"
#include "interp/engines/elementwise.h"
#include "interp/engines/engines.h"
#include "interp/simd/simd.h"

namespace nisa::interp {
namespace {

using simd::Level;
// The SBUF layout of `nisa run` on trn2: partitions of 224 KiB, sbuf_stride host bytes apart
// (interp/core/target.h host_stride(): 224 KiB + 256 B; a multiple of 4 KiB would map the same
// column of every partition to one L1 set). NISA_BENCH_STRIDE=N (>= 160000, a multiple of 64)
// sets another host stride (the partition size is then the smaller of 224 KiB and N), e.g.
// 229376 to see the kernels with that set conflict.
uint64_t host_stride_bytes() {
  static const uint64_t v = [] {
    const char* e = std::getenv("NISA_BENCH_STRIDE");
    const uint64_t n = e ? std::strtoull(e, nullptr, 10) : 0;
    return n >= 160000 && n % 64 == 0 ? n : target_params(Target::trn2).sbuf_stride;
  }();
  return v;
}
const uint64_t kStride = host_stride_bytes();
uint64_t sbuf_offset() {
  const char* e = std::getenv("NISA_BENCH_SBUF_OFFSET");
  const uint64_t n = e ? std::strtoull(e, nullptr, 10) : 0;
  return n < 4096 ? n : 0;
}
const uint64_t kPartBytes = std::min(target_params(Target::trn2).sbuf_part_bytes, kStride);
constexpr uint32_t kP = 128;

struct Core {
  // Page-aligned, as `nisa run`'s SBUF. NISA_BENCH_SBUF_OFFSET=16 puts it where the heap vector
  // of the earlier bench was (16 bytes into a cache line: every 64-byte load of the streaming
  // baseline then spans two lines, which halves its L2-resident rate).
  std::vector<uint8_t> mem = std::vector<uint8_t>(kNumPartitions * kStride + 8192);
  uint8_t* sbuf = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(mem.data()) + 4095) &
                                             ~uintptr_t(4095)) +
                  sbuf_offset();
  CoreState st;
  ExecCtx cx;
  Core() {
    st.sbuf = sbuf;
    st.sbuf_part_bytes = kPartBytes;
    st.sbuf_stride = kStride;
    cx.state = &st;
    cx.target = Target::trn2;
    cx.engine = Engine::dve;
  }
  uint8_t* row(uint32_t p, uint64_t off) { return sbuf + p * kStride + off; }
  // Random values in [lo, hi) into a [kP, n] tile of dtype t at byte offset off.
  void fill(DType t, uint64_t off, uint32_t n, uint32_t seed, float lo = -2.0f, float hi = 2.0f) {
    std::mt19937 g(seed);
    std::uniform_real_distribution<float> d(lo, hi);
    for (uint32_t p = 0; p < kP; ++p)
      for (uint32_t j = 0; j < n; ++j) store_from_f32(t, row(p, off) + j * dtype_bytes(t), d(g));
  }
};

AccessPattern tile(DType dt, uint64_t off, uint32_t free, uint16_t parts = kP) {
  AccessPattern ap;
  ap.space = MemSpace::sbuf;
  ap.dtype = dt;
  ap.part_count = parts;
  ap.offset = off;
  ap.dims[0] = {1, free};
  return ap;
}
void set_ap(Inst& in, std::string_view name, const AccessPattern& ap) {
  Operand& o = in.ops[ew::operand_index(in, name)];
  o.present = o.is_ap = true;
  o.ap = ap;
}
void set_i(Inst& in, std::string_view name, int64_t v) {
  in.ops[ew::operand_index(in, name)].i = v;
}

// ---- the streaming-read baseline
// -----------------------------------------------------------------
NISA_AVX512 uint64_t or_bytes_avx512(const uint8_t* p, uint64_t n) {
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  uint64_t i = 0;
  for (; i + 256 <= n; i += 256) {
    a0 = _mm512_or_si512(a0, _mm512_loadu_si512(p + i));
    a1 = _mm512_or_si512(a1, _mm512_loadu_si512(p + i + 64));
    a2 = _mm512_or_si512(a2, _mm512_loadu_si512(p + i + 128));
    a3 = _mm512_or_si512(a3, _mm512_loadu_si512(p + i + 192));
  }
  alignas(64) uint64_t l[8];
  _mm512_store_si512(l, _mm512_or_si512(_mm512_or_si512(a0, a1), _mm512_or_si512(a2, a3)));
  uint64_t r = l[0] | l[1] | l[2] | l[3] | l[4] | l[5] | l[6] | l[7];
  for (; i < n; ++i) r |= p[i];
  return r;
}
NISA_AVX2 uint64_t or_bytes_avx2(const uint8_t* p, uint64_t n) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0;
  uint64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    a0 = _mm256_or_si256(a0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)));
    a1 = _mm256_or_si256(a1, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 32)));
  }
  alignas(32) uint64_t l[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(l), _mm256_or_si256(a0, a1));
  uint64_t r = l[0] | l[1] | l[2] | l[3];
  for (; i < n; ++i) r |= p[i];
  return r;
}
uint64_t or_rows(Core& c, uint64_t off, uint64_t row_bytes) {
  uint64_t r = 0;
  for (uint32_t p = 0; p < kP; ++p)
    r |= simd::supported(Level::avx512) ? or_bytes_avx512(c.row(p, off), row_bytes)
                                        : or_bytes_avx2(c.row(p, off), row_bytes);
  return r;
}

// This thread's CPU seconds: the machine is shared, so both sides are timed in CPU time.
double cpu_now() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

// A baseline's rate: `bytes` per call of pass(i) over CPU seconds, the best of 5 batches of
// 20 ms (measured when a benchmark starts: the same run and the same cache state).
template <class F> double best_rate(double bytes, F&& pass) {
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const double t0 = cpu_now();
    int iters = 0;
    do {
      pass(iters);
      benchmark::ClobberMemory();
      ++iters;
    } while (cpu_now() - t0 < 0.02);
    best = std::max(best, iters * bytes / (cpu_now() - t0));
  }
  return best;
}

// Bytes per CPU second of the streaming read of kP rows of row_bytes.
double stream_rate(Core& c, uint64_t off, uint64_t row_bytes) {
  uint64_t sink = 0;
  const double r =
      best_rate(double(kP * row_bytes), [&](int) { sink |= or_rows(c, off, row_bytes); });
  benchmark::DoNotOptimize(sink);
  return r;
}

// Runs `body` under the benchmark loop at level l; `bytes` per iteration.
template <class F>
void run(benchmark::State& s, Core& c, uint64_t off, uint64_t row_bytes, F&& body) {
  const Level l = static_cast<Level>(s.range(0));
  if (!simd::set_level(l)) {
    s.SkipWithError("level not supported by this host");
    return;
  }
  const double base = stream_rate(c, off, row_bytes);
  const double t0 = cpu_now();
  for (auto _ : s) {
    body();
    benchmark::ClobberMemory();
  }
  const double secs = cpu_now() - t0;
  const double rate = s.iterations() * double(kP * row_bytes) / secs;
  s.SetBytesProcessed(int64_t(s.iterations() * kP * row_bytes));
  s.counters["ratio"] = rate / base;
  s.counters["stream_GBps"] = base / 1e9;
  s.SetLabel(simd::name(l));
  simd::set_level(simd::best());
}

// The instruction's bytes per CPU second, from the counters run() set.
double instruction_rate(benchmark::State& s) {
  return s.counters["stream_GBps"].value * s.counters["ratio"].value * 1e9;
}

DType dt_of(int64_t a) { return a ? DType::bf16 : DType::fp32; }

// ---- max8 / find_index8 / match_replace8 --------------------------------------------------------
void BM_max8(benchmark::State& s) {
  Core c;
  const DType t = dt_of(s.range(1));
  const uint32_t n = uint32_t(s.range(2));
  c.fill(t, 0, n, 1);
  Inst in = make_inst(Opcode::max8, Engine::dve);
  set_ap(in, "dst", tile(DType::fp32, 100000, 8));
  set_ap(in, "src", tile(t, 0, n));
  run(s, c, 0, n * dtype_bytes(t), [&] { sem_max8(c.cx, in); });
}

// vals = each row's top 8 (what a topk step searches for).
void put_top8(Core& c, DType t, uint32_t n, uint64_t vals_off) {
  Inst in = make_inst(Opcode::max8, Engine::dve);
  set_ap(in, "dst", tile(DType::fp32, vals_off, 8));
  set_ap(in, "src", tile(t, 0, n));
  sem_max8(c.cx, in);
}

void BM_find_index8(benchmark::State& s) {
  Core c;
  const DType t = dt_of(s.range(1));
  const uint32_t n = uint32_t(s.range(2));
  c.fill(t, 0, n, 2);
  put_top8(c, t, n, 100000);
  Inst in = make_inst(Opcode::find_index8, Engine::dve);
  set_ap(in, "dst", tile(DType::uint32, 100100, 8));
  set_ap(in, "data", tile(t, 0, n));
  set_ap(in, "vals", tile(DType::fp32, 100000, 8));
  run(s, c, 0, n * dtype_bytes(t), [&] { sem_find_index8(c.cx, in); });
}

// In place, as topk: the top 8 are replaced by -inf, so each iteration puts them back (8
// memcpys of an element per row from a copy of their bytes made before the loop, included in
// the time; a store_from_f32 conversion each was 10% of the bf16 time).
void BM_match_replace8(benchmark::State& s) {
  Core c;
  const DType t = dt_of(s.range(1));
  const uint32_t n = uint32_t(s.range(2));
  c.fill(t, 0, n, 3);
  put_top8(c, t, n, 100000);
  Inst in = make_inst(Opcode::match_replace8, Engine::dve);
  set_ap(in, "dst", tile(t, 0, n));
  set_ap(in, "data", tile(t, 0, n));
  set_ap(in, "vals", tile(DType::fp32, 100000, 8));
  set_ap(in, "idx", tile(DType::uint32, 100100, 8));
  in.ops[ew::operand_index(in, "imm")].f = -INFINITY;
  const uint64_t eb = dtype_bytes(t);
  std::vector<uint8_t> vb(kP * 8 * eb); // the winners' bytes in dtype t
  for (uint32_t p = 0; p < kP; ++p)
    for (int k = 0; k < 8; ++k)
      store_from_f32(t, vb.data() + (p * 8 + k) * eb,
                     reinterpret_cast<const float*>(c.row(p, 100000))[k]);
  run(s, c, 0, n * eb, [&] {
    sem_match_replace8(c.cx, in);
    for (uint32_t p = 0; p < kP; ++p) { // put the 8 winners back at the positions idx names
      const uint32_t* idx = reinterpret_cast<const uint32_t*>(c.row(p, 100100));
      for (int k = 0; k < 8; ++k)
        std::memcpy(c.row(p, 0) + idx[k] * eb, vb.data() + (p * 8 + k) * eb, eb);
    }
  });
}

// ---- tensor_reduce ------------------------------------------------------------------------------
void BM_tensor_reduce(benchmark::State& s) {
  Core c;
  const DType t = dt_of(s.range(1));
  const uint32_t n = uint32_t(s.range(2));
  const AluOp op = static_cast<AluOp>(s.range(3));
  // multiply: factors near 1, so the products of 8192 stay normal (no denormal assists).
  if (op == AluOp::multiply)
    c.fill(t, 0, n, 4, 0.9f, 1.1f);
  else
    c.fill(t, 0, n, 4);
  Inst in = make_inst(Opcode::tensor_reduce, Engine::dve);
  set_ap(in, "dst", tile(DType::fp32, 100000, 1));
  set_ap(in, "src", tile(t, 0, n));
  set_i(in, "op", int64_t(op));
  set_i(in, "axes", 1);
  run(s, c, 0, n * dtype_bytes(t), [&] { sem_tensor_reduce(c.cx, in); });
}

// ---- scan (cumsum form: in0 = ones, op0 = multiply, op1 = add) ---------------------------------
void BM_scan(benchmark::State& s) {
  Core c;
  const DType t = dt_of(s.range(1));
  const uint32_t n = uint32_t(s.range(2));
  c.fill(t, 0, n, 5);
  // in0 and dst past the source at n = 16384 (up to 64 KiB each; a partition has 224 KiB)
  const uint64_t in0 = n <= 8192 ? 40000 : 70000, dst = n <= 8192 ? 80000 : 140000;
  for (uint32_t p = 0; p < kP; ++p)
    for (uint32_t j = 0; j < n; ++j) store_from_f32(DType::fp32, c.row(p, in0) + 4 * j, 1.0f);
  Inst in = make_inst(Opcode::scan, Engine::dve);
  set_ap(in, "dst", tile(t, dst, n));
  set_ap(in, "in0", tile(DType::fp32, in0, n));
  set_ap(in, "in1", tile(t, 0, n));
  set_i(in, "op0", int64_t(AluOp::multiply));
  set_i(in, "op1", int64_t(AluOp::add));
  // bytes read: in0 (fp32) + in1
  run(s, c, 0, n * (4 + dtype_bytes(t)), [&] { sem_scan(c.cx, in); });
}

// ---- activation exp
// -------------------------------------------------------------------------------
void BM_exp(benchmark::State& s) {
  Core c;
  const DType t = dt_of(s.range(1));
  const uint32_t n = uint32_t(s.range(2));
  c.fill(t, 0, n, 6, -10.0f, 10.0f);
  Inst in = make_inst(Opcode::activation, Engine::act);
  set_ap(in, "dst", tile(t, 80000, n));
  set_ap(in, "src", tile(t, 0, n));
  set_i(in, "func", int64_t(ActFunc::exp));
  Operand& sc = in.ops[ew::operand_index(in, "scale")];
  sc.is_ap = false;
  sc.f = 1.0f;
  c.cx.engine = Engine::act;
  run(s, c, 0, n * dtype_bytes(t), [&] { sem_activation(c.cx, in); });
}

// The native exp baselines over the same fp32 [128, n]: glibc's libmvec AVX-512 expf (the
// best native vector exp at hand; fp32 accuracy, ~4 ulp) and a std::exp loop in double
// rounded to fp32 (what activation computed before issue 16).
#ifdef NISA_HAVE_MVEC
extern "C" __m512 _ZGVeN16v_expf(__m512);
#endif
NISA_AVX512 void mvec_rows(Core& c, uint32_t n) {
  for (uint32_t p = 0; p < kP; ++p) {
    const float* x = reinterpret_cast<const float*>(c.row(p, 0));
    float* o = reinterpret_cast<float*>(c.row(p, 80000));
#ifdef NISA_HAVE_MVEC
    for (uint32_t j = 0; j + 16 <= n; j += 16)
      _mm512_storeu_ps(o + j, _ZGVeN16v_expf(_mm512_loadu_ps(x + j)));
#else
    (void)x, (void)o, (void)n; // without libmvec: no baseline (skipped below)
#endif
  }
}
void BM_native_exp(benchmark::State& s) {
  Core c;
  const uint32_t n = uint32_t(s.range(2));
  const bool mvec = s.range(0) == 2;
#ifndef NISA_HAVE_MVEC
  if (mvec) return s.SkipWithError("libmvec not found at configure time");
#endif
  c.fill(DType::fp32, 0, n, 6, -10.0f, 10.0f);
  run(s, c, 0, n * 4, [&] {
    if (mvec) return mvec_rows(c, n);
    for (uint32_t p = 0; p < kP; ++p) {
      const float* x = reinterpret_cast<const float*>(c.row(p, 0));
      float* o = reinterpret_cast<float*>(c.row(p, 80000));
      for (uint32_t j = 0; j < n; ++j) o[j] = static_cast<float>(std::exp(double(x[j])));
    }
  });
  s.SetLabel(mvec ? "libmvec _ZGVeN16v_expf" : "std::exp(double) loop");
}

// ---- the other activation functions (simd_math.cpp) against the best native loop --------------
// The native loop per function, over the same fp32 [128, n], measured in the same benchmark:
// glibc's libmvec AVX-512 functions where it has the function (fp32 arithmetic, ~1-4 ulp),
// composed the way the formula is (sigmoid = 1 / (1 + expf(-x)), ...), or the AVX-512
// instruction (sqrt, rsqrt as 1 / sqrt, reciprocal as a division) in fp32.
#ifdef NISA_HAVE_MVEC
extern "C" __m512 _ZGVeN16v_tanhf(__m512);
extern "C" __m512 _ZGVeN16v_logf(__m512);
extern "C" __m512 _ZGVeN16v_log1pf(__m512);
extern "C" __m512 _ZGVeN16v_erff(__m512);
extern "C" __m512 _ZGVeN16v_sinf(__m512);
extern "C" __m512 _ZGVeN16v_atanf(__m512);
#endif
#ifdef NISA_HAVE_MVEC
// The normal cdf 0.5 (1 + erf(x / sqrt 2)), as gelu and gelu_dx compose it.
NISA_AVX512 inline __m512 cdf16(__m512 x) {
  return _mm512_mul_ps(
      _mm512_set1_ps(0.5f),
      _mm512_add_ps(_mm512_set1_ps(1.0f),
                    _ZGVeN16v_erff(_mm512_mul_ps(x, _mm512_set1_ps(0.70710678118654752f)))));
}
#endif
NISA_AVX512 inline __m512 sig16(__m512 v) {
#ifdef NISA_HAVE_MVEC
  const __m512 one = _mm512_set1_ps(1.0f);
  return _mm512_div_ps(one,
                       _mm512_add_ps(one, _ZGVeN16v_expf(_mm512_sub_ps(_mm512_setzero_ps(), v))));
#else
  return v;
#endif
}
NISA_AVX512 __m512 native16(ActFunc f, __m512 x) {
  const __m512 one = _mm512_set1_ps(1.0f);
  switch (f) {
  case ActFunc::sqrt: return _mm512_sqrt_ps(x);
  case ActFunc::rsqrt: return _mm512_div_ps(one, _mm512_sqrt_ps(x));
  case ActFunc::reciprocal: return _mm512_div_ps(one, x);
#ifdef NISA_HAVE_MVEC
  case ActFunc::log: return _ZGVeN16v_logf(x);
  case ActFunc::tanh: return _ZGVeN16v_tanhf(x);
  case ActFunc::gelu_apprx_tanh: {
    const __m512 z = _mm512_mul_ps(
        _mm512_set1_ps(0.7978845608f),
        _mm512_add_ps(
            x, _mm512_mul_ps(_mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.044715f), x), x), x)));
    return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), x),
                         _mm512_add_ps(one, _ZGVeN16v_tanhf(z)));
  }
  case ActFunc::softplus:
    return _mm512_add_ps(
        _mm512_max_ps(x, _mm512_setzero_ps()),
        _ZGVeN16v_log1pf(_ZGVeN16v_expf(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_abs_ps(x)))));
  case ActFunc::erf_dx:
    return _mm512_mul_ps(_mm512_set1_ps(1.1283791671f),
                         _ZGVeN16v_expf(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(x, x))));
  case ActFunc::erf: return _ZGVeN16v_erff(x);
  case ActFunc::sin: return _ZGVeN16v_sinf(x);
  case ActFunc::arctan: return _ZGVeN16v_atanf(x);
  case ActFunc::gelu: return _mm512_mul_ps(x, cdf16(x));
  case ActFunc::gelu_dx: {
    const __m512 cdf = cdf16(x);
    const __m512 pdf = _ZGVeN16v_expf(_mm512_mul_ps(_mm512_set1_ps(-0.5f), _mm512_mul_ps(x, x)));
    return _mm512_add_ps(
        cdf, _mm512_mul_ps(_mm512_mul_ps(x, _mm512_set1_ps(0.39894228040143268f)), pdf));
  }
#endif
  case ActFunc::silu: return _mm512_mul_ps(x, sig16(x));
  default: return sig16(x); // sigmoid
  }
}
NISA_AVX512 void native_rows(Core& c, ActFunc f, uint32_t n) {
  for (uint32_t p = 0; p < kP; ++p) {
    const float* x = reinterpret_cast<const float*>(c.row(p, 0));
    float* o = reinterpret_cast<float*>(c.row(p, 80000));
    for (uint32_t j = 0; j + 16 <= n; j += 16)
      _mm512_storeu_ps(o + j, native16(f, _mm512_loadu_ps(x + j)));
  }
}
double native_rate(Core& c, ActFunc f, uint32_t n) { // bytes per CPU second, best of 5
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const double t0 = cpu_now();
    int iters = 0;
    do {
      native_rows(c, f, n);
      benchmark::ClobberMemory();
      ++iters;
    } while (cpu_now() - t0 < 0.02);
    best = std::max(best, iters * double(kP * n * 4) / (cpu_now() - t0));
  }
  return best;
}
const ActFunc kActFns[] = {ActFunc::log,
                           ActFunc::sqrt,
                           ActFunc::rsqrt,
                           ActFunc::reciprocal,
                           ActFunc::tanh,
                           ActFunc::sigmoid,
                           ActFunc::gelu_apprx_tanh,
                           ActFunc::silu,
                           ActFunc::softplus,
                           ActFunc::erf_dx,
                           ActFunc::gelu,
                           ActFunc::gelu_dx,
                           ActFunc::erf,
                           ActFunc::sin,
                           ActFunc::arctan};
void BM_act(benchmark::State& s) {
  Core c;
  const ActFunc f = static_cast<ActFunc>(s.range(1));
  const uint32_t n = uint32_t(s.range(2));
  const bool positive = f == ActFunc::log || f == ActFunc::sqrt || f == ActFunc::rsqrt;
  c.fill(DType::fp32, 0, n, 8, positive ? 0.01f : -8.0f, 8.0f);
  const Level l = static_cast<Level>(s.range(0));
  if (l == Level::avx512 && !simd::supported(Level::avx512)) return s.SkipWithError("no avx512");
  const bool have_native =
#ifdef NISA_HAVE_MVEC
      simd::supported(Level::avx512);
#else
      simd::supported(Level::avx512) &&
      (f == ActFunc::sqrt || f == ActFunc::rsqrt || f == ActFunc::reciprocal);
#endif
  const double native = have_native ? native_rate(c, f, n) : 0.0;
  Inst in = make_inst(Opcode::activation, Engine::act);
  set_ap(in, "dst", tile(DType::fp32, 80000, n));
  set_ap(in, "src", tile(DType::fp32, 0, n));
  set_i(in, "func", int64_t(f));
  Operand& sc = in.ops[ew::operand_index(in, "scale")];
  sc.is_ap = false;
  sc.f = 1.0f;
  c.cx.engine = Engine::act;
  run(s, c, 0, n * 4, [&] { sem_activation(c.cx, in); });
  if (native > 0) s.counters["vs_native"] = instruction_rate(s) / native;
  s.counters["native_GBps"] = native / 1e9;
}
void act_args(benchmark::internal::Benchmark* b) {
  for (ActFunc f : kActFns)
    for (int64_t l : {2, 1, 0}) b->Args({l, int64_t(f), 8192});
  b->ArgNames({"level", "func", "n"});
}

// What activation ran before the vector forms: the formula in double through libm, per element.
double libm_act(ActFunc f, double x) {
  auto sig = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  switch (f) {
  case ActFunc::log: return std::log(x);
  case ActFunc::sqrt: return std::sqrt(x);
  case ActFunc::rsqrt: return 1.0 / std::sqrt(x);
  case ActFunc::reciprocal: return 1.0 / x;
  case ActFunc::tanh: return std::tanh(x);
  case ActFunc::gelu_apprx_tanh:
    return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
  case ActFunc::silu: return x * sig(x);
  case ActFunc::softplus: return std::max(x, 0.0) + std::log1p(std::exp(-std::fabs(x)));
  case ActFunc::erf_dx: return 1.1283791670955126 * std::exp(-x * x);
  case ActFunc::gelu: return 0.5 * x * (1.0 + std::erf(x * 0.7071067811865476));
  case ActFunc::gelu_dx:
    return 0.5 * (1.0 + std::erf(x * 0.7071067811865476)) +
           x * 0.3989422804014327 * std::exp(-0.5 * x * x);
  case ActFunc::erf: return std::erf(x);
  case ActFunc::sin: return std::sin(x);
  case ActFunc::arctan: return std::atan(x);
  default: return sig(x);
  }
}
void BM_libm_act(benchmark::State& s) {
  Core c;
  const ActFunc f = static_cast<ActFunc>(s.range(1));
  const uint32_t n = uint32_t(s.range(2));
  const bool positive = f == ActFunc::log || f == ActFunc::sqrt || f == ActFunc::rsqrt;
  c.fill(DType::fp32, 0, n, 8, positive ? 0.01f : -8.0f, 8.0f);
  run(s, c, 0, n * 4, [&] {
    for (uint32_t p = 0; p < kP; ++p) {
      const float* x = reinterpret_cast<const float*>(c.row(p, 0));
      float* o = reinterpret_cast<float*>(c.row(p, 80000));
      for (uint32_t j = 0; j < n; ++j) o[j] = static_cast<float>(libm_act(f, x[j]));
    }
  });
  s.SetLabel("libm formula in double (before)");
}
void libm_args(benchmark::internal::Benchmark* b) {
  for (ActFunc f : kActFns) b->Args({0, int64_t(f), 8192});
  b->ArgNames({"level", "func", "n"});
}

// ---- DMA copy fp32 -> bf16 and bf16 -> fp32, SBUF to SBUF
// -----------------------------------------
NISA_AVX512 void rw_rows(Core& c, uint64_t src_bytes, uint64_t dst_bytes) {
  for (uint32_t p = 0; p < kP; ++p) {
    const uint8_t* x = c.row(p, 0);
    uint8_t* o = c.row(p, 80000);
    if (dst_bytes >= src_bytes) { // widening: each source vector stored twice
      for (uint64_t i = 0; i + 64 <= src_bytes; i += 64) {
        const __m512i v = _mm512_loadu_si512(x + i);
        _mm512_storeu_si512(o + 2 * i, v);
        _mm512_storeu_si512(o + 2 * i + 64, v);
      }
    } else { // narrowing: two source vectors, one store
      for (uint64_t i = 0; i + 128 <= src_bytes; i += 128)
        _mm512_storeu_si512(
            o + i / 2, _mm512_or_si512(_mm512_loadu_si512(x + i), _mm512_loadu_si512(x + i + 64)));
    }
  }
}
// Source bytes per CPU second of rw_rows.
double copy_rate(Core& c, uint64_t src_bytes, uint64_t dst_bytes) {
  return best_rate(double(kP * src_bytes), [&](int) { rw_rows(c, src_bytes, dst_bytes); });
}

// An AVX-512 streaming store over kP rows of row_bytes at offset 0 (a register stored to
// every 64 bytes), and its bytes per CPU second.
NISA_AVX512 void store_rows(Core& c, uint64_t row_bytes, int k) {
  const __m512i v = _mm512_set1_epi32(k);
  for (uint32_t p = 0; p < kP; ++p) {
    uint8_t* o = c.row(p, 0);
    for (uint64_t i = 0; i + 64 <= row_bytes; i += 64) _mm512_storeu_si512(o + i, v);
  }
}
double write_rate(Core& c, uint64_t row_bytes) {
  return best_rate(double(kP * row_bytes), [&](int i) { store_rows(c, row_bytes, i); });
}

void BM_dma_convert(benchmark::State& s) {
  Core c;
  const DType t = dt_of(s.range(1)); // source dtype; the destination is the other one
  const DType o = t == DType::fp32 ? DType::bf16 : DType::fp32;
  const uint32_t n = uint32_t(s.range(2));
  c.fill(t, 0, n, 7);
  Inst in = make_inst(Opcode::dma, Engine::sp);
  in.ops[1].present = in.ops[1].is_ap = true;
  in.ops[1].ap = tile(o, 80000, n);
  in.ops[2].present = in.ops[2].is_ap = true;
  in.ops[2].ap = tile(t, 0, n);
  run(s, c, 0, n * dtype_bytes(t), [&] { sem_dma(c.cx, in); });
  // A second baseline with the instruction's memory traffic: the source bytes read and the
  // destination bytes written (each 64-byte load stored dst/src times), no arithmetic.
  if (simd::supported(Level::avx512)) {
    s.counters["vs_rw_stream"] =
        instruction_rate(s) / copy_rate(c, n * dtype_bytes(t), n * dtype_bytes(o));
  }
}

// ---- iota into int32 / fp32
// ------------------------------------------------------------------------
void BM_iota(benchmark::State& s) {
  Core c;
  const DType t = s.range(1) ? DType::fp32 : DType::int32;
  const uint32_t n = uint32_t(s.range(2));
  Inst in = make_inst(Opcode::iota, Engine::pool);
  set_ap(in, "dst", tile(t, 0, n));
  AffinePattern& pat = in.ops[ew::operand_index(in, "pattern")].pat;
  pat.n = 1;
  pat.d[0][0] = 1;
  pat.d[0][1] = int32_t(n);
  set_i(in, "pmul", int64_t(n));
  c.cx.engine = Engine::pool;
  // bytes written (the baseline reads as many)
  run(s, c, 0, n * 4, [&] { sem_iota(c.cx, in); });
  // iota reads nothing: its bound is a streaming write of the same bytes (vs_write_stream).
  if (simd::supported(Level::avx512)) {
    s.counters["vs_write_stream"] = instruction_rate(s) / write_rate(c, n * 4);
  }
}

// n = 2048 fp32 (1 MiB a tile) sits in a 2 MiB L2 with the baseline; 8192 / 16384 fp32 (4 / 8
// MiB) and bf16 16384 / 32768 (4 / 8 MiB) do not: there both sides stream from L3
// (docs/performance.md "Row kernels against a streaming pass"). 16384 is the search
// instructions' limit; 4096 is the folded top-K's window.
void levels_and_tiles(benchmark::internal::Benchmark* b) {
  for (int64_t l : {2, 1, 0})
    for (int64_t dt : {0, 1})
      for (int64_t n : {2048, 4096, 8192, 16384}) b->Args({l, dt, n});
  b->ArgNames({"level", "bf16", "n"});
}
void reduce_args(benchmark::internal::Benchmark* b) {
  for (int64_t op : {int64_t(AluOp::max), int64_t(AluOp::add), int64_t(AluOp::multiply)})
    for (int64_t l : {2, 1, 0})
      for (int64_t dt : {0, 1})
        for (int64_t n : {2048, 8192, 16384, 32768})
          if (dt || n <= 16384) b->Args({l, dt, n, op});
  b->ArgNames({"level", "bf16", "n", "op"});
}
BENCHMARK(BM_max8)->Name("max8")->Apply(levels_and_tiles);
BENCHMARK(BM_find_index8)->Name("find_index8")->Apply(levels_and_tiles);
BENCHMARK(BM_match_replace8)->Name("match_replace8")->Apply(levels_and_tiles);
BENCHMARK(BM_tensor_reduce)->Name("tensor_reduce")->Apply(reduce_args);
BENCHMARK(BM_scan)->Name("scan_cumsum")->Apply(levels_and_tiles);
BENCHMARK(BM_exp)->Name("activation_exp")->Apply(levels_and_tiles);
BENCHMARK(BM_native_exp)
    ->Name("native_exp_fp32")
    ->Args({2, 0, 2048})
    ->Args({2, 0, 8192})
    ->Args({0, 0, 2048})
    ->Args({0, 0, 8192})
    ->ArgNames({"mvec", "bf16", "n"});
BENCHMARK(BM_act)->Name("activation")->Apply(act_args);
BENCHMARK(BM_libm_act)->Name("activation_libm_before")->Apply(libm_args);
BENCHMARK(BM_dma_convert)->Name("dma_convert_from")->Apply(levels_and_tiles);
BENCHMARK(BM_iota)->Name("iota_int32_or_fp32")->Apply(levels_and_tiles);

} // namespace
} // namespace nisa::interp

BENCHMARK_MAIN();
