// The profile of one run (`nisa run --profile`, docs/profile.md): the exact critical path, where
// the time goes per unit and per source line, the stalls on each semaphore, hints detected from
// the history, and (filled by the run driver) the exact what-if makespans. Computed after the
// run from its History (interp/sched/history.h), which the slow path records.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "interp/core/machine.h"
#include "interp/sched/scheduler.h"

namespace nisa::interp {

// A source line at user level: an instruction from a macro body is attributed to the outermost
// macro call (chain: the whole expansion chain of the instruction, as reports print it).
struct SourceLine {
  std::string file;
  uint32_t line = 0;
  bool operator<(const SourceLine& o) const {
    return file != o.file ? file < o.file : line < o.line;
  }
  bool operator==(const SourceLine&) const = default;
};

// "file:line", as reports print a source line.
std::string where(const SourceLine& s);

struct PathSegment {
  int64_t start = 0, end = 0; // ticks
  std::string kind;           // exec, dma, cc, latency
  std::string unit;           // pe act dve pool sp cc (the engine), dma, cc
  int rank = 0, core = 0;     // core: within the rank (program_id)
  std::string engine;         // the stream holding the instruction
  int queue = -1;             // dma: the queue; cc: the channel; else -1
  int64_t pc = 0;
  SourceLine src;
  SourceLine inner;                  // the instruction's own line (a macro body's line)
  std::string chain;                 // file:line:col with the expansion chain
  int core_index = 0, engine_id = 0; // rank * lnc + core; the engine as Engine
};

struct UnitTime {
  std::string unit;
  int64_t critical = 0, busy = 0; // ticks (busy: summed over the unit's cores and queues)
  int64_t latency = 0;            // the part of `critical` that is fixed latency
};

struct LineTime {
  SourceLine src;
  int64_t critical = 0, busy = 0;
  std::string text; // the line's text when the file is readable
};

// An engine's time stalled on a semaphore (summed over cores), and the lines whose signals
// released it.
struct Stall {
  std::string engine, sem;
  int64_t ticks = 0;
  uint64_t count = 0;
  std::vector<SourceLine> signalled_by;
};

struct Hint {
  std::string kind; // trigger-blocks-stream, queue-serialises, idle-feeder, redundant-wait
  std::string message;
  SourceLine src;
  int64_t ticks = 0; // the time at stake (0 for redundant-wait)
};

struct WhatIf {
  std::string unit;
  double scale = 2;
  int64_t makespan = 0; // ticks
};

struct Profile {
  int64_t makespan = 0; // ticks
  std::string status;   // the run's: ok, deadlock, fault, budget, interrupted
  bool complete = true; // false: the history was capped (SchedOptions::max_history)
  uint64_t nodes = 0;
  std::vector<PathSegment> path;
  std::vector<UnitTime> units;
  std::vector<LineTime> lines;       // by critical time, then busy time
  std::vector<LineTime> inner_lines; // the same by the instructions' own lines (macro bodies)
  std::vector<Stall> stalls;         // by ticks
  std::vector<Hint> hints;           // by ticks
  std::vector<WhatIf> what_if;       // filled by the run driver (re-simulation)
};

// The units of a profile, in report order.
inline constexpr const char* kProfileUnits[] = {"pe", "act", "dve", "pool", "sp", "dma", "cc"};

// Everything but what_if, from a run made with SchedOptions::history.
Profile analyse(const Machine& m, const RunResult& r);

// The text report (the top `top` lines) and the JSON document (schema nisa-profile/1).
std::string profile_report(const Profile& p, size_t top = 10);
std::string profile_json(const Profile& p);

} // namespace nisa::interp
