// The console's commands that set breakpoints, inspect or change the machine: each parses its
// arguments, asks the model and prints the answer.
#include <algorithm>
#include <climits>

#include <fmt/format.h>

#include "interp/debug/internal.h"
#include "interp/run/npy.h"

namespace nisa::interp::debug {

void Session::cmd_break(const std::string& a, bool temporary) {
  std::string spec = trim(a), cond;
  size_t k = spec.find(" if ");
  if (k != std::string::npos) cond = trim(spec.substr(k + 4)), spec = trim(spec.substr(0, k));
  out_ << printer_.breakpoint_text(model_.add_breakpoint(spec, cond, temporary));
}

void Session::cmd_watch(const std::string& a, bool read) {
  out_ << printer_.breakpoint_text(model_.add_watchpoint(a, read));
}

void Session::cmd_delete(const std::string& a) {
  std::vector<std::string> w = words(a);
  if (w.empty()) {
    model_.delete_breakpoints();
    out_ << "Deleted all breakpoints and watchpoints.\n";
    return;
  }
  for (const std::string& s : w) {
    int64_t id = to_int(s, "delete");
    if (id < INT_MIN || id > INT_MAX) throw Error(fmt::format("delete: no breakpoint {}", id));
    model_.delete_breakpoint(int(id));
  }
}

void Session::cmd_enable(const std::string& a, bool on) {
  std::vector<std::string> w = words(a);
  if (w.empty()) model_.enable_breakpoints(on);
  for (const std::string& s : w) {
    int64_t id = to_int(s, on ? "enable" : "disable");
    if (id < INT_MIN || id > INT_MAX) throw Error(fmt::format("no breakpoint {}", id));
    model_.enable_breakpoint(int(id), on);
  }
}

void Session::cmd_info(const std::string& a) {
  const Machine& m = model_.machine();
  std::vector<std::string> w = words(a);
  std::string what = w.empty() ? "" : w[0];
  auto starts = [&](const char* full) {
    return !what.empty() && std::string(full).compare(0, what.size(), what) == 0;
  };
  if (starts("breakpoints") || starts("watchpoints")) {
    out_ << printer_.breakpoints_table();
  } else if (starts("engines")) {
    out_ << fmt::format("t = {}\n", ns(model_.now())) << printer_.engines_text();
  } else if (starts("queues")) {
    out_ << printer_.queues_text();
  } else if (starts("sems") || starts("semaphores")) {
    out_ << printer_.sems_text();
  } else if (starts("registers")) {
    int only = w.size() > 1 ? agent_index(w[1]) : -1;
    if (w.size() > 1 && (only < 0 || only >= kNumEngines))
      throw Error(fmt::format("info registers: unknown engine '{}'", w[1]));
    out_ << printer_.registers_text(only);
  } else if (starts("tensors")) {
    out_ << printer_.tensors_text();
  } else if (starts("timeline")) {
    int64_t n = w.size() > 1 ? to_int(w[1], "info timeline", 0) : 10;
    const auto& recs = model_.trace().records();
    size_t from = recs.size() > size_t(n) ? recs.size() - size_t(n) : 0;
    out_ << trace_header(m);
    for (size_t i = from; i < recs.size(); ++i) out_ << trace_line(m, recs[i]);
  } else if (starts("races")) {
    const RaceChecker& rc = model_.races();
    if (rc.races().empty()) out_ << "No races found so far.\n";
    for (const RaceReport& r : rc.races()) out_ << rc.report_text(r);
  } else {
    throw Error("info: expected breakpoints, engines, queues, sems, registers, tensors, timeline "
                "or races");
  }
}

void Session::cmd_print(const std::string& a) {
  std::string arg = trim(a);
  char f = 0;
  auto take_fmt = [&](std::string& s, bool front) {
    if (front && s.size() >= 2 && s[0] == '/') {
      f = s[1];
      s = trim(s.substr(2));
    } else if (!front && s.size() >= 2 && s[s.size() - 2] == '/') {
      f = s.back();
      s = trim(s.substr(0, s.size() - 2));
    }
  };
  take_fmt(arg, true);
  take_fmt(arg, false);
  if (f && f != 'x' && f != 'd' && f != 'f')
    throw Error(fmt::format("print: unknown format /{} (/x /d /f)", f));
  if (arg.empty()) throw Error("print: expected TENSOR[slice], ENGINE.rN or a semaphore");
  if (arg.find('[') == std::string::npos && !model_.machine().find_tensor(arg)) {
    try {
      out_ << fmt::format("{} = {}\n", arg, model_.value_of(arg));
    } catch (const RangeError&) {
      throw;
    } catch (const Error&) {
      throw Error(fmt::format("print: '{}' is no tensor, register (ENGINE.rN) or semaphore", arg));
    }
    return;
  }
  out_ << printer_.slice_text(parse_slice(model_.module(), arg), model_.current_core(), f);
}

void Session::cmd_x(const std::string& a) {
  std::string arg = trim(a);
  int64_t n = 16;
  if (!arg.empty() && arg[0] == '/') {
    size_t sp = arg.find(' ');
    n = to_int(arg.substr(1, sp - 1), "x/N");
    arg = sp == std::string::npos ? "" : trim(arg.substr(sp));
  }
  if (n < 1 || n > 4096) throw Error("x: N must be 1..4096");
  MemRef ref = parse_memref(arg);
  std::vector<uint8_t> bytes = model_.read_memory(ref, uint64_t(n));
  std::string label = ref.text();
  for (size_t i = 0; i < bytes.size(); i += 16) {
    std::string line = fmt::format("{}+{:#06x}:", label, i);
    for (size_t j = i; j < std::min(bytes.size(), i + 16); ++j)
      line += fmt::format(" {:02x}", bytes[j]);
    out_ << line << "\n";
  }
}

void Session::cmd_list(const std::string& a) {
  std::optional<uint32_t> line;
  if (!trim(a).empty()) line = uint32_t(to_int(trim(a), "list", 1, UINT32_MAX));
  out_ << printer_.list_text(line);
}

void Session::cmd_disas(const std::string& a) {
  auto nx = model_.next_event();
  int e = nx ? int(nx->engine) : int(Engine::sp);
  if (!trim(a).empty()) {
    e = agent_index(trim(a));
    if (e < 0 || e >= kNumEngines) throw Error(fmt::format("disas: unknown engine '{}'", trim(a)));
  }
  out_ << printer_.disas_text(Engine(e));
}

void Session::cmd_where(const std::string&) {
  auto nx = model_.next_event();
  if (!nx) {
    out_ << "No instruction is pending.\n";
    return;
  }
  if (nx->dma_queue >= 0) out_ << fmt::format("q{}: a transfer triggered by\n", nx->dma_queue);
  out_ << printer_.where_text(model_.frames(nx->engine, nx->pc));
}

void Session::cmd_set(const std::string& a) {
  std::vector<std::string> w = words(a);
  if (w.size() >= 2 && w[0] == "check-races") {
    if (w[1] != "on" && w[1] != "off") throw Error("set check-races: expected on or off");
    model_.set_check_races(w[1] == "on");
    out_ << fmt::format("Race checking is {}{}.\n", w[1],
                        model_.check_races() ? " (a race stops the session)" : "");
    return;
  }
  std::string rest = trim(a);
  if (rest.rfind("var ", 0) == 0) rest = trim(rest.substr(4));
  size_t eq = rest.find('=');
  if (eq == std::string::npos)
    throw Error("set: expected `set var ENGINE.rN = V` or `set check-races on|off`");
  std::string lhs = trim(rest.substr(0, eq));
  int64_t v = to_int(trim(rest.substr(eq + 1)), "set var: value", INT32_MIN, INT32_MAX);
  size_t dot = lhs.find('.');
  auto nx = model_.next_event();
  int e = dot == std::string::npos ? (nx ? int(nx->engine) : -1) : agent_index(lhs.substr(0, dot));
  std::string reg = dot == std::string::npos ? lhs : lhs.substr(dot + 1);
  int r = e < 0 || e >= kNumEngines ? -1 : reg_index(reg, "set var: register index");
  if (r < 0)
    throw Error(fmt::format("set var: '{}' is not a register (ENGINE.r0 .. ENGINE.r63)", lhs));
  model_.set_register(Engine(e), r, int32_t(v));
  out_ << fmt::format("{}.r{} = {}\n", name_of(Engine(e)), r, int32_t(v));
}

void Session::cmd_dump(const std::string& a) {
  std::vector<std::string> w = words(a);
  if (w.size() != 2) throw Error("dump: expected TENSOR FILE.npy");
  const TensorDecl* t = model_.machine().find_tensor(w[0]);
  if (!t) throw Error(fmt::format("dump: no tensor '{}'", w[0]));
  SliceValues v = model_.read(w[0]);
  write_npy(w[1], t->dtype, t->shape, v.bytes.data());
  out_ << fmt::format("Wrote {} ({} bytes of {}) to {}.\n", t->name, v.bytes.size(),
                      dtype_name(t->dtype), w[1]);
}

} // namespace nisa::interp::debug
