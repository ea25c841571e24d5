// Multi-rank runs for the collective tests: per-rank inputs, per-rank outputs, optional
// random schedule, race checking, --check-uninit and timeline.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "interp/core/cost_scale.h"
#include "interp/sched/scheduler.h"
#include "isa/module.h"

namespace nisa::ring {

using Bytes = std::vector<uint8_t>;

struct RunOpts {
  Target target = Target::trn2;
  int ranks = 1;
  int lnc = 1;
  uint64_t seed = 0; // != 0: --schedule random --seed N
  bool check_races = false;
  bool check_uninit = false;
  bool timeline = false;
  interp::CostScale cost_scale = interp::kNoCostScale; // --cost-scale
};

struct RankRun {
  interp::RunStatus status = interp::RunStatus::ok;
  std::string report;
  interp::Stats stats;
  std::vector<interp::TimelineEvent> timeline;
  std::map<std::string, std::vector<Bytes>> out; // output name -> per rank
  size_t races = 0;
  std::string race_text; // the first race, if any
  uint64_t hbm_bytes_per_rank = 0;
};

// inputs: name -> one byte vector per rank.
RankRun run_ranks(const Module& m, const RunOpts& o,
                  const std::map<std::string, std::vector<Bytes>>& in);

// Assembles a kernel given as text (tests of the machine).
Module assemble_text(const std::string& text, Target t = Target::trn2);

} // namespace nisa::ring
