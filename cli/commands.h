// The nisa subcommands. Each lives in cli/cmd_<name>.cpp and parses its own options
// with Boost.Program_options; argv[0] is the subcommand name. Returns the exit code.
#pragma once

namespace nisa::cli {
int cmd_asm(int argc, char** argv);
int cmd_disasm(int argc, char** argv);
int cmd_isa(int argc, char** argv);
int cmd_run(int argc, char** argv);
int cmd_debug(int argc, char** argv);
int cmd_check(int argc, char** argv);
int cmd_dap(int argc, char** argv);
} // namespace nisa::cli
