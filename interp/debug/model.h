// The debugger as a model (docs/debugger.md): the machine, the scheduler stepped one event at a
// time in modelled-time order, breakpoints, watchpoints, race checking and reverse execution by
// deterministic replay, answering structured queries. Nothing here prints: the console of
// `nisa debug` (session.h) formats these structs as text, and `nisa dap` builds its JSON from
// them.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "interp/observe/race.h"
#include "interp/observe/trace.h"
#include "interp/run/run.h"
#include "isa/error.h"

namespace nisa::interp::debug {

// A user error (a bad spec, a number out of range, ...): the operation did nothing.
struct Error : InputError {
  using InputError::InputError;
};
// A well-formed number outside the range the operation accepts.
struct RangeError : Error {
  using Error::Error;
};

// `name[a:b, c]` over a tensor declaration: per dimension [lo, hi).
struct Slice {
  const TensorDecl* tensor = nullptr;
  std::vector<std::pair<int64_t, int64_t>> dims;
  uint64_t elems() const;
};
// Parses `name`, `name[i]`, `name[a:b, :, c:]` (throws Error with the reason).
Slice parse_slice(const Module& m, const std::string& text);

// The values of a slice, row-major over its indices, as they are in memory.
struct SliceValues {
  Slice slice;
  int core = 0;
  std::vector<uint8_t> bytes; // elems() * the dtype's width
  size_t size() const { return slice.elems(); }
  const uint8_t* at(size_t k) const;
  // The value as a number: floats as float (widened), integers exactly.
  double number(size_t k) const;
  std::vector<double> numbers() const;
  // The value as `print` shows it: fmt 'x' raw bits, 'd' integer, 'f' float, 0 the dtype's.
  std::string text(size_t k, char fmt = 0) const;
};

// A raw memory address: `hbm:ADDR`, `sbuf:P:OFF` or `psum:P:OFF`.
struct MemRef {
  MemSpace space = MemSpace::hbm;
  int64_t partition = 0;    // sbuf/psum
  uint64_t offset = 0;      // hbm: the address
  std::string text() const; // "hbm:0x40", "sbuf:3:0x100"
};
MemRef parse_memref(const std::string& text);

// An agent: an engine (0..5) or a DMA queue (kNumEngines + q). -1: no such name.
int agent_index(const std::string& name);

// A source position: the module's file path, 1-based line and column.
struct SourceLoc {
  std::string file;
  uint32_t line = 0, col = 0;
};

// One frame of an instruction's stack, innermost first: the instruction, then each macro
// expansion, .for iteration and include it came from.
struct Frame {
  enum Kind { instruction, macro, for_iteration, include } kind = instruction;
  std::string name; // the instruction "dve[3]"; the expansion's own text ("fill", "i=2")
  std::optional<SourceLoc> loc;
  // "dve[3]", "in expansion of macro fill", "in .for iteration i=2", "in file included x.inc"
  std::string title() const;
};

// An unmet wait of a waiting engine.
struct UnmetWait {
  std::string sem;
  WaitCmp cmp = WaitCmp::ge;
  uint32_t value = 0, current = 0;
};

// An engine or DMA queue as `info engines` shows it.
struct Agent {
  AgentState state; // core, engine, queue, pc, state, since, queued transfers and their spans
  bool has_instructions = true; // engines: the stream is not empty
  std::optional<SourceLoc> loc; // of (engine, pc): the instruction or the front transfer
  std::vector<UnmetWait> unmet; // a waiting engine's waits that do not hold
  bool idle() const;            // a queue with nothing queued
};

struct SemValue {
  std::string name;
  uint32_t value = 0;
};

struct BreakpointInfo {
  int id = 0;
  enum Kind { line, inst, watch, rwatch } kind = line;
  bool enabled = true, temporary = false;
  int hits = 0;
  std::string what;        // "cumsum.nasm:45", "dve[2] at cumsum.nasm:45", "y[0:2, :]", ...
  size_t instructions = 0; // line / inst / label breakpoints: how many instructions it stops at
  size_t bytes = 0;        // watchpoints: the size of the slice
};

struct BreakpointHit {
  int id = 0;
  bool temporary = false; // it is deleted now
  std::string what;
  std::string cond_error; // the condition could not be evaluated (the breakpoint stops)
};

struct WatchHit {
  int id = 0;
  bool read = false;
  std::string what;
  StepEvent by; // the event that wrote / read the slice
  struct Change {
    std::vector<int64_t> index;
    std::vector<uint8_t> before, after;
  };
  const TensorDecl* tensor = nullptr;
  std::vector<Change> changes; // write watchpoints: the first 8 changed elements
  size_t changed = 0, elements = 0;
};

struct RunEnd {
  RunStatus status = RunStatus::ok;
  std::string report; // deadlock, fault or budget report
  int64_t time = 0;   // ticks
  int64_t steps = 0;
  int exit_code = 0;
};

// Where a command left the run, and why.
struct Stop {
  enum class Origin { resume, run, restart, replay, reverse } origin = Origin::resume;
  enum class Reason {
    step,        // the stepping command's own criterion (or the position of a restart/replay)
    breakpoint,  // before the next event
    watchpoint,  // after the last event
    race,        // after the last event (check-races on)
    finished,    // the run ended normally
    deadlock,    //
    fault,       //
    budget,      // --max-steps spent
    not_running, // the command did nothing: the run had already ended
    interrupted, // before the next event: the interrupt flag (set_interrupt) was raised
  } reason = Reason::step;
  std::optional<BreakpointHit> breakpoint;
  std::vector<WatchHit> watches;
  std::vector<size_t> races;     // indices into Model::races().races() found by this command
  std::optional<StepEvent> next; // the pending event the stop is at (none once the run ended)
  std::optional<RunEnd> end;     // the run has ended (finished / deadlock / fault / budget)
  // next, finish, step ENGINE: the event of the engine's last instruction, when the command
  // stopped because the engine has none left (the stop is at another engine's event).
  std::optional<StepEvent> engine_done;
  int64_t steps = 0; // events executed so far
};
std::string_view name_of(Stop::Reason r);

class Breakpoints;
class Watcher;

// A register edited by the user while stopped (`set rN = V`), replayed at its step.
struct RegEdit {
  int64_t step;
  int core;
  int engine, reg;
  int32_t value;
};

class Model {
public:
  // cfg.inputs are bound at every (re)start; cfg.outputs are ignored.
  Model(const Module& mod, const RunConfig& cfg);
  ~Model();
  // Trace records kept for `info timeline` (the last ones).
  static constexpr size_t kKeptRecords = 100000;

