// Every number of the modelled machine, per target, in one place (docs/machine.md).
#pragma once
#include <cstdint>
#include <string_view>

#include "isa/enums.h"

namespace nisa::interp {

// Modelled time is an integer count of ticks. One tick = 1 / 33.6 GHz (~29.76 ps): 33.6 GHz is
// the least common multiple of every engine clock of every target, so each engine cycle is a
// whole number of ticks (trn2: PE 14, DVE 35, ACT/POOL/SP/CC 28) and cycles convert exactly.
inline constexpr int64_t kTickMHz = 33600;
inline constexpr double ticks_to_ns(int64_t t) { return double(t) * 1000.0 / double(kTickMHz); }
inline constexpr int64_t ns_to_ticks(int64_t ns) { return ns * kTickMHz / 1000; }

struct TargetParams {
  Target target;
  int gen;               // nc_version: 2, 3, 4
  std::string_view name; // "trn1", ...
  // On-chip memories, per core.
  uint32_t partitions;        // 128
  uint64_t sbuf_part_bytes;   // physical bytes per partition
  uint64_t sbuf_usable_bytes; // usable by kernels (the rest is compiler-reserved)
  uint64_t psum_part_bytes;   // 16 KiB
  uint32_t psum_banks;        // 8
  uint32_t psum_bank_bytes;   // 2 KiB
  // Engine clocks in MHz, indexed by Engine (pe act dve pool sp cc), and the derived
  // ticks per cycle (kTickMHz / clock).
  uint32_t clock_mhz[kNumEngines];
  int64_t ticks_per_cycle[kNumEngines];
  // DMA, per core: 16 queues spread over 16 DMA engines.
  uint32_t dma_queues;
  uint32_t dma_engines;
  uint32_t dma_engine_mbps;      // one DMA engine's bandwidth, MB/s
  uint32_t dma_parts_per_engine; // one DMA engine serves 8 partitions of a transfer
  int64_t dma_latency_ns;        // fixed latency of every transfer (descriptors + completion)
  int64_t dma_trigger_cycles;    // cost of a DMA trigger to the issuing engine
  int64_t cc_latency_ns;         // fixed latency of one collective step (ring hop)
  uint32_t cc_link_mbps;         // bandwidth of one collective channel (kNumCcChannels per core)
  uint32_t regs;                 // 64 registers per engine sequencer
  // Feature gates (isa-facts 1.10).
  bool lnc2;             // LNC = 2, core_barrier, send_recv
  bool hwdge;            // hardware DGE, dma_transpose
  bool act_scalar_bias;  // activation bias as an immediate
  bool dve_perf_mode;    // (not modelled in costs)
  bool dma_priority;     // DMA QoS classes
  uint32_t matmul_max_n; // moving free size limit (fp32 PSUM dst)
};

const TargetParams& target_params(Target t);
// Parses "trn1|trn2|trn3" (also "gen2|gen3|gen4"); nullptr if unknown.
const TargetParams* find_target(std::string_view name);

} // namespace nisa::interp
