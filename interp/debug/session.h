// The debugger behind `nisa debug` (docs/debugger.md): a session over one Module that steps
// the scheduler one event at a time in modelled-time order, with breakpoints, watchpoints,
// engine views, race checking and reverse execution by deterministic replay. Commands come
// in as text lines (the REPL, -x scripts and tests all use execute()).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "interp/observe/race.h"
#include "interp/observe/trace.h"
#include "interp/run/run.h"

namespace nisa::interp::debug {

// `name[a:b, c]` over a tensor declaration: per dimension [lo, hi).
struct Slice {
  const TensorDecl* tensor = nullptr;
  std::vector<std::pair<int64_t, int64_t>> dims;
  uint64_t elems() const;
};
// Parses `name`, `name[i]`, `name[a:b, :, c:]` (throws std::runtime_error with the reason).
Slice parse_slice(const Module& m, const std::string& text);

class Session {
public:
  // cfg.inputs are bound at every (re)start; cfg.outputs are ignored (use `dump`).
  Session(const Module& mod, const RunConfig& cfg, std::ostream& out);
  ~Session();
  // Runs one command line; returns false once the session should end (`quit`).
  bool execute(const std::string& line);
  // Command names, for completion and `help`.
  std::vector<std::string> command_names() const;
  int64_t steps() const { return steps_; }
  // The run's exit code so far: 0 while it runs or after it finished, else 2 deadlock, 3 fault,
  // 5 budget spent (`nisa debug --batch` exits with it).
  int exit_code() const;
  // Trace records kept for `info timeline` (the last ones).
  static constexpr size_t kKeptRecords = 100000;
  const Machine& machine() const { return *m_; }

private:
  struct Command {
    std::string name, alias, usage, summary, help;
    std::function<void(Session&, const std::string&)> run;
  };
  struct Breakpoint {
    int id = 0;
    enum Kind { line, inst, watch, rwatch } kind = line;
    bool enabled = true, temporary = false;
    int hits = 0;
    std::string what; // as the user wrote it
    int file = -1;    // line: file index (-1 any); inst: engine
    int64_t line_or_pc = 0;
    Engine engine = Engine::sp;
    std::vector<std::pair<Engine, int64_t>> insts; // inst: the instructions it stops at
    std::string cond;                              // empty: always
    std::optional<Slice> slice;                    // watchpoints
    std::vector<Region> regions;                   // watchpoints: the slice's extents
    std::vector<uint8_t> snapshot; // watchpoints: the slice's bytes at the last stop
    int core = 0;                  // watchpoints on sbuf/psum: the core
  };
  struct RegEdit {
    int64_t step;
    int core;
    int engine, reg;
    int32_t value;
  };
  class Watcher;

  const Module& mod_;
  RunConfig cfg_;
  std::ostream& out_;
  std::unique_ptr<Machine> m_;
  std::unique_ptr<Scheduler> sched_;
  std::unique_ptr<RaceChecker> races_;
  std::unique_ptr<TraceRecorder> trace_;
  std::unique_ptr<Watcher> watcher_;
  ObserverList observers_;
  std::vector<Command> commands_;
  std::vector<Breakpoint> bps_;
  std::vector<RegEdit> edits_;
  std::vector<int64_t> hit_steps_; // step counts of breakpoint/watchpoint stops (reverse-continue)
  std::map<std::string, std::vector<std::string>> source_cache_;
  int next_bp_ = 1;
  int64_t steps_ = 0;
  size_t races_seen_ = 0;
  bool check_next_ = false; // the next event is unchecked for breakpoints (a stop after an event)
  bool check_races_ = false;
  int cur_core_ = 0;
  std::optional<StepEvent> last_; // the last event executed
  std::string last_line_;         // repeated by an empty line (interactive)

  void build_commands();
  void start();                   // fresh machine and scheduler at step 0
  void replay_to(int64_t target); // restart and run `target` events silently
  bool do_step();                 // one event; applies register edits
  // Runs events until `stop_after` says so (after each event), a breakpoint or watchpoint hits
  // (before / after an event), or the run ends. Prints the stop.
  void resume(const std::function<bool(const StepEvent&)>& stop_after);
  bool check_breakpoint(const StepEvent& ev);
  bool check_watchpoints();
  void print_stop();
  void print_end();
  bool not_running();

  // Views.
  std::string location_line(const StepEvent& ev) const;
  std::string source_line(uint32_t file, uint32_t line);
  std::string where_text(Engine e, int64_t pc) const;
  std::string engines_text();
  std::string format_slice(const Slice& s, char fmt, int core);
  std::vector<uint8_t> read_slice(const Slice& s, int core) const;
  std::vector<Region> slice_regions(const Slice& s, int core) const;
  uint8_t* elem_ptr(const TensorDecl& t, const std::vector<int64_t>& idx, int core) const;
  bool eval_cond(const std::string& cond, const StepEvent& ev);
  int64_t eval_term(const std::string& t, const StepEvent& ev);
  const DebugLoc* loc_of(Engine e, int64_t pc) const;
  int parse_engine(const std::string& s) const;

  // Commands.
  void cmd_run(const std::string&);
  void cmd_continue(const std::string&);
  void cmd_step(const std::string&);
  void cmd_next(const std::string&);
  void cmd_finish(const std::string&);
  void cmd_until(const std::string&);
  void cmd_break(const std::string&, bool temporary);
  void cmd_watch(const std::string&, bool read);
  void cmd_delete(const std::string&);
  void cmd_enable(const std::string&, bool on);
  void cmd_info(const std::string&);
  void cmd_print(const std::string&);
  void cmd_x(const std::string&);
  void cmd_list(const std::string&);
  void cmd_disas(const std::string&);
  void cmd_where(const std::string&);
  void cmd_set(const std::string&);
  void cmd_dump(const std::string&);
  void cmd_restart(const std::string&);
  void cmd_reverse_step(const std::string&);
  void cmd_reverse_continue(const std::string&);
  void cmd_help(const std::string&);
};

} // namespace nisa::interp::debug
