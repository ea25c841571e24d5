// Host threads (`--threads N`, docs/machine.md "Host threads"): every kernel of kernels_asm
// runs at N = 1 and N = 4, under the fixed schedule and random schedules, with outputs,
// --stats-json, --stats, --timeline, --trace and --check-races reports written to files that
// must be byte-identical for both N (less the host wall time). Inputs: seeded random values
// of every input tensor the module declares.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "interp/run/npy.h"
#include "interp/run/run.h"
#include "tests/support/kernel_harness.h"

namespace nisa {
namespace {

namespace fs = std::filesystem;

struct Case {
  std::string name, file;
  kt::Defines defines;
  int lnc = 1, ranks = 1;
};

// Small shapes, each kernel's typical launch: every kernel of kernels_asm at least once, the
// multi-core ones with --lnc 2, the collectives on several ranks.
std::vector<Case> cases() {
  return {
      {"cumsum", "cumsum.nasm", {{"ROWS", "200"}, {"COLS", "3000"}}, 1, 1},
      {"cumsum_double_buffered", "cumsum_double_buffered.nasm", {}, 1, 1},
      {"cumsum_after", "cumsum_after.nasm", {}, 1, 1},
      {"cumsum_auto", "cumsum_auto.nasm", {}, 1, 1},
      {"cascaded_max", "cascaded_max.nasm", {{"BXS", "6"}, {"V", "5000"}}, 2, 1},
      {"topk", "topk.nasm", {}, 2, 1},
      {"cross_entropy_fwd", "cross_entropy_fwd.nasm", {{"DT", "fp32"}}, 2, 1},
      {"cross_entropy_bwd", "cross_entropy_bwd.nasm", {{"DT", "fp32"}}, 2, 1},
      {"conv1d", "conv1d.nasm", {{"LNC_SHARD", "1"}}, 2, 1},
      {"depthwise_conv1d", "depthwise_conv1d.nasm", {}, 2, 1},
      {"fgcc", "fgcc.nasm", {}, 2, 4},
      {"fg_allgather", "fg_allgather.nasm", {}, 2, 4},
      {"sb2sb_allgather", "sb2sb_allgather.nasm", {{"TP", "4"}}, 2, 4},
      {"topk_reduce", "topk_reduce.nasm", {}, 2, 1},
      {"moe_fwd_shard_h", "moe_fwd_shard_h.nasm", {}, 2, 1},
      {"moe_bwd", "moe_bwd.nasm", {}, 2, 1},
      {"attention_block_tkg", "attention_block_tkg.nasm", {}, 2, 1},
      {"transformer_tkg", "transformer_tkg.nasm", {{"TP", "2"}}, 2, 2},
      // One core, large instructions: matmuls and elementwise rows split over the threads.
      {"conv1d_one_core_large",
       "conv1d.nasm",
       {{"CIN", "128"}, {"COUT", "128"}, {"L", "1024"}, {"DT", "fp32"}},
       1,
       1},
      {"cross_entropy_fwd_one_core_large",
       "cross_entropy_fwd.nasm",
       {{"NPOS", "128"}, {"V", "8192"}, {"DT", "fp32"}},
       1,
       1},
  };
}

struct Variant {
  std::string name;
  bool random = false;
  uint64_t seed = 0;
  bool observe = false; // --timeline and --trace
  bool races = false;   // --check-races
};

// Every file a run writes, and its stdout/stderr, as text keyed by what it is.
std::map<std::string, std::string> run_once(const Module& m, const Case& c, const Variant& v,
                                            const std::vector<interp::IoSpec>& ins,
                                            const fs::path& dir, int threads) {
  interp::RunConfig cfg;
  cfg.machine.lnc = c.lnc;
  cfg.machine.ranks = c.ranks;
  cfg.sched.threads = threads;
  if (v.random) cfg.sched.mode = interp::ScheduleMode::random, cfg.sched.seed = v.seed;
  cfg.inputs = ins;
  const fs::path out = dir / ("t" + std::to_string(threads));
  fs::create_directories(out);
  for (const TensorDecl& t : m.tensors)
    if (t.role == Role::output) cfg.outputs.push_back({t.name, (out / (t.name + ".npy")).string()});
  cfg.stats = true;
  cfg.stats_json_path = (out / "stats.json").string();
  if (v.observe) {
    cfg.timeline_path = (out / "timeline.json").string();
    cfg.trace_path = (out / "trace.txt").string();
  }
  cfg.check_races = v.races;
  std::ostringstream so, se;
  const int rc = interp::run_module(m, cfg, so, se);
  std::map<std::string, std::string> files;
  files["exit code"] = std::to_string(rc);
  files["stdout"] = kt::strip_wall(so.str());
  files["stderr"] = se.str();
  for (const auto& e : fs::directory_iterator(out))
    files[e.path().filename().string()] = kt::strip_wall(kt::slurp(e.path()));
  return files;
}

class Threads : public ::testing::TestWithParam<Case> {};

TEST_P(Threads, SameBitsAtOneAndFourThreads) {
  const Case& c = GetParam();
  kt::Assembled a = kt::assemble_kernel(c.file, c.defines, Target::trn2);
  ASSERT_TRUE(a.ok) << a.diagnostics;
  const fs::path dir =
      fs::temp_directory_path() / ("nisa_threads_" + c.name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto ins = kt::random_inputs(a.module, dir.string(), c.ranks);
  const std::vector<Variant> variants = {{"fixed"},
                                         {"random1", true, 1},
                                         {"random7", true, 7},
                                         {"observed", false, 0, true},
                                         {"observed_random3", true, 3, true},
                                         {"races", false, 0, false, true}};
  for (const Variant& v : variants) {
    const fs::path vd = dir / v.name;
    auto one = run_once(a.module, c, v, ins, vd, 1);
    auto four = run_once(a.module, c, v, ins, vd, 4);
    EXPECT_EQ(one["exit code"], "0") << v.name << ": " << one["stderr"] << one["stdout"];
    ASSERT_EQ(one.size(), four.size()) << v.name;
    for (const auto& [what, text] : one) {
      EXPECT_FALSE(text.empty() && what.find(".npy") != std::string::npos) << what;
      EXPECT_TRUE(text == four[what])
          << c.name << " / " << v.name << ": " << what << " differs between --threads 1 and 4";
    }
    // The outputs are the fixed schedule's whatever the seed (the kernels are race-free).
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Kernels, Threads, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

} // namespace
} // namespace nisa
