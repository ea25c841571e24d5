// The report of `nisa check` (docs/check.md): one pair of source lines with its witness, its
// bytes and the wait suggested to order it (Reporter; the wait: check_fix.h), and the report
// with its status and exit code.
#pragma once
#include <string>

#include "interp/check/check_fix.h"

namespace nisa::interp::check_detail {

class Reporter {
public:
  Reporter(const Module& m, const CheckOptions& o, const Graph& g, const Names& names,
           const Order& order, const Iterations& iters)
      : m_(m), o_(o), g_(g), names_(names), iters_(iters), fixer_(m, g, names, order, iters) {}

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
  const Iterations& iters_;
  mutable Fixer fixer_; // the suggested waits (check_fix.h)
};

// r.report, r.status and r.exit_code from r's pairs, deadlocks or outside (`ncores`: of the
// graph).
void finish(CheckResult& r, const CheckOptions& o, int ncores);

} // namespace nisa::interp::check_detail
