// The debugger (docs/debugger.md), the race checker and the trace: scripted sessions checked
// against expected transcripts (tests/debugger/expected; NISA_UPDATE_TRANSCRIPTS=1 rewrites
// them), an interactive session through a pseudo-terminal, reverse execution against a fresh
// run, races on a kernel with a missing wait, and the trace format.
#include <gtest/gtest.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include "asm/asm.h"
#include "interp/debug/session.h"
#include "interp/run/npy.h"
#include "interp/run/run.h"
#include "tests/support/test_files.h"

namespace nisa::interp {
namespace {

namespace fs = std::filesystem;

constexpr int kRows = 130, kCols = 2500; // two partition tiles, two free tiles

// Seeded, non-constant input x[kRows, kCols] (values k/8 - 2 with k in 0..31: sums are exact).
std::vector<float> make_input() {
  std::mt19937 rng(1234);
  std::vector<float> x(size_t(kRows) * kCols);
  for (float& v : x) v = float(rng() % 32) / 8.0f - 2.0f;
  return x;
}

// y must be the inclusive prefix sums of make_input(), computed in fp32 left to right.
void expect_prefix_sums(const NpyArray& a) {
  ASSERT_EQ(a.shape, (std::vector<int64_t>{kRows, kCols}));
  std::vector<float> x = make_input();
  const float* got = reinterpret_cast<const float*>(a.data.data());
  for (int r = 0; r < kRows; ++r) {
    float acc = 0;
    for (int c = 0; c < kCols; ++c) {
      acc += x[size_t(r) * kCols + c];
      ASSERT_EQ(got[size_t(r) * kCols + c], acc) << "y[" << r << ", " << c << "]";
    }
  }
}

class Debugger : public ::testing::Test {
protected:
  static fs::path dir;
  static void SetUpTestSuite() {
    dir = fs::temp_directory_path() / fmt::format("nisa_debugger_{}", getpid());
    fs::create_directories(dir);
    std::vector<float> x = make_input();
    write_npy((dir / "x.npy").string(), DType::fp32, {kRows, kCols},
              reinterpret_cast<const uint8_t*>(x.data()));
  }
  static void TearDownTestSuite() { fs::remove_all(dir); }

