// libFuzzer target for the assembler: any text must give a module or diagnostics, never a
// crash, a hang or unbounded memory. Limits are lowered so each input stays fast.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "asm/asm.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nisa::nasm::AsmOptions o;
  o.max_iterations = 10'000;
  o.max_instructions = 20'000;
  o.max_depth = 16;
  auto r = nisa::nasm::assemble_string(std::string_view(reinterpret_cast<const char*>(data), size),
                                       "fuzz.nasm", o);
  if (!r.ok() && r.diags.empty()) __builtin_trap(); // an error must always be explained
  return 0;
}
