// Chrome trace event format ("JSON object format"): traceEvents with complete events ("X"),
// process / thread name metadata ("M"); timestamps in microseconds.
#include <set>

#include <fmt/format.h>

#include "interp/machine.h"
#include "interp/scheduler.h"
#include "interp/stats.h"

namespace nisa::interp {
namespace {

std::string json_escape(std::string_view s) {
  std::string o;
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\')
      o += '\\', o += ch;
    else if (c < 0x20)
      o += fmt::format("\\u{:04x}", c);
    else
      o += ch;
  }
  return o;
}

std::string track_name(int track) {
  if (track < kTrackQueue0) return std::string(name_of(Engine(track)));
  if (track < kTrackChan0) return fmt::format("dma q{}", track - kTrackQueue0);
  return fmt::format("cc ch{}", track - kTrackChan0);
}

} // namespace

void write_timeline(std::ostream& os, const Machine& m, const std::vector<TimelineEvent>& ev) {
  const Module& mod = *m.mod;
  os << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  bool first = true;
  auto sep = [&] {
    if (!first) os << ",\n";
    first = false;
  };
  // Names: one process per core, one thread per engine (always) and per used DMA queue.
  std::set<std::pair<int, int>> tracks;
  for (size_t c = 0; c < m.cores.size(); ++c)
    for (int e = 0; e < kNumEngines; ++e) tracks.insert({int(c), e});
  for (const TimelineEvent& e : ev)
    if (e.kind != TimelineEvent::sem) tracks.insert({e.core, e.track});
  for (size_t c = 0; c < m.cores.size(); ++c) {
    sep();
    os << fmt::format(
        R"({{"ph":"M","name":"process_name","pid":{},"args":{{"name":"rank {} core {}"}}}})", c,
        m.cores[c].rank, m.cores[c].core);
  }
  for (auto [c, t] : tracks) {
    sep();
    os << fmt::format(
        R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":"{}"}}}})", c, t,
        track_name(t));
    sep();
    os << fmt::format(
        R"({{"ph":"M","name":"thread_sort_index","pid":{},"tid":{},"args":{{"sort_index":{}}}}})",
        c, t, t);
  }
  for (size_t c = 0; c < m.cores.size(); ++c) // initial semaphore values
    for (const SemDecl& sd : mod.sems) {
      sep();
      os << fmt::format(R"({{"ph":"C","name":"sem {}","pid":{},"ts":0,"args":{{"value":{}}}}})",
                        json_escape(sd.name), c, sd.init);
    }
  for (const TimelineEvent& e : ev) {
    if (e.kind == TimelineEvent::sem) { // a counter track per semaphore and core
      sep();
      std::string sn = e.pc < mod.sems.size() ? mod.sems[e.pc].name : fmt::format("#{}", e.pc);
      os << fmt::format(
          R"({{"ph":"C","name":"sem {}","pid":{},"ts":{:.4f},"args":{{"value":{}}}}})",
          json_escape(sn), e.core, ticks_to_ns(e.start) / 1000.0, e.bytes);
      continue;
    }
    const Inst& in = mod.streams[int(e.engine)][e.pc];
    std::string mn(desc(in.op).mnemonic);
    std::string name = e.kind == TimelineEvent::wait ? "wait " + mn : mn;
    std::string waits;
    for (const Wait& w : in.waits)
      waits += fmt::format("{}{}{}{} ", w.sem < mod.sems.size() ? mod.sems[w.sem].name : "#",
                           name_of(w.cmp), w.value, "");
    sep();
    os << fmt::format(
        R"({{"ph":"X","name":"{}","cat":"{}","pid":{},"tid":{},"ts":{:.4f},"dur":{:.4f},"args":{{"engine":"{}","pc":{},"source":"{}","inst":"{}")",
        json_escape(name),
        e.kind == TimelineEvent::wait  ? "wait"
        : e.kind == TimelineEvent::dma ? "dma"
        : e.kind == TimelineEvent::cc  ? "cc"
                                       : "inst",
        e.core, int(e.track), ticks_to_ns(e.start) / 1000.0, ticks_to_ns(e.dur) / 1000.0,
        name_of(e.engine), e.pc, json_escape(source_of(mod, e.engine, e.pc)),
        json_escape(describe_inst(mod, in)));
    if (e.kind == TimelineEvent::wait) os << fmt::format(R"(,"waits":"{}")", json_escape(waits));
    if (e.kind == TimelineEvent::dma || e.kind == TimelineEvent::cc)
      os << fmt::format(R"(,"bytes":{})", e.bytes);
    os << "}}";
  }
  os << "\n]}\n";
}

} // namespace nisa::interp