  // Runs a shell command from the source tree; returns its stdout (stderr goes to `err`).
  static int sh(const std::string& cmd, std::string& out, std::string* err = nullptr) {
    fs::path o = dir / "out.txt", e = dir / "err.txt";
    std::string full =
        fmt::format("cd '{}' && {} > '{}' 2> '{}'", NISA_SOURCE_DIR, cmd, o.string(), e.string());
    int rc = std::system(full.c_str());
    out = test::read_file(o);
    if (err) *err = test::read_file(e);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  }
  static std::string kernel_args(const std::string& kernel = "kernels_asm/cumsum.nasm") {
    return fmt::format("{} -D ROWS={} -D COLS={} --in x={}", kernel, kRows, kCols,
                       (dir / "x.npy").string());
  }
  static Module assemble(const std::string& kernel) {
    nasm::AsmOptions ao;
    ao.defines = {{"ROWS", std::to_string(kRows)}, {"COLS", std::to_string(kCols)}};
    nasm::AsmResult r = nasm::assemble_file(std::string(NISA_SOURCE_DIR) + "/" + kernel, ao);
    EXPECT_TRUE(r.ok()) << r.diagnostics_text();
    return std::move(*r.module);
  }
  static RunConfig config() {
    RunConfig cfg;
    cfg.inputs = {{"x", (dir / "x.npy").string()}};
    return cfg;
  }
};
fs::path Debugger::dir;

// ---- scripted sessions ----------------------------------------------------------------------

struct Transcript {
  const char* script;
  const char* kernel;
  int rc = 0; // --batch exits with the run's status at the end of the script
};

class Scripted : public Debugger, public ::testing::WithParamInterface<Transcript> {};

TEST_P(Scripted, MatchesTheExpectedTranscript) {
  const Transcript& t = GetParam();
  fs::path src = NISA_SOURCE_DIR;
  fs::path script = src / "tests/debugger/scripts" / (std::string(t.script) + ".cmd");
  fs::path expected = src / "tests/debugger/expected" / (std::string(t.script) + ".txt");
  std::string out, err;
  int rc = sh(fmt::format("{} debug {} -x '{}' --batch", NISA_BINARY, kernel_args(t.kernel),
                          script.string()),
              out, &err);
  ASSERT_EQ(rc, t.rc) << err;
  // Paths of the temporary directory are not part of the transcript.
  for (size_t k; (k = out.find(dir.string())) != std::string::npos;)
    out.replace(k, dir.string().size(), "$TMP");
  if (std::getenv("NISA_UPDATE_TRANSCRIPTS")) {
    std::ofstream(expected) << out;
    GTEST_SKIP() << "rewrote " << expected;
  }
  ASSERT_TRUE(fs::exists(expected)) << expected;
  EXPECT_EQ(out, test::read_file(expected)) << "transcript of " << t.script << " differs";
}

INSTANTIATE_TEST_SUITE_P(
    Sessions, Scripted,
    ::testing::Values(Transcript{"help", "kernels_asm/cumsum.nasm"},
                      Transcript{"stepping", "kernels_asm/cumsum.nasm"},
                      Transcript{"breakpoints", "kernels_asm/cumsum.nasm"},
                      Transcript{"inspect", "kernels_asm/cumsum.nasm"},
                      Transcript{"watch", "kernels_asm/cumsum.nasm"},
                      Transcript{"reverse", "kernels_asm/cumsum.nasm"},
                      // --batch exits 4: a race stopped the session (check-races on)
                      Transcript{"races", "tests/debugger/cumsum_missing_wait.nasm", 4},
                      Transcript{"races_none", "kernels_asm/cumsum.nasm"},
                      Transcript{"next_last", "kernels_asm/cumsum.nasm"},
                      Transcript{"copy_transpose", "tests/debugger/copy_transpose.nasm", 4},
                      Transcript{"watch_then_break", "kernels_asm/cumsum.nasm"},
                      Transcript{"until_lines", "kernels_asm/cumsum.nasm"},
                      Transcript{"deadlock", "tests/debugger/deadlock.nasm", 2},
                      Transcript{"deadlock_t0", "tests/debugger/deadlock_t0.nasm", 2},
                      Transcript{"fault", "tests/debugger/fault.nasm"},
                      Transcript{"errors", "kernels_asm/cumsum.nasm"}),
    [](const auto& info) { return std::string(info.param.script); });

// ---- results: dump after a full run equals an independent prefix sum --------------------------

TEST_F(Debugger, DumpAfterRunHoldsThePrefixSums) {
  Module mod = assemble("kernels_asm/cumsum.nasm");
  std::ostringstream out;
  debug::Session s(mod, config(), out);
  s.execute("run");
  fs::path y = dir / "y.npy";
  s.execute("dump y " + y.string());
  ASSERT_NE(out.str().find("The kernel finished"), std::string::npos) << out.str();
  NpyArray a = read_npy(y.string());
  expect_prefix_sums(a);
}

// `--out` writes the tensor as it is when the session ends (here: after the whole run).
TEST_F(Debugger, OutWritesTheTensorWhenTheSessionEnds) {
  fs::path script = dir / "run_only.txt", y = dir / "y_out.npy";
  std::ofstream(script) << "run\n";
  std::string out, err;
  ASSERT_EQ(0, sh(fmt::format("{} debug {} --out y={} --batch -x {}", NISA_BINARY, kernel_args(),
                              y.string(), script.string()),
                  out, &err))
      << out << err;
  NpyArray a = read_npy(y.string());
  expect_prefix_sums(a);
}

// ---- reverse execution equals a fresh run stopped at the same event ---------------------------

void expect_same_state(const Machine& a, const Machine& b) {
  ASSERT_EQ(a.cores.size(), b.cores.size());
  for (size_t c = 0; c < a.cores.size(); ++c) {
    const CoreSlot &x = a.cores[c], &y = b.cores[c];
    EXPECT_EQ(0, std::memcmp(x.sbuf.data(), y.sbuf.data(), x.sbuf.size())) << "sbuf";
    EXPECT_EQ(0, std::memcmp(x.psum.data(), y.psum.data(), x.psum.size())) << "psum";
    EXPECT_EQ(0, std::memcmp(x.st.regs, y.st.regs, sizeof x.st.regs)) << "registers";
    EXPECT_EQ(x.st.sems, y.st.sems) << "semaphores";
    EXPECT_EQ(0, std::memcmp(x.st.dve_acc, y.st.dve_acc, sizeof x.st.dve_acc)) << "dve_acc";
    EXPECT_EQ(0, std::memcmp(x.st.act_acc, y.st.act_acc, sizeof x.st.act_acc)) << "act_acc";
    EXPECT_EQ(x.st.psum_written, y.st.psum_written);
  }
  for (size_t r = 0; r < a.ranks.size(); ++r)
    EXPECT_EQ(0, std::memcmp(a.ranks[r].hbm.data(), b.ranks[r].hbm.data(), a.ranks[r].hbm_bytes))
        << "hbm";
}

TEST_F(Debugger, ReverseStepEqualsAFreshRunStoppedThere) {
  Module mod = assemble("kernels_asm/cumsum.nasm");
  std::ostringstream out;
  debug::Session back(mod, config(), out), fresh(mod, config(), out);
  back.execute("set var dve.r5 = 7"); // register edits are replayed too
  fresh.execute("set var dve.r5 = 7");
  back.execute("step 20");
  back.execute("reverse-step 6");
  ASSERT_EQ(back.steps(), 14);
  fresh.execute("step 14");
  ASSERT_EQ(fresh.steps(), 14);
  expect_same_state(back.machine(), fresh.machine());
  EXPECT_EQ(back.machine().cores[0].st.regs[int(Engine::dve)][5], 7);
  // The state really differs between events 14 and 20 (the test can fail).
  debug::Session later(mod, config(), out);
  later.execute("step 20");
  EXPECT_NE(0,
            std::memcmp(later.machine().cores[0].sbuf.data(), fresh.machine().cores[0].sbuf.data(),
                        later.machine().cores[0].sbuf.size()));
}

TEST_F(Debugger, ReverseContinueReturnsToThePreviousBreakpoint) {
  Module mod = assemble("kernels_asm/cumsum.nasm");
  std::ostringstream out;
  debug::Session s(mod, config(), out), fresh(mod, config(), out);
  s.execute("break dve:2");
  s.execute("run");
  int64_t first = s.steps();
  s.execute("delete");
  s.execute("break dve:3");
  s.execute("continue");
  ASSERT_GT(s.steps(), first);
  s.execute("reverse-continue");
  EXPECT_EQ(s.steps(), first) << out.str();
  fresh.execute(fmt::format("step {}", first));
  expect_same_state(s.machine(), fresh.machine());
}

// A label defined in several streams stops in each of them.
TEST_F(Debugger, LabelBreakpointStopsInEveryStream) {
  nasm::AsmOptions ao;
  nasm::AsmResult r =
      nasm::assemble_file(std::string(NISA_SOURCE_DIR) + "/kernels_asm/cascaded_max.nasm", ao);
  ASSERT_TRUE(r.ok()) << r.diagnostics_text();
  std::vector<float> x(4 * 1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float((i * 7919) % 1000) / 10.0f - 50.0f;
  fs::path xin = dir / "x_label.npy";
  write_npy(xin.string(), DType::fp32, {4, 1000}, reinterpret_cast<const uint8_t*>(x.data()));
  RunConfig cfg;
  cfg.inputs = {{"x", xin.string()}};
  std::ostringstream out;
  debug::Session s(*r.module, cfg, out);
  std::vector<std::pair<Engine, uint32_t>> at;
  for (int e = 0; e < kNumEngines; ++e)
    for (const Label& l : r.module->labels[e])
      if (l.name == "skip0") at.emplace_back(Engine(e), l.index);
  ASSERT_GE(at.size(), 2u);
  s.execute("break skip0");
  s.execute("run");
  for (size_t k = 1; k < at.size(); ++k) s.execute("continue");
  std::string text = out.str();
  for (auto [e, pc] : at)
    EXPECT_NE(text.find(fmt::format("\n{}[{}] at cascaded_max.nasm", name_of(e), pc)),
              std::string::npos)
        << name_of(e) << "[" << pc << "]\n"
        << text;
}

// ---- race checking ----------------------------------------------------------------------------

// stderr holds the line of a run with no race, once, and no race report: "nisa run:
// check-races: no race in N accesses (M instructions and transfers)", M > 0 (digits grouped
// by commas; control instructions count in M with no access). Other lines (a warning about an
// output not saved) may come before it.
bool no_race_line(const std::string& err) {
  static const std::regex line("nisa run: check-races: no race in ([0-9,]+) accesses "
                               "\\(([0-9,]+) instructions and transfers\\)");
  auto num = [](std::string s) {
    std::erase(s, ',');
    return std::stoull(s);
  };
  int found = 0;
  std::istringstream is(err);
  for (std::string l; std::getline(is, l);) {
    if (l.find("race on ") != std::string::npos || l.find("race(s) found") != std::string::npos)
      return false;
    std::smatch m;
    if (std::regex_match(l, m, line)) {
      if (num(m[2]) == 0) return false;
      ++found;
    }
  }
  return found == 1;
}

TEST_F(Debugger, RaceCheckerReportsTheMissingWait) {
  std::string out, err;
  int rc = sh(fmt::format("{} run {} --check-races", NISA_BINARY,
                          kernel_args("tests/debugger/cumsum_missing_wait.nasm")),
              out, &err);
  EXPECT_EQ(rc, kExitRace) << err;
  EXPECT_NE(err.find("race on sbuf partitions 0..127"), std::string::npos) << err;
  EXPECT_NE(err.find("(tensor res)"), std::string::npos) << err;
  EXPECT_NE(err.find("read by  q1 (transfer of sp[1])"), std::string::npos) << err;
  EXPECT_NE(err.find("write by dve[4]"), std::string::npos) << err;
  EXPECT_NE(err.find("cumsum_missing_wait.nasm:49"), std::string::npos) << err;
}

// A run with no race says so, with what it checked: one line on stderr and nothing else.
TEST_F(Debugger, FixedKernelIsRaceFree) {
  std::string out, err;
  int rc = sh(fmt::format("{} run {} --check-races", NISA_BINARY, kernel_args()), out, &err);
  EXPECT_EQ(rc, 0) << err;
  EXPECT_TRUE(no_race_line(err)) << err;
}

// The counts of that line: 2 instructions on a [4, 8] tile, a memset (1 write) and a copy (a
// read and a write), are 3 accesses of 2 instructions; cumsum's instructions and transfers are
// the records of its trace that write memory (its 11 dve instructions and 8 DMA transfers; the
// 8 sp instructions that trigger the transfers access nothing themselves).
TEST_F(Debugger, NoRaceLineCountsTheAccessesChecked) {
  fs::path k = dir / "two.nasm";
  std::ofstream(k) << ".kernel two\n.sbuf a : fp32[4, 8]\n.sbuf b : fp32[4, 8]\n"
                      "  dve.memset a, 1.0\n  dve.copy b, a\n";
  std::string out, err;
  EXPECT_EQ(sh(fmt::format("{} run {} --check-races", NISA_BINARY, k.string()), out, &err), 0);
  EXPECT_TRUE(no_race_line(err)) << err;
  EXPECT_NE(err.find("nisa run: check-races: no race in 3 accesses (2 instructions and "
                     "transfers)\n"),
            std::string::npos)
      << err;
  fs::path t = dir / "cumsum_trace.txt";
  EXPECT_EQ(
      sh(fmt::format("{} run {} --check-races --trace {}", NISA_BINARY, kernel_args(), t.string()),
         out, &err),
      0);
  size_t records = 0;
  std::istringstream tr(test::read_file(t));
  for (std::string line; std::getline(tr, line);)
    records += !line.empty() && line[0] != '#' && !line.ends_with("\t-");
  EXPECT_EQ(records, 19u);
  const size_t open = err.find(" accesses ("), close = err.find(" instructions and transfers)");
  ASSERT_TRUE(open != std::string::npos && close != std::string::npos) << err;
  EXPECT_EQ(err.substr(open + 11, close - open - 11), std::to_string(records)) << err;
}

// Every kernel of kernels_asm, on one core and on two (--lnc 2), is race-free.
TEST_F(Debugger, KernelsAreRaceFree) {
  std::vector<float> x(4 * 1000);
  std::mt19937 rng(7);
  for (float& v : x) v = float(int(rng() % 20001) - 10000) / 100.0f;
  fs::path xin = dir / "x4.npy";
  write_npy(xin.string(), DType::fp32, {4, 1000}, reinterpret_cast<const uint8_t*>(x.data()));
  for (const char* k : {"topk", "cascaded_max"})
    for (int lnc : {1, 2}) {
      std::string out, err;
      int rc = sh(fmt::format("{} run kernels_asm/{}.nasm --lnc {} --in x={} "
                              "--check-races",
                              NISA_BINARY, k, lnc, xin.string()),
                  out, &err);
      EXPECT_EQ(rc, 0) << k << " --lnc " << lnc << "\n" << err;
      EXPECT_TRUE(no_race_line(err)) << err;
    }
}

// The other kernels of kernels_asm, each with random fp32 inputs of its default shape (the
// top-K methods and cumsum's double-buffered variant included), on one and two cores.
TEST_F(Debugger, EveryOtherKernelIsRaceFree) {
  struct In {
    const char* name;
    DType dtype;
    std::vector<int64_t> shape;
    int64_t int_bound; // int32 inputs: values in [0, int_bound)
  };
  struct Kernel {
    const char* file;
    std::string defines;
    std::vector<In> inputs;
  };
  const std::vector<Kernel> kernels = {
      {"topk",
       "-D BXS=4 -D V=1000 -D K=24 -D METHOD=rotational",
       {{"x", DType::fp32, {4, 1000}, 0}}},
      {"topk", "-D BXS=4 -D V=1000 -D K=24 -D METHOD=cascaded", {{"x", DType::fp32, {4, 1000}, 0}}},
      {"cumsum_double_buffered", "-D ROWS=130 -D COLS=2500", {{"x", DType::fp32, {130, 2500}, 0}}},
      {"cross_entropy_fwd",
       "-D DT=fp32",
       {{"logits", DType::fp32, {64, 1000}, 0}, {"targets", DType::int32, {64}, 1000}}},
      {"cross_entropy_bwd",
       "-D DT=fp32",
       {{"logits", DType::fp32, {64, 1000}, 0},
        {"targets", DType::int32, {64}, 1000},
        {"lse", DType::fp32, {64}, 0}}},
      {"conv1d",
       "-D DT=fp32 -D BIAS=1 -D LNC_SHARD=1",
       {{"x", DType::fp32, {1, 16, 64}, 0},
        {"filters", DType::fp32, {3, 16, 32}, 0},
        {"bias", DType::fp32, {32}, 0}}},
      {"depthwise_conv1d",
       "-D DT=fp32",
       {{"img", DType::fp32, {1, 8, 1, 64}, 0}, {"filter", DType::fp32, {8, 1, 1, 3}, 0}}},
  };
  std::mt19937 rng(11);
  for (const Kernel& k : kernels) {
    std::string bind;
    for (const In& in : k.inputs) {
      int64_t n = 1;
      for (int64_t d : in.shape) n *= d;
      std::vector<uint8_t> bytes(size_t(n) * 4);
      for (int64_t i = 0; i < n; ++i) {
        if (in.dtype == DType::int32) {
          int32_t v = int32_t(rng() % uint32_t(in.int_bound));
          std::memcpy(&bytes[size_t(i) * 4], &v, 4);
        } else {
          float v = float(int(rng() % 2001) - 1000) / 250.0f;
          std::memcpy(&bytes[size_t(i) * 4], &v, 4);
        }
      }
      fs::path f = dir / fmt::format("{}_{}.npy", k.file, in.name);
      write_npy(f.string(), in.dtype, in.shape, bytes.data());
      bind += fmt::format(" --in {}={}", in.name, f.string());
    }
    // cumsum does not shard (as in the seed): with --lnc 2 both cores would store the same y,
    // which the checker rightly reports as unordered writes; it is an LNC-1 kernel.
    const bool lnc1_only = std::string(k.file).rfind("cumsum", 0) == 0;
    for (int lnc : {1, 2}) {
      if (lnc == 2 && lnc1_only) continue;
      std::string out, err;
      int rc = sh(fmt::format("{} run kernels_asm/{}.nasm {} --lnc {}{} --check-races", NISA_BINARY,
                              k.file, k.defines, lnc, bind),
                  out, &err);
      EXPECT_EQ(rc, 0) << k.file << " " << k.defines << " --lnc " << lnc << "\n" << err;
      EXPECT_TRUE(no_race_line(err)) << err;
    }
  }
}

// Across the cores of a logical core: a barrier orders what each side did before it, but a
// DMA transfer is ordered only once its signal is awaited.
TEST_F(Debugger, CrossCoreRacesNeedBarrierAndWait) {
  struct Case {
    int barrier, wait;
    bool race;
  };
  for (Case c : {Case{0, 0, true}, Case{1, 0, true}, Case{1, 1, false}}) {
    std::string out, err;
    int rc = sh(fmt::format("{} run {} --lnc 2 -D BARRIER={} -D WAIT={} --check-races", NISA_BINARY,
                            kernel_args("tests/debugger/cross_core.nasm"), c.barrier, c.wait),
                out, &err);
    std::string what = fmt::format("BARRIER={} WAIT={}\n{}", c.barrier, c.wait, err);
    EXPECT_EQ(rc, c.race ? kExitRace : 0) << what;
    EXPECT_EQ(err.find("race on hbm bytes [0x13d640, 0x13d740) (tensor y)") != std::string::npos,
              c.race)
        << what;
    if (c.race) {
      EXPECT_NE(err.find("write by core 0 q0 (transfer of sp[2])"), std::string::npos) << what;
      EXPECT_NE(err.find("write by core 1 q0"), std::string::npos) << what;
    }
  }
}

// A wait for s >= 1 orders only the first signal of s, even when the waiter issues after the
// second one (timing never hides a race).
TEST_F(Debugger, WaitOrdersOnlyTheSignalsItNeeds) {
  for (int exact : {0, 1}) {
    std::string out, err;
    int rc = sh(fmt::format("{} run {} -D EXACT={} --check-races", NISA_BINARY,
                            kernel_args("tests/debugger/sem_prefix.nasm"), exact),
                out, &err);
    EXPECT_EQ(rc, exact ? 0 : kExitRace) << err;
    if (!exact) {
      EXPECT_NE(err.find("race on sbuf partitions 0..127 bytes [0x80, 0x100) (tensor t)"),
                std::string::npos)
          << err;
      EXPECT_NE(err.find("write by dve[1]"), std::string::npos) << err;
      EXPECT_NE(err.find("read by  act[1]"), std::string::npos) << err;
    }
  }
}

// ---- trace --------------------------------------------------------------------------------------

std::vector<std::vector<std::string>> trace_rows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream is(text);
  for (std::string line; std::getline(is, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, '\t');) f.push_back(x);
    rows.push_back(f);
  }
  return rows;
}

TEST_F(Debugger, TraceHasOneRecordPerEvent) {
  fs::path t = dir / "trace.txt";
  std::string out, err;
  ASSERT_EQ(0,
            sh(fmt::format("{} run {} --trace {} --stats", NISA_BINARY, kernel_args(), t.string()),
               out, &err))
      << err;
  std::string text = test::read_file(t);
  ASSERT_EQ(text.rfind("# nisa-trace v1 kernel=cumsum", 0), 0u) << text.substr(0, 200);
  auto rows = trace_rows(text);
  // NP = 2 partition tiles x NF = 2 free tiles: 1 + 2 + 4*2 dve instructions, 4*2 sp triggers,
  // 8 transfers.
  ASSERT_EQ(rows.size(), 11u + 8u + 8u);
  int transfers = 0;
  double last_end = 0;
  for (const auto& r : rows) {
    ASSERT_EQ(r.size(), 10u);
    double start = std::stod(r[0]), end = std::stod(r[1]);
    EXPECT_LE(start, end);
    EXPECT_GE(end, last_end); // completion order
    last_end = end;
    if (r[4][0] == 'q') {
      ++transfers;
      EXPECT_NE(r[8], "-") << "a transfer signals its semaphore";
      EXPECT_NE(r[9], "-") << "a transfer writes";
    }
  }
  EXPECT_EQ(transfers, 8);
  // Independent layout: ones (8 KiB per partition) at 0, carry (4 B, padded to 64) at 0x2000,
  // data at 0x2040; y follows x (130 x 2500 fp32 = 0x13d640 bytes) in HBM, rows 0x2710 apart.
  bool load0 = false, store0 = false;
  for (const auto& r : rows) {
    if (r[4] == "q0" && r[5] == "sp[0]") {
      load0 = true;
      EXPECT_EQ(r[8], "s_in=1");
      EXPECT_EQ(r[9], "sbuf:c0:p0-127:0x2040-0x4040");
    }
    if (r[4] == "q1" && r[5] == "sp[1]") {
      store0 = true;
      EXPECT_EQ(r[8], "s_out=1");
      EXPECT_EQ(r[9], fmt::format("hbm:r0:{:#x}-{:#x}+0x2710x128", 0x13d640, 0x13d640 + 2048 * 4));
    }
  }
  EXPECT_TRUE(load0 && store0);

  // Filters: only dve, and only a time window.
  ASSERT_EQ(0, sh(fmt::format("{} run {} --trace {} --trace-engines dve", NISA_BINARY,
                              kernel_args(), t.string()),
                  out, &err));
  auto dve = trace_rows(test::read_file(t));
  EXPECT_EQ(dve.size(), 11u);
  for (const auto& r : dve) EXPECT_EQ(r[4], "dve");
  ASSERT_EQ(0, sh(fmt::format("{} run {} --trace {} --trace-from 1000 --trace-to 2000", NISA_BINARY,
                              kernel_args(), t.string()),
                  out, &err));
  for (const auto& r : trace_rows(test::read_file(t))) {
    EXPECT_GE(std::stod(r[1]), 1000.0);
    EXPECT_LE(std::stod(r[0]), 2000.0);
  }
  EXPECT_NE(0, sh(fmt::format("{} run {} --trace {} --trace-engines bogus", NISA_BINARY,
                              kernel_args(), t.string()),
                  out, &err));
  EXPECT_NE(err.find("unknown engine 'bogus'"), std::string::npos) << err;
}

// ---- an interactive session through a pseudo-terminal ----------------------------------------

// Reads from the pty into `all` until `want` appears after `from` (or 20 s pass).
void read_until(int fd, const std::string& want, std::string& all, size_t from = 0) {
  for (int i = 0; i < 2000 && all.find(want, from) == std::string::npos; ++i) {
    fd_set s;
    FD_ZERO(&s);
    FD_SET(fd, &s);
    timeval tv{0, 10000};
    if (select(fd + 1, &s, nullptr, nullptr, &tv) > 0) {
      char buf[4096];
      ssize_t n = read(fd, buf, sizeof buf);
      if (n <= 0) break;
      all.append(buf, size_t(n));
    }
  }
}

TEST_F(Debugger, InteractiveSessionThroughAPty) {
  int fd = -1;
  pid_t pid = forkpty(&fd, nullptr, nullptr, nullptr);
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (chdir(NISA_SOURCE_DIR) != 0) _exit(127);
    setenv("HOME", dir.c_str(), 1); // the history file goes to the temporary directory
    setenv("TERM", "dumb", 1);
    std::string x = "x=" + (dir / "x.npy").string();
    execl(NISA_BINARY, NISA_BINARY, "debug", "kernels_asm/cumsum.nasm", "-D", "ROWS=130", "-D",
          "COLS=2500", "--in", x.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  std::string all;
  read_until(fd, "(nisa) ", all);
  ASSERT_NE(all.find("(nisa) "), std::string::npos) << all;
  auto type = [&](const std::string& line, const std::string& want) {
    size_t from = all.size();
    ASSERT_EQ(write(fd, (line + "\n").data(), line.size() + 1), ssize_t(line.size() + 1));
    read_until(fd, want, all, from);
    read_until(fd, "(nisa) ", all, all.find(want, from)); // the rest of the output
    EXPECT_NE(all.find(want, from), std::string::npos) << "after '" << line << "':\n" << all;
  };
  type("break 45", "Breakpoint 1 at cumsum.nasm:45");
  type("run", "Breakpoint 1, cumsum.nasm:45");
  type("info engines", "waiting");
  type("", "waiting"); // an empty line repeats the last command
  type("print carry[0:2, :]", "p1");
  ASSERT_EQ(write(fd, "quit\n", 5), 5);
  int status = 0;
  waitpid(pid, &status, 0);
  close(fd);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << all;
  EXPECT_TRUE(fs::exists(dir / ".nisa_debug_history"));
}

// A DMA that writes what an all_reduce reads, unordered: the race checker sees collectives
// through the observer list of `nisa run --check-races` and of the debugger (the list once
// dropped the collective hook, so only a directly attached checker saw this race).
TEST_F(Debugger, RaceOnACollectiveSourceIsReported) {
  std::vector<float> x(4 * 64);
  std::mt19937 rng(11);
  for (float& v : x) v = float(int(rng() % 2001) - 1000) / 100.0f;
  fs::path xin = dir / "ccx.npy";
  write_npy(xin.string(), DType::fp32, {4, 64}, reinterpret_cast<const uint8_t*>(x.data()));
  const std::string k = "tests/debugger/cc_missing_wait.nasm";
  for (int wait : {0, 1}) {
    std::string out, err;
    int rc = sh(fmt::format("{} run {} -D WAIT={} --ranks 2 --in x={} --check-races", NISA_BINARY,
                            k, wait, xin.string()),
                out, &err);
    if (wait) {
      EXPECT_EQ(rc, 0) << err;
      EXPECT_TRUE(no_race_line(err)) << err;
      continue;
    }
    EXPECT_EQ(rc, kExitRace) << err;
    EXPECT_NE(err.find("race on hbm"), std::string::npos) << err;
    EXPECT_NE(err.find("(tensor a)"), std::string::npos) << err;
    EXPECT_NE(err.find("all_reduce"), std::string::npos) << err;
    EXPECT_NE(err.find("cc_missing_wait.nasm:16:9"), std::string::npos) << err; // the dma
    EXPECT_NE(err.find("cc_missing_wait.nasm:20:9"), std::string::npos) << err; // all_reduce
  }
  // The debugger stops at the race too.
  fs::path script = dir / "cc_race.cmd";
  std::ofstream(script) << "set check-races on\ncontinue\n";
  std::string out, err;
  EXPECT_EQ(sh(fmt::format("{} debug {} -D WAIT=0 --ranks 2 --in x={} --batch -x {}", NISA_BINARY,
                           k, xin.string(), script.string()),
               out, &err),
            kExitRace); // --batch: a race stopped the session
  EXPECT_NE((out + err).find("all_reduce"), std::string::npos) << out << err;
  EXPECT_NE((out + err).find("race on hbm"), std::string::npos) << out << err;
}

} // namespace
} // namespace nisa::interp
