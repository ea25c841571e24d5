#include "interp/core/cost_scale.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace nisa::interp {

std::optional<CostUnit> find_cost_unit(std::string_view name) {
  for (int u = 0; u < kNumCostUnits; ++u)
    if (kCostUnitNames[u] == name) return CostUnit(u);
  return std::nullopt;
}

std::vector<std::string> cost_unit_names() {
  return std::vector<std::string>(kCostUnitNames.begin(), kCostUnitNames.end());
}

std::string cost_unit_list() {
  std::string s;
  for (std::string_view n : kCostUnitNames) s += (s.empty() ? "" : ", ") + std::string(n);
  return s;
}

std::optional<std::string> cost_scale_error(double f) {
  if (std::isfinite(f) && f >= kMinCostScale && f <= kMaxCostScale) return std::nullopt;
  static_assert(kMinCostScale == 1e-3 && kMaxCostScale == 1e6); // the message's bounds
  return std::string("expected a finite factor from 0.001 to 1000000 (durations are divided by "
                     "it: 2 makes the unit twice as fast)");
}

std::string unknown_cost_unit(std::string_view name, std::string_view suggestion) {
  return fmt::format("unknown unit '{}'{} (units: {})", name.substr(0, 40),
                     suggestion.empty() ? std::string()
                                        : fmt::format("; did you mean '{}'?", suggestion),
                     cost_unit_list());
}

std::string cost_scale_text(const CostScale& s) {
  std::string out;
  for (int u = 0; u < kNumCostUnits; ++u)
    if (s[u] != 1.0) out += fmt::format("{}{}={}", out.empty() ? "" : " ", kCostUnitNames[u], s[u]);
  return out;
}

int64_t scale_ticks_slow(int64_t t, double f) {
  if (t <= 0) return t;
  const double x = double(t);
  double n = std::ceil(x / f);
  if (t < (int64_t(1) << 53) && n < 0x1p53) {
    // The quotient was rounded: step to the least n with n * f >= t. fma rounds n * f - x once,
    // so its sign is that of the exact value (the least n is one of the neighbours).
    while (n > 1 && std::fma(n - 1, f, -x) >= 0) n -= 1;
    while (std::fma(n, f, -x) < 0) n += 1;
  }
  n = std::max(n, 1.0);
  if (!(n < 0x1p63)) return std::numeric_limits<int64_t>::max();
  return int64_t(n);
}

} // namespace nisa::interp
