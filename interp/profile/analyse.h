// The parts of the profile's analysis (interp/profile/analyse.cpp: the critical path and the
// time per unit and line; hints.cpp: the stalls and the hints). Not a public interface.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "interp/profile/profile.h"

namespace nisa::interp::detail {

// The run's history with what the analyses look up per node.
struct ProfileInput {
  const Machine& m;
  const Module& mod;
  const History& h;
  int64_t makespan = 0;
  std::vector<int64_t> ids;            // every node id, list by list
  std::unordered_set<int64_t> on_path; // the node ids of the critical path
  const Inst& inst(const HistNode& n) const { return mod.streams[n.engine][n.pc]; }
  std::string unit(const HistNode& n) const;
  SourceLine line(const HistNode& n) const;
  SourceLine inner_line(const HistNode& n) const; // the instruction's own file:line
  std::string chain(const HistNode& n) const;
  std::string sem_name(uint16_t s) const;
};

// The critical path's segments, walked back from the last event; their node ids in on_path.
std::vector<PathSegment> critical_path(ProfileInput& in);
// Stalls per (engine, semaphore) and the hints (hints.cpp).
std::vector<Stall> stalls(const ProfileInput& in);
std::vector<Hint> hints(const ProfileInput& in);

} // namespace nisa::interp::detail
