// attention_block_tkg.nasm at B = 4, S = 1, H = 4096, QH = 8, D = 128, S_CTX = 8192, bf16,
// RoPE half, no QK-norm, no FP8, --lnc 1 and --lnc 2, on the modelled machine (assembled once;
// each iteration resets the machine, binds the inputs and runs) beside native C++ of the same
// math in the same run (fp32 on the same values: RMSNorm, the projections and the attention
// products by sgemm (OpenBLAS when present), RoPE, softmax, the cache update). Counters: the
// modelled time and the per-engine busy time of core 0 (us).
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

constexpr int kB = 4, kS = 1, kH = 4096, kQH = 8, kD = 128, kCtx = 8192;
constexpr int kT = kB * kS, kW = (kQH + 2) * kD, kHD = kD / 2;
constexpr double kTicksPerUs = 33600.0;

struct Problem {
  std::vector<float> x, nw, wqkv, wo, cs, sn, kc, vc;
  std::vector<uint8_t> mask;
  std::vector<uint32_t> pos;
  Problem() {
    x = random_bf16(size_t(kT) * kH, 1, 1.0f);
    nw = random_bf16(size_t(kH), 2, 0.2f, 1.0f);
    wqkv = random_bf16(size_t(kH) * kW, 3, 1.0f / 64);
    wo = random_bf16(size_t(kQH) * kD * kH, 4, 1.0f / 32);
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> ang(0.0f, 6.2831853f);
    for (int k = 0; k < kT * kHD; ++k) {
      const float a = ang(rng);
      cs.push_back(std::cos(a));
      sn.push_back(std::sin(a));
    }
    kc = random_bf16(size_t(kB) * kCtx * kD, 6, 1.0f);
    vc = random_bf16(size_t(kB) * kCtx * kD, 7, 1.0f);
    for (int b = 0; b < kB; ++b) pos.push_back(uint32_t(1000 * (b + 1)));
    mask.assign(size_t(kT) * kCtx, 0);
    for (int b = 0; b < kB; ++b)
      for (int j = 0; j < int(pos[size_t(b)]); ++j) mask[size_t(b) * kCtx + j] = 1;
  }
  Defines defines() const {
    return {{"B", std::to_string(kB)}, {"S", std::to_string(kS)},
            {"H", std::to_string(kH)}, {"QH", std::to_string(kQH)},
            {"D", std::to_string(kD)}, {"S_CTX", std::to_string(kCtx)},
            {"ROPE", "half"},          {"QK_NORM", "none"},
            {"FP8_KV", "0"},           {"DT", "bf16"}};
  }
  Inputs inputs() const {
    return {{"x", bf16_bytes(x)},        {"norm_w", bf16_bytes(nw)},  {"w_qkv", bf16_bytes(wqkv)},
            {"w_o", bf16_bytes(wo)},     {"cos", raw_bytes(cs)},      {"sin", raw_bytes(sn)},
            {"k_cache", bf16_bytes(kc)}, {"v_cache", bf16_bytes(vc)}, {"mask", mask},
            {"pos", raw_bytes(pos)}};
  }
};

const Problem& problem() {
  static const Problem p;
  return p;
}

void BM_Attn_Nisa(benchmark::State& st) {
  const int lnc = int(st.range(0));
  const nisa::Module m =
      nisa::bench::assemble_kernel("attention_block_tkg.nasm", problem().defines());
  nisa::interp::MachineOptions mo;
  mo.lnc = lnc;
  nisa::interp::Machine machine(m, mo);
  const Inputs in = problem().inputs();
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

// C[m, n] = op(A) op(B), row major.
void gemm(bool tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb, float* c,
          int ldc) {
#ifdef NISA_HAVE_OPENBLAS
  cblas_sgemm(CblasRowMajor, CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a, lda, b,
              ldb, 0.0f, c, ldc);
#else
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      float s = 0;
      for (int q = 0; q < k; ++q)
        s += a[size_t(i) * lda + q] * (tb ? b[size_t(j) * ldb + q] : b[size_t(q) * ldb + j]);
      c[size_t(i) * ldc + j] = s;
    }
#endif
}

