// Launch settings: the kernel's .ranks / .lnc against the run's options (isa/launch.h).
#include "isa/launch.h"

#include <fmt/format.h>

namespace nisa {

const char* launch_name(Launch s) { return s == Launch::ranks ? "ranks" : "lnc"; }

const LaunchDecl& declared(const Module& m, Launch s) {
  return s == Launch::ranks ? m.ranks : m.lnc;
}

int launch_max(Launch s) { return s == Launch::ranks ? kMaxRanks : kMaxLnc; }

std::optional<std::string> launch_value_error(Launch s, int64_t value) {
  if (value >= 1 && value <= launch_max(s)) return std::nullopt;
  if (s == Launch::lnc) return std::string("expected 1 or 2");
  return fmt::format("expected 1..{}", launch_max(s));
}

std::string declaration_text(const Module& m, Launch s) {
  const LaunchDecl& d = declared(m, s);
  std::string t = fmt::format("`.{} {}`", launch_name(s), d.value);
  if (d.loc.line != 0 && d.loc.file < m.files.size())
    t += fmt::format(" at {}:{}", m.files[d.loc.file], d.loc.line);
  return t;
}

Result<int, std::string> launch_value(const Module& m, Launch s, std::optional<int> given,
                                      std::string_view spelled) {
  const LaunchDecl& d = declared(m, s);
  if (!given) return d.value ? int(d.value) : 1;
  if (d.value && uint32_t(*given) != d.value)
    return fmt::format("{} conflicts with {}", spelled, declaration_text(m, s));
  return *given;
}

} // namespace nisa
