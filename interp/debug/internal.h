// What the files of the debugger share (not part of its interface): command-line parsing
// helpers, value formatting, and the access collector behind watchpoints. The session is split
// by responsibility: session.cpp (state, running, the command table), views.cpp (printing the
// machine), breakpoints.cpp (breakpoints, watchpoints, conditions), inspect.cpp (inspection
// and state-changing commands).
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "interp/debug/session.h"

namespace nisa::interp::debug {

// A user error in a command: printed as "error: ..." and the session goes on.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// A well-formed number outside the range the command accepts.
struct RangeError : Error {
  using Error::Error;
};

std::string trim(const std::string& s);
std::vector<std::string> words(const std::string& s);
// A decimal or 0x-hexadecimal integer, optionally negative (digits only, no suffix).
bool is_number(const std::string& s);
// The value of such an integer within [lo, hi]; throws Error naming `what` when s is no number
// or the value is out of range (never silently truncated).
int64_t to_int(const std::string& s, const char* what, int64_t lo = INT64_MIN,
               int64_t hi = INT64_MAX);
// "rN" -> N, checked against the register file (RangeError naming `what`); -1 when `reg` does
// not have the form r<number>.
int reg_index(const std::string& reg, const char* what);
std::string ns(int64_t ticks);
std::string basename_of(const std::string& p);
// "rank R core C " of a core index, or "" on a single core.
std::string who_of(const Machine& m, int core);
std::string format_value(DType t, const uint8_t* p, char f);
// Does the location (or one of its expansion frames) come from `line` of `file` (-1: any)?
bool loc_matches(const Module& m, const DebugLoc* d, int file, int64_t line);

// Calls f(index vector) for every element of a slice, row-major.
template <class F> void for_each_index(const Slice& s, F&& f) {
  std::vector<int64_t> idx;
  for (auto [a, b] : s.dims) idx.push_back(a);
  if (s.dims.empty()) return f(idx);
  while (true) {
    f(idx);
    size_t k = s.dims.size();
    while (k > 0) {
      --k;
      if (++idx[k] < s.dims[k].second) break;
      idx[k] = s.dims[k].first;
      if (k == 0) return;
    }
  }
}

// Collects the byte extents each event reads and writes, while watchpoints exist.
class Session::Watcher final : public ExecObserver {
public:
  explicit Watcher(const Machine& m) : m_(m) {}
  bool active = false;
  std::vector<Region> regions;
  void exec(const ExecEvent& ev, ExecCtx& cx, const Inst& in) override {
    regions.clear();
    if (active && ev.runs_semantics) collect_accesses(m_, ev.core, cx, in, regions);
  }

private:
  const Machine& m_;
};

} // namespace nisa::interp::debug