  // ---- moving ----------------------------------------------------------------------------
  Stop run();                               // from t = 0 (register edits dropped)
  Stop resume();                            // continue
  Stop step(int agent = -1, int64_t n = 1); // N events (of one agent: agent_index())
  Stop next();                              // to the engine's next line, same expansion level
  Stop finish();                            // out of the innermost expansion (throws Error)
  Stop until(int file, int64_t line);       // until an instruction of the line is next
  Stop restart();                           // back to t = 0, breakpoints and edits kept
  Stop reverse_step(int64_t n = 1);
  Stop reverse_continue(); // to the previous breakpoint / watchpoint / race stop
  const Stop& last_stop() const { return last_stop_; }
  // How many stops the moving commands have made: a console command moved the run when it
  // changed.
  uint64_t stops() const { return stops_; }

  // ---- queries ---------------------------------------------------------------------------
  const Module& module() const { return mod_; }
  const Machine& machine() const { return *m_; }
  int64_t steps() const { return steps_; }
  int64_t now() const; // ticks
  bool ended() const;  // the run is over (finished, deadlock, fault or budget)
  std::optional<RunEnd> end() const;
  // 2 deadlock, 3 fault, 5 budget spent; else 4 when the session has stopped at a race
  // (check-races on), as `nisa run --check-races` exits; else 0 (running or finished).
  int exit_code() const;
  int current_core() const { return cur_core_; }
  std::optional<StepEvent> next_event() const;
  const std::optional<StepEvent>& last_event() const { return last_; }
  // Every engine of every core, then every DMA queue used so far (the scheduler's order).
  std::vector<Agent> agents() const;
  std::optional<SourceLoc> location(Engine e, int64_t pc) const;
  std::vector<Frame> frames(Engine e, int64_t pc) const;
  std::vector<SemValue> semaphores(int core) const;
  std::array<int32_t, kNumRegs> registers(int core, Engine e) const;
  SliceValues read(const Slice& s, int core) const;
  SliceValues read(const std::string& slice) const; // of the current core
  // The bytes of one element of a slice, at row-major position k of the slice (RangeError
  // past its end): only that element is read, so a view of a huge tensor costs what it shows.
  std::vector<uint8_t> element(const Slice& s, int core, uint64_t k) const;
  // Up to n bytes from ref (fewer at the end of the memory); hbm of the current core's rank.
  std::vector<uint8_t> read_memory(const MemRef& ref, uint64_t n) const;
  // A register (`dve.r3`, or `r3` of the next event's engine) or a semaphore of the current
  // core, as conditions and `print` see it.
  int64_t value_of(const std::string& term) const;
  // The index of a source file by path or basename; -1 when none matches.
  int file_index(const std::string& name) const;
  const RaceChecker& races() const { return *races_; }
  const TraceRecorder& trace() const { return *trace_; }

