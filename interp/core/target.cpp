#include "interp/core/target.h"

namespace nisa::interp {
namespace {

constexpr int64_t tpc(uint32_t mhz) { return kTickMHz / mhz; }

// Clock order follows Engine: pe act dve pool sp cc. SP and CC have no public clock; they run
// at the ACT/POOL clock (sequencer-class engines of the same core).
constexpr TargetParams make(Target t, int gen, std::string_view name, uint64_t sbuf_kib,
                            uint64_t usable, uint32_t pe, uint32_t dve, uint32_t act, uint32_t pool,
                            uint32_t dma_mbps, uint32_t max_n, uint32_t link_mbps) {
  TargetParams p{};
  p.target = t;
  p.gen = gen;
  p.name = name;
  p.partitions = 128;
  p.sbuf_part_bytes = sbuf_kib * 1024;
  p.sbuf_stride = host_stride(p.sbuf_part_bytes);
  p.sbuf_usable_bytes = usable;
  p.psum_part_bytes = 16 * 1024;
  p.psum_stride = host_stride(p.psum_part_bytes);
  p.psum_banks = 8;
  p.psum_bank_bytes = 2048;
  const uint32_t clk[kNumEngines] = {pe, act, dve, pool, act, act};
  for (int e = 0; e < kNumEngines; ++e) {
    p.clock_mhz[e] = clk[e];
    p.ticks_per_cycle[e] = tpc(clk[e]);
  }
  p.dma_queues = 16;
  p.dma_engines = 16;
  p.dma_engine_mbps = dma_mbps;
  p.dma_parts_per_engine = 8;
  p.dma_latency_ns = 2000;
  p.dma_trigger_cycles = 64;
  p.cc_latency_ns = 2000;
  p.cc_link_mbps = link_mbps;
  p.regs = 64;
  p.lnc2 = gen >= 3;
  p.hwdge = gen >= 3;
  p.act_scalar_bias = gen >= 3;
  p.dve_perf_mode = gen >= 3;
  p.dma_priority = gen >= 4;
  p.matmul_max_n = max_n;
  return p;
}

constexpr TargetParams kTargets[] = {
    // Collective channel bandwidth = the device's NeuronLink bandwidth / cores per device /
    // 4 channels per core (docs/machine.md "Collectives"): trn1 384 GB/s (assumption) / 2,
    // trn2 1.28 TB/s / 8, trn3 2.56 TB/s / 8.
    make(Target::trn1, 2, "trn1", 192, 180224, 2800, 1120, 1400, 1400, 27200, 512, 48000),
    make(Target::trn2, 3, "trn2", 224, 212984, 2400, 960, 1200, 1200, 27200, 512, 40000),
    make(Target::trn3, 4, "trn3", 256, 245752, 2400, 1200, 1200, 1200, 38400, 4096, 80000),
};

// Every clock must divide the tick frequency exactly.
constexpr bool clocks_exact() {
  for (const auto& t : kTargets)
    for (uint32_t c : t.clock_mhz)
      if (kTickMHz % c != 0) return false;
  return true;
}
static_assert(clocks_exact());

// The host strides keep every partition start 64-byte aligned and are never a multiple of
// 4 KiB (the L1 set conflict the pad is there to avoid).
constexpr bool strides_padded() {
  for (const auto& t : kTargets)
    for (uint64_t s : {t.sbuf_stride, t.psum_stride})
      if (s % 64 != 0 || s % 4096 == 0) return false;
  return true;
}
static_assert(strides_padded());

} // namespace

const TargetParams& target_params(Target t) {
  return kTargets[static_cast<int>(t) - static_cast<int>(Target::trn1)];
}

const TargetParams* find_target(std::string_view name) {
  for (const auto& t : kTargets)
    if (name == t.name) return &t;
  if (name == "gen2") return &kTargets[0];
  if (name == "gen3") return &kTargets[1];
  if (name == "gen4") return &kTargets[2];
  return nullptr;
}

} // namespace nisa::interp
