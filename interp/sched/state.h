// The state of one run that every part of the scheduler shares (interp/sched/loop.cpp and the
// parts it calls): the machine and options, the decoded streams, the cores, the result so far,
// the timeline and the fault context, and the event keys. Not a public interface.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "interp/sched/sched_internal.h"

namespace nisa::interp::detail {

inline constexpr int64_t kNever = INT64_MAX;

struct SchedState {
  SchedState(Machine& machine, const SchedOptions& opt);

  Machine& m;
  const SchedOptions o;
  const Module& mod;
  std::shared_ptr<const Program> program; // Machine::program (decoded once per machine)
  const std::vector<std::string>* msgs = nullptr;
  const Wait* waits = nullptr;
  const Signal* sigs = nullptr;
  HostPool* pool = nullptr; // the machine's (Machine::host_pool), shared with its resets
  std::vector<CoreRt> cores;
  RunResult res;
  bool stopped = false; // a fault, the budget or a deadlock ended the run
  int64_t now = 0;      // stepping: the latest event processed (ticks)
  // Fault context of the work done between phases (rendezvous, collective transfers).
  int cur_core = -1, cur_eng = 0;
  int64_t cur_pc = 0;

  uint64_t history_nodes = 0;         // nodes recorded (SchedOptions::history)
  uint64_t timeline_cap = UINT64_MAX; // SchedOptions::max_timeline_events (0: unlimited)
  // --timeline under MPI: where each recorded event falls in one process's order (the unit of
  // work: a phase's event (epoch, time, key), a rendezvous stage's core, a collective's
  // participant), so that rank 0 merges the processes' timelines into that order.
  bool tagged = false;
  std::array<uint64_t, 3> tag{};
  uint64_t epoch = 0;
  std::vector<std::array<uint64_t, 3>> tags;

  // Timelines, observers, --check-uninit and the debugger take the slow path.
  bool slow() const { return o.timeline || m.opt.check_uninit || o.observer || o.history; }
  bool any_stopped() const {
    for (const CoreRt& C : cores)
      if (C.stopped) return true;
    return false;
  }

  // Keys: fixed order by agent (then FIFO per agent), or a pseudo-random order from the seed,
  // the agent and the agent's own count, never from what other agents did.
  Event make_event(int c, int64_t t, int a) {
    const uint32_t agent = uint32_t(c * kAgentsPerCore + a);
    const uint64_t s = cores[c].aseq[a]++;
    uint64_t key = o.mode == ScheduleMode::fixed ? (uint64_t(agent) << 40) | s
                                                 : mix(o.seed ^ mix(s * 0x100000001b3ull + agent));
    return Event{t, key, agent};
  }
  void push(int c, int64_t t, int a) { cores[c].heap.push(make_event(c, t, a)); }
  int64_t jitter(int c, int a, int64_t lat) {
    if (o.mode == ScheduleMode::fixed) return lat;
    const uint64_t agent = uint64_t(c) * kAgentsPerCore + uint64_t(a);
    const uint64_t s = cores[c].jseq[a]++;
    return lat + static_cast<int64_t>(mix(o.seed * 31 + mix(agent + 1) + s) % uint64_t(lat + 1));
  }

  // The timeline (no-ops without --timeline for record; record_sem is called only with it).
  void record(TimelineEvent::Kind k, int c, int track, int e, int64_t start, int64_t dur,
              uint64_t bytes, int64_t pc = -1);
  void record_sem(int c, uint16_t sem);
  // Appends to res.timeline; OutOfMemory naming the timeline when it cannot grow.
  void push_timeline(const TimelineEvent& ev);

  // The profiler's history (SchedOptions::history): appends a node to list `list` (a core, or
  // the collectives' list) and returns its id; -1 past the cap.
  int64_t add_node(int list, const HistNode& n);

  std::string fault_text(int c, int e, int64_t pc, const std::string& why) const;
  // A fault while core c ran: it stops; the run stops at the end of the phase.
  void core_fault(int c, const Event& ev, const std::string& why);
  // A fault between phases (a rendezvous or a collective's data): the run stops at once.
  void fault(const std::string& why) {
    stop(RunStatus::fault, kExitFault, fault_text(cur_core, cur_eng, cur_pc, why));
  }
  void stop(RunStatus status, int exit_code, std::string report) {
    stopped = true;
    res.status = status;
    res.exit_code = exit_code;
    res.report = std::move(report);
  }
};

// Lowers core C's horizon to what an arrival at `at` (no earlier than t, the phase's start)
// plus `lat` allows.
inline void bound_horizon(CoreRt& C, int64_t t, int64_t at, int64_t lat) {
  int64_t h = std::max(at, t);
  h = h > kNever - lat ? kNever : h + lat;
  C.horizon = std::min(C.horizon, h);
}

} // namespace nisa::interp::detail
