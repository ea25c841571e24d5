#include "interp/sched/state.h"

#include <algorithm>
#include <new>

#include <fmt/format.h>

#include "interp/sched/sched_report.h"

namespace nisa::interp::detail {

SchedState::SchedState(Machine& machine, const SchedOptions& opt)
    : m(machine), o(opt), mod(*machine.mod), tagged(machine.opt.procs != nullptr) {}

void SchedState::record(TimelineEvent::Kind k, int c, int track, int e, int64_t start, int64_t dur,
                        uint64_t bytes, int64_t pc) {
  if (!o.timeline) return;
  if (res.timeline.size() >= timeline_cap) {
    ++res.timeline_dropped;
    return;
  }
  if (tagged) tags.push_back(tag);
  TimelineEvent ev;
  ev.kind = k;
  ev.core = uint16_t(c);
  ev.track = uint8_t(track);
  ev.engine = static_cast<Engine>(e);
  ev.pc = uint32_t(pc >= 0 ? pc : cores[c].eng[e].pc);
  ev.start = start;
  ev.dur = dur;
  ev.bytes = bytes;
  push_timeline(ev);
}

void SchedState::push_timeline(const TimelineEvent& ev) {
  try {
    res.timeline.push_back(ev);
  } catch (const std::bad_alloc&) {
    const size_t n = res.timeline.size(), grow = std::max<size_t>(1, 2 * res.timeline.capacity());
    throw OutOfMemory(
        fmt::format("the --timeline events: {} recorded, room for {} asked for (--timeline-limit "
                    "{}; a smaller --timeline-limit N or --max-steps N stops sooner)",
                    n, grow, o.max_timeline_events),
        uint64_t(grow) * sizeof(TimelineEvent));
  }
}

void SchedState::record_sem(int c, uint16_t sem) {
  if (res.timeline.size() >= timeline_cap) {
    ++res.timeline_dropped;
    return;
  }
  if (tagged) tags.push_back(tag);
  TimelineEvent ev;
  ev.kind = TimelineEvent::sem;
  ev.core = uint16_t(c);
  ev.track = 0;
  ev.pc = sem;
  ev.start = cores[c].now;
  ev.bytes = m.cores[c].st.sems[sem];
  push_timeline(ev);
}

int64_t SchedState::add_node(int list, const HistNode& n) {
  History& h = res.history;
  if (h.lists.empty()) h.lists.resize(cores.size() + 1);
  if (o.max_history && history_nodes >= o.max_history) {
    ++h.dropped;
    return -1;
  }
  std::vector<HistNode>& v = h.lists[size_t(list)];
  try {
    v.push_back(n);
  } catch (const std::bad_alloc&) {
    throw OutOfMemory(fmt::format("the --profile history: {} nodes recorded (a smaller "
                                  "--max-steps N stops sooner)",
                                  history_nodes),
                      uint64_t(2 * v.capacity() + 1) * sizeof(HistNode));
  }
  ++history_nodes;
  return hist_id(list, v.size() - 1);
}

std::string SchedState::fault_text(int c, int e, int64_t pc, const std::string& why) const {
  if (c < 0) return fmt::format("fault: {}\n", why);
  const Inst& in = mod.streams[e][pc];
  return fmt::format("{}: fault: {}\n  at {}: {}\n", source_of(mod, Engine(e), pc), why,
                     where(m, c, e, pc), describe_inst(mod, in));
}

void SchedState::core_fault(int c, const Event& ev, const std::string& why) {
  CoreRt& C = cores[c];
  if (C.faulted) return;
  C.stopped = C.faulted = true;
  C.stop_event = ev;
  C.fault_text = fault_text(c, C.cur_eng, C.cur_pc, why);
}

} // namespace nisa::interp::detail
