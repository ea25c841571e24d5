// The report of `nisa check` (docs/check.md): the text of an unordered pair's bytes and the
// wait suggested to order it (Reporter), and the report with its status and exit code.
#pragma once
#include <string>

#include "interp/check/check_iterations.h"
#include "interp/check/check_names.h"
#include "interp/check/check_order.h"

namespace nisa::interp::check_detail {

// One unordered instance: the access `a` that the kernel intends first (in the expansion
// order of check_iterations.h) and the later one `b`; their instruction nodes (who) and the
// nodes where they happen.
struct Unordered {
  uint32_t a_who, b_who, a_node, b_node;
  bool a_write, b_write;
  Region region; // the bytes both touch
};

class Reporter {
public:
  Reporter(const Module& m, const CheckOptions& o, const Graph& g, const Names& names,
           const Order& order, const Iterations& iters)
      : m_(m), o_(o), g_(g), names_(names), order_(order), iters_(iters) {}

  // "sbuf partitions 0..127 bytes [0x0, 0x100) (tensor x)"
  std::string region_text(const Region& x) const;
  // The report of one pair of source lines: `fwd` the instances where the first line is
  // intended first, `back` the others (either may be empty), `counts` how many each has (the
  // lists may be capped). `fix`: also the waits that order them.
  CheckPair pair(const std::vector<Unordered>& fwd, const std::vector<Unordered>& back,
                 const uint64_t counts[2], bool fix) const;

private:
  const Module& m_;
  const CheckOptions& o_;
  const Graph& g_;
  const Names& names_;
  const Order& order_;
  const Iterations& iters_;
  mutable int new_sems_ = 0;                             // semaphores suggested so far
  mutable std::vector<std::vector<uint32_t>> by_stream_; // nodes of each stream: lazily, for joins

  // The wait(s) on the later line that order every instance of one direction.
  std::string fix(const std::vector<Unordered>& inst, std::vector<CheckFix>& fixes) const;
  uint32_t node_at(const Anchor& x) const;
  uint32_t site_of(uint32_t b_node) const;
};

// r.report, r.status and r.exit_code from r's pairs, deadlocks or outside (`ncores`: of the
// graph).
void finish(CheckResult& r, const CheckOptions& o, int ncores);

} // namespace nisa::interp::check_detail
