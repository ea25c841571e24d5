// Instruction semantics against native baselines on the same buffers (issue 3 targets:
// each semantic >= 50% of its baseline's throughput).
//   dve tensor_tensor add [128, 2048] fp32 and bf16  vs  a plain C++ loop
//   pe matmul 128x128 by 128x512 bf16 -> fp32 PSUM   vs  OpenBLAS sgemm (fp32), 1 thread
//   dve max8 over [128, 16384] fp32                  vs  a native top-8 insertion loop
// Same optimisation level as the semantics (interp/engines/dve.cpp) for the native loops.
#pragma GCC optimize("O3")
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "interp/core/target.h"
#include "interp/engines/elementwise.h"
#include "interp/engines/engines.h"
#ifdef NISA_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace nisa::interp {
namespace {

constexpr uint64_t kPartBytes = 212984; // trn2 usable SBUF per partition

struct Core {
  // The host layout of `nisa run`: partitions host_stride() apart.
  std::vector<uint8_t> sbuf = std::vector<uint8_t>(kNumPartitions * host_stride(kPartBytes));
  std::vector<uint8_t> psum = std::vector<uint8_t>(kNumPartitions * host_stride(16384));
  CoreState st;
  ExecCtx cx;
  Core() {
    st.sbuf = sbuf.data();
    st.sbuf_part_bytes = kPartBytes;
    st.sbuf_stride = host_stride(kPartBytes);
    st.psum = psum.data();
    st.psum_part_bytes = 16384;
    st.psum_stride = host_stride(16384);
    st.psum_written.assign(kNumPartitions * st.psum_stride / 4, 0);
    cx.state = &st;
    cx.target = Target::trn2;
    std::mt19937 g(42);
    std::uniform_real_distribution<float> d(-2.0f, 2.0f);
    for (uint32_t p = 0; p < kNumPartitions; ++p) // random fp32 everywhere (also valid bf16 pairs)
      for (uint64_t j = 0; j + 4 <= kPartBytes; j += 4) {
        const float v = d(g);
        std::memcpy(row(p, j), &v, 4);
      }
  }
  uint8_t* row(uint32_t p, uint64_t off) { return sbuf.data() + p * st.sbuf_stride + off; }
};

AccessPattern tile(MemSpace sp, DType dt, uint16_t parts, uint64_t off, uint32_t free) {
  AccessPattern ap;
  ap.space = sp;
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

constexpr uint32_t kP = 128, kF = 2048;

// ---- tensor_tensor add -----------------------------------------------------------------------
template <DType T> void BM_tensor_tensor_add(benchmark::State& s) {
  Core c;
  const uint64_t bytes = kF * dtype_bytes(T);
  Inst in = make_inst(Opcode::tensor_tensor, Engine::dve);
  set_ap(in, "dst", tile(MemSpace::sbuf, T, kP, 2 * bytes, kF));
  set_ap(in, "in0", tile(MemSpace::sbuf, T, kP, 0, kF));
  set_ap(in, "in1", tile(MemSpace::sbuf, T, kP, bytes, kF));
  in.ops[ew::operand_index(in, "op")].i = static_cast<int>(AluOp::add);
  c.cx.engine = Engine::dve;
  for (auto _ : s) {
    sem_tensor_tensor(c.cx, in);
    benchmark::ClobberMemory();
  }
  s.SetItemsProcessed(s.iterations() * kP * kF);
}
BENCHMARK(BM_tensor_tensor_add<DType::fp32>)->Name("sem/tensor_tensor_add/fp32");
BENCHMARK(BM_tensor_tensor_add<DType::bf16>)->Name("sem/tensor_tensor_add/bf16");

void BM_native_add_fp32(benchmark::State& s) {
  Core c;
  const uint64_t bytes = kF * 4;
  for (auto _ : s) {
    for (uint32_t p = 0; p < kP; ++p) {
      const float* a = reinterpret_cast<const float*>(c.row(p, 0));
      const float* b = reinterpret_cast<const float*>(c.row(p, bytes));
      float* d = reinterpret_cast<float*>(c.row(p, 2 * bytes));
      for (uint32_t j = 0; j < kF; ++j) d[j] = a[j] + b[j];
    }
    benchmark::ClobberMemory();
  }
  s.SetItemsProcessed(s.iterations() * kP * kF);
}
BENCHMARK(BM_native_add_fp32)->Name("native/add/fp32");

void BM_native_add_bf16(benchmark::State& s) {
  Core c;
  const uint64_t bytes = kF * 2;
  for (auto _ : s) {
    for (uint32_t p = 0; p < kP; ++p) {
      const uint16_t* a = reinterpret_cast<const uint16_t*>(c.row(p, 0));
      const uint16_t* b = reinterpret_cast<const uint16_t*>(c.row(p, bytes));
      uint16_t* d = reinterpret_cast<uint16_t*>(c.row(p, 2 * bytes));
      for (uint32_t j = 0; j < kF; ++j) d[j] = f32_to_bf16(bf16_to_f32(a[j]) + bf16_to_f32(b[j]));
    }
    benchmark::ClobberMemory();
  }
  s.SetItemsProcessed(s.iterations() * kP * kF);
}
BENCHMARK(BM_native_add_bf16)->Name("native/add/bf16");

// ---- matmul ----------------------------------------------------------------------------------
constexpr int kK = 128, kM = 128, kN = 512;

void BM_matmul(benchmark::State& s) {
  Core c;
  Inst in = make_inst(Opcode::matmul, Engine::pe);
  set_ap(in, "dst", tile(MemSpace::psum, DType::fp32, kM, 0, kN));
  set_ap(in, "stationary", tile(MemSpace::sbuf, DType::bf16, kK, 0, kM));
  set_ap(in, "moving", tile(MemSpace::sbuf, DType::bf16, kK, 4096, kN));
  in.ops[ew::operand_index(in, "acc")].i = static_cast<int>(AccMode::overwrite);
  c.cx.engine = Engine::pe;
  for (auto _ : s) {
    sem_matmul(c.cx, in);
    benchmark::ClobberMemory();
  }
  s.counters["GFLOPS"] =
      benchmark::Counter(2.0 * kK * kM * kN * s.iterations() / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_matmul)->Name("sem/matmul/128x128x512_bf16");

#ifdef NISA_HAVE_OPENBLAS
void BM_sgemm(benchmark::State& s) {
  openblas_set_num_threads(static_cast<int>(s.range(0)));
  std::mt19937 g(7);
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  std::vector<float> a(kK * kM), b(kK * kN), out(kM * kN);
  for (auto& x : a) x = d(g);
  for (auto& x : b) x = d(g);
  for (auto _ : s) {
    // out[M,N] = a[K,M]^T x b[K,N]
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, kM, kN, kK, 1.0f, a.data(), kM, b.data(),
                kN, 0.0f, out.data(), kN);
    benchmark::ClobberMemory();
  }
  s.counters["GFLOPS"] =
      benchmark::Counter(2.0 * kK * kM * kN * s.iterations() / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_sgemm)->Name("native/openblas_sgemm/128x128x512_threads")->Arg(1);
// Two threads: CPU time would count the calling thread only, so this one reports wall time.
BENCHMARK(BM_sgemm)->Name("native/openblas_sgemm/128x128x512_threads")->Arg(2)->UseRealTime();
#endif

// ---- max8 ------------------------------------------------------------------------------------
constexpr uint32_t kMaxF = 16384;

void BM_max8(benchmark::State& s) {
  Core c;
  Inst in = make_inst(Opcode::max8, Engine::dve);
  set_ap(in, "dst", tile(MemSpace::sbuf, DType::fp32, kP, kMaxF * 4, 8));
  set_ap(in, "src", tile(MemSpace::sbuf, DType::fp32, kP, 0, kMaxF));
  c.cx.engine = Engine::dve;
  for (auto _ : s) {
    sem_max8(c.cx, in);
    benchmark::ClobberMemory();
  }
  s.SetItemsProcessed(s.iterations() * kP * kMaxF);
}
BENCHMARK(BM_max8)->Name("sem/max8/128x16384_fp32");

// Native top-8: keep the 8 largest in a descending array, insert when beating the last.
void BM_native_top8(benchmark::State& s) {
  Core c;
  for (auto _ : s) {
    for (uint32_t p = 0; p < kP; ++p) {
      const float* x = reinterpret_cast<const float*>(c.row(p, 0));
      float top[8];
      std::fill(top, top + 8, -INFINITY);
      for (uint32_t i = 0; i < kMaxF; ++i) {
        const float v = x[i];
        if (!(v > top[7])) continue;
        int k = 7;
        for (; k > 0 && v > top[k - 1]; --k) top[k] = top[k - 1];
        top[k] = v;
      }
      std::memcpy(c.row(p, kMaxF * 4), top, sizeof top);
    }
    benchmark::ClobberMemory();
  }
  s.SetItemsProcessed(s.iterations() * kP * kMaxF);
}
BENCHMARK(BM_native_top8)->Name("native/top8/128x16384_fp32");

} // namespace
} // namespace nisa::interp

BENCHMARK_MAIN();
