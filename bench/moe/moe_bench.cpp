// MoE blockwise forward (moe_fwd_shard_h.nasm) and backward (moe_bwd.nasm) at T = 4096,
// H = 4096, E = 4, B = 512, TOPK = 2, I = 384, bf16, --lnc 2 on the modelled machine (assembled
// once; each iteration resets the machine, binds the inputs and runs) beside native C++ of the
// same math in the same run: per block, gather, sgemm (OpenBLAS when present), SwiGLU,
// scatter-add, on the same values in fp32. Counters: modelled time and per-engine busy time of
// core 0 (us).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_data.h"
#include "bench/kernel_assemble.h"
#include "interp/core/machine.h"
#include "interp/sched/scheduler.h"
#include "isa/dtype.h"
#ifdef NISA_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace {

using nisa::bench::bf16_bytes;
using nisa::bench::Defines;
using nisa::bench::random_bf16;
using nisa::bench::raw_bytes;
using Inputs = std::map<std::string, std::vector<uint8_t>>;

constexpr int kT = 4096, kH = 4096, kE = 4, kB = 512, kTopk = 2, kI = 384;
constexpr double kTicksPerUs = 33600.0;

// The problem: routing as the seed's tests (TOPK distinct random experts per token, blocks per
// expert = ceil(count / B), padding T, extra blocks to the last expert), inputs, checkpoints.
struct Problem {
  int n = 0;
  std::vector<int32_t> tp, b2e;
  std::vector<float> aff, hidden, wgu, wd, go, gu, y;
  Problem() {
    std::mt19937 rng(0);
    std::vector<std::vector<int>> tok(kE);
    aff.assign(size_t(kT + 1) * kE, 0.0f);
    for (int t = 0; t < kT; ++t) {
      int ex[kE] = {0, 1, 2, 3};
      std::shuffle(ex, ex + kE, rng);
      for (int k = 0; k < kTopk; ++k) {
        tok[size_t(ex[k])].push_back(t);
        aff[size_t(t) * kE + ex[k]] = nisa::bf16_to_f32(nisa::f32_to_bf16(0.5f));
      }
    }
    n = (kT * kTopk - (kE - 1) + kB - 1) / kB + kE - 1;
    for (int e = 0; e < kE; ++e)
      for (size_t s0 = 0; s0 < tok[size_t(e)].size(); s0 += kB) {
        b2e.push_back(e);
        for (size_t j = 0; j < size_t(kB); ++j)
          tp.push_back(s0 + j < tok[size_t(e)].size() ? tok[size_t(e)][s0 + j] : kT);
      }
    while (int(b2e.size()) < n) {
      b2e.push_back(kE - 1);
      for (int j = 0; j < kB; ++j) tp.push_back(kT);
    }
    hidden = random_bf16(size_t(kT + 1) * kH, 1, 1.0f);
    std::fill(hidden.begin() + ptrdiff_t(kT) * kH, hidden.end(), 0.0f);
    wgu = random_bf16(size_t(kE) * kH * 2 * kI, 2, 1.0f / 64);
    wd = random_bf16(size_t(kE) * kI * kH, 3, 0.05f);
    go = random_bf16(size_t(kT + 1) * kH, 4, 1.0f);
    gu = random_bf16(size_t(n) * 2 * kI * kB, 5, 1.0f);
    y = random_bf16(size_t(n) * kB * kH, 6, 1.0f);
  }
  Defines defines() const {
    return {{"T", std::to_string(kT)},
            {"H", std::to_string(kH)},
            {"E", std::to_string(kE)},
            {"B", std::to_string(kB)},
            {"N", std::to_string(n)},
            {"I", std::to_string(kI)},
            {"DT", "bf16"}};
  }
  Inputs fwd_inputs() const {
    return {{"hidden", bf16_bytes(hidden)},          {"affinities", bf16_bytes(aff)},
            {"w_gate_up", bf16_bytes(wgu)},          {"w_down", bf16_bytes(wd)},
            {"token_position_to_id", raw_bytes(tp)}, {"block_to_expert", raw_bytes(b2e)}};
  }
};

