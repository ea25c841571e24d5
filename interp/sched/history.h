// The run's history for the profiler (SchedOptions::history, interp/profile/): one node per
// instruction an engine ran, DMA transfer and collective transfer, each with the node whose
// completion set its start. Because the scheduler is a deterministic discrete-event model, the
// chain of these causes walked back from the last event is the exact critical path
// (docs/profile.md). Recorded on the slow path only: it costs nothing when off.
#pragma once
#include <cstdint>
#include <vector>

namespace nisa::interp {

enum class HistKind : uint8_t {
  exec, // an instruction occupying its engine (a DMA or collective trigger included)
  dma,  // a DMA transfer on a queue (send_recv's transfer is part of its instruction's exec)
  cc,   // a collective transfer on a channel (one node for all participants)
};

struct HistNode {
  int64_t start = 0, end = 0; // ticks: [start, end) the unit was occupied
  int64_t data_end = 0;       // dma: the data phase's end; the rest, to `end`, is fixed latency
  int64_t ready = 0;          // exec: when it became its stream's head (start - ready: stalled)
  int64_t pred = -1;          // the node whose release set `start` (-1: the run's start)
  int64_t pred_at = 0;        // when pred released it (<= start: start - pred_at is latency)
  int64_t end_pred = -1;      // dma: the earlier transfer whose end this one's end waited for
                              // (transfers of a queue complete in order)
  int64_t trigger = -1;       // dma: the trigger instruction's node
  uint32_t pc = 0;            // the instruction (dma, cc: the trigger)
  int32_t core = 0;           // rank * lnc + core (cc: the first participant)
  HistKind kind = HistKind::exec;
  uint8_t engine = 0; // the stream holding the instruction
  uint8_t queue = 0;  // dma: the queue; cc: the channel
};

// Node ids: core c's k-th node is (c << 40) | k; the collectives' nodes are the pseudo-core
// number of cores (RunResult::history's last list).
inline constexpr int kHistIdShift = 40;
inline int64_t hist_id(int list, uint64_t k) {
  return (int64_t(list) << kHistIdShift) | int64_t(k);
}
inline int hist_list(int64_t id) { return int(id >> kHistIdShift); }
inline uint64_t hist_index(int64_t id) {
  return uint64_t(id) & ((uint64_t(1) << kHistIdShift) - 1);
}

// The default cap on recorded nodes (--profile): 80 bytes each, about 320 MB; 200 times the
// events of the largest kernel of kernels_asm at its benchmark shape.
inline constexpr uint64_t kDefaultMaxHistory = 4'000'000;

struct History {
  std::vector<std::vector<HistNode>> lists; // per core, then the collectives' list
  uint64_t dropped = 0;                     // nodes beyond the cap: the history is incomplete
  const HistNode& at(int64_t id) const { return lists[size_t(hist_list(id))][hist_index(id)]; }
  bool valid(int64_t id) const {
    return id >= 0 && size_t(hist_list(id)) < lists.size() &&
           hist_index(id) < lists[size_t(hist_list(id))].size();
  }
};

} // namespace nisa::interp
