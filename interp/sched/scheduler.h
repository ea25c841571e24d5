// The deterministic discrete-event scheduler (docs/machine.md "Scheduling"). Each engine runs
// its stream in order; an instruction issues when its engine is free and its waits hold, runs
// its semantics atomically at completion and then applies its signals. DMA transfers complete
// asynchronously on their queue. Ties at equal time follow a fixed agent order, or a seeded
// pseudo-random order (with seeded latency jitter) under ScheduleMode::random.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "interp/core/machine.h"
#include "interp/core/stats.h"
#include "interp/engines/collective.h"
#include "interp/sched/history.h"
#include "interp/sched/observer.h"
#include "isa/describe.h"

namespace nisa::interp {

enum class ScheduleMode : uint8_t { fixed, random };

// The default budget of events per run (--max-steps): 100x the largest run of the tests and
// benchmarks (bench_dispatch: 1M events; the kernels of kernels_asm at their benchmark shapes
// need at most 17k, topk), a few seconds of an endless loop (docs/machine.md "Budget").
inline constexpr uint64_t kDefaultMaxSteps = 100'000'000;
// The default budget of `nisa run` with --trace or --timeline (their records are capped, so
// more events would only cost time; docs/machine.md "Limits"): 10x the largest run of the tests
// and benchmarks, a few seconds of an endless loop on the slow path.
inline constexpr uint64_t kDefaultMaxStepsRecording = 10'000'000;
// The default cap on recorded TimelineEvents: about 40 bytes each in memory, 150-300 bytes
// each in the --timeline file (about 80 MB at 200 bytes); 20 times the events of the largest
// kernel run at its benchmark shape.
inline constexpr uint64_t kDefaultMaxTimelineEvents = 400'000;

struct SchedOptions {
  ScheduleMode mode = ScheduleMode::fixed;
  uint64_t seed = 0;
  bool timeline = false;            // record TimelineEvents (slow path)
  ExecObserver* observer = nullptr; // slow path hooks (debugger, race checker, trace)
  // Events (instructions completing, DMA transfers completing) before the run stops with
  // RunStatus::budget, reporting where each engine was looping; 0: unlimited.
  uint64_t max_steps = kDefaultMaxSteps;
  // TimelineEvents kept; later ones are counted in RunResult::timeline_dropped. 0: unlimited.
  uint64_t max_timeline_events = kDefaultMaxTimelineEvents;
  // Host threads (`--threads`): the partition ranges of large instructions and the cores of
  // the run are spread over them; every result is the same for every value (docs/machine.md
  // "Host threads"). 1: everything on the calling thread.
  int threads = 1;
  // Not null: the run stops with RunStatus::interrupted soon after *interrupt becomes true
  // (Ctrl-C: a signal handler, or another thread, sets it). Each core looks every
  // kInterruptPollEvents of its events and the loop between phases; null costs nothing.
  const std::atomic<bool>* interrupt = nullptr;
  // Record the run's History (slow path) for the profiler (interp/profile/); at most
  // max_history nodes (0: unlimited), later ones counted in History::dropped.
  bool history = false;
  uint64_t max_history = kDefaultMaxHistory;
};
inline constexpr uint64_t kInterruptPollEvents = 256;

enum class RunStatus : uint8_t { ok, deadlock, fault, budget, interrupted };

// Exit codes of `nisa run` (and RunResult::exit_code); 4 (races found) is in run.h. 130: the
// shell's code of a command that SIGINT ended.
inline constexpr int kExitOk = 0, kExitUsage = 1, kExitDeadlock = 2, kExitFault = 3,
                     kExitBudget = 5, kExitInterrupted = 130;

struct RunResult {
  RunStatus status = RunStatus::ok;
  int exit_code = kExitOk;
  std::string report; // deadlock, fault, budget or interrupt report, empty when ok
  Stats stats;
  std::vector<TimelineEvent> timeline;
  uint64_t timeline_dropped = 0; // events beyond SchedOptions::max_timeline_events
  uint64_t steps = 0;            // events processed
  History history;               // SchedOptions::history (under MPI: rank 0's holds every core's)
};

// Runs the machine's module to completion (or deadlock / fault) from its current state.
// The machine is usually fresh (constructed or reset()) with inputs written.
RunResult run(Machine& m, const SchedOptions& o = {});

// Stepping for the debugger: one event at a time (an engine's instruction or a DMA transfer
// completing: its semantics run, then its signals apply). Always runs the slow path, so
// timelines and --check-uninit work while stepping.
struct StepEvent {
  int core = 0;               // rank * lnc + core
  Engine engine = Engine::sp; // the stream holding the instruction (the trigger for a DMA)
  int64_t pc = 0;
  int64_t time = 0;    // ticks at which it completes
  int dma_queue = -1;  // >= 0: a DMA transfer completing on this queue (16 + ch: collective)
  int cc_channel = -1; // >= 0: a collective transfer completing on this channel
};
// What an engine or a DMA queue is doing, for the debugger's `info engines`.
struct AgentState {
  int core = 0;
  Engine engine = Engine::sp; // queue >= 0: the engine that triggered the front transfer
  int queue = -1;             // >= 0: a DMA queue
  int64_t pc = 0;             // the current instruction (engines; the front transfer of queues)
  enum State : uint8_t { idle, running, waiting, rendezvous, done } state = idle;
  int64_t since = 0;                              // waiting since (ticks)
  std::vector<std::pair<Engine, int64_t>> queued; // queues: pending transfers, front first
  std::vector<std::pair<int64_t, int64_t>> spans; // queues: [begin, end) of each transfer
};
std::string_view name_of(AgentState::State s);

namespace detail {
class Sched;
}
class Scheduler {
public:
  // Starts the run: every engine issues its first instruction at time 0.
  Scheduler(Machine& m, const SchedOptions& o = {});
  ~Scheduler();
  // Processes the next event; false once the run is over (ok, deadlock or fault: result()).
  bool step();
  std::optional<StepEvent> peek() const; // what step() would process next
  int64_t now() const;                   // ticks
  bool finished() const;
  const RunResult& result() const; // status, report, stats and timeline so far
  // Every engine of every core, then every DMA queue that is busy or has ever been used.
  std::vector<AgentState> agents() const;
  // The engine has run its stream to the end (agents()' AgentState::done), cheaply.
  bool engine_done(int core, Engine e) const;

private:
  void settle(); // runs the work between phases until has_next_ / next_sync_ name the next step
  std::unique_ptr<detail::Sched> s_;
  bool has_next_ = false;  // an event is next (else the run is over)
  bool next_sync_ = false; // that event is a collective transfer completing
  bool finished_ = false;
};

// describe_inst, source_of: isa/describe.h.
using nisa::describe_inst;
using nisa::source_of;

} // namespace nisa::interp
