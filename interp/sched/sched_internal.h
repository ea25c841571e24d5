// The scheduler's per-core state and decoded streams, shared by its parts (interp/sched/state.h:
// the run's state; loop.cpp: the event loop; engines.cpp, queues.cpp: the agents;
// sched_program.cpp: decoding; sched_report.cpp: deadlock reports; cc_unit.*: collectives on
// channels). Not a public interface.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <string>
#include <vector>

#include "interp/core/machine.h"
#include "interp/sched/scheduler.h"

namespace nisa::interp {

namespace detail {

// What the scheduler does with an instruction besides running its semantics.
enum class Kind : uint8_t { plain, dma, barrier, sendrecv, cc, bad };

// An instruction decoded once per run: semantics, latency, scheduling kind.
struct PInst {
  const Inst* in = nullptr;
  SemFn fn = nullptr;
  int64_t lat = 0;    // ticks on the issuing engine
  int64_t cycles = 0; // the same in engine cycles
  Kind kind = Kind::plain;
  bool sets_sems = false; // sem_set: wake waiters after it
  bool legal = false;     // passes legality_error on the target: ExecCtx::legal
  uint8_t queue = 0;
  uint64_t bytes = 0;
  uint32_t rows = 0;
  uint32_t bad = 0; // Kind::bad: index of the fault message in Program::msgs
  // Waits and signals, copied into Program's flat arrays (stream order: cache friendly).
  uint32_t wait0 = 0, sig0 = 0;
  uint8_t nwaits = 0, nsigs = 0;
};

} // namespace detail

// Streams decoded once per Machine (the module and target do not change between runs).
struct Program {
  std::array<std::vector<detail::PInst>, kNumEngines> prog;
  std::vector<std::string> msgs;
  std::vector<Wait> waits;
  std::vector<Signal> sigs;
};

namespace detail {

enum class St : uint8_t { idle, running, blocked, rendezvous, done };

// Agents of a core: its engines, its DMA queues, then its collective channels.
inline constexpr int kAgentsPerCore = kNumEngines + kNumDmaQueues + kNumCcChannels;

struct EngRt {
  const PInst* prog = nullptr;
  int64_t len = 0;
  int64_t pc = 0;
  St st = St::idle;
  int64_t since = 0;  // blocked since (ticks)
  int64_t issued = 0; // slow path: when the current instruction issued
  // SchedOptions::history: the current instruction's node; at a rendezvous, the node whose
  // completion brought the engine there.
  int64_t node = -1, rdv_pred = -1;
  ExecCtx cx;
};

struct Xfer {
  const PInst* pi = nullptr;
  uint8_t eng = 0;
  uint32_t pc = 0;
  int64_t begin = 0, end = 0;
  int64_t node = -1; // SchedOptions::history
  int32_t regs[kNumRegs];
};

// A FIFO of transfers in reused storage (a std::deque of these ~300-byte records allocated and
// freed a block per transfer: a malloc and a free per DMA).
class XferQueue {
public:
  bool empty() const { return n_ == 0; }
  size_t size() const { return n_; }
  const Xfer& front() const { return buf_[head_]; }
  void push_back(const Xfer& x) {
    if (n_ == buf_.size()) grow();
    buf_[(head_ + n_) & (buf_.size() - 1)] = x;
    ++n_;
  }
  void pop_front() {
    head_ = (head_ + 1) & (buf_.size() - 1);
    --n_;
  }
  // Front to back.
  class const_iterator {
  public:
    const_iterator(const XferQueue* q, size_t i) : q_(q), i_(i) {}
    const Xfer& operator*() const { return q_->buf_[(q_->head_ + i_) & (q_->buf_.size() - 1)]; }
    const_iterator& operator++() {
      ++i_;
      return *this;
    }
    bool operator!=(const const_iterator& o) const { return i_ != o.i_; }

  private:
    const XferQueue* q_;
    size_t i_;
  };
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, n_}; }

private:
  void grow() { // a power of two, the queue from index 0
    std::vector<Xfer> b(std::max<size_t>(8, 2 * buf_.size()));
    for (size_t i = 0; i < n_; ++i) b[i] = buf_[(head_ + i) & (buf_.size() - 1)];
    buf_.swap(b);
    head_ = 0;
  }
  std::vector<Xfer> buf_;
  size_t head_ = 0, n_ = 0;
};

