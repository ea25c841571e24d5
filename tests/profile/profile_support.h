// Running a module with --profile-json through the run driver (interp/run/run.h), inputs drawn
// from a seeded RNG (kt::random_inputs), for the profile tests.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "isa/module.h"

namespace nisa::test {

struct Profiled {
  int rc = 0;
  nlohmann::json profile, stats, timeline; // timeline: with `timeline`
  std::string out, err;                    // what run_module printed
};

// The module run once with a profile (what_if: with the what-if re-runs) in a fresh directory
// named after `name`; --stats-json alongside.
Profiled profile_module(const Module& m, int lnc, int ranks, const std::string& name, bool what_if,
                        bool text_report = true, bool timeline = false);
// The makespan (ticks) of a run with `unit` scaled by f (--cost-scale UNIT=F), same inputs.
int64_t makespan_with_scale(const Module& m, int lnc, int ranks, const std::string& name,
                            const std::string& unit, double f);
// Assembles a kernel written in a test; fails the test on an error.
Module assemble(const std::string& text);

} // namespace nisa::test
