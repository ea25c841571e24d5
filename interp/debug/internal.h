// What the files of the debugger share (not part of its interface): command-line parsing
// helpers, value formatting, memory access, the breakpoint table and the access collector
// behind watchpoints. The model (model.h) is split by responsibility: model.cpp (running),
// query.cpp (the queries), breakpoints.cpp (breakpoints, watchpoints, conditions), memory.cpp
// (slices and raw memory). The console (session.h): session.cpp (the command table and the
// commands that move), commands.cpp (the other commands), format.cpp (text of the structs).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "interp/debug/model.h"
#include "interp/debug/session.h"

namespace nisa::interp::debug {

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
const DebugLoc* debug_loc(const Module& m, Engine e, int64_t pc);
// Throws the error of `until` when no instruction comes from the line.
void check_line_has_instructions(const Module& mod, int file, int64_t line);

// A condition's term and the condition (LHS OP RHS) at an event.
int64_t eval_term(const Module& mod, const Machine& m, const std::string& t, const StepEvent& ev);
bool eval_cond(const Module& mod, const Machine& m, const std::string& cond, const StepEvent& ev);

// Memory of a slice on a core (memory.cpp).
uint8_t* elem_ptr(const Machine& m, const TensorDecl& t, const std::vector<int64_t>& idx, int core);
std::vector<uint8_t> read_slice(const Machine& m, const Slice& s, int core);
// Element k (row-major) of a slice, read alone (RangeError outside the slice or the cores).
std::vector<uint8_t> read_element(const Machine& m, const Slice& s, int core, uint64_t k);
// Up to n bytes at a memory reference of a core (Error outside the memory).
std::vector<uint8_t> read_bytes(const Machine& m, int core, const MemRef& ref, uint64_t n);
std::vector<Region> slice_regions(const Machine& m, const Slice& s, int core);

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
class Watcher final : public ExecObserver {
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

// The breakpoints and watchpoints of a model, with their ids.
class Breakpoints {
public:
  Breakpoints(const Module& mod, const Machine& m) : mod_(mod), m_(m) {}
  BreakpointInfo add(const std::string& spec, const std::string& cond, bool temporary);
  BreakpointInfo add_line(int file, int64_t line, const std::string& cond, bool temporary);
  BreakpointInfo add_watch(const std::string& slice, bool read, int core);
  void remove(int id);
  void clear() { bps_.clear(); }
  void enable(int id, bool on);
  void enable_all(bool on);
  std::vector<BreakpointInfo> list() const;
  bool any_watch() const;
  // A breakpoint before the event (the first that hits; a temporary one is deleted).
  std::optional<BreakpointHit> check(const StepEvent& ev);
  // The watchpoints the last event (`by`, accessing `regions`) hit.
  std::vector<WatchHit> check_watches(const std::vector<Region>& regions, const StepEvent* by);
  void snapshot(); // the watched slices' bytes now (after a restart or replay)

private:
  struct Entry {
    BreakpointInfo info;
    int file = -1; // line: file index (-1 any)
    int64_t line = 0;
    Engine engine = Engine::sp;
    std::vector<std::pair<Engine, int64_t>> insts; // inst: the instructions it stops at
    std::string cond;                              // empty: always
    std::optional<Slice> slice;                    // watchpoints
    std::vector<Region> regions;                   // watchpoints: the slice's extents
    std::vector<uint8_t> snapshot; // watchpoints: the slice's bytes at the last stop
    int core = 0;                  // watchpoints on sbuf/psum: the core
  };
  const Module& mod_;
  const Machine& m_;
  std::vector<Entry> bps_;
  int next_id_ = 1;
  BreakpointInfo push(Entry b);
  Entry& find(int id, const char* what);
};

} // namespace nisa::interp::debug
