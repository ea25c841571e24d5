// The static check before a run (precheck.h).
#include "interp/run/precheck.h"

#include <fmt/format.h>
#include <new>
#include <sstream>

#include "isa/error.h"

namespace nisa::interp {

CheckResult precheck(const Module& mod, Target target, int lnc, int ranks, double max_seconds) {
  CheckOptions o;
  o.lnc = lnc, o.ranks = ranks, o.target = target;
  o.max_nodes = kPrecheckMaxNodes;
  o.max_seconds = max_seconds;
  o.max_reports = 10;
  try {
    return check_module(mod, o);
  } catch (const std::exception& e) { // out of memory (HostError): the run may still fit
    CheckResult r;
    r.status = CheckStatus::outside;
    r.limit = true;
    r.outside = e.what();
    return r;
  }
}

std::string precheck_text(const CheckResult& r, const std::string& who) {
  if (r.status == CheckStatus::proved) return {};
  if (r.status == CheckStatus::outside)
    return r.limit ? fmt::format("{}: note: the static check was skipped: the kernel is larger "
                                 "than its bound before a run ({} unrolled nodes or {} s); `nisa "
                                 "check` has no such bound (--no-check: no check)\n",
                                 who, kPrecheckMaxNodes, kPrecheckMaxSeconds)
                   : fmt::format("{}: note: the static check does not apply: {}\n", who, r.outside);
  std::ostringstream os;
  os << fmt::format("{}: warning: the static check (nisa check) did not prove the kernel: {} "
                    "unordered pair{}, {} deadlock report{}; the run goes on, its output may "
                    "depend on the schedule (--no-check: no check)\n",
                    who, r.pairs.size(), r.pairs.size() == 1 ? "" : "s", r.deadlocks.size(),
                    r.deadlocks.size() == 1 ? "" : "s");
  // the check's own lines, without its closing summary
  std::istringstream is(r.report);
  for (std::string line; std::getline(is, line);)
    if (!line.starts_with("not proved:")) os << line << "\n";
  return os.str();
}

} // namespace nisa::interp
