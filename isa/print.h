// Assembly text of instructions and whole modules (docs/asm.md, "Raw access patterns").
// The text re-assembles to the same instructions: every access pattern is printed in the raw
// ap(...) form, which states every AccessPattern field exactly.
#pragma once
#include <optional>
#include <string>

#include "isa/module.h"

namespace nisa {

struct PrintContext {
  // Names of semaphores, replica groups and labels (labels of `engine`'s stream). Without a
  // module, semaphores print as s<i>, groups as g<i> and branch targets as indices.
  const Module* module = nullptr;
};

std::string print_ap(const AccessPattern& ap);
std::string print_float(float f); // shortest text that parses back to the same float
std::string print_inst(const Inst& in, const PrintContext& ctx = {});

struct ModulePrintOptions {
  bool show_encoding = false;   // "; encoding: [0x..,...]" after each instruction
  std::optional<Engine> engine; // print one engine's stream only
  bool source_comments = true;  // "; file:line" from the debug info
};
// Declarations, then one section per engine. Re-assembles to the same target, kernel name,
// launch settings (.ranks, .lnc), tensors, semaphores, groups, streams and labels.
std::string print_module(const Module& m, const ModulePrintOptions& opts = {});

} // namespace nisa
