// The wait `nisa check` suggests for one pair of source lines (docs/check.md "Reports"): on the
// later line of the order the kernel intends, on a semaphore the earlier line signals (or a new
// one when it signals none), its count an affine expression of the .for variables fitted to what
// every instance needs and checked over every iteration of the line.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "interp/check/check_affine.h"
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

class Fixer {
public:
  Fixer(const Module& m, const Graph& g, const Names& names, const Order& order,
        const Iterations& iters)
      : m_(m), g_(g), names_(names), order_(order), iters_(iters) {}

  // The text that orders every instance of `inst` (one direction of one pair of lines); the
  // waits that apply mechanically go to `fixes`.
  std::string fix(const std::vector<Unordered>& inst, std::vector<CheckFix>& fixes);

private:
  // What one instance needs: a wait for `value` at `site`, after `from` completes.
  struct Need {
    enum Kind { wait, other_core, no_signal } kind = no_signal;
    uint32_t from = 0, site = 0;
    uint16_t sem = 0; // of the earlier line (not for a new semaphore)
    uint64_t value = 0;
  };
  // The counts each site needs (the largest of its instances) and a witness instance per site.
  struct Needs {
    std::map<uint32_t, uint64_t> at_site;
    std::map<uint32_t, uint32_t> witness;
    Need first;
    bool new_sem = false, one_sem = true;
    std::string refusal; // not one wait: what to do instead
  };

  const Module& m_;
  const Graph& g_;
  const Names& names_;
  const Order& order_;
  const Iterations& iters_;
  int new_sems_ = 0;                             // semaphores suggested so far
  std::vector<std::vector<uint32_t>> by_stream_; // nodes of each stream (lazily)
  // per fix(): for a new semaphore, the running count of the earlier line in its stream
  std::map<uint32_t, std::vector<uint32_t>> line_counts_;
  std::map<int32_t, uint32_t> stream_of_core_;

  uint32_t node_at(const Anchor& x);
  uint32_t site_of(uint32_t b_node) const;
  Need need(const Unordered& u);
  bool needs_new_sem(Need& n, const Unordered& u);
  Needs collect(const std::vector<Unordered>& inst);
  std::string new_sem_name();
  // The values of the line's .for variables `names` at node n (false: it has others).
  bool values(uint32_t n, const std::vector<std::string>& names, std::vector<int64_t>& x) const;
  // Over every instance of the later line: whether the expression goes negative (clamp) and,
  // when it passes what the signals can bring, where (else "").
  std::string never_holds(const Affine& e, const Needs& nd, const std::vector<std::string>& names,
                          const std::string& sem, bool& clamp) const;
  std::string at(uint32_t n) const; // " at i=2", or ""
};

} // namespace nisa::interp::check_detail
