// Cross-entropy and the convolutions on the modelled machine (assembled once; each iteration resets
// the machine, binds the inputs and runs) beside native C++ of the same math in the same run: a
// fused log-softmax loop (cross-entropy forward + backward), an im2col convolution on sgemm
// (conv1d), a direct per-channel loop (depthwise). bf16 data; the native code works on the same
// values in fp32.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
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

using nisa::Module;
using nisa::Target;
using nisa::bench::bf16_bytes;
using nisa::bench::Defines;
using nisa::bench::random_bf16;
using nisa::bench::raw_bytes;
using Inputs = std::map<std::string, std::vector<uint8_t>>;

using nisa::bench::assemble_kernel;

// Runs each module in turn per iteration (fwd then bwd for cross-entropy).
void run_modules(benchmark::State& st, const std::vector<std::pair<Module, Inputs>>& work,
                 int lnc) {
  std::vector<std::unique_ptr<nisa::interp::Machine>> ms;
  nisa::interp::MachineOptions mo;
  mo.lnc = lnc;
  for (const auto& w : work) ms.push_back(std::make_unique<nisa::interp::Machine>(w.first, mo));
  for (auto _ : st) {
    double modelled = 0;
    for (size_t i = 0; i < work.size(); ++i) {
      ms[i]->reset();
      for (const auto& [name, bytes] : work[i].second)
        ms[i]->write_tensor(*ms[i]->find_tensor(name), bytes.data());
      auto r = nisa::interp::run(*ms[i]);
      if (r.status != nisa::interp::RunStatus::ok) st.SkipWithError(r.report.c_str());
      modelled += double(r.stats.makespan_ticks) / 33600.0;
    }
    st.counters["modelled_us"] = modelled;
  }
}

// ---- cross-entropy forward + backward, 512 x 128256 bf16, --lnc 2 ------------------------------
constexpr int kNpos = 512, kVocab = 128256;

void BM_CrossEntropyFwdBwd_Nisa(benchmark::State& st) {
  const std::vector<float> x = random_bf16(size_t(kNpos) * kVocab, 1);
  std::vector<int32_t> t(kNpos);
  for (int i = 0; i < kNpos; ++i) t[size_t(i)] = (i * 7919) % kVocab;
  std::vector<float> lse(kNpos, 12.0f); // any fp32 lse: the backward's cost does not depend on it
  const Defines d = {
      {"NPOS", std::to_string(kNpos)}, {"V", std::to_string(kVocab)}, {"DT", "bf16"}};
  Defines db = d;
  db.push_back({"REDUCTION", "mean"});
  const Inputs fin = {{"logits", bf16_bytes(x)}, {"targets", raw_bytes(t)}};
  Inputs bin = fin;
  bin["lse"] = raw_bytes(lse);
  run_modules(st,
              {{assemble_kernel("cross_entropy_fwd.nasm", d), fin},
               {assemble_kernel("cross_entropy_bwd.nasm", db), bin}},
              2);
}
void BM_CrossEntropyFwdBwd_Native(benchmark::State& st) {
  const std::vector<float> x = random_bf16(size_t(kNpos) * kVocab, 1);
  std::vector<float> loss(kNpos), grad(x.size());
  for (auto _ : st) {
    for (int i = 0; i < kNpos; ++i) {
      const float* r = &x[size_t(i) * kVocab];
      const int t = (i * 7919) % kVocab;
      const float m = *std::max_element(r, r + kVocab);
      float s = 0;
      for (int j = 0; j < kVocab; ++j) s += std::exp(r[j] - m);
      const float l = m + std::log(s);
      loss[size_t(i)] = l - r[t];
      float* g = &grad[size_t(i) * kVocab];
      for (int j = 0; j < kVocab; ++j) g[j] = std::exp(r[j] - l) / kNpos;
      g[t] -= 1.0f / kNpos;
    }
    benchmark::DoNotOptimize(loss.data());
    benchmark::DoNotOptimize(grad.data());
  }
}

// ---- conv1d B4 CIN128 L4096 COUT256 K3 (pad 1, 1), bf16, lnc 2 sharded -------------------------
constexpr int kB = 4, kCin = 128, kL = 4096, kCout = 256, kK = 3;

