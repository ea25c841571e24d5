// Chrome trace event format ("JSON object format"): traceEvents with complete events ("X"),
// process / thread name metadata ("M"); timestamps in microseconds. Every event object is
// built and serialized by nlohmann-json; the events are streamed one by one (a timeline may
// hold millions) into the traceEvents array.
#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "interp/core/machine.h"
#include "interp/core/stats.h"
#include "interp/observe/stats_report.h"
#include "interp/sched/scheduler.h"

namespace nisa::interp {
namespace {
using nlohmann::ordered_json;

std::string track_name(int track) {
  if (track < kTrackQueue0) return std::string(name_of(Engine(track)));
  if (track < kTrackChan0) return fmt::format("dma q{}", track - kTrackQueue0);
  return fmt::format("cc ch{}", track - kTrackChan0);
}

// Microseconds, rounded to 4 decimals (0.1 ns) as the trace always carried them.
double us(int64_t ticks) { return std::round(ticks_to_ns(ticks) / 1000.0 * 1e4) / 1e4; }

} // namespace

void write_timeline(std::ostream& os, const Machine& m, const std::vector<TimelineEvent>& ev) {
  const Module& mod = *m.mod;
  os << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  bool first = true;
  auto put = [&](const ordered_json& j) {
    if (!first) os << ",\n";
    first = false;
    // Invalid UTF-8 in a source line is replaced, never an exception mid-file.
    os << j.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
  };
  // Names: one process per core, one thread per engine (always) and per used DMA queue.
  std::set<std::pair<int, int>> tracks;
  for (size_t c = 0; c < m.cores.size(); ++c)
    for (int e = 0; e < kNumEngines; ++e) tracks.insert({int(c), e});
  bool path = false;
  for (const TimelineEvent& e : ev)
    if (e.kind == TimelineEvent::path)
      path = true;
    else if (e.kind != TimelineEvent::sem)
      tracks.insert({e.core, e.track});
  // The critical path (--profile) as a process of its own, drawn below the cores.
  const size_t path_pid = m.cores.size();
  if (path)
    put({{"ph", "M"},
         {"name", "process_name"},
         {"pid", path_pid},
         {"args", {{"name", "critical path"}}}});
  for (size_t c = 0; c < m.cores.size(); ++c)
    put({{"ph", "M"},
         {"name", "process_name"},
         {"pid", c},
         {"args", {{"name", fmt::format("rank {} core {}", m.cores[c].rank, m.cores[c].core)}}}});
  for (auto [c, t] : tracks) {
    put({{"ph", "M"},
         {"name", "thread_name"},
         {"pid", c},
         {"tid", t},
         {"args", {{"name", track_name(t)}}}});
    put({{"ph", "M"},
         {"name", "thread_sort_index"},
         {"pid", c},
         {"tid", t},
         {"args", {{"sort_index", t}}}});
  }
  for (size_t c = 0; c < m.cores.size(); ++c) // initial semaphore values
    for (const SemDecl& sd : mod.sems)
      put({{"ph", "C"},
           {"name", "sem " + sd.name},
           {"pid", c},
           {"ts", 0},
           {"args", {{"value", sd.init}}}});
  for (const TimelineEvent& e : ev) {
    if (e.kind == TimelineEvent::sem) { // a counter track per semaphore and core
      std::string sn = e.pc < mod.sems.size() ? mod.sems[e.pc].name : fmt::format("#{}", e.pc);
      put({{"ph", "C"},
           {"name", "sem " + sn},
           {"pid", e.core},
           {"ts", us(e.start)},
           {"args", {{"value", e.bytes}}}});
      continue;
    }
    const Inst& in = mod.streams[int(e.engine)][e.pc];
    std::string mn(desc(in.op).mnemonic);
    if (e.kind == TimelineEvent::path) {
      static const char* const kPathKind[] = {"exec", "dma", "cc", "latency"};
      const char* kind = kPathKind[std::min<int>(e.track, 3)];
      put({{"ph", "X"},
           {"name", fmt::format("{} {}", kind, mn)},
           {"cat", "critical"},
           {"pid", path_pid},
           {"tid", 0},
           {"ts", us(e.start)},
           {"dur", us(e.dur)},
           {"args",
            {{"kind", kind},
             {"core", fmt::format("rank {} core {}", m.cores[e.core].rank, m.cores[e.core].core)},
             {"engine", name_of(e.engine)},
             {"pc", e.pc},
             {"source", source_of(mod, e.engine, e.pc)}}}});
      continue;
    }
    ordered_json args = {{"engine", name_of(e.engine)},
                         {"pc", e.pc},
                         {"source", source_of(mod, e.engine, e.pc)},
                         {"inst", describe_inst(mod, in)}};
    if (e.kind == TimelineEvent::wait) {
      std::string waits;
      for (const Wait& w : in.waits)
        waits += fmt::format("{}{}{} ", w.sem < mod.sems.size() ? mod.sems[w.sem].name : "#",
                             name_of(w.cmp), w.value);
      args["waits"] = waits;
    }
    if (e.kind == TimelineEvent::dma || e.kind == TimelineEvent::cc) args["bytes"] = e.bytes;
    put({{"ph", "X"},
         {"name", e.kind == TimelineEvent::wait ? "wait " + mn : mn},
         {"cat", e.kind == TimelineEvent::wait  ? "wait"
                 : e.kind == TimelineEvent::dma ? "dma"
                 : e.kind == TimelineEvent::cc  ? "cc"
                                                : "inst"},
         {"pid", e.core},
         {"tid", int(e.track)},
         {"ts", us(e.start)},
         {"dur", us(e.dur)},
         {"args", std::move(args)}});
  }
  os << "\n]}\n";
}

} // namespace nisa::interp
