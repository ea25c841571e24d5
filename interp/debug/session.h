// The console of `nisa debug` (docs/debugger.md) over the debugger's model (model.h): commands
// come in as text lines (the REPL, -x scripts, tests and the DAP console all use execute()),
// run the model, and print its structs as text.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "interp/debug/model.h"

namespace nisa::interp::debug {

// The console's text of the model's structs: what the commands of `nisa debug` print.
class Printer {
public:
  explicit Printer(const Model& m) : model_(m) {}
  std::string stop_text(const Stop& s);
  std::string breakpoint_text(const BreakpointInfo& b) const; // "Breakpoint 1 at ..."
  std::string breakpoints_table() const;                      // `info breakpoints`
  std::string engines_text() const;                           // `info engines` after the time
  std::string queues_text() const;                            // `info queues`
  std::string sems_text() const;                              // `info sems`
  std::string registers_text(int engine) const;               // `info registers`: -1 all engines
  std::string tensors_text() const;                           // `info tensors`
  std::string where_text(const std::vector<Frame>& frames) const;
  // The `print` grid of a slice on a core (reads only the elements it shows).
  std::string slice_text(const Slice& s, int core, char fmt) const;
  std::string list_text(std::optional<uint32_t> line); // `list [LINE]`
  std::string disas_text(Engine e) const;              // `disas ENGINE`
  // "Stopped by the deadlock at t = ...; the machine state is kept ..." (not for an ok end).
  std::string end_line(const RunEnd& e) const;
  std::string end_text(const RunEnd& e) const;
  std::string source_line(uint32_t file, uint32_t line);

private:
  const Model& model_;
  std::map<std::string, std::vector<std::string>> source_cache_;
  std::string location_line(const StepEvent& ev) const;
};

class Session {
public:
  // cfg.inputs are bound at every (re)start; cfg.outputs are ignored (use `dump`).
  Session(const Module& mod, const RunConfig& cfg, std::ostream& out);
  ~Session();
  // Runs one command line; returns false once the session should end (`quit`).
  bool execute(const std::string& line);
  // Command names, for completion and `help`.
  std::vector<std::string> command_names() const;
  int64_t steps() const { return model_.steps(); }
  // The run's exit code so far: 0 while it runs or after it finished, else 2 deadlock, 3 fault,
  // 5 budget spent (`nisa debug --batch` exits with it).
  int exit_code() const { return model_.exit_code(); }
  static constexpr size_t kKeptRecords = Model::kKeptRecords;
  const Machine& machine() const { return model_.machine(); }
  Model& model() { return model_; }
  const Model& model() const { return model_; }
  Printer& printer() { return printer_; }

private:
  struct Command {
    std::string name, alias, usage, summary, help;
    std::function<void(Session&, const std::string&)> run;
  };

  Model model_;
  Printer printer_;
  std::ostream& out_;
  std::vector<Command> commands_;

  void build_commands();
  void show(const Stop& s) { out_ << printer_.stop_text(s); }

  // Commands.
  void cmd_step(const std::string&);
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
  void cmd_reverse_step(const std::string&);
  void cmd_help(const std::string&);
};

} // namespace nisa::interp::debug