struct QueueRt {
  XferQueue q;
  int64_t data_free = 0;
  int64_t last_end = 0;
  int64_t data_node = -1, end_node = -1; // history: the transfers that set data_free, last_end
};

struct Event {
  int64_t t;
  uint64_t key;
  uint32_t agent;
  bool operator>(const Event& o) const { return t != o.t ? t > o.t : key > o.key; }
};

// A min-heap of events with a one-element front slot: an event pushed while it is the earliest
// one (the common case of an engine running ahead) never touches the heap.
class EventQueue {
public:
  bool empty() const { return !has_front_ && heap_.empty(); }
  size_t size() const { return heap_.size() + (has_front_ ? 1 : 0); }
  void push(const Event& e) {
    if (has_front_) {
      if (front_ > e) {
        heap_.push(front_);
        front_ = e;
      } else {
        heap_.push(e);
      }
    } else if (heap_.empty() || heap_.top() > e) {
      front_ = e;
      has_front_ = true;
    } else {
      heap_.push(e);
    }
  }
  const Event& top() const { return has_front_ ? front_ : heap_.top(); }
  Event pop() {
    if (has_front_) {
      has_front_ = false;
      return front_;
    }
    Event e = heap_.top();
    heap_.pop();
    return e;
  }

private:
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> heap_;
  Event front_{};
  bool has_front_ = false;
};

// A core's arrival at a rendezvous (core_barrier: kind 0, send_recv: kind 1), recorded while
// the core runs alone and matched with the other cores' at the end of the phase.
struct RdvArrival {
  uint8_t eng = 0;
  uint8_t kind = 0;
  int64_t key = 0;
};

// One rank's trigger of a collective.
struct CcArrival {
  int core = 0; // rank * lnc + core
  uint8_t eng = 0;
  uint32_t pc = 0;
  const PInst* pi = nullptr;
  int64_t at = 0;       // ticks: when the trigger completed
  int64_t min_cost = 1; // the transfer's ticks without contention (>= 1): it ends no earlier
  int64_t node = -1;    // SchedOptions::history: the trigger's node
  int32_t regs[kNumRegs];
};
// A trigger as the core recorded it, with its replica group's cores.
struct CcArrivalRec {
  CcArrival a;
  std::vector<int> members;
};

// One core of the run: its engines and queues, and its own event queue and clock. Cores touch
// only their own CoreRt while a phase runs (docs/machine.md "Host threads").
struct CoreRt {
  EngRt eng[kNumEngines];
  QueueRt queue[kNumDmaQueues];
  int64_t link_free = 0;
  // SchedOptions::history: the transfer that set link_free; the node of the event being
  // processed (its completion is what an instruction issued now waited for).
  int64_t link_node = -1, cur_node = -1;
  uint32_t blocked = 0; // mask of engines blocked on semaphores

  EventQueue heap;
  int64_t now = 0;
  int64_t makespan = 0;
  int64_t horizon = 0; // events at or after it wait for the next phase
  // Per-agent counters behind event keys and latency jitter: a core's keys do not depend on
  // what the other cores did, so the order of its events is the same whatever runs alongside.
  uint64_t aseq[kAgentsPerCore] = {};
  uint64_t jseq[kAgentsPerCore] = {};
  uint64_t steps = 0, allowance = UINT64_MAX, watch_from = UINT64_MAX;
  // SchedOptions::interrupt: the step at which the core next looks at it (else UINT64_MAX);
  // check_from = min(watch_from, poll_at): the one compare of every event (Agents::process).
  uint64_t poll_at = UINT64_MAX, check_from = UINT64_MAX;
  std::map<uint32_t, std::map<int64_t, uint64_t>> watched; // budget: agent -> pc -> events
  std::vector<RdvArrival> rdv;                             // arrivals of this phase
  std::vector<CcArrivalRec> cc;                            // collective triggers of this phase
  // A fault or a spent allowance stops this core (the run stops at the end of the phase).
  bool stopped = false, faulted = false, over_budget = false, interrupted = false;
  Event stop_event{};     // the event that faulted, found the allowance spent or the interrupt
  std::string fault_text; // the fault report
  int cur_eng = 0;        // fault context
  int64_t cur_pc = 0;
};

inline uint64_t mix(uint64_t x) { // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

} // namespace detail

// Decodes every stream of the machine's module once (kept in Machine::program).
std::shared_ptr<const Program> build_program(const Machine& m);

} // namespace nisa::interp
