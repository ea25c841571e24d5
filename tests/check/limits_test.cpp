// The bounds of `nisa check` (issue 33, docs/check.md "Limits"): every one is reported with
// exit code 6, the limit's name and the option that raises it; running out of memory is exit
// 1 with what was being done and how much; a long finite unroll is not called endless; the
// rank bound is `nisa run`'s. Each test runs the binary under the limit that exposed the
// finding (tests/support/limited_run.h).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include <fmt/format.h>

#include "asm/asm.h"
#include "interp/check/check.h"
#include "interp/core/machine.h"
#include "tests/support/limited_run.h"
#include "tests/support/test_files.h"

namespace nisa::test {
namespace {

namespace fs = std::filesystem;

// Each iteration: 100 DMAs on 16 queues of two engines signal one semaphore, three engines
// wait on it. Every round of the fixpoint orders one more iteration: ~28 rounds at N = 80,
// 1.4 s at N = 150 (issue 33: 37 s at 150 iterations of its variant).
constexpr const char* kRounds = R"(.kernel rounds
.param N = 40
.hbm x : fp32[128, 16] input
.sbuf a : fp32[128, 16]
.sem s
.for i in 0..N
.for j in 0..50
        sp.dma q(j % 8), a, x @signal(s)
        act.dma q(8 + j % 8), a, x @signal(s)
.endfor
        sp.nop @wait(s >= i * 100 + 60)
        act.nop @wait(s >= i * 100 + 70)
        pool.nop @wait(s >= i * 100 + 100)
.endfor
)";

// A register loop of N DMAs: 3N + 1 instructions on sp, a node each and one per transfer.
constexpr const char* kRegLoop = R"(.kernel regloop
.param N = 1000000
.hbm x : fp32[128, 16] input
.sbuf a : fp32[128, 16]
.sem s
        sp.li r1, N
top:
        sp.dma q0, a, x @signal(s)
        sp.sub r1, r1, 1
        sp.bnz r1, top
)";

struct CheckLimits : ::testing::Test {
  fs::path dir;
  void SetUp() override {
    dir = fs::temp_directory_path() / ("nisa_check_limits_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    write("rounds.nasm", kRounds);
    write("regloop.nasm", kRegLoop);
    write("endless.nasm", "top:\n  dve.br top\n");
  }
  void TearDown() override { fs::remove_all(dir); }
  void write(const std::string& f, const std::string& text) {
    std::ofstream(dir / f, std::ios::binary) << text;
  }
  Ran nisa(const std::vector<std::string>& args, uint64_t as_bytes = 0) {
    return run_limited(args, kSanitized ? 0 : as_bytes, dir.string());
  }
};

bool has(const std::string& out, const std::string& what) {
  return out.find(what) != std::string::npos;
}

// The rounds of the fixpoint had no bound: each round of this kernel orders one more iteration.
TEST_F(CheckLimits, RoundsAreBoundedAndSaySo) {
  Ran r = nisa({"check", "rounds.nasm", "--stats"});
  ASSERT_EQ(r.code, 4) << r.out; // the kernel's pairs: it completes, in more than 10 rounds
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(" (\\d+) rounds, "))) << r.out;
  EXPECT_GT(std::stoi(m[1]), 10) << r.out;
  r = nisa({"check", "rounds.nasm", "--max-rounds", "5"});
  EXPECT_EQ(r.code, interp::kExitCheckOutside) << r.out;
  EXPECT_TRUE(has(r.out, "outside what is proved: the orders derived from semaphore counts still "
                         "changed after 5 rounds, the limit (8120 nodes): raise it with "
                         "--max-rounds"))
      << r.out;
  r = nisa({"check", "rounds.nasm", "--max-rounds", "0"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.out, "nisa check: --max-rounds 0: expected 1..1000000")) << r.out;
}

// Nothing bounded the host time: 150 iterations take 1.4 s here (37 s in the issue's
// variant); --max-seconds stops every phase.
TEST_F(CheckLimits, TimeIsBoundedAndSaysSo) {
  Ran r = nisa({"check", "rounds.nasm", "-D", "N=150", "--max-seconds", "0.2"});
  EXPECT_EQ(r.code, interp::kExitCheckOutside) << r.out;
  EXPECT_TRUE(has(r.out, "outside what is proved: the check ran for more than 0.2 s, its time "
                         "limit, while "))
      << r.out;
  EXPECT_TRUE(has(r.out, "nodes): raise the limit with --max-seconds")) << r.out;
  EXPECT_LT(r.seconds, 30) << "stopped at the limit, not at the end";
  r = nisa({"check", "rounds.nasm", "--max-seconds", "soon"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.out, "--max-seconds 'soon': expected seconds such as 60 or 0.5")) << r.out;
}