const Problem& problem() {
  static const Problem p;
  return p;
}

void run_nisa(benchmark::State& st, const char* file, const Inputs& in) {
  const nisa::Module m = nisa::bench::assemble_kernel(file, problem().defines());
  nisa::interp::MachineOptions mo;
  mo.lnc = 2;
  nisa::interp::Machine machine(m, mo);
  for (auto _ : st) {
    machine.reset();
    for (const auto& [name, bytes] : in)
      machine.write_tensor(*machine.find_tensor(name), bytes.data());
    auto r = nisa::interp::run(machine);
    if (r.status != nisa::interp::RunStatus::ok) st.SkipWithError(r.report.c_str());
    st.counters["modelled_us"] = double(r.stats.makespan_ticks) / kTicksPerUs;
    const char* names[] = {"pe_us", "act_us", "dve_us", "pool_us", "sp_us"};
    for (int e = 0; e < 5; ++e)
      st.counters[names[e]] = double(r.stats.cores[0].eng[size_t(e)].busy_ticks) / kTicksPerUs;
  }
}

void BM_MoeFwd_Nisa(benchmark::State& st) {
  run_nisa(st, "moe_fwd_shard_h.nasm", problem().fwd_inputs());
}
void BM_MoeBwd_Nisa(benchmark::State& st) {
  const Problem& p = problem();
  Inputs in = p.fwd_inputs();
  in["gate_up_ckpt"] = bf16_bytes(p.gu);
  in["down_ckpt"] = bf16_bytes(p.y);
  in["grad_out"] = bf16_bytes(p.go);
  run_nisa(st, "moe_bwd.nasm", in);
}

// C[m, n] (+)= op(A) op(B), row major.
void gemm(bool ta, bool tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb,
          float beta, float* c, int ldc) {
#ifdef NISA_HAVE_OPENBLAS
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n,
              k, 1.0f, a, lda, b, ldb, beta, c, ldc);
#else
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      float s = 0;
      for (int q = 0; q < k; ++q)
        s += (ta ? a[size_t(q) * lda + i] : a[size_t(i) * lda + q]) *
             (tb ? b[size_t(j) * ldb + q] : b[size_t(q) * ldb + j]);
      c[size_t(i) * ldc + j] = beta * c[size_t(i) * ldc + j] + s;
    }
#endif
}
float silu(float x) { return x / (1.0f + std::exp(-x)); }
float silu_dx(float x) {
  const float s = 1.0f / (1.0f + std::exp(-x));
  return s * (1.0f + x * (1.0f - s));
}

void BM_MoeFwd_Native(benchmark::State& st) {
  const Problem& p = problem();
  std::vector<float> x(size_t(kB) * kH), g(size_t(kB) * 2 * kI), m(size_t(kB) * kI),
      y(size_t(kB) * kH), out(size_t(kT + 1) * kH);
  for (auto _ : st) {
    std::fill(out.begin(), out.end(), 0.0f);
    for (int n = 0; n < p.n; ++n) {
      const int e = p.b2e[size_t(n)];
      for (int j = 0; j < kB; ++j)
        std::memcpy(&x[size_t(j) * kH], &p.hidden[size_t(p.tp[size_t(n) * kB + j]) * kH],
                    kH * sizeof(float));
      gemm(false, false, kB, 2 * kI, kH, x.data(), kH, &p.wgu[size_t(e) * kH * 2 * kI], 2 * kI,
           0.0f, g.data(), 2 * kI);
      for (int j = 0; j < kB; ++j)
        for (int i = 0; i < kI; ++i)
          m[size_t(j) * kI + i] = silu(g[size_t(j) * 2 * kI + i]) * g[size_t(j) * 2 * kI + kI + i];
      gemm(false, false, kB, kH, kI, m.data(), kI, &p.wd[size_t(e) * kI * kH], kH, 0.0f, y.data(),
           kH);
      for (int j = 0; j < kB; ++j) {
        const int t = p.tp[size_t(n) * kB + j];
        const float a = p.aff[size_t(t) * kE + e];
        for (int h = 0; h < kH; ++h) out[size_t(t) * kH + h] += a * y[size_t(j) * kH + h];
      }
    }
    benchmark::DoNotOptimize(out.data());
  }
}

