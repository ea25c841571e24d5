// Running a Module end to end: bind .npy inputs, run the scheduler, report, write outputs.
// This is what `nisa run` does; the debugger and tests use the same pieces.
#pragma once
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "interp/core/machine.h"
#include "interp/observe/trace.h"
#include "interp/profile/profile.h"
#include "interp/run/npy.h"
#include "interp/sched/scheduler.h"
#include "isa/output_file.h"

namespace nisa::interp {

struct IoSpec {
  std::string name; // kernel tensor name
  std::string path; // .npy file
};

struct RunConfig {
  MachineOptions machine;    // machine.target is used only when target_given
  bool target_given = false; // else the module's .target
  SchedOptions sched;
  // sched.max_steps was chosen (--max-steps): else a run with a trace or a timeline gets the
  // lower default kDefaultMaxStepsRecording.
  bool max_steps_given = false;
  std::vector<IoSpec> inputs, outputs;
  bool stats = false;          // print the --stats table to `out`
  std::string timeline_path;   // write a Chrome trace when not empty
  std::string stats_json_path; // write the statistics as JSON (stats_json) when not empty
  bool check_races = false;    // report unordered conflicting accesses (interp/observe/race.h)
  std::string trace_path;      // write the instruction trace (docs/trace-format.md)
  TraceFilter trace_filter;
  uint64_t trace_max_bytes = kDefaultTraceMaxBytes; // the trace file's cap; 0: unlimited
  // Read the inputs into memory instead of mapping their files' pages (--copy-inputs).
  bool copy_inputs = false;
  // --profile: print the profile (docs/profile.md) after the run; --profile-json FILE: write it.
  bool profile = false;
  std::string profile_json_path;
  // The profile's what-if re-simulations (each unit 2x faster); off: what_if stays empty.
  bool profile_what_if = true;
  // Run the bounded static check first and print what it finds (precheck.h); the CLI's
  // default (--no-check: off).
  bool static_check = false;
  // The checksum of the module's object when the caller has it (isa/object.h object_checksum:
  // a .nbin, a cached assembly); the static check's cache key then costs no write_object.
  // 0: unknown.
  uint64_t module_hash = 0;
  // The process ends after this run (nisa run): the machine is left to the process's exit,
  // not destroyed (its memories unmapped one by one while the host threads still run: ~2 ms
  // for attention_block_tkg's). Kept reachable, for leak checkers.
  bool keep_machine = false;
};

// The profile of a run made with SchedOptions::history, with its what-if makespans (what_if):
// the module re-run with each unit that was busy 2x faster, after `reload` put the inputs back
// (m.reset() and the inputs written again). Every MPI process calls it (the re-runs exchange);
// the analysis is rank 0's. `runner` runs each re-run (null: run(); the Python module's runs
// watch for Ctrl-C).
using Runner = std::function<RunResult(Machine&, const SchedOptions&)>;
Profile profile_run(Machine& m, const SchedOptions& so, const RunResult& r, bool what_if,
                    const std::function<void(Machine&)>& reload, const Runner& runner = nullptr);
// Appends the profile's critical path to a timeline (TimelineEvent::path: a track of its own).
void mark_critical_path(std::vector<TimelineEvent>& timeline, const Profile& p);

// Exit code of a run that finished but found races (--check-races).
inline constexpr int kExitRace = 4;
// Exit code of a clean run whose outputs could not be written (a usage/input-class error).
inline constexpr int kExitOutput = 1;

// An input file whose header is read and checked against its declaration; the data is read
// later, straight into HBM (bind_inputs).
struct InputData {
  const TensorDecl* tensor = nullptr;
  bool per_rank = false; // the file holds [R, ...shape]: slice r goes to rank r
  std::unique_ptr<NpyReader> file;
};

// Opens every input and checks each header (dtype, shape) and file size against the
// declaration; no data is read yet. Every input tensor must be bound exactly once; unknown
// names, non-input tensors, dtype or shape mismatches throw InputError (NpyError for
// file problems). With R > 1 ranks a file may also hold [R, ...shape].
std::vector<InputData> read_inputs(const Module& mod, int ranks, const std::vector<IoSpec>& inputs);
// Reads each input's data straight into each rank's HBM tensor (a [R, ...] file: slice r into
// rank r; else into rank 0, copied to the others) and marks it written. Consumes the files.
// NpyError naming the file on a truncated file or a read error.
// map_pages: the files' whole pages are mapped in place where the HBM address allows
// (NpyReader::read_into; with MachineOptions::hbm_shift from input_hbm_shifts).
void bind_inputs(Machine& m, std::vector<InputData>& inputs, bool map_pages = false);
// Per rank: the HostBuffer shift of its HBM under which the most input bytes can be mapped
// from their files in place (a file's data offset and the tensor's HBM address must agree
// modulo the page size).
std::vector<uint16_t> input_hbm_shifts(int ranks, const std::vector<InputData>& inputs);
// Both of the above (the machine's input bytes are overwritten, whatever they held).
void bind_inputs(Machine& m, const std::vector<IoSpec>& inputs);
// m.reset() with the inputs read from their files: every header is checked first, then the
// machine is reset without poisoning the inputs' bytes (InputFill::caller_writes) and the data
// read into them. On an error the machine is left as m.reset() leaves it.
void reset_with_inputs(Machine& m, const std::vector<IoSpec>& inputs);
// Each requested HBM tensor (rank 0's, or [R, ...shape] with R > 1 ranks) streamed as .npy into
// its output's temporary file, finished but not yet renamed into place (isa/output_file.h).
std::vector<std::unique_ptr<OutputFile>> stage_outputs(const Machine& m,
                                                       const std::vector<IoSpec>& outputs);
// Writes them, all or none: every file is finished before the first rename.
void write_outputs(const Machine& m, const std::vector<IoSpec>& outputs);

// "ok", "deadlock", "fault", "budget", "interrupted", or "races" (exit code kExitRace).
std::string_view status_name(const RunResult& r);

// The whole run; returns the exit code (0 ok, 1 usage/input error, 2 deadlock, 3 fault,
// 4 races found, 5 budget spent: SchedOptions::max_steps) and prints errors, reports and
// warnings (a capped timeline or trace) to `err`, stats to `out`.
int run_module(const Module& mod, const RunConfig& cfg, std::ostream& out, std::ostream& err);

} // namespace nisa::interp
