// The scheduler's hooks for observers (the debugger, the race checker, the trace, the uninit
// check). The fast path never calls them: a non-null SchedOptions::observer selects the slow
// path, like `timeline`.
//
// Every hook is listed once, in NISA_OBSERVER_HOOKS; ExecObserver's virtual functions and
// ObserverList's forwarding are generated from that list, so a new hook reaches every observer
// of a list by construction.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "interp/core/exec.h"

namespace nisa::interp {

// One completed instruction or DMA transfer, for observers (debugger, race checker, trace).
struct ExecEvent {
  int core = 0;               // rank * lnc + core
  Engine engine = Engine::sp; // the stream holding the instruction
  int64_t pc = 0;
  int queue = -1;             // >= 0: a DMA transfer completing on this queue (16 + ch: a
                              // collective on channel ch)
  int64_t start = 0, end = 0; // modelled ticks
  bool runs_semantics = true; // false: a DMA trigger (enqueue) or a rendezvous completion
};

using Participants = std::vector<std::pair<int, int>>; // (core, engine) of a rendezvous

// X(hook, (parameters), (arguments)):
//   issue       the instruction's waits hold and it issues (or arrives at a rendezvous);
//   exec        before the semantics run (cx resolves the instruction's access patterns);
//   done        after the semantics and the signals of the event;
//   sem         a semaphore changed by a signal (delta) or a sem_set (set = true) of the
//               current event;
//   enqueue     a DMA instruction put its transfer on a queue (completes later, FIFO per
//               queue), or a collective its transfer on channel queue - kNumDmaQueues;
//   rendezvous  the participants (core, engine) of a barrier or send_recv meet;
//   collective  a collective transfer completes on channel ev.queue - kNumDmaQueues of every
//               participant (evs[i], in replica-group order; each was announced by enqueue()
//               at its trigger). Called before the data moves; cx[i] resolves participant
//               i's operands. Its signals follow.
#define NISA_OBSERVER_HOOKS(X)                                                                     \
  X(issue, (int core, Engine e, int64_t pc), (core, e, pc))                                        \
  X(exec, (const ExecEvent& ev, ExecCtx& cx, const Inst& in), (ev, cx, in))                        \
  X(done, (const ExecEvent& ev), (ev))                                                             \
  X(sem, (int core, uint16_t s, uint32_t value, bool set), (core, s, value, set))                  \
  X(enqueue, (int core, Engine e, int64_t pc, int queue), (core, e, pc, queue))                    \
  X(rendezvous, (const Participants& who), (who))                                                  \
  X(collective,                                                                                    \
    (const std::vector<ExecEvent>& evs, const std::vector<ExecCtx*>& cx,                           \
     const std::vector<const Inst*>& in),                                                          \
    (evs, cx, in))

namespace detail {
template <class... T> constexpr void unused(const T&...) {}
} // namespace detail

struct ExecObserver {
  virtual ~ExecObserver() = default;
#define NISA_HOOK(name, params, args)                                                              \
  virtual void name params { detail::unused args; }
  NISA_OBSERVER_HOOKS(NISA_HOOK)
#undef NISA_HOOK
};

// Calls several observers in turn, every hook.
class ObserverList final : public ExecObserver {
public:
  std::vector<ExecObserver*> list;
#define NISA_HOOK(name, params, args)                                                              \
  void name params override {                                                                      \
    for (ExecObserver * o : list) o->name args;                                                    \
  }
  NISA_OBSERVER_HOOKS(NISA_HOOK)
#undef NISA_HOOK
};

} // namespace nisa::interp
