// The what-if knob of `nisa run --cost-scale UNIT=F` and Kernel.run(cost_scale=...): the
// modelled durations of a unit divided by F (docs/machine.md "Cost scale (what-if)"). The unit
// names live here only; the CLI, the Python module and the reports take them from this table.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "isa/enums.h"

namespace nisa::interp {

// The units whose durations scale: the six engines (their instructions' latencies; cc also
// its collective transfers on the channels) and the DMA queues (their transfers, send_recv's
// too). The first kNumEngines are the engines in Engine's order.
enum class CostUnit : uint8_t { pe, act, dve, pool, sp, cc, dma };
inline constexpr int kNumCostUnits = 7;
inline constexpr std::array<std::string_view, kNumCostUnits> kCostUnitNames = {
    "pe", "act", "dve", "pool", "sp", "cc", "dma"};
static_assert(kNumEngines == 6 && int(CostUnit::cc) == int(Engine::cc) &&
              int(CostUnit::sp) == int(Engine::sp) && int(CostUnit::pe) == int(Engine::pe));

inline constexpr std::string_view cost_unit_name(CostUnit u) { return kCostUnitNames[int(u)]; }
// The unit of an engine's instruction latencies.
inline constexpr CostUnit cost_unit_of(Engine e) { return CostUnit(int(e)); }
// nullopt for a name not in kCostUnitNames.
std::optional<CostUnit> find_cost_unit(std::string_view name);
// kCostUnitNames as strings (for a did-you-mean suggestion) and as the text "pe, act, ...".
std::vector<std::string> cost_unit_names();
std::string cost_unit_list();

// Per unit, the factor its durations are divided by (MachineOptions::cost_scale).
using CostScale = std::array<double, kNumCostUnits>;
inline constexpr CostScale kNoCostScale = {1, 1, 1, 1, 1, 1, 1};
inline bool is_identity(const CostScale& s) { return s == kNoCostScale; }

// The factors a unit takes: within these bounds every scaled duration of a kernel that runs
// without scale still fits the scheduler's int64 ticks.
inline constexpr double kMinCostScale = 1e-3, kMaxCostScale = 1e6;
// Why f is no factor ("expected a finite factor from 0.001 to 1000000"), or nullopt.
std::optional<std::string> cost_scale_error(double f);
// "unknown unit 'px'; did you mean 'pe'? (units: pe, act, ...)": `suggestion` is the caller's
// did-you-mean (asm's suggest(), which interp/ may not use), "" for none.
std::string unknown_cost_unit(std::string_view name, std::string_view suggestion);
// The factors that are not 1 as "pe=2 dma=0.5" ("" for none): the reports' note.
std::string cost_scale_text(const CostScale& s);

// A duration of t ticks scaled by f: t == 0 ? 0 : max(1, ceil(t / f)), exactly (the least n
// with n * f >= t, not the rounded quotient) for t < 2^53; f == 1 returns t.
int64_t scale_ticks_slow(int64_t t, double f);
inline int64_t scale_ticks(int64_t t, double f) { return f == 1.0 ? t : scale_ticks_slow(t, f); }

} // namespace nisa::interp
