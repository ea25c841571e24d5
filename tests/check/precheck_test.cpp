// The static check before a run (interp/run/precheck.h, docs/check.md "Before every run"):
// `nisa run` prints a warning with both source lines and the fix for each unordered pair, goes
// on with an unchanged exit code, prints nothing for a proved kernel, a one-line note when the
// kernel is past the bound, and nothing at all with --no-check.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "asm/asm.h"
#include "interp/run/npy.h"
#include "interp/run/precheck.h"
#include "tests/support/test_files.h"

using namespace nisa;
namespace fs = std::filesystem;

namespace {

struct Precheck : ::testing::Test {
  fs::path dir;
  void SetUp() override {
    dir = fs::temp_directory_path() / ("nisa_precheck_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    std::mt19937 rng(5);
    std::normal_distribution<float> nd;
    std::vector<float> x(6 * 128 * 64);
    for (float& v : x) v = nd(rng);
    interp::write_npy(p("x.npy"), DType::fp32, {6, 128, 64},
                      reinterpret_cast<const uint8_t*>(x.data()));
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string p(const std::string& f) const { return (dir / f).string(); }
  int nisa(const std::string& args, std::string& err, const std::string& cache = "") {
    const std::string cmd = "NISA_CACHE_DIR=" + (cache.empty() ? p("cache") : cache) + " " +
                            std::string(NISA_BINARY) + " " + args + " 2> " + p("err.txt") + " > " +
                            p("out.txt");
    const int rc = std::system(cmd.c_str());
    err = test::read_file(p("err.txt"));
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  }
  static std::string planted(const std::string& f) {
    return std::string(NISA_SOURCE_DIR) + "/tests/check/" + f;
  }
};

TEST_F(Precheck, RunWarnsWithBothLinesAndTheFixAndGoesOn) {
  const std::string k = planted("reuse_across_iterations.nasm");
  const std::string io = " --in x=" + p("x.npy") + " --out y=" + p("y.npy");
  std::string err;
  EXPECT_EQ(nisa("run " + k + io, err), 0) << err; // the exit code is the run's
  EXPECT_NE(err.find("nisa run: warning: the static check (nisa check) did not prove the kernel: "
                     "1 unordered pair"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find(k + ":19 reads (core 0 dve, i=0) and " + k + ":17 writes"), std::string::npos)
      << err;
  EXPECT_NE(err.find("add @wait(s_cmp >= max(0, i - 1)) to " + k + ":17"), std::string::npos)
      << err;
  EXPECT_TRUE(fs::exists(p("y.npy"))); // the run went on and wrote its output
  // --no-check: no check, no words
  fs::remove(p("y.npy"));
  EXPECT_EQ(nisa("run " + k + io + " --no-check", err), 0) << err;
  EXPECT_EQ(err, "");
  EXPECT_TRUE(fs::exists(p("y.npy")));
  // the author's fix: proved, nothing printed
  EXPECT_EQ(nisa("run " + k + " -D FIXED=1" + io, err), 0) << err;
  EXPECT_EQ(err, "");
}

TEST_F(Precheck, PastTheBoundIsOneNote) {
  // a loop of more nodes than the bound: the check is skipped with one line
  const std::string big = ".kernel big\n.sem s\n.for i in 0 .. " +
                          std::to_string(interp::kPrecheckMaxNodes + 10) +
                          "\n  dve.nop @signal(s)\n.endfor\n";
  std::ofstream(p("big.nasm")) << big;
  std::string err;
  EXPECT_EQ(nisa("run " + p("big.nasm"), err), 0) << err;
  EXPECT_EQ(err,
            fmt::format("nisa run: note: the static check was skipped: the kernel is larger than "
                        "its bound before a run ({} unrolled nodes or {} s); `nisa check` has no "
                        "such bound (--no-check: no check)\n",
                        interp::kPrecheckMaxNodes, interp::kPrecheckMaxSeconds));
  nasm::AsmResult a = nasm::assemble_file(p("big.nasm"), nasm::AsmOptions{});
  ASSERT_TRUE(a.ok());
  interp::CheckResult r = interp::precheck(*a.module, a.module->target, 1, 1, 0);
  EXPECT_EQ(r.status, interp::CheckStatus::outside);
  EXPECT_TRUE(r.limit);
}

// The texts are cached by module, options and binary: a second run prints the same from the
// cache; a damaged entry is computed again; "off" and an unwritable directory cache nothing.
TEST_F(Precheck, TheCacheGivesTheSameTextAndIsOnlyACache) {
  const std::string k = planted("reuse_across_iterations.nasm");
  const std::string io = " --in x=" + p("x.npy") + " --out y=" + p("y.npy");
  std::string first, again;
  ASSERT_EQ(nisa("run " + k + io, first), 0) << first;
  EXPECT_NE(first.find("add @wait(s_cmp >= max(0, i - 1))"), std::string::npos) << first;
  // (the directory also holds the assembled kernel: cli/kernel_cache.h)
  auto texts = [&] {
    std::vector<fs::path> v;
    for (const auto& e : fs::directory_iterator(p("cache")))
      if (e.path().filename().string().starts_with("precheck-")) v.push_back(e.path());
    return v;
  };
  std::vector<fs::path> entries = texts();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(nisa("run " + k + io, again), 0);
  EXPECT_EQ(again, first);
  std::ofstream(entries[0]) << "damaged";
  EXPECT_EQ(nisa("run " + k + io, again), 0);
  EXPECT_EQ(again, first);
  EXPECT_EQ(test::read_file(entries[0].string()).rfind("nisa-precheck/1\n", 0), 0u);
  // other options: another entry (the fixed kernel: proved, nothing printed)
  EXPECT_EQ(nisa("run " + k + " -D FIXED=1" + io, again), 0);
  EXPECT_EQ(again, "");
  EXPECT_EQ(texts().size(), 2u);
  EXPECT_EQ(nisa("run " + k + io, again, "off"), 0);
  EXPECT_EQ(again, first);
  EXPECT_FALSE(fs::exists(fs::path("off")));
  EXPECT_EQ(nisa("run " + k + io, again, "/proc/nisa-cannot-be-made"), 0);
  EXPECT_EQ(again, first);
}

} // namespace
