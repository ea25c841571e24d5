#include "interp/run/run.h"
#include "interp/observe/stats_report.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <memory>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "interp/dist/procs.h"
#include "interp/run/precheck.h"
#include "isa/object.h"
#include "isa/output_file.h"
#include "isa/quote.h"

namespace nisa::interp {
namespace {

std::vector<int64_t> with_ranks(int ranks, const std::vector<int64_t>& shape) {
  std::vector<int64_t> s{ranks};
  s.insert(s.end(), shape.begin(), shape.end());
  return s;
}

} // namespace

std::string_view status_name(const RunResult& r) {
  if (r.exit_code == kExitRace) return "races";
  switch (r.status) {
  case RunStatus::ok: return "ok";
  case RunStatus::deadlock: return "deadlock";
  case RunStatus::fault: return "fault";
  case RunStatus::budget: return "budget";
  case RunStatus::interrupted: return "interrupted";
  }
  return "?";
}

std::vector<InputData> read_inputs(const Module& mod, int ranks,
                                   const std::vector<IoSpec>& inputs) {
  std::set<std::string> bound;
  std::vector<InputData> out;
  for (const IoSpec& io : inputs) {
    const TensorDecl* t = nullptr;
    for (const TensorDecl& d : mod.tensors)
      if (d.name == io.name) t = &d;
    if (!t)
      throw InputError(
          fmt::format("--in {}: the kernel has no tensor '{}'", elide(io.name), elide(io.name)));
    if (t->role != Role::input)
      throw InputError(fmt::format("--in {}: tensor '{}' is {}, not an input", io.name, io.name,
                                   name_of(t->role)));
    if (!bound.insert(io.name).second)
      throw InputError(fmt::format("--in {}: bound twice", io.name));
    InputData in{t, false, nullptr};
    // The header is checked against the declaration before any data is read.
    try {
      in.file = std::make_unique<NpyReader>(io.path);
      const NpyArray& a = in.file->header().array;
      in.per_rank = ranks > 1 && a.shape == with_ranks(ranks, t->shape);
      check_npy(a, t->dtype, in.per_rank ? a.shape : t->shape, io.path, io.name);
      in.file->check_size();
    } catch (const NpyError& e) {
      // A descriptor nisa has no dtype for (float64, int64, complex ...): name the one the
      // declaration expects.
      std::string msg = e.what();
      if (msg.find("unsupported dtype descriptor") == std::string::npos) throw;
      throw NpyError(fmt::format("{}; tensor '{}' is {}: expected descriptor '{}' (e.g. "
                                 "np.save(f, a.astype(np.{})))",
                                 msg, io.name, dtype_name(t->dtype), npy_descr(t->dtype),
                                 t->dtype == DType::fp32   ? "float32"
                                 : t->dtype == DType::fp16 ? "float16"
                                 : t->dtype == DType::bf16
                                     ? "uint16) of the bf16 bits, or ml_dtypes.bfloat16"
                                     : dtype_name(t->dtype)));
    }
    out.push_back(std::move(in));
  }
  for (const TensorDecl& t : mod.tensors)
    if (t.role == Role::input && !bound.count(t.name))
      throw InputError(
          fmt::format("input '{}' is not bound (use --in {}=FILE.npy)", t.name, t.name));
  return out;
}

std::vector<uint16_t> input_hbm_shifts(int ranks, const std::vector<InputData>& inputs) {
  std::vector<uint16_t> shifts(size_t(ranks), 0);
  for (int r = 0; r < ranks; ++r) {
    std::vector<std::pair<uint64_t, uint16_t>> votes; // (bytes, shift)
    for (const InputData& in : inputs) {
      if (!in.file || !in.file->mappable() || in.tensor->space != MemSpace::hbm) continue;
      const uint64_t bytes = Machine::tensor_bytes(*in.tensor);
      if (bytes < kMinMappedBytes) continue;
      // (data_offset + data_bytes was checked against the file size: no overflow)
      const uint64_t pos = in.file->header().data_offset + (in.per_rank ? uint64_t(r) * bytes : 0);
      const uint64_t shift = (pos - in.tensor->address) % 4096;
      if (shift % 64 != 0) continue; // HBM stays 64-byte aligned
      votes.emplace_back(bytes, uint16_t(shift));
    }
    uint64_t best = 0;
    for (const auto& [b, s] : votes) {
      uint64_t total = 0;
      for (const auto& [b2, s2] : votes) total += s2 == s ? b2 : 0;
      if (total > best) best = total, shifts[size_t(r)] = s;
    }
  }
  return shifts;
}

void bind_inputs(Machine& m, std::vector<InputData>& inputs, bool map_pages) {
  for (InputData& in : inputs) {
    const TensorDecl& t = *in.tensor;
    if (!in.file) throw InputError(fmt::format("input '{}': its file was read already", t.name));
    // Under MPI only this process's ranks: other slices are skipped (null pieces).
    std::vector<uint8_t*> pieces;
    if (in.per_rank)
      for (int r = 0; r < m.opt.ranks; ++r) pieces.push_back(m.hbm_tensor(r, t));
    else
      pieces.push_back(m.rank_hi > m.rank_lo ? m.hbm_tensor(m.rank_lo, t) : nullptr);
    in.file->read_into(pieces, map_pages && !m.hbm_spilled);
    in.file.reset(); // closes it
    for (int r = m.rank_lo; r < m.rank_hi; ++r) {
      if (!in.per_rank && r > m.rank_lo)
        std::memcpy(m.hbm_tensor(r, t), m.hbm_tensor(m.rank_lo, t), Machine::tensor_bytes(t));
      m.mark_written(t, r);
    }
  }
}

void bind_inputs(Machine& m, const std::vector<IoSpec>& inputs) {
  std::vector<InputData> files = read_inputs(*m.mod, m.opt.ranks, inputs);
  bind_inputs(m, files);
}

void reset_with_inputs(Machine& m, const std::vector<IoSpec>& inputs) {
  try {
    std::vector<InputData> files = read_inputs(*m.mod, m.opt.ranks, inputs);
    m.reset(InputFill::caller_writes);
    bind_inputs(m, files);
  } catch (...) {
    m.reset(); // reset as asked, and no input half-read into unpoisoned memory
    throw;
  }
}

namespace {

// Under MPI: the process of rank 0 writes every output; the other processes send it their
// ranks' tensors, in rank order, in pieces (never a whole [R, ...] array in memory). Every
// process goes through the whole exchange even when rank 0 cannot write (its error is
// reported after), so that no process waits forever.
constexpr uint64_t kOutPiece = uint64_t(64) << 20;
constexpr int kOutTag = 3;

std::vector<std::unique_ptr<OutputFile>> stage_outputs_mpi(const Machine& m, Procs& procs,
                                                           const std::vector<IoSpec>& outputs) {
  std::vector<std::unique_ptr<OutputFile>> files;
  std::string error;
  std::vector<uint8_t> buf;
  for (const IoSpec& io : outputs) {
    const TensorDecl* t = m.find_tensor(io.name); // checked by run_module
    const uint64_t n = Machine::tensor_bytes(*t);
    std::unique_ptr<OutputFile> f;
    if (procs.rank() == 0 && error.empty()) {
      try {
        f = std::make_unique<OutputFile>(io.path);
        f->write(
            npy_header(t->dtype, m.opt.ranks == 1 ? t->shape : with_ranks(m.opt.ranks, t->shape)));
      } catch (const std::exception& e) {
        error = e.what();
        f.reset();
      }
    }
    for (int r = 0; r < m.opt.ranks; ++r) {
      const int owner = procs.owner(r, m.opt.ranks);
      for (uint64_t at = 0; at < n; at += kOutPiece) {
        const uint64_t k = std::min(kOutPiece, n - at);
        if (procs.rank() == 0) {
          const uint8_t* p = m.hbm_tensor(r, *t);
          if (owner != 0) {
            buf.resize(size_t(k));
            procs.recv(owner, buf.data(), k, kOutTag);
            p = buf.data();
          } else {
            p += at;
          }
          if (f) f->write({reinterpret_cast<const char*>(p), size_t(k)});
        } else if (owner == procs.rank()) {
          procs.send(0, m.hbm_tensor(r, *t) + at, k, kOutTag);
        }
      }
    }
    if (f) {
      try {
        f->finish();
        files.push_back(std::move(f));
      } catch (const std::exception& e) {
        if (error.empty()) error = e.what();
      }
    }
  }
  if (!error.empty()) throw OutputError(error);
  return files;
}

} // namespace

std::vector<std::unique_ptr<OutputFile>> stage_outputs(const Machine& m,
                                                       const std::vector<IoSpec>& outputs) {
  std::vector<const TensorDecl*> tensors;
  for (const IoSpec& io : outputs) {
    const TensorDecl* t = m.find_tensor(io.name);
    if (!t)
      throw InputError(
          fmt::format("--out {}: the kernel has no tensor '{}'", elide(io.name), elide(io.name)));
    if (t->space != MemSpace::hbm)
      throw InputError(fmt::format("--out {}: tensor '{}' is in {}, not hbm", io.name, io.name,
                                   name_of(t->space)));
    tensors.push_back(t);
  }
  if (m.opt.procs) return stage_outputs_mpi(m, *m.opt.procs, outputs);
  std::vector<std::unique_ptr<OutputFile>> files(outputs.size());
  std::vector<std::exception_ptr> errors(outputs.size());
  auto stage = [&](size_t i) {
    try {
      const TensorDecl* t = tensors[i];
      const uint64_t n = Machine::tensor_bytes(*t);
      std::vector<std::pair<const uint8_t*, uint64_t>> parts; // each rank's tensor, in place
      for (int r = 0; r < m.opt.ranks; ++r) parts.push_back({m.hbm_tensor(r, *t), n});
      auto f = std::make_unique<OutputFile>(outputs[i].path);
      stream_npy(f->stream(), t->dtype,
                 m.opt.ranks == 1 ? t->shape : with_ranks(m.opt.ranks, t->shape), parts);
      f->finish();
      files[i] = std::move(f);
    } catch (...) {
      errors[i] = std::current_exception();
    }
  };
  // Several outputs are written at once, one file per host thread: copying into the page cache
  // is most of what a run pays for its outputs (attention_block_tkg: 16.8 MB in 3 files).
  const size_t helpers =
      std::min<size_t>(outputs.size(), std::max(1u, std::thread::hardware_concurrency())) - 1;
  if (helpers == 0 || outputs.size() < 2) {
    for (size_t i = 0; i < outputs.size(); ++i) stage(i);
  } else {
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t i; (i = next.fetch_add(1)) < outputs.size();) stage(i);
    };
    std::vector<std::thread> threads;
    try {
      for (size_t h = 0; h < helpers; ++h) threads.emplace_back(work);
    } catch (const std::system_error&) { // no thread: the rest here
    }
    work();
    for (auto& th : threads) th.join();
  }
  // The first failure in the order of the outputs, as writing them one by one reported it.
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  return files;
}

