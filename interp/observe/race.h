// Memory access extents of an instruction and the race checker (`nisa run --check-races`,
// `set check-races on` in the debugger; docs/debugger.md "Race checking").
//
// Happens-before uses one vector clock per agent (every engine and DMA queue of every core).
// Program order ticks the agent's own entry; a signal joins the agent's clock into the
// semaphore's history; an instruction whose waits hold joins the clocks of the signals that
// brought each awaited semaphore to the awaited value; a DMA transfer starts from its trigger's
// clock (and, FIFO, its queue's); a barrier, send_recv or collective joins the clocks of all its
// participants (a collective: the clocks its channel transfers started from). Accesses are tracked
// per byte range (an operand's extent per partition range), never per element.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "interp/core/machine.h"
#include "interp/core/region.h"
#include "interp/sched/scheduler.h"

namespace nisa::interp {

// Appends the byte extents the instruction reads and writes (its access patterns resolved by
// cx; index tiles of vector offsets count as reads). Operands that fault are left out: the
// semantics report them.
void collect_accesses(const Machine& m, int core, ExecCtx& cx, const Inst& in,
                      std::vector<Region>& out);

struct RaceReport {
  Region region; // the overlap
  struct Side {
    int core = 0;
    Engine engine = Engine::sp;
    int64_t pc = 0;
    int queue = -1;
    bool write = false;
  } first, second; // first happened earlier in modelled time
};

class RaceChecker final : public ExecObserver {
public:
  explicit RaceChecker(const Machine& m);
  void issue(int core, Engine e, int64_t pc) override;
  void exec(const ExecEvent& ev, ExecCtx& cx, const Inst& in) override;
  void sem(int core, uint16_t s, uint32_t value, bool set) override;
  void enqueue(int core, Engine e, int64_t pc, int queue) override;
  void rendezvous(const std::vector<std::pair<int, int>>& who) override;
  void collective(const std::vector<ExecEvent>& evs, const std::vector<ExecCtx*>& cx,
                  const std::vector<const Inst*>& in) override;

  // Distinct races (one per pair of instructions), in the order found.
  const std::vector<RaceReport>& races() const { return races_; }
  size_t new_races_since(size_t mark) const { return races_.size() - mark; }
  std::string report_text(const RaceReport& r) const;
  // What was checked: byte ranges read or written (one per operand extent and partition
  // range), and the instructions and transfers they belong to.
  uint64_t accesses() const { return accesses_; }
  uint64_t events_checked() const { return events_; }
  // "check-races: no race in 12,345 accesses (678 instructions and transfers)" (no newline).
  std::string no_race_text() const;
  // Clocks, access records and reports held: O(agents + semaphores x awaited values + live
  // accesses), independent of how long the run is (tests check it).
  size_t state_size() const;

private:
  using Clock = std::vector<uint32_t>;
  // An access superseded by a later one of the same bytes that it precedes (kept so that a
  // later race is reported against the direct partner too, not only the newer access).
  struct Prev {
    uint32_t agent, epoch;
    RaceReport::Side side;
  };
  static constexpr size_t kMaxPrev = 4;
  struct Rec {
    Region r;
    uint32_t agent, epoch;
    RaceReport::Side side;
    std::vector<Prev> prev; // at most kMaxPrev, oldest first
  };
  const Machine& m_;
  int agents_per_core_;
  std::vector<Clock> clk_; // per agent
  // The signals of a semaphore since its initial value or its last sem_set, so that a wait
  // joins exactly the signals that brought the value to what it awaits: for each value V some
  // `>= V` wait of the module awaits (thresholds_[sem], sorted), the join of the clocks of the
  // signals up to the first one that reached V. The size is fixed by the module, not by the
  // number of signals: a semaphore signalled millions of times costs no more.
  struct SemHist {
    uint32_t base = 0;     // the initial value (no clock), or 0 after a sem_set
    bool any = false;      // a signal since base
    uint32_t value = 0;    // after the last signal (non-decreasing between sem_sets)
    Clock last;            // the join of the clocks of every signal since base
    std::vector<Clock> at; // [k]: `last` when the value first reached thresholds_[sem][k]
    size_t filled = 0;     // at[0, filled) are set
  };
  std::vector<std::vector<uint32_t>> thresholds_; // [sem]
  std::vector<std::vector<SemHist>> sems_;        // [core][sem]
  std::vector<std::vector<Clock>> pending_;       // [agent] FIFO of transfer start clocks
  std::vector<size_t> pending_head_;              // [agent]
  // Per memory: the live access records by start offset (b0), and the longest one, so that
  // the records overlapping [b0, b1) are those keyed in [b0 - longest, b1).
  struct Mem {
    std::multimap<uint64_t, Rec> recs;
    uint64_t longest = 0;
  };
  std::vector<Mem> mems_;
  std::vector<RaceReport> races_;
  std::set<std::array<int64_t, 6>> seen_; // pairs of instructions already reported
  std::vector<Region> scratch_;
  uint32_t cur_ = 0; // agent of the current event
  uint64_t accesses_ = 0, events_ = 0;

  uint32_t agent(int core, Engine e) const { return uint32_t(core * agents_per_core_ + int(e)); }
  uint32_t qagent(int core, int q) const {
    return uint32_t(core * agents_per_core_ + kNumEngines + q);
  }
  size_t mem_index(const Region& r) const { return size_t(r.unit) * 3 + size_t(r.kind); }
  static void join(Clock& a, const Clock& b);
  void access(const Region& r, const RaceReport::Side& side);
};

} // namespace nisa::interp