void BM_Conv1d_Nisa(benchmark::State& st) {
  const std::vector<float> x = random_bf16(size_t(kB) * kCin * kL, 2);
  const std::vector<float> f = random_bf16(size_t(kK) * kCin * kCout, 3);
  const Defines d = {{"B", "4"},      {"CIN", "128"},    {"COUT", "256"}, {"L", "4096"},
                     {"K", "3"},      {"PAD_L", "1"},    {"PAD_R", "1"},  {"DT", "bf16"},
                     {"ACT", "none"}, {"LNC_SHARD", "1"}};
  run_modules(
      st, {{assemble_kernel("conv1d.nasm", d), {{"x", bf16_bytes(x)}, {"filters", bf16_bytes(f)}}}},
      2);
}
void BM_Conv1d_Native(benchmark::State& st) {
  const std::vector<float> x = random_bf16(size_t(kB) * kCin * kL, 2);
  const std::vector<float> f = random_bf16(size_t(kK) * kCin * kCout, 3);
  // filters [K, CIN, COUT] are already the [K*CIN, COUT] matrix of an im2col [K*CIN, L] input
  std::vector<float> col(size_t(kK) * kCin * kL), y(size_t(kB) * kCout * kL);
  for (auto _ : st) {
    for (int b = 0; b < kB; ++b) {
      for (int k = 0; k < kK; ++k)
        for (int c = 0; c < kCin; ++c) {
          float* row = &col[(size_t(k) * kCin + c) * kL];
          const float* xr = &x[(size_t(b) * kCin + c) * kL];
          for (int l = 0; l < kL; ++l) {
            const int p = l + k - 1;
            row[l] = p >= 0 && p < kL ? xr[p] : 0.0f;
          }
        }
      float* yb = &y[size_t(b) * kCout * kL];
#ifdef NISA_HAVE_OPENBLAS
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, kCout, kL, kK * kCin, 1.0f, f.data(),
                  kCout, col.data(), kL, 0.0f, yb, kL);
#else
      std::fill(yb, yb + size_t(kCout) * kL, 0.0f);
      for (int kc = 0; kc < kK * kCin; ++kc)
        for (int o = 0; o < kCout; ++o) {
          const float w = f[size_t(kc) * kCout + o];
          const float* cr = &col[size_t(kc) * kL];
          float* yr = &yb[size_t(o) * kL];
          for (int l = 0; l < kL; ++l) yr[l] += w * cr[l];
        }
#endif
    }
    benchmark::DoNotOptimize(y.data());
  }
}

// ---- depthwise N1 C1024 W1024 S128 (pad 64, 63), bf16, lnc 2 ----------------------------------
constexpr int kC = 1024, kW = 1024, kS = 128;

void BM_Depthwise_Nisa(benchmark::State& st) {
  const std::vector<float> x = random_bf16(size_t(kC) * kW, 4);
  const std::vector<float> f = random_bf16(size_t(kC) * kS, 5);
  const Defines d = {{"N", "1"},      {"C", "1024"},   {"W", "1024"}, {"S", "128"},
                     {"PAD_L", "64"}, {"PAD_R", "63"}, {"DT", "bf16"}};
  run_modules(st,
              {{assemble_kernel("depthwise_conv1d.nasm", d),
                {{"img", bf16_bytes(x)}, {"filter", bf16_bytes(f)}}}},
              2);
}
void BM_Depthwise_Native(benchmark::State& st) {
  const std::vector<float> x = random_bf16(size_t(kC) * kW, 4);
  const std::vector<float> f = random_bf16(size_t(kC) * kS, 5);
  const int q = kW + 64 + 63 - kS + 1;
  std::vector<float> y(size_t(kC) * q);
  for (auto _ : st) {
    for (int c = 0; c < kC; ++c)
      for (int j = 0; j < q; ++j) {
        float acc = 0;
        for (int s = 0; s < kS; ++s) {
          const int p = j + s - 64;
          if (p >= 0 && p < kW) acc += f[size_t(c) * kS + s] * x[size_t(c) * kW + p];
        }
        y[size_t(c) * q + j] = acc;
      }
    benchmark::DoNotOptimize(y.data());
  }
}

BENCHMARK(BM_CrossEntropyFwdBwd_Nisa)->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK(BM_CrossEntropyFwdBwd_Native)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Conv1d_Nisa)->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK(BM_Conv1d_Native)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Depthwise_Nisa)->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK(BM_Depthwise_Native)->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
