// The static synchronisation proof's internals (interp/check/check.h, docs/check.md): the
// Checker, over the graph of check_graph.h (built by the Unroller of check_unroll.h) and its
// names (check_names.h), in two parts: check_order.cpp (happens-before: vector clocks and the
// edges derived from semaphore counts) and check.cpp (deadlock simulation, sem_set / == checks,
// the race pass, the report).
#pragma once
#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "interp/check/check_graph.h"
#include "interp/check/check_names.h"

namespace nisa::interp::check_detail {

class Checker {
public:
  Checker(const Module& m, const CheckOptions& o) : m_(m), o_(o) {}
  CheckResult run();

private:
  const Module& m_;
  const CheckOptions& o_;
  Graph g_;
  Names names_{m_, o_, g_};
  // per wait, per signalling stream (index into its SemInfo lists): the latest signal proved
  // to precede the wait (+1; 0 = none)
  std::vector<std::vector<uint32_t>> best_;
  std::vector<uint32_t> vc_;
  std::vector<uint32_t> topo_;
  uint32_t S_ = 0;
  bool cycle_ = false;

  // ---- building ------------------------------------------------------------------------------
  void build(); // the graph (Unroller), and the clocks' room
  // ---- happens-before ------------------------------------------------------------------------
  bool topo_and_clocks();
  bool after(uint32_t node, const Anchor* a, uint32_t na) const {
    const uint32_t* v = &vc_[size_t(node) * S_];
    for (uint32_t i = 0; i < na; ++i)
      if (v[a[i].stream] >= a[i].pos) return true;
    return false;
  }
  // The largest value (core, sem) can hold when `site` issues, in a schedule where the node
  // `x` (if any) has not completed.
  uint64_t max_count(const SemInfo& si, uint32_t site, const std::vector<Anchor>& sa,
                     const Anchor* x) const;
  bool derive_edges();
  // ---- checks --------------------------------------------------------------------------------
  void simulate(CheckResult& r);
  void check_sets(CheckResult& r);
  void check_eq_waits(CheckResult& r);
  void races(CheckResult& r);
  std::string region_text(const Region& g) const;
  std::string suggest(uint32_t a, uint32_t b) const;
};

} // namespace nisa::interp::check_detail