void write_outputs(const Machine& m, const std::vector<IoSpec>& outputs) {
  for (auto& f : stage_outputs(m, outputs)) f->commit();
}

namespace {

// Under MPI the processes agree on a set-up error (the first process's; each may meet its own,
// reading its ranks' slices): every process returns, none waits for the others.
std::string agree(Procs* procs, const std::string& error) {
  if (!procs) return error;
  Bytes mine;
  mine.put_str(error);
  for (auto& b : procs->allgather(mine.b)) {
    Bytes in{std::move(b)};
    std::string e = in.get_str();
    if (!e.empty()) return e;
  }
  return {};
}

// What the processes of an MPI job must agree on besides the kernel: every option that changes
// the results or the exchanges (not --threads, the spill or the file paths).
uint64_t options_hash(const MachineOptions& mo, const RunConfig& cfg) {
  Bytes b;
  b.put(uint8_t(mo.target));
  b.put(int32_t(mo.lnc));
  b.put(int32_t(mo.ranks));
  b.put(uint8_t(mo.check_uninit));
  b.put(mo.max_hbm);
  b.put(uint8_t(cfg.sched.mode));
  b.put(cfg.sched.seed);
  b.put(cfg.sched.max_steps);
  b.put(uint8_t(cfg.sched.timeline || !cfg.timeline_path.empty()));
  b.put(cfg.sched.max_timeline_events);
  b.put(uint8_t(cfg.stats));
  b.put(uint8_t(!cfg.stats_json_path.empty()));
  b.put(uint8_t(cfg.check_races));
  b.put(uint8_t(!cfg.trace_path.empty()));
  b.put(uint8_t(cfg.profile || !cfg.profile_json_path.empty()));
  b.put(uint8_t(cfg.profile_what_if));
  for (const auto* l : {&cfg.inputs, &cfg.outputs}) {
    b.put(uint64_t(l->size()));
    for (const IoSpec& io : *l) b.put_str(io.name);
  }
  return fnv1a64(b.b);
}

} // namespace

