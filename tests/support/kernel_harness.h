// Kernel test harness: assemble kernels_asm/NAME.nasm with -D parameters, bind inputs from
// memory, run on the modelled machine (target, lnc) and read the outputs back.
#pragma once
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "interp/run/run.h"
#include "interp/sched/scheduler.h"
#include "isa/dtype.h"
#include "isa/module.h"

namespace nisa::kt {

using Defines = std::vector<std::pair<std::string, std::string>>;

struct Assembled {
  bool ok = false;
  std::string diagnostics; // every error, formatted (empty when ok)
  Module module;
};

// Assembles kernels_asm/<file> as scripts do (no -I: kernels include lib/ by relative path).
Assembled assemble_kernel(const std::string& file, const Defines& defines, Target target);

struct RunOutput {
  interp::RunStatus status = interp::RunStatus::ok;
  std::string report; // fault / deadlock text
  interp::Stats stats;
  std::vector<interp::TimelineEvent> timeline;         // only when asked for
  std::map<std::string, std::vector<uint8_t>> tensors; // every HBM output, raw bytes
};

// Runs `m` with the given raw input bytes (name -> bytes, little-endian elements).
RunOutput run_kernel(const Module& m, Target target, int lnc,
                     const std::map<std::string, std::vector<uint8_t>>& inputs,
                     bool timeline = false, uint64_t random_schedule_seed = 0,
                     bool check_uninit = false);
// (random_schedule_seed != 0: `--schedule random --seed N`, which reorders ties and stretches
// durations: a missing wait shows up as a wrong result. check_uninit: `--check-uninit`, a
// read of never-written memory is a fault.)

// DVE cycles of core 0 spent in instructions with the given opcodes (from the timeline).
int64_t dve_cycles_of(const Module& m, Target target, const RunOutput& r,
                      const std::vector<Opcode>& ops);

// Raw bytes <-> values.
std::vector<uint8_t> to_bytes(const std::vector<float>& v, DType dt); // fp32 or bf16
std::vector<float> from_bytes(const std::vector<uint8_t>& b, DType dt);
std::vector<uint32_t> u32_from_bytes(const std::vector<uint8_t>& b);

// Values representable in `dt` (fp32 or bf16), drawn from a seeded normal distribution.
std::vector<float> random_values(size_t n, DType dt, uint32_t seed, float scale = 1.0f);

const char* dt_name(DType dt);
const char* target_name(Target t);
// "trn2_lnc2_fp32": how every parameterised kernel test's name starts.
std::string case_prefix(Target t, int lnc, DType dt);

// Whole-run comparisons (tests/threads, tests/mpi): a file's bytes; text with the host's wall
// time (the one figure that differs between runs) masked; seeded random .npy files for every
// input tensor of `m` in `dir` ([ranks, ...] with ranks > 1): normal floats, integers in
// [0, 2) (valid indices, targets and flags of every kernel here at its default shape).
std::string slurp(const std::string& path);
std::string strip_wall(std::string s);
std::vector<interp::IoSpec> random_inputs(const Module& m, const std::string& dir, int ranks);

} // namespace nisa::kt
