// nisa: one binary, subcommands only; all logic lives in the libraries.
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "cli/commands.h"

namespace {
struct Command {
  const char* name;
  int (*fn)(int, char**);
  const char* help;
};
constexpr Command kCommands[] = {
    {"asm", nisa::cli::cmd_asm, "assemble a .nasm kernel into a .nbin object"},
    {"disasm", nisa::cli::cmd_disasm, "print a .nbin object as assembly"},
    {"run", nisa::cli::cmd_run, "run a kernel (.nasm or .nbin) on .npy inputs"},
    {"debug", nisa::cli::cmd_debug, "single-step a kernel in the debugger"},
    {"check", nisa::cli::cmd_check, "prove a kernel's synchronisation without running it"},
    {"dap", nisa::cli::cmd_dap, "Debug Adapter Protocol server over stdio (editors)"},
    {"isa", nisa::cli::cmd_isa, "print the instruction reference"},
};

void usage(std::FILE* f) {
  std::fprintf(f, "usage: nisa <command> [options]   (nisa <command> --help)\n\ncommands:\n");
  for (const auto& c : kCommands) std::fprintf(f, "  %-8s %s\n", c.name, c.help);
}
} // namespace

int main(int argc, char** argv) {
  // Past a file-size limit (ulimit -f) a write should fail with EFBIG, which every writer
  // reports (isa/output_file.h), instead of killing the process with a half-written file.
  std::signal(SIGXFSZ, SIG_IGN);
  if (argc < 2) {
    usage(stderr);
    return 1;
  }
  std::string_view sub = argv[1];
  if (sub == "--help" || sub == "-h" || sub == "help") {
    usage(stdout);
    return 0;
  }
  if (sub == "--version") {
    std::printf("nisa 0.1.0\n");
    return 0;
  }
  for (const auto& c : kCommands)
    if (sub == c.name) return c.fn(argc - 1, argv + 1);
  std::fprintf(stderr, "nisa: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return 1;
}
