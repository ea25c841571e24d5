// transformer_tkg.nasm at TP = 8, LAYERS = 4, B = 8, S = 1, H = 8192, QH = 8, D = 128,
// S_CTX = 2048, I = 3584, bf16, --ranks 8 --lnc 2 (Llama-70B-like per-rank shards), both residual
// paths (argument 0: HBM, 1: SBUF). The inputs (6.8 GB of weights over the 8 ranks) are written
// straight into each rank's HBM from a fast seeded generator, once; each iteration resets the
// machine's on-chip state and runs. Counters: the modelled time, the busy time per engine of rank
// 0 core 0, the DMA bytes moved by all queues of all cores (HBM traffic: every DMA has an HBM
// side except the few SBUF-to-SBUF copies), the collective link bytes, and the process's peak
// RSS (run one path per process for a per-path figure: --benchmark_filter=BM_Tkg/0).
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "bench/kernel_assemble.h"
#include "interp/core/machine.h"
#include "interp/sched/scheduler.h"
#include "isa/dtype.h"

namespace {

constexpr int kTP = 8, kL = 4, kB = 8, kS = 1, kH = 8192, kQH = 8, kD = 128, kCtx = 2048, kI = 3584;
constexpr double kTicksPerUs = 33600.0;

nisa::bench::Defines defines(int sbuf) {
  const auto s = [](int v) { return std::to_string(v); };
  return {{"LAYERS", s(kL)}, {"TP", s(kTP)},   {"SBUF_RESIDUAL", s(sbuf)},
          {"B", s(kB)},      {"S", s(kS)},     {"H", s(kH)},
          {"QH", s(kQH)},    {"D", s(kD)},     {"S_CTX", s(kCtx)},
          {"I", s(kI)},      {"ROPE", "half"}, {"DT", "bf16"}};
}

// Uniform in [-a, a] as bf16 bits (xorshift64*): cheap enough for 3.4 G values.
void fill_bf16(uint8_t* p, size_t n, uint64_t seed, float a) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < n; ++i) {
    x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
    const float u = float((x * 0x2545F4914F6CDD1Dull) >> 40) * (1.0f / 16777216.0f);
    const uint16_t h = nisa::f32_to_bf16((2.0f * u - 1.0f) * a);
    std::memcpy(p + 2 * i, &h, 2);
  }
}

void fill_inputs(nisa::interp::Machine& m) {
  const nisa::Module& mod = *m.mod;
  for (int r = 0; r < kTP; ++r) {
    for (const nisa::TensorDecl& t : mod.tensors) {
      if (t.space != nisa::MemSpace::hbm || t.role != nisa::Role::input) continue;
      uint8_t* p = m.hbm_tensor(r, t);
      const size_t bytes = nisa::interp::Machine::tensor_bytes(t);
      const uint64_t seed = uint64_t(r + 1) * 1000 + std::hash<std::string>{}(t.name) % 1000;
      if (t.name == "mask") {
        for (size_t k = 0; k < bytes; ++k) p[k] = (k % kCtx) < 1500 ? 1 : 0;
      } else if (t.name == "pos") {
        for (int b = 0; b < kB; ++b) {
          const uint32_t v = uint32_t(1500 + 8 * b);
          std::memcpy(p + 4 * b, &v, 4);
        }
      } else if (t.name == "cos" || t.name == "sin") {
        for (size_t k = 0; k < bytes / 4; ++k) {
          const float v = t.name == "cos" ? std::cos(0.01f * float(k)) : std::sin(0.01f * float(k));
          std::memcpy(p + 4 * k, &v, 4);
        }
      } else {
        const bool norm = t.name == "attn_norm_w" || t.name == "mlp_norm_w";
        const float a = t.name == "x" || t.name == "k_cache" || t.name == "v_cache" ? 1.7f
                        : norm                                                      ? 0.0f
                                                                                    : 0.02f;
        fill_bf16(p, bytes / 2, t.name == "x" ? 7 : seed, a);
        if (norm) { // 1.0
          for (size_t k = 0; k < bytes / 2; ++k) {
            const uint16_t one = 0x3f80;
            std::memcpy(p + 2 * k, &one, 2);
          }
        }
      }
    }
  }
}

void BM_Tkg(benchmark::State& st) {
  const int sbuf = int(st.range(0));
  const nisa::Module mod = nisa::bench::assemble_kernel("transformer_tkg.nasm", defines(sbuf));
  nisa::interp::MachineOptions mo;
  mo.lnc = 2;
  mo.ranks = kTP;
  nisa::interp::Machine machine(mod, mo);
  fill_inputs(machine);
  for (auto _ : st) {
    auto r = nisa::interp::run(machine);
    if (r.status != nisa::interp::RunStatus::ok) {
      st.SkipWithError(r.report.c_str());
      break;
    }
    st.counters["modelled_us"] = double(r.stats.makespan_ticks) / kTicksPerUs;
    const char* names[] = {"pe_us", "act_us", "dve_us", "pool_us", "sp_us", "cc_us"};
    for (int e = 0; e < 6; ++e)
      st.counters[names[e]] = double(r.stats.cores[0].eng[size_t(e)].busy_ticks) / kTicksPerUs;
    double dma = 0, link = 0;
    for (const auto& c : r.stats.cores) {
      for (const auto& q : c.queue) dma += double(q.bytes);
      for (const auto& ch : c.chan) link += double(ch.bytes);
    }
    st.counters["dma_MB"] = dma / 1e6;
    st.counters["cc_link_MB"] = link / 1e6;
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  st.counters["peak_rss_MB"] = double(ru.ru_maxrss) / 1024.0;
}

BENCHMARK(BM_Tkg)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->Iterations(1);

} // namespace

BENCHMARK_MAIN();