// The --max-memory the node limit message names ("(the node limit: --max-memory N MiB at 1024
// bytes a node)"), or -1.
int node_limit_mib(const std::string& out) {
  std::smatch m;
  if (!std::regex_search(out, m,
                         std::regex("\\(the node limit: --max-memory (\\d+) MiB at 1024 bytes a "
                                    "node\\)")))
    return -1;
  return std::stoi(m[1]);
}

// The node limit (8M) allowed ~23 GB: it is now derived from the memory limit, whose default
// is half of what the address-space limit leaves when there is one.
TEST_F(CheckLimits, NodeLimitFollowsTheMemoryLimit) {
  // 400,000,000 bytes of address space, less the process's own (~60 MB): ~170 MiB for the
  // check, ~170,000 nodes.
  Ran r = kSanitized ? nisa({"check", "regloop.nasm", "--max-memory", "170"})
                     : nisa({"check", "regloop.nasm"}, 400'000'000);
  EXPECT_EQ(r.code, interp::kExitCheckOutside) << r.out;
  if (kSanitized) { // ~5 KB a node under ASan (redzones, Debug): the memory reading stops it
    EXPECT_TRUE(std::regex_search(r.out, std::regex("the check's memory grew by \\d+ MiB, past "
                                                    "its limit of 170 MiB, while unrolling the "
                                                    "streams \\(\\d+ nodes\\)")))
        << r.out;
    return;
  }
  const int mib = node_limit_mib(r.out);
  EXPECT_GT(mib, 100) << r.out;
  EXPECT_LE(mib, 190) << r.out; // half of 400,000,000 bytes at most
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m,
                                std::regex("the kernel unrolls into more than (\\d+) "
                                           "instructions, transfers and joins")))
      << r.out;
  EXPECT_EQ(std::stoll(m[1]) >> 10, mib) << "1024 bytes a node";
  EXPECT_TRUE(std::regex_search(r.out, std::regex("; the walk was at regloop.nasm:(8|9|10) on core "
                                                  "0 sp, a stream that ends after 3000001 "
                                                  "instructions \\(\\d+ walked\\)")))
      << r.out;
  EXPECT_TRUE(has(r.out, "raise --max-memory, or check a smaller configuration (-D)")) << r.out;
  r = nisa({"check", "regloop.nasm", "--max-memory", "0"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.out, "nisa check: --max-memory 0: expected MiB in 1..")) << r.out;
}

// The memory in use is read as the check goes, and the vector clocks are weighed before they
// are allocated.
TEST_F(CheckLimits, MemoryInUseStopsTheCheck) {
  nasm::AsmOptions ao;
  ao.defines = {{"N", "30000"}};
  nasm::AsmResult a = nasm::assemble_string(kRegLoop, "regloop.nasm", ao);
  ASSERT_TRUE(a.ok()) << a.diagnostics_text();
  interp::CheckOptions o;
  o.max_memory = uint64_t(1) << 20;
  o.max_nodes = 10'000'000; // not the bound here
  interp::CheckResult r = interp::check_module(*a.module, o);
  EXPECT_EQ(r.exit_code, interp::kExitCheckOutside) << r.report;
  EXPECT_TRUE(has(r.outside, "limit of 1 MiB")) << r.outside;
  EXPECT_TRUE(has(r.outside, "raise the limit with --max-memory (MiB)")) << r.outside;
}

// Under a 700 MB address-space limit a long register loop ended in SIGABRT (std::bad_alloc);
// with a memory limit set above the address space, running out is exit 1 with what and how
// much.
TEST_F(CheckLimits, OutOfMemoryIsExitOneWithWhatAndHowMuch) {
  if (kSanitized) GTEST_SKIP() << "an address-space limit does not apply under a sanitizer";
  Ran r = nisa({"check", "regloop.nasm", "--max-memory", "2000"}, 150'000'000);
  EXPECT_EQ(r.signal, 0) << r.out;
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "nisa check: out of memory: unrolling the streams at ")) << r.out;
  EXPECT_TRUE(has(r.out, "MiB at the last reading; the address-space limit (ulimit -v) is 144 "
                         "MiB); --max-memory (now 2000 MiB) stops the check before that"))
      << r.out;
  // The default memory limit (half of what the address space leaves) stops it first, exit 6.
  r = nisa({"check", "regloop.nasm"}, 150'000'000);
  EXPECT_EQ(r.code, interp::kExitCheckOutside) << r.out;
  const int mib = node_limit_mib(r.out);
  EXPECT_GT(mib, 10) << r.out;
  EXPECT_LE(mib, 72) << r.out;
}

