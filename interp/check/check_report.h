// The report of `nisa check` (docs/check.md): the text of an unordered pair's bytes and the
// wait suggested to order it (Reporter), and the report with its status and exit code.
#pragma once
#include <string>

#include "interp/check/check_names.h"
#include "interp/check/check_order.h"

namespace nisa::interp::check_detail {

class Reporter {
public:
  Reporter(const Module& m, const CheckOptions& o, const Graph& g, const Names& names,
           const Order& order)
      : m_(m), o_(o), g_(g), names_(names), order_(order) {}

  // "sbuf partitions 0..127 bytes [0x0, 0x100) (tensor x)"
  std::string region_text(const Region& x) const;
  // The wait that orders node a (the earlier access's node, may be a join) before node b.
  std::string suggest(uint32_t a, uint32_t b) const;

private:
  const Module& m_;
  const CheckOptions& o_;
  const Graph& g_;
  const Names& names_;
  const Order& order_;
};

// r.report, r.status and r.exit_code from r's pairs, deadlocks or outside (`ncores`: of the
// graph).
void finish(CheckResult& r, const CheckOptions& o, int ncores);

} // namespace nisa::interp::check_detail
