// Deadlock reports of the scheduler (interp/sched_report.cpp).
#pragma once
#include <string>
#include <vector>

#include "interp/cc_unit.h"
#include "interp/sched_internal.h"

namespace nisa::interp::detail {

// "rank 1 core 0 dve[12]" (the rank and core only when the run has several).
std::string where(const Machine& m, int c, int e, int64_t pc);

// The report of a run in which no event is pending: every unfinished engine and every
// collective still waiting for participants. Empty when nothing is blocked.
std::string deadlock_report(const Machine& m, const std::vector<CoreRt>& cores, const CcUnit& cc,
                            int64_t now);

} // namespace nisa::interp::detail
