// Shared by the kernel benchmarks: assemble kernels_asm/FILE for trn2 with -D values.
#pragma once
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "asm/asm.h"

namespace nisa::bench {

using Defines = std::vector<std::pair<std::string, std::string>>;

inline Module assemble_kernel(const std::string& file, const Defines& d) {
  nasm::AsmOptions o;
  o.defines = d;
  o.target = Target::trn2;
  auto r = nasm::assemble_file(std::string(NISA_SOURCE_DIR) + "/kernels_asm/" + file, o);
  if (!r.ok()) throw std::runtime_error(r.diagnostics_text());
  return std::move(*r.module);
}

} // namespace nisa::bench
