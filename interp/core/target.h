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

// Host layout of SBUF and PSUM (docs/machine-io.md "Memory"): partition p starts p * stride host
// bytes into the buffer, stride = the modelled partition size + kHostPartPad. The modelled
// sizes (trn2: 224 KiB, 16 KiB) are multiples of 4 KiB: as strides they map the same column of
// every partition to one L1 set, which the kernels reading 16 partitions in lockstep (scan,
// the add / multiply fold over partitions) thrash. 256 B (4 cache lines) spreads 16 rows over
// 16 set groups (docs/performance.md "Row kernels against a streaming pass"). The pad
// is host memory only: never addressed, never in a bound or a modelled address.
inline constexpr uint64_t kHostPartPad = 256;
// (Rounded up to 64 bytes first: every partition starts on a cache line.)
inline constexpr uint64_t host_stride(uint64_t part_bytes) {
  return ((part_bytes + 63) & ~uint64_t(63)) + kHostPartPad;
}

struct TargetParams {
  Target target;
  int gen;               // nc_version: 2, 3, 4
  std::string_view name; // "trn1", ...
  // On-chip memories, per core.
  uint32_t partitions;        // 128
  uint64_t sbuf_part_bytes;   // physical bytes per partition
  uint64_t sbuf_stride;       // host bytes from partition p to p + 1 (host_stride())
  uint64_t sbuf_usable_bytes; // usable by kernels (the rest is compiler-reserved)
  uint64_t psum_part_bytes;   // 16 KiB
  uint64_t psum_stride;       // host bytes from partition p to p + 1 (host_stride())
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
  // Feature gates (docs/machine.md "Generations").
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
