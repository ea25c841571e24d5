#include "interp/observe/trace.h"

#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "interp/core/target.h"

namespace nisa::interp {

bool TraceFilter::keeps(const TraceRecord& r) const {
  if (from >= 0 && r.end < from) return false;
  if (to >= 0 && r.start > to) return false;
  int bit = r.queue >= 0 ? kNumEngines + r.queue : int(r.engine);
  return (engines >> bit) & 1u;
}

uint32_t parse_trace_engines(const std::string& list) {
  uint32_t mask = 0;
  std::stringstream ss(list);
  std::string w;
  while (std::getline(ss, w, ',')) {
    if (w == "dma") {
      mask |= ((1u << kNumDmaQueues) - 1) << kNumEngines;
      continue;
    }
    if (w.size() > 1 && w[0] == 'q' && w.find_first_not_of("0123456789", 1) == std::string::npos) {
      int q = std::stoi(w.substr(1));
      if (q < kNumDmaQueues) {
        mask |= 1u << (kNumEngines + q);
        continue;
      }
    }
    bool found = false;
    for (int e = 0; e < kNumEngines; ++e)
      if (name_of(Engine(e)) == w) mask |= 1u << e, found = true;
    if (!found)
      throw InputError(fmt::format(
          "--trace-engines: unknown engine '{}' (pe, act, dve, pool, sp, cc, q0..q15, dma)", w));
  }
  return mask;
}

std::string trace_header(const Machine& m) {
  return fmt::format("# nisa-trace v{} kernel={} target={} ranks={} lnc={}\n"
                     "# start_ns\tend_ns\trank\tcore\tagent\tinst\tsource\tdisasm\tsems\twrites\n",
                     kTraceVersion, m.mod->kernel, m.tp->name, m.opt.ranks, m.opt.lnc);
}

namespace {

std::string short_source(const Module& m, Engine e, int64_t pc) {
  const auto& dbg = m.debug[int(e)];
  if (pc < 0 || size_t(pc) >= dbg.size()) return "-";
  const DebugLoc& d = dbg[size_t(pc)];
  return fmt::format("{}:{}", d.file < m.files.size() ? m.files[d.file] : "?", d.line);
}

std::string region_short(const Region& r) {
  if (r.kind == MemKind::hbm) return fmt::format("hbm:r{}:{:#x}-{:#x}", r.unit, r.b0, r.b1);
  return fmt::format("{}:c{}:p{}-{}:{:#x}-{:#x}", r.kind == MemKind::sbuf ? "sbuf" : "psum", r.unit,
                     r.p0, r.p1 - 1, r.b0, r.b1);
}

} // namespace

std::string trace_line(const Machine& m, const TraceRecord& r) {
  const CoreSlot& cs = m.cores[size_t(r.core)];
  std::string agent = r.queue >= 0 ? fmt::format("q{}", r.queue) : std::string(name_of(r.engine));
  std::string sems, writes;
  for (auto [s, v] : r.sems)
    sems += fmt::format("{}{}={}", sems.empty() ? "" : ",",
                        s < m.mod->sems.size() ? m.mod->sems[s].name : fmt::format("#{}", s), v);
  // Runs of equal ranges at a constant step (the rows of an hbm access) print once: "+STEPxN".
  const auto& ws = r.writes;
  for (size_t i = 0; i < ws.size();) {
    size_t j = i + 1;
    uint64_t len = ws[i].b1 - ws[i].b0, step = j < ws.size() ? ws[j].b0 - ws[i].b0 : 0;
    while (j < ws.size() && ws[j].kind == ws[i].kind && ws[j].unit == ws[i].unit &&
           ws[j].p0 == ws[i].p0 && ws[j].p1 == ws[i].p1 && ws[j].b1 - ws[j].b0 == len &&
           ws[j].b0 == ws[j - 1].b0 + step && ws[j].b0 > ws[j - 1].b0)
      ++j;
    writes += (writes.empty() ? "" : ";") + region_short(ws[i]);
    if (j - i > 1) writes += fmt::format("+{:#x}x{}", step, j - i);
    i = j;
  }
  const Inst& in = m.mod->streams[int(r.engine)][size_t(r.pc)];
  return fmt::format("{:.3f}\t{:.3f}\t{}\t{}\t{}\t{}[{}]\t{}\t{}\t{}\t{}\n", ticks_to_ns(r.start),
                     ticks_to_ns(r.end), cs.rank, cs.core, agent, name_of(r.engine), r.pc,
                     short_source(*m.mod, r.engine, r.pc), describe_inst(*m.mod, in),
                     sems.empty() ? "-" : sems, writes.empty() ? "-" : writes);
}

TraceRecorder::TraceRecorder(const Machine& m, TraceFilter f, std::ostream* out, bool keep,
                             uint64_t max_bytes, size_t max_kept)
    : m_(m), f_(f), out_(out), keep_(keep), max_bytes_(max_bytes), max_kept_(max_kept) {}

void TraceRecorder::exec(const ExecEvent& ev, ExecCtx& cx, const Inst& in) {
  cur_ = TraceRecord{};
  cur_.start = ev.start, cur_.end = ev.end, cur_.core = ev.core, cur_.engine = ev.engine;
  cur_.queue = ev.queue, cur_.pc = ev.pc;
  if (!ev.runs_semantics || full() || !f_.keeps(cur_)) return;
  collect_accesses(m_, ev.core, cx, in, cur_.writes);
  std::erase_if(cur_.writes, [](const Region& r) { return !r.write; });
}

void TraceRecorder::sem(int, uint16_t s, uint32_t value, bool) {
  if (!full()) cur_.sems.emplace_back(s, value);
}

void TraceRecorder::done(const ExecEvent&) {
  if (!f_.keeps(cur_)) return;
  if (full()) {
    ++dropped_;
    return;
  }
  if (out_) {
    std::string line = trace_line(m_, cur_);
    if (dropped_ || (max_bytes_ && line.size() > max_bytes_ - written_)) {
      ++dropped_; // no later (shorter) line either: the file is a prefix of the whole trace
    } else {
      *out_ << line;
      written_ += line.size();
    }
  }
  if (keep_) {
    if (max_kept_ && records_.size() >= max_kept_) records_.pop_front();
    records_.push_back(std::move(cur_));
  }
}

} // namespace nisa::interp
