// The console's command table, dispatch, and the commands that move the run.
#include <fmt/format.h>

#include "interp/debug/internal.h"

namespace nisa::interp::debug {

Session::Session(const Module& mod, const RunConfig& cfg, std::ostream& out)
    : model_(mod, cfg), printer_(model_), out_(out) {
  build_commands();
}

Session::~Session() = default;

void Session::cmd_step(const std::string& a) {
  std::vector<std::string> w = words(a);
  int eng = -1;
  int64_t n = 1;
  if (!w.empty() && !is_number(w[0])) {
    eng = agent_index(w[0]);
    if (eng < 0)
      throw Error(fmt::format("step: unknown engine '{}' (pe act dve pool sp cc q0..q15)", w[0]));
    w.erase(w.begin());
  }
  if (!w.empty()) n = to_int(w[0], "step count", 1);
  show(model_.step(eng, n));
}

void Session::cmd_until(const std::string& a) {
  if (trim(a).empty()) return show(model_.next());
  std::string spec = trim(a);
  int file = 0;
  size_t colon = spec.rfind(':');
  if (colon != std::string::npos) {
    std::string fname = spec.substr(0, colon);
    file = model_.file_index(fname);
    if (file < 0) throw Error(fmt::format("until: no source file '{}'", fname));
    spec = spec.substr(colon + 1);
  }
  show(model_.until(file, to_int(spec, "until")));
}

void Session::cmd_reverse_step(const std::string& a) {
  show(model_.reverse_step(trim(a).empty() ? 1 : to_int(trim(a), "reverse-step", 1)));
}

void Session::cmd_help(const std::string& a) {
  std::string name = trim(a);
  if (name.empty()) {
    out_ << "Commands (help CMD for details; an empty line repeats the last command):\n";
    for (const Command& c : commands_)
      out_ << fmt::format("  {:<18} {}\n", c.name + (c.alias.empty() ? "" : ", " + c.alias),
                          c.summary);
    return;
  }
  for (const Command& c : commands_)
    if (c.name == name || c.alias == name) {
      out_ << "usage: " << c.usage << "\n" << c.summary << "\n";
      if (!c.help.empty()) out_ << c.help << "\n";
      return;
    }
  throw Error(fmt::format("help: no command '{}'", name));
}

std::vector<std::string> Session::command_names() const {
  std::vector<std::string> n;
  for (const Command& c : commands_) n.push_back(c.name);
  return n;
}

bool Session::execute(const std::string& raw) {
  std::string line = trim(raw);
  if (line.empty() || line[0] == '#') return true;
  size_t sp = line.find_first_of(" \t/");
  std::string name = line.substr(0, sp);
  std::string args = sp == std::string::npos ? "" : line.substr(sp);
  if (!args.empty() && args[0] != '/') args = trim(args);
  if (name == "quit" || name == "q") return false;
  for (const Command& c : commands_)
    if (c.name == name || c.alias == name) {
      try {
        c.run(*this, args);
      } catch (const std::exception& e) {
        out_ << "error: " << e.what() << "\n";
      }
      return true;
    }
  out_ << fmt::format("error: unknown command '{}' (help lists the commands)\n", name);
  return true;
}

void Session::build_commands() {
  auto add = [&](std::string name, std::string alias, std::string usage, std::string summary,
                 std::string help, std::function<void(Session&, const std::string&)> run) {
    commands_.push_back(Command{std::move(name), std::move(alias), std::move(usage),
                                std::move(summary), std::move(help), std::move(run)});
  };
  add("run", "r", "run", "start the kernel from the beginning and run to a stop",
      "Resets memory, semaphores and registers (inputs are bound again) and runs until a "
      "breakpoint, watchpoint, race (with check-races on), deadlock, fault or the end.",
      [](Session& s, const std::string&) { s.show(s.model_.run()); });
  add("continue", "c", "continue", "run until the next stop",
      "Runs from the current event, in modelled-time order, until a breakpoint or watchpoint "
      "hits, a race is found (check-races on), or the run ends (finish, deadlock or fault).",
      [](Session& s, const std::string&) { s.show(s.model_.resume()); });
  add("step", "s", "step [ENGINE] [N]", "execute N events (of ENGINE only, if given)",
      "An event is an instruction completing on its engine, or a DMA transfer completing on its "
      "queue (ENGINE may be q0..q15). Events run in modelled-time order; after the step the "
      "next pending event is shown. With an engine, the step also stops when that engine has "
      "run its last instruction.",
      [](Session& s, const std::string& a) { s.cmd_step(a); });
  add("next", "n", "next", "step over to the next source line of the current engine",
      "Runs until the current engine's next instruction is on another line of the same "
      "expansion level; deeper macro expansions and .for iterations are stepped over whole. "
      "Other engines run as the schedule says. On the engine's last instruction it stops when "
      "the engine has finished, at the next event of another engine.",
      [](Session& s, const std::string&) { s.show(s.model_.next()); });
  add("until", "u", "until [FILE:]LINE", "run until an instruction of LINE is next",
      "Without LINE, the same as next.", [](Session& s, const std::string& a) { s.cmd_until(a); });
  add("finish", "", "finish", "run until the current engine leaves the current expansion",
      "The current expansion is the innermost macro expansion or .for iteration of the stop "
      "(see where). It also stops when the engine has run its last instruction.",
      [](Session& s, const std::string&) { s.show(s.model_.finish()); });
  add("break", "b", "break FILE:LINE | LINE | LABEL | ENGINE:INDEX [if COND]",
      "stop before an instruction",
      "LINE matches instructions written on it and expansions requested on it (a macro call, "
      "a .for). COND is LHS OP RHS with OP one of == != < <= > >= over numbers, registers "
      "(dve.r3, or r3 of the stopping engine), semaphore names, $time (ns), $core and $pc.",
      [](Session& s, const std::string& a) { s.cmd_break(a, false); });
  add("tbreak", "", "tbreak SPEC [if COND]", "a breakpoint deleted after its first hit", "",
      [](Session& s, const std::string& a) { s.cmd_break(a, true); });
  add("watch", "", "watch TENSOR[slice]", "stop after an instruction writes the slice",
      "Any instruction or DMA transfer whose written byte range overlaps the slice stops the "
      "session; the changed elements are shown old -> new (the first 8). sbuf/psum slices "
      "are on the core of the current stop.",
      [](Session& s, const std::string& a) { s.cmd_watch(a, false); });
  add("rwatch", "", "rwatch TENSOR[slice]", "stop after an instruction reads the slice", "",
      [](Session& s, const std::string& a) { s.cmd_watch(a, true); });
  add("delete", "d", "delete [N...]", "delete breakpoints/watchpoints (all without N)", "",
      [](Session& s, const std::string& a) { s.cmd_delete(a); });
  add("disable", "", "disable [N...]", "disable breakpoints/watchpoints", "",
      [](Session& s, const std::string& a) { s.cmd_enable(a, false); });
  add("enable", "", "enable [N...]", "enable breakpoints/watchpoints", "",
      [](Session& s, const std::string& a) { s.cmd_enable(a, true); });
  add("info", "i",
      "info breakpoints|engines|queues|sems|registers [ENGINE]|tensors|timeline [N]|races",
      "show the state of the machine",
      "engines: every engine and DMA queue of every core: state (running, waiting, idle, "
      "done), current instruction and source line, and for a waiting engine the semaphore, "
      "its value and the value awaited. timeline: the last N trace records "
      "(docs/trace-format.md). races: the races found so far.",
      [](Session& s, const std::string& a) { s.cmd_info(a); });
  add("print", "p", "print TENSOR[slice] [/x|/d|/f] | ENGINE.rN | SEMAPHORE",
      "print a tensor slice as a grid, a register or a semaphore",
      "Rows are the first index (partitions for sbuf/psum), columns the remaining indices; "
      "large slices show their first and last 4 rows and columns. /x raw bits, /d integers, "
      "/f floats (the default for float dtypes).",
      [](Session& s, const std::string& a) { s.cmd_print(a); });
  add("x", "", "x/N SPACE:ADDR", "examine N raw bytes (sbuf:P:OFF, psum:P:OFF, hbm:ADDR)", "",
      [](Session& s, const std::string& a) { s.cmd_x(a); });
  add("list", "l", "list [LINE]", "source around the stop, with the line of each engine",
      "The margin names the engines whose next instruction comes from that line.",
      [](Session& s, const std::string& a) { s.cmd_list(a); });
  add("disas", "", "disas [ENGINE]", "disassemble around an engine's current instruction", "",
      [](Session& s, const std::string& a) { s.cmd_disas(a); });
  add("where", "bt", "where", "the expansion chain of the next event",
      "Innermost first: the instruction's line, then each macro expansion, .for iteration and "
      "include it came from.",
      [](Session& s, const std::string& a) { s.cmd_where(a); });
  add("set", "", "set var ENGINE.rN = V | set check-races on|off", "change a register or a setting",
      "Register changes are replayed by reverse-step and reverse-continue. With check-races "
      "on, the first access of an unordered pair stops the session (the checker always runs).",
      [](Session& s, const std::string& a) { s.cmd_set(a); });
  add("dump", "", "dump TENSOR FILE.npy", "save a whole tensor to a .npy file", "",
      [](Session& s, const std::string& a) { s.cmd_dump(a); });
  add("restart", "", "restart", "reset the machine to t = 0 (breakpoints are kept)", "",
      [](Session& s, const std::string&) { s.show(s.model_.restart()); });
  add("reverse-step", "rs", "reverse-step [N]", "go back N events",
      "Deterministic replay: the run restarts and executes all but the last N events (with "
      "the same register changes), so memory, registers and semaphores equal those of a "
      "fresh run stopped there.",
      [](Session& s, const std::string& a) { s.cmd_reverse_step(a); });
  add("reverse-continue", "rc", "reverse-continue", "go back to the previous stop",
      "The previous breakpoint, watchpoint or race stop before the current event; the start "
      "of the run if there is none.",
      [](Session& s, const std::string&) { s.show(s.model_.reverse_continue()); });
  add("help", "h", "help [CMD]", "list the commands, or describe one", "",
      [](Session& s, const std::string& a) { s.cmd_help(a); });
  add("quit", "q", "quit", "end the session", "", [](Session&, const std::string&) {});
}

} // namespace nisa::interp::debug