// A large finite unroll was called "(an endless loop?)".
TEST_F(CheckLimits, EndlessAndLongFiniteLoopsAreToldApart) {
  Ran r = nisa({"check", "endless.nasm"});
  EXPECT_EQ(r.code, interp::kExitCheckOutside) << r.out;
  EXPECT_TRUE(has(r.out, "endless.nasm:2 on core 0 dve loops forever: its walk comes back to the "
                         "same instruction with the same registers every 1 instructions"))
      << r.out;
  r = nisa({"check", "regloop.nasm", "--max-memory", "64"});
  EXPECT_EQ(r.code, interp::kExitCheckOutside) << r.out;
  if (kSanitized) { // ~5 KB a node under ASan: the memory reading, not the node count, stops it
    EXPECT_TRUE(has(r.out, "past its limit of 64 MiB, while unrolling the streams")) << r.out;
  } else {
    EXPECT_TRUE(has(r.out, "the kernel unrolls into more than 65536 instructions, transfers "
                           "and joins (the node limit: --max-memory 64 MiB at 1024 bytes a "
                           "node)"))
        << r.out;
    EXPECT_TRUE(has(r.out, "a stream that ends after 3000001 instructions")) << r.out;
  }
  EXPECT_FALSE(has(r.out, "endless")) << r.out;
  // At -D N=1000 it fits, and is proved.
  r = nisa({"check", "regloop.nasm", "-D", "N=1000", "--max-memory", "64"});
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, "proved: every conflicting access is ordered and no schedule deadlocks "
                         "(3001 instructions unrolled on 1 core, 4001 nodes"))
      << r.out;
}

// `check` accepted --ranks up to 1024, `run` 128: one constant, one message.
TEST_F(CheckLimits, RanksBoundIsRunsBound) {
  const std::string top = std::to_string(interp::kMaxRanks);
  const std::string over = std::to_string(interp::kMaxRanks + 1);
  Ran r = nisa({"check", "endless.nasm", "--ranks", over});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "nisa check: --ranks " + over + ": expected 1.." + top)) << r.out;
  r = nisa({"check", "endless.nasm", "--ranks", "-1"});
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r.out, "nisa check: --ranks -1: expected 1.." + top)) << r.out;
  write("nop.nasm", ".kernel nop\n  sp.nop\n  dve.nop\n");
  r = nisa({"check", "nop.nasm", "--ranks", top});
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r.out, std::to_string(2 * interp::kMaxRanks) + " instructions unrolled on " +
                             top + " cores"))
      << r.out;
}

// docs/check.md said 4,000,000 nodes, the code 8,000,000: one Limits table, checked here.
TEST_F(CheckLimits, DocsLimitsTableIsTheCode) {
  const std::string doc = read_file(std::string(NISA_SOURCE_DIR) + "/docs/check.md");
  ASSERT_FALSE(doc.empty());
  for (const std::string& row : {
           fmt::format("| host time | `--max-seconds S` | {} s |", interp::kCheckDefaultSeconds),
           fmt::format("| memory | `--max-memory MIB` | {} MiB, or half of what `ulimit -v` "
                       "leaves when that is lower |",
                       interp::kCheckDefaultMemory >> 20),
           fmt::format("| nodes | `--max-memory MIB` | the memory limit / {} bytes, at most "
                       "{}",
                       interp::kCheckNodeBytes, interp::kCheckMaxNodes),
           fmt::format("| rounds | `--max-rounds N` | {} |", interp::kCheckDefaultRounds),
           fmt::format("| ranks | `--ranks R` | 1..{} (as `nisa run`) |", interp::kMaxRanks),
       })
    EXPECT_TRUE(has(doc, row)) << "docs/check.md lacks the row: " << row;
  EXPECT_FALSE(has(doc, "4,000,000 unrolled nodes"));
}

} // namespace
} // namespace nisa::test
