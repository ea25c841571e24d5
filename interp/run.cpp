#include "interp/run.h"

#include <cstring>
#include <fstream>
#include <memory>
#include <set>

#include <fmt/format.h>

namespace nisa::interp {
namespace {

std::vector<int64_t> with_ranks(int ranks, const std::vector<int64_t>& shape) {
  std::vector<int64_t> s{ranks};
  s.insert(s.end(), shape.begin(), shape.end());
  return s;
}

} // namespace

void bind_inputs(Machine& m, const std::vector<IoSpec>& inputs) {
  std::set<std::string> bound;
  for (const IoSpec& io : inputs) {
    const TensorDecl* t = m.find_tensor(io.name);
    if (!t)
      throw std::runtime_error(
          fmt::format("--in {}: the kernel has no tensor '{}'", io.name, io.name));
    if (t->role != Role::input)
      throw std::runtime_error(fmt::format("--in {}: tensor '{}' is {}, not an input", io.name,
                                           io.name, name_of(t->role)));
    if (!bound.insert(io.name).second)
      throw std::runtime_error(fmt::format("--in {}: bound twice", io.name));
    NpyArray a = read_npy(io.path);
    if (m.opt.ranks > 1 && a.shape == with_ranks(m.opt.ranks, t->shape)) {
      check_npy(a, t->dtype, a.shape, io.path, io.name);
      uint64_t n = Machine::tensor_bytes(*t);
      for (int r = 0; r < m.opt.ranks; ++r) m.write_tensor(*t, a.data.data() + r * n, r);
    } else {
      check_npy(a, t->dtype, t->shape, io.path, io.name);
      m.write_tensor(*t, a.data.data());
    }
  }
  for (const TensorDecl& t : m.mod->tensors)
    if (t.role == Role::input && !bound.count(t.name))
      throw std::runtime_error(
          fmt::format("input '{}' is not bound (use --in {}=FILE.npy)", t.name, t.name));
}

void write_outputs(const Machine& m, const std::vector<IoSpec>& outputs) {
  for (const IoSpec& io : outputs) {
    const TensorDecl* t = m.find_tensor(io.name);
    if (!t)
      throw std::runtime_error(
          fmt::format("--out {}: the kernel has no tensor '{}'", io.name, io.name));
    if (t->space != MemSpace::hbm)
      throw std::runtime_error(fmt::format("--out {}: tensor '{}' is in {}, not hbm", io.name,
                                           io.name, name_of(t->space)));
    uint64_t n = Machine::tensor_bytes(*t);
    if (m.opt.ranks == 1) {
      write_npy(io.path, t->dtype, t->shape, m.hbm_tensor(0, *t));
    } else {
      std::vector<std::pair<const uint8_t*, uint64_t>> parts; // each rank's tensor, in place
      for (int r = 0; r < m.opt.ranks; ++r) parts.push_back({m.hbm_tensor(r, *t), n});
      write_npy_chunks(io.path, t->dtype, with_ranks(m.opt.ranks, t->shape), parts);
    }
  }
}

int run_module(const Module& mod, const RunConfig& cfg, std::ostream& out, std::ostream& err) {
  MachineOptions mo = cfg.machine;
  if (!cfg.target_given) mo.target = mod.target;
  std::unique_ptr<Machine> m;
  try {
    for (const IoSpec& io : cfg.outputs) {
      const TensorDecl* t = nullptr;
      for (const TensorDecl& d : mod.tensors)
        if (d.name == io.name) t = &d;
      if (!t)
        throw std::runtime_error(
            fmt::format("--out {}: the kernel has no tensor '{}'", io.name, io.name));
    }
    m = std::make_unique<Machine>(mod, mo);
    bind_inputs(*m, cfg.inputs);
  } catch (const std::exception& e) {
    err << "nisa run: error: " << e.what() << "\n";
    return kExitUsage;
  }
  for (const TensorDecl& t : mod.tensors) {
    bool saved = false;
    for (const IoSpec& io : cfg.outputs) saved |= io.name == t.name;
    if (t.role == Role::output && !saved)
      err << fmt::format("nisa run: warning: output '{}' is not saved (no --out {}=FILE.npy)\n",
                         t.name, t.name);
  }
  SchedOptions so = cfg.sched;
  so.timeline = so.timeline || !cfg.timeline_path.empty();
  // Observers run on the slow path only when asked for.
  std::unique_ptr<RaceChecker> races;
  std::unique_ptr<TraceRecorder> trace;
  std::ofstream trace_file;
  ObserverList observers;
  if (cfg.check_races) {
    races = std::make_unique<RaceChecker>(*m);
    observers.list.push_back(races.get());
  }
  if (!cfg.trace_path.empty()) {
    trace_file.open(cfg.trace_path);
    if (!trace_file) {
      err << "nisa run: error: " << cfg.trace_path << ": cannot create file\n";
      return kExitUsage;
    }
    trace_file << trace_header(*m);
    trace = std::make_unique<TraceRecorder>(*m, cfg.trace_filter, &trace_file, false,
                                            cfg.trace_max_bytes);
    observers.list.push_back(trace.get());
  }
  if (!observers.list.empty()) so.observer = &observers;
  RunResult r = run(*m, so);
  if (!r.report.empty()) err << r.report;
  if (races) {
    // The first reports name the bug; the rest are usually its repetitions.
    constexpr size_t kShown = 10;
    for (size_t i = 0; i < races->races().size() && i < kShown; ++i)
      err << races->report_text(races->races()[i]);
    if (races->races().size() > kShown)
      err << fmt::format("... and {} more (nisa debug: set check-races on, info races)\n",
                         races->races().size() - kShown);
    if (!races->races().empty()) {
      err << fmt::format("nisa run: {} race(s) found\n", races->races().size());
      if (r.exit_code == kExitOk) r.exit_code = kExitRace;
    }
  }
  if (trace && trace->dropped())
    err << fmt::format("nisa run: warning: {}: the trace stops at {} bytes (--trace-limit {}); "
                       "{} later records are left out (--trace-from/--trace-to/--trace-engines "
                       "select a part)\n",
                       cfg.trace_path, trace->bytes_written(), cfg.trace_max_bytes,
                       trace->dropped());
  if (r.timeline_dropped)
    err << fmt::format("nisa run: warning: {}: the timeline holds the first {} events "
                       "(--timeline-limit {}); {} later events are left out\n",
                       cfg.timeline_path, r.timeline.size(), so.max_timeline_events,
                       r.timeline_dropped);
  if (cfg.stats) print_stats(out, *m, r.stats);
  try {
    if (!cfg.timeline_path.empty()) {
      std::ofstream f(cfg.timeline_path);
      if (!f) throw std::runtime_error(fmt::format("{}: cannot create file", cfg.timeline_path));
      write_timeline(f, *m, r.timeline);
    }
    if (r.status == RunStatus::ok) write_outputs(*m, cfg.outputs);
  } catch (const std::exception& e) {
    err << "nisa run: error: " << e.what() << "\n";
    return r.exit_code ? r.exit_code : kExitUsage;
  }
  return r.exit_code;
}

} // namespace nisa::interp
