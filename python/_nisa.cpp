// The C++ half of the Python module `nisa` (python/nisa/__init__.py is the other half: the
// exception classes and the documented API). Inputs are copied once, whatever their layout
// and byte order, straight into the machine's HBM once the machine (every limit) is checked,
// and outputs once out of it into fresh arrays. The GIL is released while the machine runs,
// and Ctrl-C stops it (run_interruptibly).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "asm/asm.h"
#include "asm/diagnostics_json.h"
#include "interp/core/host_pool.h"
#include "interp/core/machine.h"
#include "interp/core/stats.h"
#include "interp/core/target.h"
#include "interp/observe/race.h"
#include "interp/observe/stats_report.h"
#include "interp/run/npy.h"
#include "interp/run/precheck.h"
#include "interp/run/run.h"
#include "interp/sched/scheduler.h"
#include "isa/error.h"
#include "isa/launch.h"
#include "isa/object.h"

namespace py = pybind11;
using namespace nisa;

namespace {

struct Kernel {
  std::shared_ptr<const Module> mod;
  std::string path;
  // The machine of the last run, reset and reused by the next run with the same options: its
  // memory is allocated once (a fresh machine per run paid the zeroing and first touch of
  // every page again: a third of cascaded_max's time). One run at a time uses it; a run that
  // finds it busy (another Python thread) makes its own machine.
  struct Cache {
    std::mutex mu;
    std::unique_ptr<interp::Machine> m;
  };
  std::shared_ptr<Cache> cache = std::make_shared<Cache>();
};

// Whether a cached machine was made with the options a run asks for.
bool same_machine(const interp::MachineOptions& a, const interp::MachineOptions& b) {
  return a.target == b.target && a.lnc == b.lnc && a.ranks == b.ranks && a.threads == b.threads &&
         a.check_uninit == b.check_uninit && a.max_hbm == b.max_hbm && a.hbm_spill == b.hbm_spill &&
         a.spill_dir == b.spill_dir && a.hbm_shift == b.hbm_shift && a.cost_scale == b.cost_scale;
}

// cost_scale={unit: factor} (None: no scaling) as `nisa run --cost-scale UNIT=F` checks it.
interp::CostScale cost_scale_of(const py::object& o) {
  interp::CostScale s = interp::kNoCostScale;
  if (o.is_none()) return s;
  if (!py::isinstance<py::dict>(o))
    throw py::type_error(fmt::format("cost_scale: expected a dict {{unit: factor}} (units: {})",
                                     interp::cost_unit_list()));
  for (auto item : py::reinterpret_borrow<py::dict>(o)) {
    if (!py::isinstance<py::str>(item.first))
      throw py::type_error("cost_scale: the units are strings (e.g. {'pe': 2})");
    const std::string name = py::str(item.first);
    const auto u = interp::find_cost_unit(name);
    if (!u)
      throw py::value_error(
          "cost_scale: " +
          interp::unknown_cost_unit(name, nasm::suggest(name, interp::cost_unit_names())));
    // Any real number (int, float, numpy scalars), not a string; an int beyond the floats is
    // out of range.
    auto not_a_number = [&] {
      return py::type_error(
          fmt::format("cost_scale['{}']: expected a number, not {}", name,
                      std::string(py::str(item.second.get_type().attr("__name__")))));
    };
    if (!PyNumber_Check(item.second.ptr())) throw not_a_number();
    double f = PyFloat_AsDouble(item.second.ptr());
    if (f == -1.0 && PyErr_Occurred()) {
      const bool overflow = PyErr_ExceptionMatches(PyExc_OverflowError);
      PyErr_Clear();
      if (!overflow) throw not_a_number();
      f = HUGE_VAL;
    }
    if (auto err = interp::cost_scale_error(f))
      throw py::value_error(fmt::format("cost_scale['{}'] = {}: {}", name, f, *err));
    s[int(*u)] = f;
  }
  return s;
}

py::list diag_list(const std::vector<nasm::Diagnostic>& diags) {
  py::list l;
  for (const auto& d : diags) {
    py::list notes;
    for (const auto& n : d.notes) {
      const nasm::NoteInfo ni = nasm::parse_note(n);
      py::dict nd;
      nd["message"] = ni.message;
      nd["kind"] = ni.kind;
      nd["what"] = ni.what;
      nd["file"] = ni.file;
      nd["line"] = ni.line;
      nd["column"] = ni.col;
      notes.append(nd);
    }
    py::dict dd;
    dd["severity"] = d.severity == nasm::Diagnostic::Error ? "error" : "note";
    dd["file"] = d.file;
    dd["line"] = d.line;
    dd["column"] = d.col;
    dd["message"] = d.message;
    dd["source_line"] = d.source_line;
    dd["expansion"] = notes;
    dd["text"] = d.str();
    l.append(dd);
  }
  return l;
}

// Returns (Kernel, None) or (None, [diagnostics], text).
py::tuple assemble(const std::string& path, const std::string& target,
                   const std::vector<std::pair<std::string, std::string>>& defines,
                   const std::vector<std::string>& includes) {
  if (path.size() >= 5 && path.compare(path.size() - 5, 5, ".nbin") == 0) {
    if (!defines.empty()) throw py::value_error("parameters apply to .nasm kernels only");
    auto r = load_object(path);
    if (!r) throw py::value_error(r.error().str());
    return py::make_tuple(Kernel{std::make_shared<Module>(std::move(*r)), path}, py::none(), "");
  }
  nasm::AsmOptions o;
  o.defines = defines;
  o.include_dirs = includes;
  if (!target.empty()) {
    auto t = enum_parse(EnumType::Target, target);
    if (!t) throw py::value_error(fmt::format("unknown target '{}' (trn1, trn2, trn3)", target));
    o.target = static_cast<Target>(*t);
  }
  nasm::AsmResult r;
  {
    py::gil_scoped_release nogil;
    r = nasm::assemble_file(path, o);
  }
  if (!r.ok()) return py::make_tuple(py::none(), diag_list(r.diags), r.diagnostics_text());
  return py::make_tuple(Kernel{std::make_shared<Module>(std::move(*r.module)), path}, py::none(),
                        r.diagnostics_text());
}

// The numpy dtype of a kernel dtype: bf16 / fp8 as the given raw or ml_dtypes types.
py::dtype out_dtype(DType t, const py::object& bf16) {
  switch (t) {
  case DType::fp32: return py::dtype("<f4");
  case DType::fp16: return py::dtype("<f2");
  case DType::bf16: return bf16.is_none() ? py::dtype("<u2") : py::dtype::from_args(bf16);
  case DType::fp8e4m3:
  case DType::fp8e5m2:
  case DType::uint8: return py::dtype("|u1");
  case DType::int8: return py::dtype("|i1");
  case DType::int16: return py::dtype("<i2");
  case DType::uint16: return py::dtype("<u2");
  case DType::int32: return py::dtype("<i4");
  case DType::uint32: return py::dtype("<u4");
  }
  return py::dtype("|u1");
}

std::string shape_text(const std::vector<int64_t>& s) {
  std::string o = "(";
  for (size_t i = 0; i < s.size(); ++i) o += fmt::format("{}{}", i ? ", " : "", s[i]);
  return o + (s.size() == 1 ? ",)" : ")");
}

// numpy's descriptor for the check of interp/run/npy.h; ml_dtypes' types are 'V' kinds whose name
// says which.
bool dtype_ok(const py::dtype& dt, DType t) {
  const std::string str = py::str(dt.attr("str"));
  const std::string name = py::str(dt.attr("name"));
  if (dt.kind() == 'V') {
    if (t == DType::bf16) return name == "bfloat16";
    if (t == DType::fp8e4m3) return name == "float8_e4m3fn" || name == "float8_e4m3";
    if (t == DType::fp8e5m2) return name == "float8_e5m2";
    return false;
  }
  return interp::npy_descr_matches(str, t);
}

std::string dtype_text(const py::dtype& dt) { return py::str(py::handle(dt)); }

// Copies an array of a tensor's shape (one rank's) into the tensor's HBM bytes, in native
// (little-endian) byte order: numpy.copyto into a view of the HBM bytes, with casting="equiv"
// (byte order only: the dtype was checked). A big-endian array is swapped in the copy; a dtype
// that has no native-order form is refused, never reinterpreted.
// A C-contiguous native-order array is copied by memcpy in slices on the run's host threads
// with the GIL released (numpy's copy is one thread: 3-4 ms of a 39 MB input).
void copy_into_hbm(const py::array& src, uint8_t* dst, const std::string& name,
                   interp::HostPool* pool) {
  const size_t bytes = size_t(src.nbytes());
  if (pool && bytes >= 2 * interp::kByteSlice && (src.flags() & py::array::c_style) &&
      src.dtype().attr("isnative").cast<bool>()) {
    const auto* from = static_cast<const uint8_t*>(src.data());
    py::gil_scoped_release nogil;
    interp::for_byte_slices(pool, bytes,
                            [&](size_t at, size_t len) { std::memcpy(dst + at, from + at, len); });
    return;
  }
  py::dtype native = src.dtype();
  if (!native.attr("isnative").cast<bool>()) {
    try {
      native = native.attr("newbyteorder")("=");
    } catch (const py::error_already_set&) {
      native = src.dtype();
    }
    if (!native.attr("isnative").cast<bool>())
      throw py::value_error(fmt::format("input '{}': dtype {} has no native byte order form; "
                                        "convert it first (a.astype(a.dtype.newbyteorder('=')))",
                                        name, dtype_text(src.dtype())));
  }
  std::vector<py::ssize_t> shape(src.shape(), src.shape() + src.ndim());
  // A view of the HBM bytes (its base: a capsule that frees nothing; the view lives only here).
  py::array view(native, shape, dst, py::capsule(dst, [](void*) {}));
  py::module_::import("numpy").attr("copyto")(view, src, py::arg("casting") = "equiv");
}

// An output tensor of every rank into dst (ranks x its bytes): large ones in 1 MiB slices on
// the run's host threads with the GIL released, as copy_into_hbm (a one-thread copy of a 4 MB
// output was 1-2% of a 12 ms run beside an idle core).
void copy_out_of_hbm(const interp::Machine& m, const TensorDecl& t, uint8_t* dst, int ranks,
                     interp::HostPool* pool) {
  const size_t n = size_t(interp::Machine::tensor_bytes(t));
  py::gil_scoped_release nogil;
  for (int rk = 0; rk < ranks; ++rk) {
    const uint8_t* from = m.hbm_tensor(rk, t);
    uint8_t* to = dst + size_t(rk) * n;
    interp::for_byte_slices(pool, n,
                            [&](size_t at, size_t len) { std::memcpy(to + at, from + at, len); });
  }
}

std::string dtype_expect(DType t) {
  switch (t) {
  case DType::bf16: return "uint16 (raw bits) or ml_dtypes.bfloat16";
  case DType::fp8e4m3: return "uint8 (raw bits) or ml_dtypes.float8_e4m3fn";
  case DType::fp8e5m2: return "uint8 (raw bits) or ml_dtypes.float8_e5m2";
  default: return std::string(dtype_name(t));
  }
}

bool on_main_thread() {
  static const unsigned long main_ident =
      py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>();
  return PyThread_get_thread_ident() == main_ident;
}

// Runs the machine with the GIL released. Python runs its signal handlers on its main thread
// only, so there the run goes to a helper thread while this one looks for signals every 20 ms
// (PyErr_CheckSignals: Ctrl-C raises KeyboardInterrupt); a handler that raises stops the run
// (SchedOptions::interrupt: within kInterruptPollEvents events of each core) and its exception
// propagates once the run has stopped. On another thread the run is inline.
interp::RunResult run_interruptibly(interp::Machine& m, interp::SchedOptions so) {
  if (!on_main_thread()) {
    py::gil_scoped_release nogil;
    return interp::run(m, so);
  }
  std::atomic<bool> stop{false};
  so.interrupt = &stop;
  interp::RunResult r;
  std::exception_ptr error;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false, raised = false;
  std::thread runner;
  {
    py::gil_scoped_release nogil;
    runner = std::thread([&] {
      try {
        r = interp::run(m, so);
      } catch (...) {
        error = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mu);
      done = true;
      cv.notify_one();
    });
  }
  for (;;) {
    {
      py::gil_scoped_release nogil;
      std::unique_lock<std::mutex> lock(mu);
      if (cv.wait_for(lock, std::chrono::milliseconds(20), [&] { return done; })) break;
    }
    if (PyErr_CheckSignals() != 0) {
      raised = true;
      stop.store(true);
      break;
    }
  }
  {
    py::gil_scoped_release nogil;
    runner.join();
  }
  if (raised) throw py::error_already_set();
  if (error) std::rethrow_exception(error);
  return r;
}

// lnc / ranks as Kernel.run and Kernel.check take them: None for the kernel's .lnc / .ranks,
// else 1; a value that differs from the declaration is a ValueError naming both (isa/launch.h).
int launch_setting(const Module& mod, Launch which, std::optional<int> given) {
  auto r =
      launch_value(mod, which, given, fmt::format("{}={}", launch_name(which), given.value_or(0)));
  if (!r) throw py::value_error(r.error());
  return *r;
}

// The cores and target of a run or a check, each checked (ValueError).
struct Launched {
  int lnc, ranks;
  Target target;
};
Launched launched(const Module& mod, std::optional<int> lnc_given, std::optional<int> ranks_given,
                  const std::string& target) {
  Launched l{launch_setting(mod, Launch::lnc, lnc_given),
             launch_setting(mod, Launch::ranks, ranks_given), mod.target};
  if (!target.empty()) {
    const interp::TargetParams* tp = interp::find_target(target);
    if (!tp) throw py::value_error(fmt::format("unknown target '{}' (trn1, trn2, trn3)", target));
    l.target = tp->target;
  }
  if (l.lnc != 1 && l.lnc != 2)
    throw py::value_error(fmt::format("lnc={}: expected 1 or 2", l.lnc));
  if (l.ranks < 1 || l.ranks > interp::kMaxRanks)
    throw py::value_error(fmt::format("ranks={}: expected 1..{}", l.ranks, interp::kMaxRanks));
  return l;
}

// Kernel.check (docs/python.md): `nisa check` of the kernel as a dict; `bounded`: the bounded
// check a run makes first (interp/run/precheck.h), with the text a run prints for it.
py::dict check_kernel(const Kernel& k, std::optional<int> lnc_given, std::optional<int> ranks_given,
                      const std::string& target, double max_seconds, uint64_t max_memory_mib,
                      int max_rounds, uint64_t max_reports, bool bounded) {
  const Module& mod = *k.mod;
  const auto [lnc, ranks, tgt] = launched(mod, lnc_given, ranks_given, target);
  interp::CheckOptions o;
  o.target = tgt;
  if (!(max_seconds >= 0) || max_seconds > 1e9)
    throw py::value_error(fmt::format("max_seconds={}: expected >= 0 (0: no limit)", max_seconds));
  if (max_memory_mib > (uint64_t(1) << 40))
    throw py::value_error(fmt::format("max_memory={} MiB: too large", max_memory_mib));
  if (max_rounds < 1)
    throw py::value_error(fmt::format("max_rounds={}: expected >= 1", max_rounds));
  o.lnc = lnc, o.ranks = ranks;
  o.max_seconds = max_seconds;
  o.max_memory = max_memory_mib << 20;
  o.max_rounds = max_rounds;
  o.max_reports = size_t(max_reports);
  interp::CheckResult r;
  {
    py::gil_scoped_release nogil;
    r = bounded ? interp::precheck(mod, o.target, lnc, ranks) : interp::check_module(mod, o);
  }
  static const char* const kStatus[] = {"proved", "races", "deadlock", "outside"};
  py::dict d;
  d["status"] = kStatus[int(r.status)];
  d["exit_code"] = r.exit_code;
  d["report"] = r.report;
  d["outside"] = r.outside;
  d["limit"] = r.limit;
  d["deadlocks"] = py::cast(r.deadlocks);
  py::list pairs;
  for (const interp::CheckPair& p : r.pairs) {
    py::dict x;
    x["a_loc"] = p.a_loc, x["b_loc"] = p.b_loc, x["a_who"] = p.a_who, x["b_who"] = p.b_who;
    x["a_iter"] = p.a_iter, x["b_iter"] = p.b_iter;
    x["a_write"] = p.a_write, x["b_write"] = p.b_write;
    x["region"] = p.region, x["instances"] = p.instances, x["suggestion"] = p.suggestion;
    py::list fixes;
    for (const interp::CheckFix& f : p.fixes)
      fixes.append(py::make_tuple(f.loc, f.wait, f.signal_loc, f.new_sem));
    x["fixes"] = fixes;
    pairs.append(x);
  }
  d["pairs"] = pairs;
  d["instructions"] = r.instructions, d["nodes"] = r.nodes, d["streams"] = r.streams;
  d["sem_edges"] = r.sem_edges, d["rounds"] = r.iterations;
  if (bounded) d["text"] = interp::precheck_text(r, "nisa");
  return d;
}

py::dict run_kernel(const Kernel& k, std::optional<int> lnc_given, std::optional<int> ranks_given,
                    const std::string& schedule, uint64_t seed, bool check_races, py::dict inputs,
                    uint64_t max_steps, const std::string& target, py::object bf16,
                    const std::vector<std::string>& fetch, int threads,
                    const py::object& cost_scale, bool profile) {
  const Module& mod = *k.mod;
  const auto [lnc, ranks, tgt] = launched(mod, lnc_given, ranks_given, target);
  interp::MachineOptions mo;
  mo.target = tgt;
  mo.lnc = lnc;
  mo.ranks = ranks;
  interp::SchedOptions so;
  if (schedule == "random")
    so.mode = interp::ScheduleMode::random;
  else if (schedule != "fixed")
    throw py::value_error(fmt::format("unknown schedule '{}' (fixed or random)", schedule));
  so.seed = seed;
  if (max_steps) so.max_steps = max_steps;
  if (threads < 0 || threads > interp::kMaxHostThreads)
    throw py::value_error(fmt::format("threads={}: expected 1..{} (0: the host's cores)", threads,
                                      interp::kMaxHostThreads));
  so.threads =
      threads ? threads : std::min(interp::default_host_threads(), interp::kMaxHostThreads);
  mo.threads = so.threads;
  mo.cost_scale = cost_scale_of(cost_scale);

  // Every input bound once, dtype and shape checked before anything is allocated.
  struct Bound {
    const TensorDecl* t;
    py::array a;
    bool per_rank;
  };
  std::vector<Bound> bound;
  std::set<std::string> names;
  for (auto item : inputs) {
    const std::string name = py::str(item.first);
    const TensorDecl* t = nullptr;
    for (const TensorDecl& d : mod.tensors)
      if (d.name == name) t = &d;
    if (!t) throw py::value_error(fmt::format("the kernel has no tensor '{}'", name));
    if (t->role != Role::input)
      throw py::value_error(fmt::format("tensor '{}' is {}, not an input", name, name_of(t->role)));
    py::array a = py::array::ensure(item.second);
    if (!a) throw py::type_error(fmt::format("input '{}': expected a numpy array", name));
    if (!dtype_ok(a.dtype(), t->dtype))
      throw py::type_error(fmt::format("input '{}': dtype {} given, the kernel declares {}: "
                                       "expected {}",
                                       name, dtype_text(a.dtype()), dtype_name(t->dtype),
                                       dtype_expect(t->dtype)));
    std::vector<int64_t> shape(a.shape(), a.shape() + a.ndim());
    std::vector<int64_t> ranked{ranks};
    ranked.insert(ranked.end(), t->shape.begin(), t->shape.end());
    const bool per_rank = ranks > 1 && shape == ranked;
    if (shape != t->shape && !per_rank)
      throw py::value_error(fmt::format(
          "input '{}': shape {} given, the kernel declares {}{}", name, shape_text(shape),
          shape_text(t->shape),
          ranks > 1 ? fmt::format(" (or {} per rank)", shape_text(ranked)) : std::string()));
    bound.push_back({t, a, per_rank});
    names.insert(name);
  }
  for (const TensorDecl& t : mod.tensors)
    if (t.role == Role::input && !names.count(t.name))
      throw py::value_error(fmt::format("input '{}' is not bound ({}=array)", t.name, t.name));

  // Other HBM tensors to return (an input updated in place, a scratch), as `--out` allows.
  std::vector<const TensorDecl*> returned;
  for (const TensorDecl& t : mod.tensors)
    if (t.role == Role::output && t.space == MemSpace::hbm) returned.push_back(&t);
  for (const std::string& name : fetch) {
    const TensorDecl* t = nullptr;
    for (const TensorDecl& d : mod.tensors)
      if (d.name == name) t = &d;
    if (!t) throw py::value_error(fmt::format("fetch: the kernel has no tensor '{}'", name));
    if (t->space != MemSpace::hbm)
      throw py::value_error(
          fmt::format("fetch: tensor '{}' is in {}, not hbm", name, name_of(t->space)));
    if (std::find(returned.begin(), returned.end(), t) == returned.end()) returned.push_back(t);
  }

  // The machine (every limit checked: --max-hbm, the host's memory) before any input byte is
  // copied; then each input is copied once, straight into HBM, whatever its layout and byte
  // order (numpy's copy: no contiguous or byte-swapped temporary).
  std::unique_ptr<interp::Machine> m;
  std::unique_lock<std::mutex> cached(k.cache->mu, std::try_to_lock);
  try {
    interp::Machine::hbm_size(mod, mo);
    // Every input is written next: their bytes are not poisoned first.
    if (cached && k.cache->m && same_machine(k.cache->m->opt, mo)) {
      m = std::move(k.cache->m);
      m->reset(interp::InputFill::caller_writes);
    } else {
      if (cached) k.cache->m.reset(); // (freed before the new one is allocated)
      m = std::make_unique<interp::Machine>(mod, mo, interp::InputFill::caller_writes);
    }
  } catch (const std::exception& e) {
    throw py::value_error(e.what());
  }
  auto write_inputs = [&](interp::Machine& mm) {
    for (const Bound& b : bound)
      for (int r = 0; r < ranks; ++r) {
        copy_into_hbm(b.per_rank ? py::array(b.a[py::int_(r)]) : b.a, mm.hbm_tensor(r, *b.t),
                      b.t->name, mm.host_pool(so.threads));
        mm.mark_written(*b.t, r);
      }
  };
  write_inputs(*m);
  so.history = profile;
  std::unique_ptr<interp::RaceChecker> races;
  if (check_races) {
    races = std::make_unique<interp::RaceChecker>(*m);
    so.observer = races.get();
  }
  interp::RunResult r;
  try {
    r = run_interruptibly(*m, so);
  } catch (...) { // a signal handler's exception (KeyboardInterrupt): the machine is kept
    if (cached) k.cache->m = std::move(m);
    throw;
  }
  // The report `nisa run` prints.
  std::string report = r.report;
  size_t nraces = 0;
  if (races) {
    constexpr size_t kShown = 10;
    nraces = races->races().size();
    for (size_t i = 0; i < nraces && i < kShown; ++i)
      report += races->report_text(races->races()[i]);
    if (nraces > kShown)
      report += fmt::format("... and {} more (nisa debug: set check-races on, info races)\n",
                            nraces - kShown);
    if (nraces) {
      report += fmt::format("nisa run: {} race(s) found\n", nraces);
      if (r.exit_code == interp::kExitOk) r.exit_code = interp::kExitRace;
    }
  }
  py::dict out;
  out["status"] = std::string(interp::status_name(r));
  out["exit_code"] = r.exit_code;
  out["report"] = report;
  out["races"] = nraces;
  out["stats_json"] = interp::stats_json(*m, r.stats, interp::status_name(r), r.exit_code);
  py::dict outputs;
  if (r.status == interp::RunStatus::ok) {
    for (const TensorDecl* tp : returned) {
      const TensorDecl& t = *tp;
      std::vector<py::ssize_t> shape;
      if (ranks > 1) shape.push_back(ranks);
      for (int64_t d : t.shape) shape.push_back(d);
      py::array a(out_dtype(t.dtype, bf16), shape);
      auto* dst = static_cast<uint8_t*>(a.mutable_data());
      copy_out_of_hbm(*m, t, dst, ranks, m->host_pool(so.threads));
      outputs[py::str(t.name)] = a;
    }
  }
  out["outputs"] = outputs;
  // The profile (docs/profile.md) after the outputs were read: its what-if re-runs reuse the
  // machine, each from the inputs written again.
  out["profile_json"] = py::none();
  if (profile) {
    interp::Profile p;
    try {
      p = interp::profile_run(
          *m, so, r, true,
          [&](interp::Machine& mm) {
            mm.reset(interp::InputFill::caller_writes);
            write_inputs(mm);
          },
          [](interp::Machine& mm, const interp::SchedOptions& o) {
            return run_interruptibly(mm, o);
          });
    } catch (...) {
      if (cached) k.cache->m = std::move(m);
      throw;
    }
    out["profile_json"] = interp::profile_json(p);
    out["profile_report"] = interp::profile_report(p);
  }
  if (cached) k.cache->m = std::move(m);
  return out;
}

py::list tensors(const Kernel& k) {
  py::list l;
  for (const TensorDecl& t : k.mod->tensors) {
    py::dict d;
    d["name"] = t.name;
    d["space"] = std::string(name_of(t.space));
    d["dtype"] = std::string(dtype_name(t.dtype));
    d["shape"] = py::tuple(py::cast(t.shape));
    d["role"] = std::string(name_of(t.role));
    l.append(d);
  }
  return l;
}

} // namespace

