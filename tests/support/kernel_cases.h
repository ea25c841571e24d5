// Every kernel of kernels_asm at a small shape, each kernel's typical launch: the multi-core
// ones with --lnc 2, the collectives on several ranks (the threads and profile tests run them
// all).
#pragma once
#include <string>
#include <vector>

#include "tests/support/kernel_harness.h"

namespace nisa::kt {

struct KernelCase {
  std::string name, file;
  Defines defines;
  int lnc = 1, ranks = 1;
};

std::vector<KernelCase> every_kernel();

} // namespace nisa::kt
