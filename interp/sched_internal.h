// The scheduler's internal state, shared by its parts (interp/scheduler.cpp: the run loop,
// engines and DMA queues; interp/sched_program.cpp: decoding; interp/sched_report.cpp:
// deadlock reports; interp/cc_unit.*: collectives on channels). Not a public interface.
#pragma once
#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <queue>
#include <string>
#include <vector>

#include "interp/machine.h"
#include "interp/scheduler.h"

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
  ExecCtx cx;
};

struct Xfer {
  const PInst* pi = nullptr;
  uint8_t eng = 0;
  uint32_t pc = 0;
  int64_t begin = 0, end = 0;
  int32_t regs[kNumRegs];
};

struct QueueRt {
  std::deque<Xfer> q;
  int64_t data_free = 0;
  int64_t last_end = 0;
};

struct CoreRt {
  EngRt eng[kNumEngines];
  QueueRt queue[kNumDmaQueues];
  int64_t link_free = 0;
  uint32_t blocked = 0; // mask of engines blocked on semaphores
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