PYBIND11_MODULE(_nisa, m) {
  m.doc() = "nisa: assemble and run .nasm kernels on the modelled machine (see nisa/__init__.py)";
  m.attr("__version__") = NISA_VERSION; // project(VERSION) of the top CMakeLists.txt
  // The Python boundary of the library's errors (docs/decisions.md "Errors"): bad input is a
  // ValueError (nisa/__init__.py raises it as nisa.InputError), what the host could not do
  // an OSError, any other nisa::Error a RuntimeError.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const nisa::InputError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const nisa::HostError& e) {
      PyErr_SetString(PyExc_OSError, e.what());
    }
  });
  py::class_<Kernel>(m, "_Kernel")
      .def_property_readonly("path", [](const Kernel& k) { return k.path; })
      .def_property_readonly("target",
                             [](const Kernel& k) { return std::string(name_of(k.mod->target)); })
      .def_property_readonly("name", [](const Kernel& k) { return k.mod->kernel; })
      // The kernel's .ranks / .lnc (the defaults of Kernel.run), None when it declares none.
      .def_property_readonly("ranks",
                             [](const Kernel& k) -> py::object {
                               if (!k.mod->ranks.value) return py::none();
                               return py::int_(k.mod->ranks.value);
                             })
      .def_property_readonly("lnc",
                             [](const Kernel& k) -> py::object {
                               if (!k.mod->lnc.value) return py::none();
                               return py::int_(k.mod->lnc.value);
                             })
      .def("tensors", &tensors);
  // The units of Kernel.run(cost_scale=...), from the one table (interp/core/cost_scale.h).
  py::tuple units(interp::kNumCostUnits);
  for (int u = 0; u < interp::kNumCostUnits; ++u)
    units[size_t(u)] = std::string(interp::kCostUnitNames[size_t(u)]);
  m.attr("cost_units") = units;
  m.def("assemble", &assemble, py::arg("path"), py::arg("target"), py::arg("defines"),
        py::arg("includes"));
  m.def("check", &check_kernel, py::arg("kernel"), py::arg("lnc"), py::arg("ranks"),
        py::arg("target"), py::arg("max_seconds"), py::arg("max_memory"), py::arg("max_rounds"),
        py::arg("max_reports"), py::arg("bounded"));
  m.def("run", &run_kernel, py::arg("kernel"), py::arg("lnc"), py::arg("ranks"),
        py::arg("schedule"), py::arg("seed"), py::arg("check_races"), py::arg("inputs"),
        py::arg("max_steps"), py::arg("target"), py::arg("bf16"), py::arg("fetch"),
        py::arg("threads"), py::arg("cost_scale"), py::arg("profile"));
}
