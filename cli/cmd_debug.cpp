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

#include "asm/asm.h"
#include "cli/commands.h"
#include "interp/debug/session.h"
#include "isa/object.h"

namespace po = boost::program_options;

namespace nisa::cli {
namespace {

using interp::IoSpec;

bool split_binding(const std::string& s, const char* opt, IoSpec& out) {
  size_t eq = s.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == s.size()) {
    std::cerr << "nisa debug: " << opt << " '" << s << "': expected NAME=FILE.npy\n";
    return false;
  }
  out = {s.substr(0, eq), s.substr(eq + 1)};
  return true;
}

bool load_kernel(const std::string& kernel, const std::vector<std::string>& defines,
                 const std::vector<std::string>& includes, const interp::RunConfig& cfg,
                 Module& mod) {
  bool nbin = kernel.size() >= 5 && kernel.compare(kernel.size() - 5, 5, ".nbin") == 0;
  if (nbin) {
    if (!defines.empty()) {
      std::cerr << "nisa debug: -D applies to .nasm kernels only\n";
      return false;
    }
    auto r = load_object(kernel);
    if (!r) {
      std::cerr << "nisa debug: " << r.error().str() << "\n";
      return false;
    }
    mod = std::move(*r);
    return true;
  }
  nasm::AsmOptions ao;
  for (const auto& d : defines) {
    size_t eq = d.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "nisa debug: -D '" << d << "': expected NAME=VALUE\n";
      return false;
    }
    ao.defines.emplace_back(d.substr(0, eq), d.substr(eq + 1));
  }
  ao.include_dirs = includes;
  if (cfg.target_given) ao.target = cfg.machine.target;
  nasm::AsmResult r = nasm::assemble_file(kernel, ao);
  if (!r.ok()) {
    std::cerr << r.diagnostics_text();
    return false;
  }
  mod = std::move(*r.module);
  return true;
}

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

} // namespace

int cmd_debug(int argc, char** argv) {
  std::string kernel, target, script, schedule = "fixed";
  uint64_t seed = 0;
  std::vector<std::string> defines, includes, ins;
  int lnc = 1, ranks = 1;
  po::options_description opts(
      "usage: nisa debug KERNEL.(nasm|nbin) [-D NAME=VALUE]... --in NAME=FILE.npy... "
      "[-x SCRIPT] [--batch] [options]\n\n"
      "Debugs a kernel on the modelled machine (docs/debugger.md); `help` in the session lists "
      "the commands.\n\noptions");
  opts.add_options()("help,h", "show this help")("define,D", po::value(&defines)->composing(),
                                                 "NAME=VALUE: set a .param (.nasm only)")(
      "include,I", po::value(&includes)->composing(), "include directory (.nasm only)")(
      "in", po::value(&ins)->composing(), "NAME=FILE.npy: bind an input tensor")(
      "out", po::value<std::vector<std::string>>()->composing(),
      "accepted for symmetry with nisa run; use the dump command to save tensors")(
      "target", po::value(&target), "trn1 | trn2 | trn3 (default: the kernel's .target)")(
      "lnc", po::value(&lnc)->default_value(1),
      "cores per logical core: 1 or 2")("ranks", po::value(&ranks)->default_value(1), "SPMD ranks")(
      "check-uninit", "fault on reads of memory never written")(
      "schedule", po::value(&schedule)->default_value("fixed"),
      "fixed | random (ties and latencies from --seed; replays stay deterministic)")(
      "seed", po::value(&seed)->default_value(0), "seed of --schedule random")(
      "command,x", po::value(&script), "run the commands of SCRIPT first (echoed)")(
      "batch", "exit after the script instead of reading commands");
  po::options_description hidden;
  hidden.add_options()("kernel", po::value(&kernel));
  po::options_description all;
  all.add(opts).add(hidden);
  po::positional_options_description pos;
  pos.add("kernel", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "nisa debug: " << e.what() << "\n";
    return 1;
  }
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return 0;
  }
  if (kernel.empty()) {
    std::cerr << "nisa debug: no kernel given (nisa debug --help)\n";
    return 1;
  }
  interp::RunConfig cfg;
  cfg.machine.lnc = lnc;
  cfg.machine.ranks = ranks;
  cfg.machine.check_uninit = vm.count("check-uninit") > 0;
  if (!target.empty()) {
    const interp::TargetParams* tp = interp::find_target(target);
    if (!tp) {
      std::cerr << "nisa debug: unknown --target '" << target << "' (trn1, trn2 or trn3)\n";
      return 1;
    }
    cfg.machine.target = tp->target;
    cfg.target_given = true;
  }
  if (schedule == "random")
    cfg.sched.mode = interp::ScheduleMode::random;
  else if (schedule != "fixed") {
    std::cerr << "nisa debug: unknown --schedule '" << schedule << "' (fixed or random)\n";
    return 1;
  }
  cfg.sched.seed = seed;
  for (const auto& s : ins) {
    IoSpec io;
    if (!split_binding(s, "--in", io)) return 1;
    cfg.inputs.push_back(io);
  }
  Module mod;
  if (!load_kernel(kernel, defines, includes, cfg, mod)) return 1;
  std::unique_ptr<interp::debug::Session> session;
  try {
    session = std::make_unique<interp::debug::Session>(mod, cfg, std::cout);
  } catch (const std::exception& e) {
    std::cerr << "nisa debug: error: " << e.what() << "\n";
    return 1;
  }
  if (!script.empty()) {
    std::ifstream f(script);
    if (!f) {
      std::cerr << "nisa debug: " << script << ": cannot open the script\n";
      return 1;
    }
    for (std::string line; std::getline(f, line);) {
      std::cout << "(nisa) " << line << "\n";
      if (!session->execute(line)) return 0;
    }
  }
  if (vm.count("batch")) return 0;
  std::string last;
  if (!isatty(STDIN_FILENO)) { // piped commands: no line editing
    for (std::string line; std::cout << "(nisa) " << std::flush, std::getline(std::cin, line);)
      if (!session->execute(line)) return 0;
    std::cout << "\n";
    return 0;
  }
  g_names = session->command_names();
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
    if (!session->execute(line)) break;
    std::cout << std::flush;
  }
  if (!hist.empty()) write_history(hist.c_str());
  return 0;
}

} // namespace nisa::cli
