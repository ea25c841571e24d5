// `nisa check`: a static proof of synchronisation (docs/check.md).
//
// Without running the data path, the checker unrolls every engine's stream of every core
// (branches and registers are evaluated: they depend only on the system registers), builds
// the happens-before graph that program order, DMA queues, semaphore counts, barriers,
// send_recv and collectives give in *every* schedule, and decides
//   * whether every two accesses of different engines, queues or cores to overlapping bytes
//     (one a write) are ordered by it, and
//   * whether some schedule deadlocks.
// A kernel whose control flow depends on memory (a branch on a register loaded by `ld`), or
// that is too large, is reported as outside what is proved.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "isa/module.h"

namespace nisa::interp {

// The bounds of one check (docs/check.md "Limits"); each one hit ends the check with exit 6
// and a message naming it and the option that raises it.
inline constexpr uint64_t kCheckDefaultMemory = uint64_t(4096) << 20; // --max-memory
inline constexpr uint64_t kCheckNodeBytes = 1024;     // memory per node, clocks apart (measured)
inline constexpr uint64_t kCheckMaxNodes = 8'000'000; // node ids stay far from 2^32
inline constexpr double kCheckDefaultSeconds = 60;    // --max-seconds
inline constexpr int kCheckDefaultRounds = 100;       // --max-rounds (kernels_asm: 2..11)

// The memory the process uses now, in bytes: its address space (what `ulimit -v` bounds), or
// its resident memory in a sanitized build (whose shadow reserves terabytes).
uint64_t memory_in_use();
// The default --max-memory: kCheckDefaultMemory, or half of what the address-space limit
// (`ulimit -v`) leaves above `in_use` when that is lower.
uint64_t default_check_memory(uint64_t in_use);

struct CheckOptions {
  int lnc = 1;
  int ranks = 1;
  Target target = Target::trn2;
  // The memory the check may add to the process's (its address space; resident memory in a
  // sanitized build), in bytes; 0: default_check_memory().
  uint64_t max_memory = 0;
  // Unrolled instructions, transfers and joins; 0: the memory limit / kCheckNodeBytes (at
  // most kCheckMaxNodes).
  uint64_t max_nodes = 0;
  double max_seconds = kCheckDefaultSeconds; // host time of the whole check; 0: no limit
  int max_rounds = kCheckDefaultRounds;      // rounds of the fixpoint of semaphore orders
  size_t max_reports = 40;                   // unordered pairs printed (all are counted)
};

enum class CheckStatus : uint8_t { proved, races, deadlock, outside };

// Exit codes of `nisa check` (README): 0 proved, 1 usage or assembly error, 2 a schedule
// deadlocks, 4 unordered pairs, 6 outside what is proved.
inline constexpr int kExitCheckOutside = 6;

// A wait that would order an unordered pair, in the kernel's own terms: `@wait(wait)` added to
// the instruction at `loc` (its count an expression of the enclosing .for variables, valid in
// every iteration). Empty when the fix is not one wait (another core, no signal to wait for).
struct CheckFix {
  std::string loc;  // "file:line"
  std::string wait; // "s_mm >= max(0, i - 1)"
  // When the earlier line signals nothing: declare `.sem new_sem` and add `@signal(new_sem)` to
  // the line at signal_loc (both empty otherwise).
  std::string signal_loc, new_sem;
};

// One pair of source lines with unordered accesses (docs/check.md "Reports"), given in the
// order the kernel intends (the source's expansion order: iteration i of a loop before
// iteration i + 1): `a` is the access the later one `b` must wait for. The witness is one
// unrolled instance; `instances` counts them all.
struct CheckPair {
  std::string a_loc, b_loc;   // "file:line"
  std::string a_who, b_who;   // "core 0 sp", "core 0 sp -> q3"
  std::string a_iter, b_iter; // the witness's .for variables, "i=2, f=0" (empty: none)
  bool a_write = false, b_write = false;
  std::string region;          // the overlapping bytes of the witness (and tensor)
  uint64_t instances = 1;      // unordered instance pairs of these two lines
  std::string suggestion;      // the text: how to order them
  std::vector<CheckFix> fixes; // the waits that order every instance (may be empty)
};

struct CheckResult {
  CheckStatus status = CheckStatus::proved;
  int exit_code = 0;
  std::string report; // what `nisa check` prints
  std::vector<CheckPair> pairs;
  std::vector<std::string> deadlocks; // one line per stuck stream / cycle
  std::string outside;                // why the kernel is outside what is proved
  bool limit = false;                 // ... because a limit of CheckOptions was reached
  // Size and cost figures (docs/check.md, docs/performance.md).
  uint64_t instructions = 0; // unrolled instructions of every core
  uint64_t nodes = 0;        // instructions, transfers and joins
  uint64_t streams = 0;      // engines, (engine, queue) pairs and channels with events
  uint64_t sem_edges = 0;    // happens-before edges derived from semaphore counts
  int iterations = 0;        // rounds of the fixpoint
};

CheckResult check_module(const Module& mod, const CheckOptions& opt);

} // namespace nisa::interp