  // ---- breakpoints -------------------------------------------------------------------------
  // spec: FILE:LINE, LINE, LABEL or ENGINE:INDEX; cond: "" or LHS OP RHS.
  BreakpointInfo add_breakpoint(const std::string& spec, const std::string& cond = "",
                                bool temporary = false);
  BreakpointInfo add_line_breakpoint(int file, int64_t line, const std::string& cond = "",
                                     bool temporary = false);
  // sbuf/psum slices are on the current core.
  BreakpointInfo add_watchpoint(const std::string& slice, bool read = false);
  void delete_breakpoint(int id); // throws Error when there is none
  void delete_breakpoints();
  void enable_breakpoint(int id, bool on);
  void enable_breakpoints(bool on);
  std::vector<BreakpointInfo> breakpoints() const;

  // ---- changes -----------------------------------------------------------------------------
  // A register of the current core; replayed by reverse execution at this event.
  void set_register(Engine e, int reg, int32_t value);
  void set_check_races(bool on) { check_races_ = on; }
  // A flag another thread raises to stop the command that moves the run (continue, step,
  // next, finish, until, and the replay of reverse-step / reverse-continue) after the event it
  // is executing: the command returns a Stop with Reason::interrupted. The owner clears it;
  // nullptr (the default): no interruption.
  void set_interrupt(const std::atomic<bool>* flag) { interrupt_ = flag; }
  bool check_races() const { return check_races_; }

private:
  const Module& mod_;
  RunConfig cfg_;
  std::unique_ptr<Machine> m_;
  std::unique_ptr<Scheduler> sched_;
  std::unique_ptr<RaceChecker> races_;
  std::unique_ptr<TraceRecorder> trace_;
  std::unique_ptr<Watcher> watcher_;
  std::unique_ptr<Breakpoints> bps_;
  ObserverList observers_;
  std::vector<RegEdit> edits_;
  std::vector<int64_t> hit_steps_; // step counts of breakpoint/watchpoint stops (reverse-continue)
  int64_t steps_ = 0;
  size_t races_seen_ = 0;
  bool check_next_ = false; // the next event is unchecked for breakpoints (a stop after an event)
  bool check_races_ = false;
  bool stopped_at_race_ = false; // some stop of this session reported a race (exit_code())
  const std::atomic<bool>* interrupt_ = nullptr;
  int cur_core_ = 0;
  std::optional<StepEvent> last_; // the last event executed
  Stop last_stop_;
  uint64_t stops_ = 0;

  void start(); // fresh machine and scheduler at step 0
  bool interrupted() const { return interrupt_ && interrupt_->load(std::memory_order_relaxed); }
  // Restarts and runs `target` events silently; false when interrupted before the target.
  bool replay_to(int64_t target);
  bool do_step(); // one event; applies register edits
  template <class F> Stop resume_until(F&& stop_after);
  Stop stopped(Stop s); // fills the position and end of a stop, remembers it
  // ev (an instruction's event) when its engine has no instruction left after it.
  std::optional<StepEvent> last_engine_done(const StepEvent& ev) const;
  // s with engine_done set (also in last_stop_) when it is a step stop.
  Stop with_engine_done(Stop s, const std::optional<StepEvent>& done);
  Stop not_running(); // the stop of a command given after the end
  const DebugLoc* loc_of(Engine e, int64_t pc) const;
};

} // namespace nisa::interp::debug
