// nisa check's reports (docs/check.md "Reports"): one per pair of source lines, in the order
// the kernel intends, with a witness iteration, and a suggested wait that is right: applied
// mechanically to the source (each `add @wait(EXPR) to FILE:LINE` appended to that line), the
// kernel is proved. The planted bugs are the races of tests/check/*.nasm; the fixed variants
// (FIXED=1) are what a kernel author would write, so the suggestion must prove as they do.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "asm/asm.h"
#include "interp/check/check.h"

using namespace nisa;

namespace {

std::string planted(const std::string& f) {
  return std::string(NISA_SOURCE_DIR) + "/tests/check/" + f;
}

interp::CheckResult check_file(const std::string& path, std::string* diags = nullptr) {
  nasm::AsmResult a = nasm::assemble_file(path, nasm::AsmOptions{});
  if (!a.ok()) {
    if (diags) *diags = a.diagnostics_text();
    ADD_FAILURE() << path << ": " << a.diagnostics_text();
    return {};
  }
  interp::CheckOptions o;
  o.target = a.module->target;
  return interp::check_module(*a.module, o);
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream f(path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(f, l);) lines.push_back(l);
  return lines;
}

// Appends every suggested wait of `r` to its line of a copy of `src` (before a comment) and
// returns the copy's path; the copy's lines are the source's, so the report's lines apply.
std::string apply_fixes(const std::string& src, const interp::CheckResult& r) {
  std::vector<std::string> lines = read_lines(src);
  size_t applied = 0;
  for (const interp::CheckPair& p : r.pairs)
    for (const interp::CheckFix& f : p.fixes) {
      // the fixed form the report prints: "add @wait(WAIT) to FILE:LINE"
      EXPECT_NE(p.suggestion.find("add @wait(" + f.wait + ") to " + f.loc), std::string::npos)
          << p.suggestion;
      const size_t colon = f.loc.rfind(':');
      EXPECT_EQ(f.loc.substr(0, colon), src);
      const size_t line = std::stoul(f.loc.substr(colon + 1));
      EXPECT_GE(line, 1u);
      EXPECT_LE(line, lines.size());
      if (line < 1 || line > lines.size()) continue;
      std::string& l = lines[line - 1];
      const size_t comment = l.find(';');
      l.insert(comment == std::string::npos ? l.size() : comment, "  @wait(" + f.wait + ")");
      ++applied;
    }
  EXPECT_GT(applied, 0u) << r.report;
  // a new semaphore: its @signal on the earlier line, its declaration after .kernel
  for (const interp::CheckPair& p : r.pairs)
    for (const interp::CheckFix& f : p.fixes) {
      if (f.new_sem.empty()) continue;
      EXPECT_NE(p.suggestion.find("declare `.sem " + f.new_sem + "` and add @signal(" + f.new_sem +
                                  ") to " + f.signal_loc),
                std::string::npos)
          << p.suggestion;
      const size_t line = std::stoul(f.signal_loc.substr(f.signal_loc.rfind(':') + 1));
      if (line < 1 || line > lines.size()) continue;
      std::string& l = lines[line - 1];
      const size_t comment = l.find(';');
      l.insert(comment == std::string::npos ? l.size() : comment, "  @signal(" + f.new_sem + ")");
    }
  for (const interp::CheckPair& p : r.pairs)
    for (const interp::CheckFix& f : p.fixes)
      for (size_t i = 0; !f.new_sem.empty() && i < lines.size(); ++i)
        if (lines[i].starts_with(".kernel")) {
          lines.insert(lines.begin() + long(i) + 1, ".sem " + f.new_sem);
          break;
        }
  const auto dir =
      std::filesystem::temp_directory_path() / ("nisa_fixes_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string out = (dir / std::filesystem::path(src).filename()).string();
  std::ofstream f(out);
  for (const std::string& l : lines) f << l << "\n";
  return out;
}

struct Planted {
  const char* file;
  size_t pairs; // one report per pair of lines
};

class PlantedFixes : public ::testing::TestWithParam<Planted> {};

TEST_P(PlantedFixes, ApplyingTheSuggestionsProvesTheKernel) {
  const std::string src = planted(GetParam().file);
  interp::CheckResult r = check_file(src);
  ASSERT_EQ(r.status, interp::CheckStatus::races) << r.report;
  EXPECT_EQ(r.pairs.size(), GetParam().pairs) << r.report;
  for (const interp::CheckPair& p : r.pairs) EXPECT_FALSE(p.fixes.empty()) << p.suggestion;
  const std::string fixed = apply_fixes(src, r);
  interp::CheckResult again = check_file(fixed);
  EXPECT_EQ(again.status, interp::CheckStatus::proved) << "after the fixes of\n"
                                                       << r.report << "the check says\n"
                                                       << again.report;
  std::filesystem::remove_all(std::filesystem::path(fixed).parent_path());
}

INSTANTIATE_TEST_SUITE_P(
    Check, PlantedFixes,
    ::testing::Values(Planted{"missing_wait.nasm", 1}, Planted{"wrong_count.nasm", 1},
                      Planted{"war_queues.nasm", 1}, Planted{"hidden_two_queues.nasm", 2},
                      Planted{"reuse_across_iterations.nasm", 1},
                      Planted{"matmul_slot_reuse.nasm", 1}, Planted{"tiles_reuse.nasm", 1}),
    [](const ::testing::TestParamInfo<Planted>& i) {
      std::string n = i.param.file;
      return n.substr(0, n.find('.'));
    });

// The reuse across iterations: the fix goes on the load that overwrites the slot (not on the
// compute that reads it), as an expression of the loop variable that holds in every iteration,
// and the report names the witness iterations (the read of i=0, the load of i=2).
TEST(CheckReports, ReuseAcrossIterationsIsFixedOnTheOverwritingLoad) {
  const std::string src = planted("reuse_across_iterations.nasm");
  interp::CheckResult r = check_file(src);
  ASSERT_EQ(r.pairs.size(), 1u) << r.report;
  const interp::CheckPair& p = r.pairs[0];
  EXPECT_EQ(p.a_loc, src + ":19"); // the compute reads the slot ...
  EXPECT_FALSE(p.a_write);
  EXPECT_EQ(p.a_iter, "i=0");
  EXPECT_EQ(p.b_loc, src + ":17"); // ... before the load two iterations on overwrites it
  EXPECT_TRUE(p.b_write);
  EXPECT_EQ(p.b_iter, "i=2");
  EXPECT_EQ(p.instances, 4u); // i = 2..5
  ASSERT_EQ(p.fixes.size(), 1u);
  EXPECT_EQ(p.fixes[0].loc, src + ":17");
  EXPECT_EQ(p.fixes[0].wait, "s_cmp >= max(0, i - 1)");
  EXPECT_NE(r.report.find("(core 0 dve, i=0) and " + src + ":17 writes (core 0 pool -> q0, i=2)"),
            std::string::npos)
      << r.report;
  // what the kernel's author wrote proves
  nasm::AsmOptions o;
  o.defines = {{"FIXED", "1"}};
  nasm::AsmResult a = nasm::assemble_file(src, o);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(interp::check_module(*a.module, interp::CheckOptions{}).status,
            interp::CheckStatus::proved);
}

// The matmul form of the report: the wait goes on the load (s_mm, the matmuls' count),
// never as a constant inside the .for.
TEST(CheckReports, MatmulSlotReuseWaitsForTheMatmulTwoTilesBack) {
  const std::string src = planted("matmul_slot_reuse.nasm");
  interp::CheckResult r = check_file(src);
  ASSERT_EQ(r.pairs.size(), 1u) << r.report;
  const interp::CheckPair& p = r.pairs[0];
  EXPECT_EQ(p.b_loc, src + ":25");
  ASSERT_EQ(p.fixes.size(), 1u);
  EXPECT_EQ(p.fixes[0].wait, "s_mm >= max(0, i - 1)");
  EXPECT_EQ(p.fixes[0].loc, src + ":25");
  EXPECT_EQ(p.a_iter, "i=0");
  EXPECT_EQ(p.b_iter, "i=2");
}

// A count that grows with the iteration is written with the loop variable.
TEST(CheckReports, WrongCountIsFixedWithTheLoopVariable) {
  const std::string src = planted("wrong_count.nasm");
  interp::CheckResult r = check_file(src);
  ASSERT_EQ(r.pairs.size(), 1u) << r.report;
  ASSERT_EQ(r.pairs[0].fixes.size(), 1u);
  EXPECT_EQ(r.pairs[0].fixes[0].wait, "s_in >= i + 1");
  EXPECT_EQ(r.pairs[0].fixes[0].loc, src + ":12");
  EXPECT_EQ(r.pairs[0].instances, 4u) << r.report; // every iteration
}

// Two loop levels and a partial last tile: one report for the pair of lines (the tiles of 128
// and 44 partitions alike), the count in both variables.
TEST(CheckReports, OneReportPerPairOfLinesWithEveryLoopVariable) {
  const std::string src = planted("tiles_reuse.nasm");
  interp::CheckResult r = check_file(src);
  ASSERT_EQ(r.pairs.size(), 1u) << r.report;
  const interp::CheckPair& p = r.pairs[0];
  EXPECT_EQ(p.a_iter, "p=0, f=0");
  EXPECT_EQ(p.b_iter, "p=1, f=0");
  EXPECT_EQ(p.instances, 4u); // tiles 2..5 (the third row tile has 44 partitions)
  ASSERT_EQ(p.fixes.size(), 1u);
  EXPECT_EQ(p.fixes[0].wait, "s_cmp >= max(0, 2*p + f - 1)");
  EXPECT_EQ(r.report.find("unordered:", r.report.find("unordered:") + 1), std::string::npos)
      << r.report;
}

// The earlier line signals nothing: a semaphore of its own, counted in the loop variable.
TEST(CheckReports, AnEarlierLineWithoutASignalGetsASemaphore) {
  const std::string src = planted("no_signal.nasm");
  interp::CheckResult r = check_file(src);
  ASSERT_EQ(r.pairs.size(), 1u) << r.report;
  ASSERT_EQ(r.pairs[0].fixes.size(), 1u) << r.report;
  const interp::CheckFix& f = r.pairs[0].fixes[0];
  EXPECT_EQ(f.new_sem, "s_order");
  EXPECT_EQ(f.signal_loc, src + ":14");
  EXPECT_EQ(f.loc, src + ":15");
  EXPECT_EQ(f.wait, "s_order >= i + 1");
}

} // namespace
