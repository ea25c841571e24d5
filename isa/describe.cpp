#include "isa/describe.h"

#include <fmt/format.h>

#include "isa/print.h"

namespace nisa {

std::string describe_inst(const Module& m, const Inst& in) {
  return print_inst(in, PrintContext{&m});
}

std::string source_of(const Module& m, Engine e, int64_t pc) {
  const auto& dbg = m.debug[static_cast<int>(e)];
  if (pc < 0 || size_t(pc) >= dbg.size()) return fmt::format("{}:{}[{}]", m.kernel, name_of(e), pc);
  const DebugLoc& d = dbg[size_t(pc)];
  auto file = [&](uint32_t f) { return f < m.files.size() ? m.files[f] : std::string("?"); };
  std::string s = fmt::format("{}:{}:{}", file(d.file), d.line, d.col);
  for (int32_t f = d.frame; f >= 0 && size_t(f) < m.frames.size(); f = m.frames[size_t(f)].parent) {
    const ExpansionFrame& fr = m.frames[size_t(f)];
    const char* what = fr.kind == ExpansionFrame::Macro     ? "in expansion of macro"
                       : fr.kind == ExpansionFrame::ForIter ? "in iteration"
                                                            : "included from";
    s += fmt::format(" ({} {} at {}:{}:{})", what, fr.what, file(fr.file), fr.line, fr.col);
  }
  return s;
}

} // namespace nisa