int run_module(const Module& mod, const RunConfig& cfg, std::ostream& out, std::ostream& err) {
  MachineOptions mo = cfg.machine;
  if (!cfg.target_given) mo.target = mod.target;
  // MPI processes (docs/machine.md "MPI processes"): rank 0's process writes the files; what
  // the others print goes to /dev/null (cli/main.cpp).
  Procs* mp = procs();
  mo.procs = mp;
  const bool root = !mp || mp->rank() == 0;
  // The first exchange: one kernel and one set of options in every process (else their
  // exchanges would not match: MPI_ERR_TRUNCATE, a hang, or outputs of rank 0 only).
  if (mp) {
    const std::string e = check_job(mp, fnv1a64(write_object(mod)), options_hash(mo, cfg));
    if (!e.empty()) {
      err << "nisa run: error: " << e << "\n";
      return kExitUsage;
    }
  }
  if (mp && (cfg.check_races || !cfg.trace_path.empty() || mo.check_uninit)) {
    err << fmt::format("nisa run: error: {} is not available with ranks spread over {} MPI "
                       "processes; run it in one process (without mpirun)\n",
                       cfg.check_races   ? "--check-races"
                       : mo.check_uninit ? "--check-uninit"
                                         : "--trace",
                       mp->size());
    return kExitUsage;
  }
  std::unique_ptr<Machine> m;
  struct Keep { // destroyed before `m`: on every return after the machine is made
    std::unique_ptr<Machine>& m;
    bool on;
    ~Keep() {
      static std::vector<std::unique_ptr<Machine>>* kept =
          new std::vector<std::unique_ptr<Machine>>;
      if (on && m) kept->push_back(std::move(m));
    }
  } keep{m, cfg.keep_machine};
  std::string setup_error;
  try {
    for (const IoSpec& io : cfg.outputs) {
      const TensorDecl* t = nullptr;
      for (const TensorDecl& d : mod.tensors)
        if (d.name == io.name) t = &d;
      if (!t)
        throw InputError(fmt::format("--out {}: the kernel has no tensor '{}'", io.name, io.name));
      if (t->space != MemSpace::hbm)
        throw InputError(
            fmt::format("--out {}: tensor '{}' is in {}, not hbm: only HBM tensors can be saved "
                        "(copy it to an HBM output with a DMA)",
                        io.name, io.name, name_of(t->space)));
    }
    // Everything that can be checked before allocating HBM is: the declarations against the
    // limit, then each input's header against its declaration (the data only after).
    Machine::hbm_size(mod, mo);
    std::vector<InputData> inputs = read_inputs(mod, mo.ranks, cfg.inputs);
    // Every input is read (or mapped) into place next: its bytes are not poisoned first.
    if (!cfg.copy_inputs) mo.hbm_shift = input_hbm_shifts(mo.ranks, inputs);
    m = std::make_unique<Machine>(mod, mo, InputFill::caller_writes);
    bind_inputs(*m, inputs, !cfg.copy_inputs);
  } catch (const std::bad_alloc&) { // the large allocations are named (OutOfMemory)
    setup_error = "out of memory while reading the inputs and allocating the machine";
  } catch (const std::exception& e) {
    setup_error = e.what();
    if (setup_error.empty()) setup_error = "set-up failed";
  }
  setup_error = agree(mp, setup_error);
  if (!setup_error.empty()) {
    err << "nisa run: error: " << setup_error << "\n";
    return kExitUsage;
  }
  for (const TensorDecl& t : mod.tensors) {
    bool saved = false;
    for (const IoSpec& io : cfg.outputs) saved |= io.name == t.name;
    if (t.role == Role::output && !saved)
      err << fmt::format("nisa run: warning: output '{}' is not saved (no --out {}=FILE.npy)\n",
                         t.name, t.name);
  }
  // Before the run: what `nisa check` finds within a small bound (the run goes on).
  if (cfg.static_check && root)
    err << precheck_text_cached(mod, mo.target, mo.lnc, mo.ranks, "nisa run", cfg.module_hash);
  SchedOptions so = cfg.sched;
  so.timeline = so.timeline || !cfg.timeline_path.empty();
  const bool profiling = cfg.profile || !cfg.profile_json_path.empty();
  so.history = so.history || profiling;
  // Recording: the files are capped, so the budget is lower (docs/machine.md "Limits").
  const bool recording_budget =
      (!cfg.trace_path.empty() || !cfg.timeline_path.empty() || profiling) &&
      !cfg.max_steps_given && so.max_steps == kDefaultMaxSteps;
  if (recording_budget) so.max_steps = kDefaultMaxStepsRecording;
  // Observers run on the slow path only when asked for.
  std::unique_ptr<RaceChecker> races;
  std::unique_ptr<TraceRecorder> trace;
  std::unique_ptr<OutputFile> trace_file; // renamed into place with the other outputs
  ObserverList observers;
  if (cfg.check_races) {
    races = std::make_unique<RaceChecker>(*m);
    observers.list.push_back(races.get());
  }
  if (!cfg.trace_path.empty()) {
    try {
      trace_file = std::make_unique<OutputFile>(cfg.trace_path);
    } catch (const std::exception& e) {
      err << "nisa run: error: " << e.what() << "\n";
      return kExitUsage;
    }
    trace_file->stream() << trace_header(*m);
    trace = std::make_unique<TraceRecorder>(*m, cfg.trace_filter, &trace_file->stream(), false,
                                            cfg.trace_max_bytes);
    observers.list.push_back(trace.get());
  }
  if (!observers.list.empty()) so.observer = &observers;
  RunResult r = run(*m, so);
  if (!r.report.empty()) err << r.report;
  if (recording_budget && r.status == RunStatus::budget)
    err << fmt::format("nisa run: with --trace, --timeline or --profile the budget is {} events by "
                       "default "
                       "({} without); --max-steps N raises it (0: no limit)\n",
                       kDefaultMaxStepsRecording, kDefaultMaxSteps);
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
    } else { // say what was checked: a clean run is not silence that could mean "not checked"
      err << "nisa run: " << races->no_race_text()
          << (r.status == RunStatus::ok ? "" : ", in the part of the run before it stopped")
          << "\n";
    }
  }
  if (trace && trace->dropped())
    err << fmt::format("nisa run: warning: {}: the trace stops at {} bytes (--trace-limit {}); "
                       "{} later records are left out (--trace-limit BYTES raises the cap, 0: no "
                       "limit; --trace-from/--trace-to/--trace-engines select a part)\n",
                       cfg.trace_path, trace->bytes_written(), cfg.trace_max_bytes,
                       trace->dropped());
  if (r.timeline_dropped)
    err << fmt::format("nisa run: warning: {}: the timeline holds the first {} events "
                       "(--timeline-limit {}); {} later events are left out (--timeline-limit N "
                       "raises the cap, 0: no limit)\n",
                       cfg.timeline_path, r.timeline.size(), so.max_timeline_events,
                       r.timeline_dropped);
  if (cfg.stats) print_stats(out, *m, r.stats);
  // All or nothing: every file is written to its temporary and closed before the first
  // rename. The trace and the timeline are kept after a deadlock or fault (they explain it),
  // the tensors only after a clean run.
  // Under MPI the tensors are staged first: every process takes part in that exchange.
  std::vector<std::unique_ptr<OutputFile>> tensors;
  std::string error;
  try {
    if (r.status == RunStatus::ok) tensors = stage_outputs(*m, cfg.outputs);
  } catch (const std::exception& e) {
    error = e.what();
  }
  try {
    if (!error.empty()) throw OutputError(error);
    std::vector<std::unique_ptr<OutputFile>> files;
    if (trace_file) {
      trace.reset(); // flushes what it buffered
      trace_file->finish();
    }
    if (profiling) { // after the outputs are staged: the what-if re-runs reuse the machine
      Profile p = profile_run(*m, so, r, cfg.profile_what_if,
                              [&](Machine& mm) { reset_with_inputs(mm, cfg.inputs); });
      if (cfg.profile && root) out << profile_report(p);
      if (!cfg.profile_json_path.empty() && root) {
        files.push_back(std::make_unique<OutputFile>(cfg.profile_json_path));
        files.back()->stream() << profile_json(p);
      }
      if (!cfg.timeline_path.empty() && root) mark_critical_path(r.timeline, p);
    }
    if (!cfg.timeline_path.empty() && root) {
      files.push_back(std::make_unique<OutputFile>(cfg.timeline_path));
      write_timeline(files.back()->stream(), *m, r.timeline);
    }
    if (!cfg.stats_json_path.empty() && root) {
      files.push_back(std::make_unique<OutputFile>(cfg.stats_json_path));
      files.back()->stream() << stats_json(*m, r.stats, status_name(r), r.exit_code);
    }
    for (auto& f : tensors) files.push_back(std::move(f));
    for (auto& f : files) f->finish();
    if (trace_file) trace_file->commit();
    for (auto& f : files) f->commit();
  } catch (const std::exception& e) {
    err << "nisa run: error: " << e.what() << "\n";
    const int rc = r.exit_code ? r.exit_code : kExitOutput;
    return mp ? int(mp->max(rc)) : rc;
  }
  return mp ? int(mp->max(r.exit_code)) : r.exit_code;
}

} // namespace nisa::interp
