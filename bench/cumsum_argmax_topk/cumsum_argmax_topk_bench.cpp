// Kernels on the modelled machine (assembled once; each iteration resets the machine, binds
// the input and runs) beside native C++ for the same math: std::partial_sum,
// std::max_element, std::partial_sort. Ratios go to docs/performance.md.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bench/kernel_assemble.h"
#include "interp/core/machine.h"
#include "interp/sched/scheduler.h"

namespace {

using nisa::Module;
using nisa::Target;
using nisa::bench::Defines;

using nisa::bench::assemble_kernel;

std::vector<float> random_input(size_t n) {
  std::mt19937 rng(42);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng);
  return v;
}

// Runs `file` on trn2 with --lnc `lnc` once per iteration; x is fp32.
void run_kernel(benchmark::State& st, const std::string& file, const Defines& d, int lnc,
                const std::vector<float>& x) {
  const Module m = assemble_kernel(file, d);
  nisa::interp::MachineOptions mo;
  mo.lnc = lnc;
  nisa::interp::Machine machine(m, mo);
  const nisa::TensorDecl* in = machine.find_tensor("x");
  for (auto _ : st) {
    machine.reset();
    machine.write_tensor(*in, reinterpret_cast<const uint8_t*>(x.data()));
    auto r = nisa::interp::run(machine);
    if (r.status != nisa::interp::RunStatus::ok) st.SkipWithError(r.report.c_str());
    st.counters["modelled_us"] = double(r.stats.makespan_ticks) / 33600.0;
  }
}

void BM_Cumsum_Nisa(benchmark::State& st) {
  run_kernel(st, "cumsum.nasm", {{"ROWS", "2048"}, {"COLS", "8192"}, {"DT", "fp32"}}, 1,
             random_input(2048 * 8192));
}
void BM_Cumsum_Native(benchmark::State& st) {
  const std::vector<float> x = random_input(2048 * 8192);
  std::vector<float> y(x.size());
  for (auto _ : st) {
    for (size_t r = 0; r < 2048; ++r)
      std::partial_sum(x.begin() + r * 8192, x.begin() + (r + 1) * 8192, y.begin() + r * 8192);
    benchmark::DoNotOptimize(y.data());
  }
}

void BM_CascadedMax_Nisa(benchmark::State& st) {
  run_kernel(st, "cascaded_max.nasm", {{"BXS", "64"}, {"V", "151936"}, {"DT", "fp32"}}, 2,
             random_input(64 * 151936));
}
void BM_CascadedMax_Native(benchmark::State& st) {
  const std::vector<float> x = random_input(64 * 151936);
  std::vector<uint32_t> idx(64);
  for (auto _ : st) {
    for (size_t r = 0; r < 64; ++r) {
      auto first = x.begin() + r * 151936;
      idx[r] = uint32_t(std::max_element(first, first + 151936) - first);
    }
    benchmark::DoNotOptimize(idx.data());
  }
}

void topk_native(benchmark::State& st, size_t rows, size_t v, size_t k) {
  const std::vector<float> x = random_input(rows * v);
  std::vector<uint32_t> order(v);
  for (auto _ : st) {
    for (size_t r = 0; r < rows; ++r) {
      const float* row = &x[r * v];
      std::iota(order.begin(), order.end(), 0u);
      std::partial_sort(order.begin(), order.begin() + long(k), order.end(),
                        [row](uint32_t a, uint32_t b) { return row[a] > row[b]; });
      benchmark::DoNotOptimize(order.data());
    }
  }
}

void BM_TopkRotational_8x151936_K2048_Nisa(benchmark::State& st) {
  run_kernel(st, "topk.nasm",
             {{"BXS", "8"}, {"V", "151936"}, {"K", "2048"}, {"METHOD", "rotational"}}, 2,
             random_input(8 * 151936));
}
void BM_TopkRotational_8x151936_K2048_Native(benchmark::State& st) {
  topk_native(st, 8, 151936, 2048);
}
void BM_TopkRotational_1024x8192_K2048_Nisa(benchmark::State& st) {
  run_kernel(st, "topk.nasm",
             {{"BXS", "1024"}, {"V", "8192"}, {"K", "2048"}, {"METHOD", "rotational"}}, 2,
             random_input(1024 * 8192));
}
void BM_TopkRotational_1024x8192_K2048_Native(benchmark::State& st) {
  topk_native(st, 1024, 8192, 2048);
}

} // namespace

BENCHMARK(BM_Cumsum_Nisa)->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK(BM_Cumsum_Native)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CascadedMax_Nisa)->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK(BM_CascadedMax_Native)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TopkRotational_8x151936_K2048_Nisa)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_TopkRotational_8x151936_K2048_Native)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TopkRotational_1024x8192_K2048_Nisa)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_TopkRotational_1024x8192_K2048_Native)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