void BM_Attn_Native(benchmark::State& st) {
  const Problem& p = problem();
  std::vector<float> xn(size_t(kT) * kH), qkv(size_t(kT) * kW),
      kcache = p.kc, vcache = p.vc, sc(size_t(kS) * kQH * (kCtx + kS)), att(size_t(kT) * kQH * kD),
      out(size_t(kT) * kH), kb(size_t(kCtx + kS) * kD), vb(kb.size());
  for (auto _ : st) {
    for (int t = 0; t < kT; ++t) {
      float ss = 0;
      for (int h = 0; h < kH; ++h) ss += p.x[size_t(t) * kH + h] * p.x[size_t(t) * kH + h];
      const float r = 1.0f / std::sqrt(ss / kH + 1e-6f);
      for (int h = 0; h < kH; ++h)
        xn[size_t(t) * kH + h] = p.x[size_t(t) * kH + h] * r * p.nw[size_t(h)];
    }
    gemm(false, kT, kW, kH, xn.data(), kH, p.wqkv.data(), kW, qkv.data(), kW);
    for (int t = 0; t < kT; ++t)
      for (int hd = 0; hd <= kQH; ++hd) {
        float* v = &qkv[size_t(t) * kW + size_t(hd) * kD];
        for (int i = 0; i < kHD; ++i) {
          const float c = p.cs[size_t(t) * kHD + i], s = p.sn[size_t(t) * kHD + i];
          const float x1 = v[i], x2 = v[i + kHD];
          v[i] = x1 * c - x2 * s;
          v[i + kHD] = x2 * c + x1 * s;
        }
      }
    const float isd = 1.0f / std::sqrt(float(kD));
    for (int b = 0; b < kB; ++b) {
      // keys / values: the cache as given, then the active tokens
      std::memcpy(kb.data(), &kcache[size_t(b) * kCtx * kD], size_t(kCtx) * kD * sizeof(float));
      std::memcpy(vb.data(), &vcache[size_t(b) * kCtx * kD], size_t(kCtx) * kD * sizeof(float));
      for (int s = 0; s < kS; ++s) {
        std::memcpy(&kb[size_t(kCtx + s) * kD], &qkv[size_t(b * kS + s) * kW + size_t(kQH) * kD],
                    kD * sizeof(float));
        std::memcpy(&vb[size_t(kCtx + s) * kD],
                    &qkv[size_t(b * kS + s) * kW + size_t(kQH + 1) * kD], kD * sizeof(float));
      }
      for (int s = 0; s < kS; ++s)
        gemm(true, kQH, kCtx + kS, kD, &qkv[size_t(b * kS + s) * kW], kD, kb.data(), kD,
             &sc[size_t(s) * kQH * (kCtx + kS)], kCtx + kS);
      for (int s = 0; s < kS; ++s)
        for (int h = 0; h < kQH; ++h) {
          float* row = &sc[(size_t(s) * kQH + h) * (kCtx + kS)];
          float mx = -INFINITY;
          for (int j = 0; j < kCtx + kS; ++j) {
            const bool vis = j < kCtx ? p.mask[size_t(b * kS + s) * kCtx + j] != 0 : j - kCtx <= s;
            row[j] = vis ? row[j] * isd : -INFINITY;
            mx = std::max(mx, row[j]);
          }
          float l = 0;
          for (int j = 0; j < kCtx + kS; ++j) l += (row[j] = std::exp(row[j] - mx));
          for (int j = 0; j < kCtx + kS; ++j) row[j] /= l;
        }
      gemm(false, kS * kQH, kD, kCtx + kS, sc.data(), kCtx + kS, vb.data(), kD,
           &att[size_t(b) * kS * kQH * kD], kD);
    }
    gemm(false, kT, kH, kQH * kD, att.data(), kQH * kD, p.wo.data(), kH, out.data(), kH);
    for (int b = 0; b < kB; ++b)
      for (int s = 0; s < kS; ++s) {
        const size_t row = size_t(b) * kCtx + p.pos[size_t(b)] + s;
        std::memcpy(&kcache[row * kD], &qkv[size_t(b * kS + s) * kW + size_t(kQH) * kD],
                    kD * sizeof(float));
        std::memcpy(&vcache[row * kD], &qkv[size_t(b * kS + s) * kW + size_t(kQH + 1) * kD],
                    kD * sizeof(float));
      }
    benchmark::DoNotOptimize(out.data());
    benchmark::DoNotOptimize(kcache.data());
    benchmark::DoNotOptimize(vcache.data());
  }
}

BENCHMARK(BM_Attn_Nisa)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_Attn_Native)->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
