// A kernel's `.ranks` / `.lnc` (docs/asm.md "Launch settings") through the binary: `nisa run`,
// `nisa check` and `nisa debug` take them as the defaults of --ranks / --lnc, from a .nasm and
// from its .nbin; the same value given is fine; another is exit 1 with both named.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "interp/run/npy.h"
#include "tests/support/limited_run.h"
#include "tests/support/test_files.h"

namespace nisa::test {
namespace {

namespace fs = std::filesystem;

// Core 0 of every rank copies x to y; core 1 does nothing (race-free at --lnc 2); it declares
// .ranks 3 and .lnc 2 (shared with python/tests/test_launch.py).
const std::string kCopy = read_file(std::string(NISA_SOURCE_DIR) + "/tests/launch/copy_ranks.nasm");

// Two cores meet at a barrier: proved at --lnc 2, outside what is proved at --lnc 1.
constexpr const char* kBarrier = ".kernel barrier\n.lnc 2\n        sp.core_barrier\n";

struct LaunchCli : ::testing::Test {
  fs::path dir;
  void SetUp() override {
    dir = fs::temp_directory_path() / ("nisa_launch_cli_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    std::vector<float> x(32);
    for (size_t k = 0; k < x.size(); ++k) x[k] = float(k) * 0.5f - 3.0f;
    interp::write_npy(p("x.npy"), DType::fp32, {4, 8}, reinterpret_cast<const uint8_t*>(x.data()));
    std::ofstream(p("copy.nasm")) << kCopy;
    std::ofstream(p("barrier.nasm")) << kBarrier;
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string p(const std::string& f) const { return (dir / f).string(); }
  Ran nisa(const std::vector<std::string>& args) { return run_limited(args, 0, dir.string()); }
  nlohmann::json stats() const { return nlohmann::json::parse(read_file(p("s.json"))); }
};

bool has(const std::string& out, const std::string& what) {
  return out.find(what) != std::string::npos;
}

TEST_F(LaunchCli, RunDefaultsToTheDeclaration) {
  Ran r = nisa({"run", "copy.nasm", "--in", "x=x.npy", "--out", "y=y.npy", "--stats-json", "s.json",
                "--threads", "1"});
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, ""); // the check before the run proved it on 3 x 2 cores: nothing to say
  EXPECT_EQ(stats()["ranks"], 3);
  EXPECT_EQ(stats()["lnc"], 2);
  EXPECT_EQ(stats()["cores"].size(), 6u);
  const interp::NpyArray x = interp::read_npy(p("x.npy")), y = interp::read_npy(p("y.npy"));
  EXPECT_EQ(y.shape, (std::vector<int64_t>{3, 4, 8})); // one slice per rank
  ASSERT_EQ(y.data.size(), 3 * x.data.size());
  for (size_t rank = 0; rank < 3; ++rank)
    EXPECT_TRUE(std::equal(x.data.begin(), x.data.end(), y.data.begin() + rank * x.data.size()));
  // The same values given: the same run.
  r = nisa({"run", "copy.nasm", "--ranks", "3", "--lnc", "2", "--in", "x=x.npy", "--stats-json",
            "s.json", "--threads", "1"});
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(stats()["ranks"], 3);
  EXPECT_EQ(stats()["lnc"], 2);
}

TEST_F(LaunchCli, RunConflictNamesBoth) {
  Ran r = nisa({"run", "copy.nasm", "--ranks", "2", "--in", "x=x.npy"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_EQ(r.out, "nisa run: --ranks 2 conflicts with `.ranks 3` at copy.nasm:2\n");
  r = nisa({"run", "copy.nasm", "--lnc", "1", "--in", "x=x.npy"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_EQ(r.out, "nisa run: --lnc 1 conflicts with `.lnc 2` at copy.nasm:3\n");
  // --ranks 1 is a value given, not the default.
  r = nisa({"run", "copy.nasm", "--ranks", "1", "--in", "x=x.npy"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "--ranks 1 conflicts with `.ranks 3` at copy.nasm:2")) << r.out;
}

// The object keeps the declarations and where they were: the .nbin behaves as its source.
TEST_F(LaunchCli, ObjectCarriesTheDeclaration) {
  Ran r = nisa({"asm", "copy.nasm", "-o", "copy.nbin"});
  ASSERT_EQ(r.code, 0) << r.out;
  r = nisa({"run", "copy.nbin", "--in", "x=x.npy", "--stats-json", "s.json", "--threads", "1"});
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(stats()["ranks"], 3);
  EXPECT_EQ(stats()["lnc"], 2);
  r = nisa({"run", "copy.nbin", "--ranks", "4", "--in", "x=x.npy"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_EQ(r.out, "nisa run: --ranks 4 conflicts with `.ranks 3` at copy.nasm:2\n");
  r = nisa({"disasm", "copy.nbin", "--no-source"});
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, ".target trn2\n.ranks 3\n.lnc 2\n")) << r.out;
}

// The issue's case: `nisa check kernels_asm/fgcc.nasm` said "replica group 'g' names rank 1
// but there are 1 ranks" without --ranks 4.
TEST_F(LaunchCli, CheckFgccWithoutRanks) {
  const std::string src = NISA_SOURCE_DIR;
  Ran r = run_limited({"check", "kernels_asm/fgcc.nasm"}, 0, src);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "proved: every conflicting access is ordered and no schedule deadlocks"))
      << r.out;
  EXPECT_TRUE(has(r.out, " on 4 cores")) << r.out; // 4 ranks of one core
  r = run_limited({"check", "kernels_asm/fgcc.nasm", "-D", "TP=8", "--ranks", "8"}, 0, src);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, " on 8 cores")) << r.out;
  // The line of `.ranks TP` in the kernel, as the message names it.
  const std::string text = read_file(src + "/kernels_asm/fgcc.nasm");
  const size_t at = text.find("\n.ranks TP");
  ASSERT_NE(at, std::string::npos);
  const auto line = 2 + std::count(text.begin(), text.begin() + long(at), '\n');
  r = run_limited({"check", "kernels_asm/fgcc.nasm", "--ranks", "2"}, 0, src);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_EQ(r.out, "nisa check: --ranks 2 conflicts with `.ranks 4` at kernels_asm/fgcc.nasm:" +
                       std::to_string(line) + "\n");
}

TEST_F(LaunchCli, CheckDefaultsToTheDeclaration) {
  Ran r = nisa({"check", "copy.nasm"});
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "proved: ")) << r.out;
  EXPECT_TRUE(has(r.out, " unrolled on 6 cores")) << r.out; // 3 ranks of 2 cores
  r = nisa({"check", "copy.nasm", "--ranks", "3", "--lnc", "2"});
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, " unrolled on 6 cores")) << r.out;
  r = nisa({"check", "copy.nasm", "--ranks", "4"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_EQ(r.out, "nisa check: --ranks 4 conflicts with `.ranks 3` at copy.nasm:2\n");
}

TEST_F(LaunchCli, CheckDefaultsToTheDeclaredLnc) {
  Ran r = nisa({"check", "barrier.nasm", "--stats"});
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "on 2 cores")) << r.out;
  r = nisa({"check", "barrier.nasm", "--lnc", "2"});
  EXPECT_EQ(r.code, 0) << r.out;
  r = nisa({"check", "barrier.nasm", "--lnc", "1"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_EQ(r.out, "nisa check: --lnc 1 conflicts with `.lnc 2` at barrier.nasm:2\n");
  // Without the declaration the default is one core, where the barrier has no partner.
  std::ofstream(p("nolnc.nasm")) << ".kernel barrier\n        sp.core_barrier\n";
  r = nisa({"check", "nolnc.nasm"});
  EXPECT_EQ(r.code, 6) << r.out;
  EXPECT_TRUE(has(r.out, "'core_barrier' needs two cores")) << r.out;
}

TEST_F(LaunchCli, DebugDefaultsToTheDeclaration) {
  std::ofstream(p("info.txt")) << "info engines\n";
  Ran r = nisa({"debug", "copy.nasm", "--in", "x=x.npy", "--batch", "-x", "info.txt"});
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "rank 2 core 1 ")) << r.out; // 3 ranks of 2 cores
  EXPECT_FALSE(has(r.out, "rank 3 ")) << r.out;
  r = nisa({"debug", "copy.nasm", "--ranks", "3", "--in", "x=x.npy", "--batch", "-x", "info.txt"});
  EXPECT_EQ(r.code, 0) << r.out;
  r = nisa({"debug", "copy.nasm", "--ranks", "5", "--in", "x=x.npy", "--batch"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_EQ(r.out, "nisa debug: --ranks 5 conflicts with `.ranks 3` at copy.nasm:2\n");
  r = nisa({"debug", "copy.nasm", "--lnc", "1", "--in", "x=x.npy", "--batch"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_EQ(r.out, "nisa debug: --lnc 1 conflicts with `.lnc 2` at copy.nasm:3\n");
}

// A kernel that declares nothing runs as before: one rank, one core.
TEST_F(LaunchCli, UndeclaredDefaultsStayOne) {
  std::string plain = kCopy;
  plain.erase(plain.find(".ranks 3\n"), 9);
  plain.erase(plain.find(".lnc 2\n"), 7);
  std::ofstream(p("plain.nasm")) << plain;
  Ran r = nisa({"run", "plain.nasm", "--in", "x=x.npy", "--stats-json", "s.json"});
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(stats()["ranks"], 1);
  EXPECT_EQ(stats()["lnc"], 1);
  r = nisa({"run", "plain.nasm", "--ranks", "2", "--lnc", "2", "--in", "x=x.npy", "--stats-json",
            "s.json"});
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(stats()["ranks"], 2);
  EXPECT_EQ(stats()["lnc"], 2);
}

} // namespace
} // namespace nisa::test
