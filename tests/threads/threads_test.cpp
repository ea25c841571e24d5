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
#include "tests/support/kernel_cases.h"

namespace nisa {
namespace {

namespace fs = std::filesystem;

using Case = kt::KernelCase;
std::vector<Case> cases() { return kt::every_kernel(); }

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