void BM_MoeBwd_Native(benchmark::State& st) {
  const Problem& p = problem();
  std::vector<float> x(size_t(kB) * kH), dy(size_t(kB) * kH), m(size_t(kB) * kI),
      dm(size_t(kB) * kI), dgu(size_t(kB) * 2 * kI), gx(size_t(kB) * kH), gh(size_t(kT + 1) * kH),
      gaff(size_t(kT + 1) * kE), gwgu(size_t(kE) * kH * 2 * kI), gwd(size_t(kE) * kI * kH);
  for (auto _ : st) {
    std::fill(gh.begin(), gh.end(), 0.0f);
    std::fill(gwgu.begin(), gwgu.end(), 0.0f);
    std::fill(gwd.begin(), gwd.end(), 0.0f);
    for (int n = 0; n < p.n; ++n) {
      const int e = p.b2e[size_t(n)];
      for (int j = 0; j < kB; ++j) {
        const int t = p.tp[size_t(n) * kB + j];
        const float a = p.aff[size_t(t) * kE + e];
        const float* gr = &p.go[size_t(t) * kH];
        const float* yr = &p.y[(size_t(n) * kB + j) * kH];
        float da = 0;
        for (int h = 0; h < kH; ++h) {
          da += gr[h] * yr[h];
          dy[size_t(j) * kH + h] = a * gr[h];
        }
        gaff[size_t(t) * kE + e] = da;
        std::memcpy(&x[size_t(j) * kH], &p.hidden[size_t(t) * kH], kH * sizeof(float));
        for (int i = 0; i < kI; ++i) {
          const float gv = p.gu[((size_t(n) * 2) * kI + i) * kB + j];
          const float uv = p.gu[((size_t(n) * 2 + 1) * kI + i) * kB + j];
          m[size_t(j) * kI + i] = silu(gv) * uv;
        }
      }
      gemm(true, false, kI, kH, kB, m.data(), kI, dy.data(), kH, 1.0f, &gwd[size_t(e) * kI * kH],
           kH);
      gemm(false, true, kB, kI, kH, dy.data(), kH, &p.wd[size_t(e) * kI * kH], kH, 0.0f, dm.data(),
           kI);
      for (int j = 0; j < kB; ++j)
        for (int i = 0; i < kI; ++i) {
          const float gv = p.gu[((size_t(n) * 2) * kI + i) * kB + j];
          const float uv = p.gu[((size_t(n) * 2 + 1) * kI + i) * kB + j];
          const float d = dm[size_t(j) * kI + i];
          dgu[size_t(j) * 2 * kI + i] = d * uv * silu_dx(gv);
          dgu[size_t(j) * 2 * kI + kI + i] = d * silu(gv);
        }
      gemm(true, false, kH, 2 * kI, kB, x.data(), kH, dgu.data(), 2 * kI, 1.0f,
           &gwgu[size_t(e) * kH * 2 * kI], 2 * kI);
      gemm(false, true, kB, kH, 2 * kI, dgu.data(), 2 * kI, &p.wgu[size_t(e) * kH * 2 * kI], 2 * kI,
           0.0f, gx.data(), kH);
      for (int j = 0; j < kB; ++j) {
        const int t = p.tp[size_t(n) * kB + j];
        for (int h = 0; h < kH; ++h) gh[size_t(t) * kH + h] += gx[size_t(j) * kH + h];
      }
    }
    benchmark::DoNotOptimize(gh.data());
    benchmark::DoNotOptimize(gwgu.data());
    benchmark::DoNotOptimize(gwd.data());
    benchmark::DoNotOptimize(gaff.data());
  }
}

BENCHMARK(BM_MoeFwd_Nisa)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_MoeFwd_Native)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MoeBwd_Nisa)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_MoeBwd_Native)->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
