// Where an unrolled instruction of `nisa check` sits in the kernel as written (docs/check.md
// "Reports"): its place in the expansion order of the source, the order a reader meets the
// instructions with every .for, macro and include expanded (the order the kernel intends:
// iteration 3 of a loop before iteration 5, whatever engines they run on), and the values of
// its enclosing .for variables, read from the module's debug info (isa/module.h frames).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "isa/module.h"

namespace nisa::interp::check_detail {

struct LoopVar {
  std::string name;
  int64_t value = 0;
};

class Iterations {
public:
  explicit Iterations(const Module& m) : m_(m) {}

  // < 0, 0 or > 0 as instruction (e1, pc1) comes before, with or after (e2, pc2) in the
  // expansion order (0: the same place, e.g. one instruction run by two cores or by a
  // run-time loop; or no debug info).
  int compare(Engine e1, int32_t pc1, Engine e2, int32_t pc2) const;
  // The .for variables around the instruction, outermost first. `visible`: only those its
  // own line can name (a macro body does not see the loops around the macro's call).
  std::vector<LoopVar> vars(Engine e, int32_t pc, bool visible) const;
  // "i=2, f=0" (every enclosing .for variable), empty outside loops.
  std::string text(Engine e, int32_t pc) const;
  // (file, line) of the instruction; (UINT32_MAX, pc) without debug info.
  std::pair<uint32_t, uint32_t> line_key(Engine e, int32_t pc) const;

private:
  using Step = std::array<uint32_t, 4>; // file, line, col, frame (order of expansion)
  const Module& m_;
  const DebugLoc* loc(Engine e, int32_t pc) const;
  void chain(Engine e, int32_t pc, std::vector<Step>& out) const;
};

} // namespace nisa::interp::check_detail
