#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "interp/core/target.h"
#include "interp/debug/internal.h"
#include "interp/run/npy.h"

namespace nisa::interp::debug {

Session::Session(const Module& mod, const RunConfig& cfg, std::ostream& out)
    : mod_(mod), cfg_(cfg), out_(out) {
  MachineOptions mo = cfg_.machine;
  if (!cfg_.target_given) mo.target = mod.target;
  m_ = std::make_unique<Machine>(mod, mo, InputFill::caller_writes); // start() resets it
  build_commands();
  start();
}

Session::~Session() = default;

void Session::start() {
  sched_.reset();
  reset_with_inputs(*m_, cfg_.inputs);
  races_ = std::make_unique<RaceChecker>(*m_);
  trace_ = std::make_unique<TraceRecorder>(*m_, TraceFilter{}, nullptr, true, 0, kKeptRecords);
  bool active = watcher_ && watcher_->active;
  watcher_ = std::make_unique<Watcher>(*m_);
  watcher_->active = active;
  observers_.list = {races_.get(), trace_.get(), watcher_.get()};
  SchedOptions so = cfg_.sched;
  so.observer = &observers_;
  steps_ = 0;
  races_seen_ = 0;
  last_.reset();
  cur_core_ = 0;
  sched_ = std::make_unique<Scheduler>(*m_, so);
  for (Breakpoint& b : bps_)
    if (b.slice) b.snapshot = read_slice(*b.slice, b.core);
}

bool Session::do_step() {
  for (const RegEdit& e : edits_)
    if (e.step == steps_) m_->cores[size_t(e.core)].st.regs[e.engine][e.reg] = e.value;
  std::optional<StepEvent> ev = sched_->peek();
  bool more = sched_->step();
  ++steps_;
  last_ = ev;
  if (ev) cur_core_ = ev->core;
  return more;
}

void Session::replay_to(int64_t target) {
  std::erase_if(edits_, [&](const RegEdit& e) { return e.step > target; });
  start();
  check_next_ = false;
  while (steps_ < target && !sched_->finished()) do_step();
  for (const RegEdit& e : edits_) // made while stopped at the target: part of its state
    if (e.step == steps_) m_->cores[size_t(e.core)].st.regs[e.engine][e.reg] = e.value;
  for (Breakpoint& b : bps_)
    if (b.slice) b.snapshot = read_slice(*b.slice, b.core);
  races_seen_ = races_->races().size();
}

int Session::exit_code() const { return sched_->finished() ? sched_->result().exit_code : kExitOk; }

bool Session::not_running() {
  if (!sched_->finished()) return false;
  if (steps_ == 0) { // it ended before its first event (a deadlock or fault at t = 0)
    print_end();
    return true;
  }
  const RunResult& r = sched_->result();
  out_ << fmt::format("The kernel is not running ({}); use run or restart.\n",
                      r.status == RunStatus::ok         ? "it finished"
                      : r.status == RunStatus::deadlock ? "it deadlocked"
                      : r.status == RunStatus::fault    ? "it faulted"
                                                        : "it spent its --max-steps budget");
  return true;
}

const DebugLoc* Session::loc_of(Engine e, int64_t pc) const {
  const auto& d = mod_.debug[int(e)];
  return pc >= 0 && size_t(pc) < d.size() ? &d[size_t(pc)] : nullptr;
}

int Session::parse_engine(const std::string& s) const {
  for (int e = 0; e < kNumEngines; ++e)
    if (name_of(Engine(e)) == s) return e;
  // q0..q15; longer digit strings are no queue either (and must not overflow).
  if (s.size() > 1 && s.size() <= 3 && s[0] == 'q' &&
      s.find_first_not_of("0123456789", 1) == std::string::npos) {
    int q = std::stoi(s.substr(1));
    if (q < kNumDmaQueues) return kNumEngines + q;
  }
  return -1;
}

// ---- running -----------------------------------------------------------------------------------

void Session::resume(const std::function<bool(const StepEvent&)>& stop_after) {
  if (not_running()) return;
  watcher_->active = std::any_of(bps_.begin(), bps_.end(), [](const Breakpoint& b) {
    return b.enabled && (b.kind == Breakpoint::watch || b.kind == Breakpoint::rwatch);
  });
  // The event at the stop was checked for breakpoints only when the stop came before it (a
  // breakpoint or a step); after a watchpoint or race stop (after an event) it still must be.
  bool first = !check_next_;
  check_next_ = false;
  while (true) {
    std::optional<StepEvent> ev = sched_->peek();
    if (!ev) return print_end();
    if (!first && check_breakpoint(*ev)) {
      hit_steps_.push_back(steps_);
      return print_stop();
    }
    first = false;
    do_step();
    bool stop = false;
    if (watcher_->active && check_watchpoints()) {
      hit_steps_.push_back(steps_);
      stop = true;
    }
    if (races_->races().size() > races_seen_) {
      for (size_t i = races_seen_; i < races_->races().size(); ++i)
        if (check_races_) out_ << races_->report_text(races_->races()[i]);
      races_seen_ = races_->races().size();
      if (check_races_) {
        hit_steps_.push_back(steps_);
        stop = true;
      }
    }
    if (sched_->finished()) return print_end();
    if (stop) check_next_ = true; // stopped after the event: the next one is unchecked
    if (stop || stop_after(*ev)) return print_stop();
  }
}

void Session::cmd_run(const std::string&) {
  edits_.clear();
  replay_to(0);
  hit_steps_.clear();
  out_ << fmt::format("Starting kernel {}.\n", mod_.kernel);
  if (sched_->finished()) return print_end(); // a deadlock or fault at t = 0
  // A breakpoint on the very first event counts: check it before resuming.
  if (auto ev = sched_->peek(); ev && check_breakpoint(*ev)) {
    hit_steps_.push_back(steps_);
    return print_stop();
  }
  resume([](const StepEvent&) { return false; });
}

void Session::cmd_continue(const std::string&) {
  resume([](const StepEvent&) { return false; });
}

void Session::cmd_step(const std::string& a) {
  std::vector<std::string> w = words(a);
  int eng = -1;
  int64_t n = 1;
  if (!w.empty() && !is_number(w[0])) {
    eng = parse_engine(w[0]);
    if (eng < 0)
      throw Error(fmt::format("step: unknown engine '{}' (pe act dve pool sp cc q0..q15)", w[0]));
    w.erase(w.begin());
  }
  if (!w.empty()) n = to_int(w[0], "step count", 1);
  if (n < 1) throw Error("step: the count must be at least 1");
  int64_t seen = 0;
  resume([&](const StepEvent& ev) {
    bool mine = eng < 0 || (eng < kNumEngines ? ev.dma_queue < 0 && int(ev.engine) == eng
                                              : ev.dma_queue == eng - kNumEngines);
    return mine && ++seen >= n;
  });
}

void Session::cmd_next(const std::string&) {
  if (not_running()) return;
  StepEvent ev0 = *sched_->peek();
  if (ev0.dma_queue >= 0) return cmd_step("");
  const DebugLoc* d0 = loc_of(ev0.engine, ev0.pc);
  int32_t f0 = d0 ? d0->frame : -1;
  uint32_t line0 = d0 ? d0->line : 0;
  // Stop before the engine's next instruction that is on another line of the same expansion
  // level, or outside it; deeper expansions (macros, .for iterations) are stepped over.
  resume([&](const StepEvent&) {
    auto nx = sched_->peek();
    if (!nx || nx->dma_queue >= 0 || nx->engine != ev0.engine || nx->core != ev0.core) return false;
    const DebugLoc* d = loc_of(nx->engine, nx->pc);
    if (!d) return true;
    if (d->frame == f0) return d->line != line0;
    for (int32_t f = d->frame; f >= 0; f = mod_.frames[size_t(f)].parent)
      if (f == f0) return false; // deeper
    return f0 >= 0;              // outside the current expansion (or nested, at top level)
  });
}

void Session::cmd_finish(const std::string&) {
  if (not_running()) return;
  StepEvent ev0 = *sched_->peek();
  const DebugLoc* d0 = loc_of(ev0.engine, ev0.pc);
  if (!d0 || d0->frame < 0)
    throw Error("finish: the stop is not inside a macro expansion or .for iteration");
  int32_t f0 = d0->frame;
  resume([&](const StepEvent&) {
    auto nx = sched_->peek();
    if (!nx || nx->dma_queue >= 0 || nx->engine != ev0.engine || nx->core != ev0.core) return false;
    const DebugLoc* d = loc_of(nx->engine, nx->pc);
    if (!d) return true;
    for (int32_t f = d->frame; f >= 0; f = mod_.frames[size_t(f)].parent)
      if (f == f0) return false;
    return true;
  });
}

void Session::cmd_until(const std::string& a) {
  if (trim(a).empty()) return cmd_next("");
  std::string spec = trim(a);
  int file = 0;
  size_t colon = spec.rfind(':');
  if (colon != std::string::npos) {
    std::string fname = spec.substr(0, colon);
    file = -1;
    for (size_t i = 0; i < mod_.files.size(); ++i)
      if (mod_.files[i] == fname || basename_of(mod_.files[i]) == fname) file = int(i);
    if (file < 0) throw Error(fmt::format("until: no source file '{}'", fname));
    spec = spec.substr(colon + 1);
  }
  int64_t line = to_int(spec, "until");
  // A line no instruction comes from (past the end, an `.endfor`, a comment) would run to the
  // end silently: say so, and name the next line that has instructions.
  size_t count = 0;
  int64_t next_line = -1, last_line = -1;
  for (int e = 0; e < kNumEngines; ++e)
    for (size_t pc = 0; pc < mod_.streams[e].size(); ++pc) {
      const DebugLoc* d = loc_of(Engine(e), int64_t(pc));
      if (loc_matches(mod_, d, file, line)) ++count;
      if (!d || int(d->file) != file) continue;
      last_line = std::max<int64_t>(last_line, d->line);
      if (int64_t(d->line) > line && (next_line < 0 || int64_t(d->line) < next_line))
        next_line = d->line;
    }
  if (!count)
    throw Error(
        next_line >= 0
            ? fmt::format("until: no instruction comes from line {} of {}; the next line with "
                          "instructions is {}",
                          line, basename_of(mod_.files[size_t(file)]), next_line)
            : fmt::format("until: no instruction comes from line {} of {} (its last "
                          "instruction is on line {})",
                          line, basename_of(mod_.files[size_t(file)]), last_line));
  resume([&](const StepEvent&) {
    auto nx = sched_->peek();
    return nx && nx->dma_queue < 0 && loc_matches(mod_, loc_of(nx->engine, nx->pc), file, line);
  });
}

void Session::cmd_restart(const std::string&) {
  edits_.clear();
  replay_to(0);
  hit_steps_.clear();
  out_ << fmt::format("Restarted kernel {} at t = 0.\n", mod_.kernel);
  print_stop();
}

void Session::cmd_reverse_step(const std::string& a) {
  int64_t n = trim(a).empty() ? 1 : to_int(trim(a), "reverse-step", 1);
  if (n < 1) throw Error("reverse-step: the count must be at least 1");
  if (steps_ == 0) throw Error("reverse-step: already at the start of the run");
  int64_t target = std::max<int64_t>(0, steps_ - n);
  replay_to(target);
  std::erase_if(hit_steps_, [&](int64_t s) { return s > target; });
  out_ << fmt::format("Replayed to event {}.\n", steps_);
  print_stop();
}

void Session::cmd_reverse_continue(const std::string&) {
  int64_t target = 0;
  for (int64_t s : hit_steps_)
    if (s < steps_) target = std::max(target, s);
  replay_to(target);
  std::erase_if(hit_steps_, [&](int64_t s) { return s > target; });
  out_ << (target == 0 ? std::string("No earlier stop: back at the start of the run.\n")
                       : fmt::format("Back at the previous stop (event {}).\n", target));
  print_stop();
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
      [](Session& s, const std::string& a) { s.cmd_run(a); });
  add("continue", "c", "continue", "run until the next stop",
      "Runs from the current event, in modelled-time order, until a breakpoint or watchpoint "
      "hits, a race is found (check-races on), or the run ends (finish, deadlock or fault).",
      [](Session& s, const std::string& a) { s.cmd_continue(a); });
  add("step", "s", "step [ENGINE] [N]", "execute N events (of ENGINE only, if given)",
      "An event is an instruction completing on its engine, or a DMA transfer completing on its "
      "queue (ENGINE may be q0..q15). Events run in modelled-time order; after the step the "
      "next pending event is shown.",
      [](Session& s, const std::string& a) { s.cmd_step(a); });
  add("next", "n", "next", "step over to the next source line of the current engine",
      "Runs until the current engine's next instruction is on another line of the same "
      "expansion level; deeper macro expansions and .for iterations are stepped over whole. "
      "Other engines run as the schedule says.",
      [](Session& s, const std::string& a) { s.cmd_next(a); });
  add("until", "u", "until [FILE:]LINE", "run until an instruction of LINE is next",
      "Without LINE, the same as next.", [](Session& s, const std::string& a) { s.cmd_until(a); });
  add("finish", "", "finish", "run until the current engine leaves the current expansion",
      "The current expansion is the innermost macro expansion or .for iteration of the stop "
      "(see where).",
      [](Session& s, const std::string& a) { s.cmd_finish(a); });
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
      [](Session& s, const std::string& a) { s.cmd_restart(a); });
  add("reverse-step", "rs", "reverse-step [N]", "go back N events",
      "Deterministic replay: the run restarts and executes all but the last N events (with "
      "the same register changes), so memory, registers and semaphores equal those of a "
      "fresh run stopped there.",
      [](Session& s, const std::string& a) { s.cmd_reverse_step(a); });
  add("reverse-continue", "rc", "reverse-continue", "go back to the previous stop",
      "The previous breakpoint, watchpoint or race stop before the current event; the start "
      "of the run if there is none.",
      [](Session& s, const std::string& a) { s.cmd_reverse_continue(a); });
  add("help", "h", "help [CMD]", "list the commands, or describe one", "",
      [](Session& s, const std::string& a) { s.cmd_help(a); });
  add("quit", "q", "quit", "end the session", "", [](Session&, const std::string&) {});
}

} // namespace nisa::interp::debug
