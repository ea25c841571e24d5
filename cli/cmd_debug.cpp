// nisa debug: the interactive debugger (issue 6). Not implemented yet.
#include <cstdio>

#include "cli/commands.h"

namespace nisa::cli {

int cmd_debug(int, char**) {
  std::fprintf(stderr, "nisa debug: not implemented yet (issue 6)\n");
  return 1;
}

} // namespace nisa::cli
