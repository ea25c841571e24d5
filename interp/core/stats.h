// Run statistics (`nisa run --stats`) and timeline events (`--timeline`): the records the
// scheduler fills; observe/stats_report.h prints them.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "isa/enums.h"

namespace nisa::interp {

struct EngineStats {
  uint64_t insts = 0;
  int64_t busy_ticks = 0; // issue to completion of its instructions
  int64_t wait_ticks = 0; // blocked on semaphore waits, barriers and rendezvous
  int64_t cycles = 0;     // busy time in the engine's own clock
};
struct QueueStats {
  uint64_t transfers = 0;
  uint64_t bytes = 0;
  int64_t busy_ticks = 0;
};
struct ChanStats { // a collective channel: transfers, bytes its link carried, busy time
  uint64_t transfers = 0;
  uint64_t bytes = 0;
  int64_t busy_ticks = 0;
};
struct CoreStats {
  EngineStats eng[kNumEngines];
  QueueStats queue[kNumDmaQueues];
  ChanStats chan[kNumCcChannels];
};
struct Stats {
  std::vector<CoreStats> cores; // index rank * lnc + core
  int64_t makespan_ticks = 0;
  double wall_seconds = 0;
  uint64_t total_insts() const;
};

// A timeline slice. track: 0..5 = engine, 6 + q = DMA queue q, 22 + ch = collective channel
// ch. Kind sem is a semaphore
// value change: pc = the semaphore, bytes = its new value.
struct TimelineEvent {
  // path: a segment of the critical path (--profile; track: 0 exec, 1 dma, 2 cc, 3 latency).
  enum Kind : uint8_t { inst, wait, dma, sem, cc, path };
  Kind kind = inst;
  uint16_t core = 0; // rank * lnc + core
  uint8_t track = 0;
  Engine engine = Engine::sp; // the engine whose stream holds the instruction
  uint32_t pc = 0;
  int64_t start = 0, dur = 0; // ticks
  uint64_t bytes = 0;         // dma, cc (the bytes the channel's link carried)
};
inline constexpr int kTrackQueue0 = kNumEngines;
inline constexpr int kTrackChan0 = kNumEngines + kNumDmaQueues;

} // namespace nisa::interp
