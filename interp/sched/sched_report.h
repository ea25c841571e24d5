// Deadlock reports of the scheduler (interp/sched/sched_report.cpp).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "interp/sched/cc_unit.h"
#include "interp/sched/sched_internal.h"

namespace nisa::interp::detail {

// "rank 1 core 0 dve[12]" (the rank and core only when the run has several).
std::string where(const Machine& m, int c, int e, int64_t pc);

// The report of a run in which no event is pending: every unfinished engine and every
// collective still waiting for participants. Empty when nothing is blocked.
std::string deadlock_report(const Machine& m, const std::vector<CoreRt>& cores, const CcUnit& cc,
                            int64_t now);

// The budget (SchedOptions::max_steps): events per agent and pc in the last kBudgetWatch events
// before the run was stopped (agent = core * kAgentsPerCore + engine, queue or channel; pc -1
// for a collective channel).
inline constexpr uint64_t kBudgetWatch = 10000;
using BudgetWatch = std::map<uint32_t, std::map<int64_t, uint64_t>>;

// The report of a run stopped by its budget: where each engine was looping, waiting or done.
std::string budget_report(const Machine& m, const Module& mod, const std::vector<CoreRt>& cores,
                          const BudgetWatch& watched, uint64_t steps, int64_t now,
                          uint64_t max_steps);

} // namespace nisa::interp::detail
