// nisa debug KERNEL.(nasm|nbin) --in NAME=FILE.npy... [-x SCRIPT] [--batch]: the interactive
// debugger (docs/debugger.md). The session itself is interp/debug/session.*; this file parses
// the options, loads the kernel and runs the read-eval loop (GNU readline on a terminal).
#include <readline/history.h>
#include <readline/readline.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/common.h"
#include "interp/debug/session.h"

namespace nisa::cli {
namespace {

// readline completion over the command names.
std::vector<std::string> g_names;
char* complete_name(const char* text, int state) {
  static size_t i;
  if (!state) i = 0;
  std::string t = text;
  while (i < g_names.size()) {
    const std::string& n = g_names[i++];
    if (n.compare(0, t.size(), t) == 0) return strdup(n.c_str());
  }
  return nullptr;
}
char** completion(const char* text, int start, int) {
  rl_attempted_completion_over = 1;
  return start == 0 ? rl_completion_matches(text, complete_name) : nullptr;
}

// Runs the script, then the interactive loop (readline on a terminal); 0 when the session
// ends normally.
int repl(interp::debug::Session& session, const std::string& script, bool batch) {
  if (!script.empty()) {
    std::ifstream f(script);
    if (!f) {
      std::cerr << "nisa debug: " << script << ": cannot open the script\n";
      return 1;
    }
    for (std::string line; std::getline(f, line);) {
      std::cout << "(nisa) " << line << "\n";
      if (!session.execute(line)) return 0;
    }
  }
  if (batch) return 0;
  std::string last;
  if (!isatty(STDIN_FILENO)) { // piped commands: no line editing
    for (std::string line; std::cout << "(nisa) " << std::flush, std::getline(std::cin, line);)
      if (!session.execute(line)) return 0;
    std::cout << "\n";
    return 0;
  }
  g_names = session.command_names();
  rl_attempted_completion_function = completion;
  const char* home = std::getenv("HOME");
  std::string hist = home ? std::string(home) + "/.nisa_debug_history" : "";
  if (!hist.empty()) read_history(hist.c_str());
  while (char* raw = readline("(nisa) ")) {
    std::string line = raw;
    std::free(raw);
    if (line.find_first_not_of(" \t") == std::string::npos) {
      line = last; // an empty line repeats the last command, as in gdb
    } else {
      add_history(line.c_str());
      last = line;
    }
    if (!session.execute(line)) break;
    std::cout << std::flush;
  }
  if (!hist.empty()) write_history(hist.c_str());
  return 0;
}

} // namespace

int cmd_debug(int argc, char** argv) {
  std::string kernel, script;
  MachineArgs margs;
  po::options_description opts(
      "usage: nisa debug KERNEL.(nasm|nbin) [-D NAME=VALUE]... --in NAME=FILE.npy... "
      "[-x SCRIPT] [--batch] [options]\n\n"
      "Debugs a kernel on the modelled machine (docs/debugger.md); `help` in the session lists "
      "the commands.\n\noptions");
  opts.add_options()("help,h", "show this help");
  margs.add_to(opts);
  std::vector<std::string> outs;
  opts.add_options()("out", po::value(&outs)->composing(),
                     "NAME=FILE.npy: save an hbm tensor when the session ends (its state then)")(
      "command,x", po::value(&script), "run the commands of SCRIPT first (echoed)")(
      "batch", "exit after the script instead of reading commands, with the run's status: 0 "
               "running or finished, 2 deadlock, 3 fault, 4 a race stopped the session "
               "(set check-races on), 5 --max-steps spent");
  po::variables_map vm;
  if (auto rc = parse_args("debug", argc, argv, opts, kernel, "no kernel given", vm)) return *rc;
  interp::RunConfig cfg;
  if (!margs.apply("debug", vm, cfg)) return 1;
  for (const auto& o : outs) {
    interp::IoSpec io;
    if (!split_binding("debug", o, "--out", io)) return 1;
    cfg.outputs.push_back(io);
  }
  if (!check_output_paths("debug", kernel, {}, cfg)) return 1;
  auto loaded = margs.load_kernel("debug", kernel, vm, cfg);
  if (!loaded) return 1;
  const Module& mod = *loaded;
  std::unique_ptr<interp::debug::Session> session;
  try {
    session = std::make_unique<interp::debug::Session>(mod, cfg, std::cout);
  } catch (const std::exception& e) {
    std::cerr << "nisa debug: error: " << e.what() << "\n";
    return 1;
  }
  const bool batch = vm.count("batch") > 0;
  const int rc = repl(*session, script, batch);
  // Scripts can tell how the run ended: 2 deadlock, 3 fault, 5 budget, 4 a race stopped the
  // session (0 while it runs or after a clean finish).
  const int status = batch ? session->exit_code() : 0;
  if (rc != 0 || cfg.outputs.empty()) return rc ? rc : status;
  try {
    interp::write_outputs(session->machine(), cfg.outputs);
  } catch (const std::exception& e) {
    std::cerr << "nisa debug: " << e.what() << "\n";
    return 1;
  }
  return status;
}

} // namespace nisa::cli
