// The bounds of `nisa check` (docs/check.md "Limits"): host time, memory, rounds of the
// fixpoint. Every part of the check polls its Budget in its loops; a bound that is hit ends
// the check as outside what is proved (exit 6), naming the bound, where the check was and the
// option that raises it.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

#include "interp/check/check.h"

namespace nisa::interp::check_detail {

struct Graph;

// The address-space limit (`ulimit -v`) in bytes; 0 when there is none.
uint64_t address_space_limit();

class Budget {
public:
  explicit Budget(const CheckOptions& o);

  uint64_t memory_limit() const { return limit_; }
  uint64_t node_limit() const { return node_limit_; }
  void attach(const Graph& g) { g_ = &g; }
  void attach_none() { g_ = nullptr; }
  // Where the check is, in the user's terms ("unrolling the streams").
  void phase(std::string what) { phase_ = std::move(what); }
  const std::string& phase() const { return phase_; }

  // Called in every loop of the check: now and then reads the clock and the memory in use.
  void poll() {
    if ((++calls_ & 63) == 0) check();
  }
  void check();
  // Before allocating `bytes` at once for `what` (e.g. "the vector clocks (N nodes x S
  // streams x 4 bytes)").
  void reserve(uint64_t bytes, const std::string& what);
  // Before round `r` of the fixpoint (1-based).
  void round(int r);
  // The message of an allocation that failed (std::bad_alloc) during the check.
  std::string out_of_memory() const;

private:
  const CheckOptions& o_;
  const uint64_t base_;       // the process's memory when the check began
  const uint64_t limit_;      // bytes the check may add to it
  const uint64_t node_limit_; // nodes
  const Graph* g_ = nullptr;
  std::string phase_ = "starting";
  uint64_t calls_ = 0;
  uint64_t last_memory_ = 0; // at the last reading
  uint64_t nodes_ = 0;       // the graph's nodes at the last reading (the graph may be gone)
  std::chrono::steady_clock::time_point start_, last_read_;

  uint64_t used() const; // the memory the check added
  [[noreturn]] void over_memory(uint64_t used) const;
};

} // namespace nisa::interp::check_detail
