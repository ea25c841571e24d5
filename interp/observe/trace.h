// The instruction trace (`nisa run --trace FILE`, the debugger's `info timeline`): one record
// per executed instruction or DMA transfer. The text format is versioned and documented in
// docs/trace-format.md; change kTraceVersion with any change of the fields.
#pragma once
#include <cstdint>
#include <deque>
#include <ostream>
#include <string>
#include <vector>

#include "interp/observe/race.h"

namespace nisa::interp {

inline constexpr int kTraceVersion = 1;

struct TraceRecord {
  int64_t start = 0, end = 0; // modelled ticks
  int core = 0;               // rank * lnc + core
  Engine engine = Engine::sp; // the stream holding the instruction
  int queue = -1;             // >= 0: a DMA transfer completing on this queue
  int64_t pc = 0;
  std::vector<std::pair<uint16_t, uint32_t>> sems; // semaphore, value after the update
  std::vector<Region> writes;
};

struct TraceFilter {
  int64_t from = -1, to = -1; // ticks; -1: unbounded. A record is kept if it overlaps them.
  uint32_t engines = ~0u;     // bit e: engine e; bit kNumEngines + q: queue q
  bool keeps(const TraceRecord& r) const;
};
// "dve,sp,q0,dma" (dma: every queue) -> the engines mask; throws InputError.
uint32_t parse_trace_engines(const std::string& list);

std::string trace_header(const Machine& m);
std::string trace_line(const Machine& m, const TraceRecord& r);

// The default cap of `nisa run --trace` (--trace-limit): 64 MiB, about 600,000 records of 100
// bytes. With the timeline's cap (kDefaultMaxTimelineEvents) an endless kernel leaves less
// than 200 MB of files (docs/machine.md "Limits").
inline constexpr uint64_t kDefaultTraceMaxBytes = uint64_t(64) << 20;

// Collects the records into `records` and/or writes their lines to `out`. Both are bounded
// (0: unlimited): the file stops growing at max_bytes (later lines are counted in dropped()),
// and only the last max_kept records are kept.
class TraceRecorder final : public ExecObserver {
public:
  TraceRecorder(const Machine& m, TraceFilter f, std::ostream* out, bool keep,
                uint64_t max_bytes = 0, size_t max_kept = 0);
  void exec(const ExecEvent& ev, ExecCtx& cx, const Inst& in) override;
  void sem(int core, uint16_t s, uint32_t value, bool set) override;
  void done(const ExecEvent& ev) override;
  const std::deque<TraceRecord>& records() const { return records_; }
  void clear() { records_.clear(); }
  uint64_t dropped() const { return dropped_; } // lines not written (max_bytes reached)
  // Writing only, and the file is full: later records are counted, never collected or
  // formatted (an endless kernel runs on at the cost of the slow path alone).
  bool full() const { return dropped_ && !keep_; }
  uint64_t bytes_written() const { return written_; }

private:
  const Machine& m_;
  TraceFilter f_;
  std::ostream* out_;
  bool keep_;
  uint64_t max_bytes_, written_ = 0, dropped_ = 0;
  size_t max_kept_;
  TraceRecord cur_;
  std::deque<TraceRecord> records_;
};

} // namespace nisa::interp
