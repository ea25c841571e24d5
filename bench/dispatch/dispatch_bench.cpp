// Dispatch rate of the scheduler on sync-only instructions (nops with waits and signals).
// Target: >= 20 million instructions per second.
//
// Native baseline in the same run: a plain loop doing the same semaphore arithmetic
// (increment, compare) for the same number of instructions, with no scheduling.
#include <benchmark/benchmark.h>

#include "interp/core/machine.h"
#include "interp/sched/scheduler.h"
#include "isa/module.h"

namespace {

using namespace nisa;

// `engines` streams of n nops each. With `chained`, nop i of engine e waits until the previous
// engine has completed i (+1) nops and signals its own semaphore: the engines interleave and
// every instruction goes through a wait check, a signal and a wake-up.
Module sync_module(int engines, int n, bool chained) {
  Module m;
  m.kernel = "dispatch";
  for (int e = 0; e < engines; ++e) m.sems.push_back({"s" + std::to_string(e), 0});
  for (int e = 0; e < engines; ++e) {
    auto& s = m.streams[e];
    s.reserve(n);
    for (int i = 0; i < n; ++i) {
      Inst in = make_inst(Opcode::nop, static_cast<Engine>(e));
      in.signals.push_back({uint16_t(e), 1});
      if (chained && e > 0) in.waits.push_back({uint16_t(e - 1), WaitCmp::ge, uint32_t(i + 1)});
      s.push_back(std::move(in));
    }
  }
  return m;
}

void run_bench(benchmark::State& st, bool chained) {
  const int engines = 5, n = 200000;
  Module mod = sync_module(engines, n, chained);
  interp::Machine m(mod, {});
  for (auto _ : st) {
    st.PauseTiming();
    m.reset();
    st.ResumeTiming();
    auto r = interp::run(m);
    if (r.status != interp::RunStatus::ok) st.SkipWithError("run failed");
    benchmark::DoNotOptimize(r.stats.makespan_ticks);
  }
  st.SetItemsProcessed(st.iterations() * int64_t(engines) * n);
}

void BM_DispatchIndependent(benchmark::State& st) { run_bench(st, false); }
void BM_DispatchChained(benchmark::State& st) { run_bench(st, true); }

// Native: the same semaphore increments and wait comparisons in a plain loop.
void BM_NativeSemaphoreLoop(benchmark::State& st) {
  const int engines = 5, n = 200000;
  std::vector<uint32_t> sems(engines);
  for (auto _ : st) {
    std::fill(sems.begin(), sems.end(), 0);
    for (int i = 0; i < n; ++i)
      for (int e = 0; e < engines; ++e) {
        if (e > 0 && sems[e - 1] < uint32_t(i + 1)) abort();
        sems[e] += 1;
      }
    benchmark::DoNotOptimize(sems.data());
  }
  st.SetItemsProcessed(st.iterations() * int64_t(engines) * n);
}

BENCHMARK(BM_DispatchIndependent)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DispatchChained)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_NativeSemaphoreLoop)->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
