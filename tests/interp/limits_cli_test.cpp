// Issue 33 ("Reliability III"), `nisa run` through the binary, each finding under the resource
// limit that exposed it (setrlimit in the forked child before exec): an endless kernel with
// --trace and --timeline ends within a minute and 200 MB of files; running out of memory is
// exit 1 with "out of memory: WHAT (N bytes ...)", never a signal; the --check-uninit shadows
// spill with the HBM; numeric options are range-checked in the user's terms.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/test_files.h"

namespace nisa::test {
namespace {

namespace fs = std::filesystem;

// dve loops forever; act signals once; sp waits for it, then spins.
constexpr const char* kLoop = ".kernel loop\n"
                              ".sem s\n"
                              "top:    dve.br top\n"
                              "        act.nop @signal(s)\n"
                              "        sp.nop @wait(s >= 1)\n"
                              "spin:   sp.nop\n"
                              "        sp.br spin\n";

struct Limit {
  int resource;
  rlim_t bytes;
};

struct Outcome {
  int code = -1;   // exit code, -1 if killed by a signal
  int signal = 0;  // the signal that ended it
  double secs = 0; // wall time
  std::string err; // stderr
};

struct LimitsCli : ::testing::Test {
  fs::path dir;
  void SetUp() override {
    dir = fs::temp_directory_path() / ("nisa_limits_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    write("loop.nasm", kLoop);
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string p(const std::string& f) const { return (dir / f).string(); }
  void write(const std::string& f, const std::string& text) {
    std::ofstream(p(f), std::ios::binary) << text;
  }
  // Runs `nisa args...` in the test's directory with the limits set in the child.
  Outcome nisa(const std::vector<std::string>& args, const std::vector<Limit>& limits = {}) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string out = p("out.txt"), err = p("err.txt");
    const pid_t pid = fork();
    if (pid == 0) {
      if (chdir(dir.c_str()) != 0) _exit(120);
      for (const Limit& l : limits) {
        rlimit r{l.bytes, l.bytes};
        if (setrlimit(l.resource, &r) != 0) _exit(121);
      }
      const int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0) _exit(122);
      std::vector<char*> argv{const_cast<char*>(NISA_BINARY)};
      for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(NISA_BINARY, argv.data());
      _exit(123);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    Outcome r;
    r.secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (WIFEXITED(status)) r.code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
    r.err = read_file(err);
    return r;
  }
  uint64_t size(const std::string& f) const { return fs::file_size(p(f)); }
};

constexpr rlim_t kMiB = rlim_t(1) << 20;

// Before: 3m45s and 2.6 GB of files (the trace stopped at 1 GiB, the timeline at 8M events,
// the run at 100M events). Now the budget is 10M events with a trace or a timeline, the trace
// stops at 64 MiB and the timeline at 400,000 events: exit 5 (the budget), each cap reported
// with the option that raises it, under a 200 MB file-size limit and a minute of CPU.
TEST_F(LimitsCli, EndlessKernelWithTraceAndTimelineEndsWithinTheCaps) {
  // The bound is the release build's; an ASan/UBSan build runs the same 10M events several
  // times slower (make asan: 100 s under load), so it gets ten times the time.
#if defined(__SANITIZE_ADDRESS__)
  constexpr int kSecs = 600;
#else
  constexpr int kSecs = 60;
#endif
  Outcome r = nisa({"run", "loop.nasm", "--trace", "t.txt", "--timeline", "t.json"},
                   {{RLIMIT_FSIZE, 200 * kMiB}, {RLIMIT_CPU, kSecs}});
  ASSERT_EQ(r.code, 5) << "signal " << r.signal << ": " << r.err;
  EXPECT_LT(r.secs, double(kSecs));
  EXPECT_NE(r.err.find("budget: stopped after 10000000 events"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(--max-steps 10000000)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nisa run: with --trace, --timeline or --profile the budget is 10000000 "
                       "events by default (100000000 without); --max-steps N raises it (0: no "
                       "limit)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("t.txt: the trace stops at "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" bytes (--trace-limit 67108864); "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(--trace-limit BYTES raises the cap, 0: no limit;"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("t.json: the timeline holds the first 400000 events (--timeline-limit "
                       "400000); "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("(--timeline-limit N raises the cap, 0: no limit)"), std::string::npos)
      << r.err;
  const std::string trace = read_file(p("t.txt"));
  const size_t header = trace.find('\n', trace.find('\n') + 1) + 1;
  EXPECT_LE(trace.size() - header, uint64_t(64) << 20);
  EXPECT_GT(trace.size() - header, uint64_t(63) << 20);
  EXPECT_EQ(trace.back(), '\n'); // whole lines
  EXPECT_LT(size("t.txt") + size("t.json"), uint64_t(200) * 1000 * 1000);
  const std::string json = read_file(p("t.json"));
  EXPECT_EQ(json.substr(json.size() - 4), "\n]}\n");
  // An explicit --max-steps is kept.
  r = nisa({"run", "loop.nasm", "--trace", "t.txt", "--max-steps", "20000"});
  EXPECT_EQ(r.code, 5) << r.err;
  EXPECT_NE(r.err.find("budget: stopped after 20000 events"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("by default"), std::string::npos) << r.err;
}

// Before: --timeline-limit 0 on an endless kernel grew the timeline until an allocation failed
// (an abort under a 4 GB address-space limit, a bare "out of memory" at best). Now the message
// names the timeline and the bytes asked for; with the default cap the same run ends at the
// budget in a few MB.
TEST_F(LimitsCli, AnUnlimitedTimelineRunsOutOfMemoryWithAMessage) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "ASan reserves terabytes of address space";
#endif
  const std::vector<Limit> as{{RLIMIT_AS, 320 * kMiB}};
  Outcome r = nisa({"run", "loop.nasm", "--timeline", "t.json", "--timeline-limit", "0",
                    "--max-steps", "0", "--threads", "1"},
                   as);
  EXPECT_EQ(r.signal, 0);
  ASSERT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("nisa run: out of memory: the --timeline events: "), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(" recorded, room for "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("asked for (--timeline-limit 0; a smaller --timeline-limit N or "
                       "--max-steps N stops sooner) ("),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(" MiB)"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(p("t.json")));
  r = nisa({"run", "loop.nasm", "--timeline", "t.json", "--threads", "1"}, as);
  EXPECT_EQ(r.code, 5) << r.err;
  EXPECT_LT(size("t.json"), uint64_t(100) << 20);
}

// An engine that issues DMAs faster than its queue moves them, in a loop, queues transfers
// without bound: the run's state is named when it no longer fits.
TEST_F(LimitsCli, QueuedTransfersOfAnEndlessDmaLoopAreNamed) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "ASan reserves terabytes of address space";
#endif
  write("dmaloop.nasm", ".kernel dmaloop\n.hbm y : fp32[128, 512]\n.sbuf t : fp32[128, 512]\n"
                        ".sem s\n"
                        "top:    sp.dma q0, y, t @signal(s)\n"
                        "        sp.nop @wait(s >= 1)\n"
                        "        sp.br top\n");
  Outcome r = nisa({"run", "dmaloop.nasm", "--max-steps", "0", "--threads", "1"},
                   {{RLIMIT_AS, 300 * kMiB}});
  EXPECT_EQ(r.signal, 0);
  ASSERT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("nisa run: out of memory: the run's state after "), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(" DMA transfers queued and "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--max-steps N stops it sooner) ("), std::string::npos) << r.err;
}

// A machine memory that does not fit is named with its size, not "std::bad_alloc".
TEST_F(LimitsCli, MachineMemoryThatDoesNotFitIsNamed) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "ASan reserves terabytes of address space";
#endif
  write("big.nasm", ".kernel big\n.hbm y : fp32[128, 262144] output\n" // 128 MiB per rank
                    ".sbuf t : fp32[128, 16]\n.sem s\n"
                    "        dve.memset t, 1.0 @signal(s)\n"
                    "        sp.dma q0, y[0:128, 0:16], t @wait(s >= 1)\n");
  Outcome r = nisa({"run", "big.nasm", "--ranks", "8", "--hbm-spill", "off", "--threads", "1"},
                   {{RLIMIT_AS, 600 * kMiB}});
  EXPECT_EQ(r.signal, 0);
  ASSERT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("nisa run: error: out of memory: rank "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'s HBM (134217728 bytes = 128.0 MiB)"), std::string::npos) << r.err;
}

// Before: --check-uninit kept a shadow byte per HBM byte in a std::vector whatever
// --hbm-spill said, and failed with "error: std::bad_alloc". Now the HBM's shadow is spilled
// with it (a shared file mapping, outside RLIMIT_DATA, which counts private memory) and costs
// nothing until written; in memory, a shadow that does not fit is named.
TEST_F(LimitsCli, CheckUninitShadowsSpillWithTheHbm) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "ASan's shadow memory counts against the data limit";
#endif
  fs::create_directories(p("spill"));
  // 256 MiB of HBM; the kernel writes 8 KiB of it and reads that back.
  write("wide.nasm", ".kernel wide\n.hbm y : fp32[128, 524288] output\n"
                     ".hbm z : fp32[128, 16] output\n"
                     ".sbuf t : fp32[128, 16]\n.sbuf u : fp32[128, 16]\n.sem s\n.sem d\n"
                     "        dve.memset t, 2.0 @signal(s)\n"
                     "        sp.dma q0, y[0:128, 0:16], t @wait(s >= 1) @signal(d)\n"
                     "        sp.dma q1, u, y[0:128, 0:16] @wait(d >= 1) @signal(s)\n"
                     "        act.dma q2, z, u @wait(s >= 2)\n");
  const std::vector<Limit> data{{RLIMIT_DATA, 192 * kMiB}};
  Outcome r = nisa({"run", "wide.nasm", "--check-uninit", "--hbm-spill", "on", "--spill-dir",
                    "spill", "--threads", "1", "--out", "z=z.npy"},
                   data);
  ASSERT_EQ(r.code, 0) << "signal " << r.signal << ": " << r.err;
  const std::string z = read_file(p("z.npy"));
  ASSERT_EQ(z.size(), 128u + 128 * 16 * 4);
  EXPECT_EQ(z.substr(128, 4), std::string("\0\0\0@", 4)); // 2.0f
  EXPECT_TRUE(fs::is_empty(p("spill")));
  // A read of the never-written part still faults through the spilled shadow.
  write("bad.nasm", ".kernel bad\n.hbm y : fp32[128, 524288]\n.sbuf u : fp32[128, 16]\n"
                    "        sp.dma q1, u, y[0:128, 16:32]\n");
  r = nisa({"run", "bad.nasm", "--check-uninit", "--hbm-spill", "on", "--spill-dir", "spill",
            "--threads", "1"},
           data);
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("reads memory never written"), std::string::npos) << r.err;
  // In memory: the 128 MiB HBM fits the limit, its shadow does not.
  write("half.nasm", ".kernel half\n.hbm y : fp32[128, 262144]\n.sbuf u : fp32[128, 16]\n"
                     "        sp.dma q1, u, y[0:128, 0:16]\n");
  r = nisa({"run", "half.nasm", "--check-uninit", "--hbm-spill", "off", "--threads", "1"},
           {{RLIMIT_DATA, 224 * kMiB}});
  EXPECT_EQ(r.signal, 0);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("nisa run: error: out of memory: the --check-uninit shadow of rank 0's "
                       "HBM (134217728 bytes = 128.0 MiB)"),
            std::string::npos)
      << r.err;
}

// Before: `run --ranks -1` said "cannot create std::vector larger than max_size()". Every
// numeric option of run and debug is checked before anything is sized from it (under a small
// address-space limit: nothing large is allocated first).
TEST_F(LimitsCli, NumericOptionsAreRangeChecked) {
#if defined(__SANITIZE_ADDRESS__)
  const std::vector<Limit> as;
#else
  const std::vector<Limit> as{{RLIMIT_AS, 512 * kMiB}};
#endif
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"run", "loop.nasm", "--ranks", "-1"}, "nisa run: --ranks -1: expected 1..128"},
      {{"run", "loop.nasm", "--ranks", "0"}, "nisa run: --ranks 0: expected 1..128"},
      {{"run", "loop.nasm", "--ranks", "129"}, "nisa run: --ranks 129: expected 1..128"},
      {{"debug", "loop.nasm", "--ranks", "-1", "--batch"},
       "nisa debug: --ranks -1: expected 1..128"},
      {{"run", "loop.nasm", "--lnc", "3"}, "nisa run: --lnc 3: expected 1 or 2"},
      {{"run", "loop.nasm", "--lnc", "-2"}, "nisa run: --lnc -2: expected 1 or 2"},
      {{"run", "loop.nasm", "--seed", "-1"}, "nisa run: --seed '-1': expected a count"},
      {{"run", "loop.nasm", "--threads", "0"}, "nisa run: --threads 0: expected 1.."},
      {{"run", "loop.nasm", "--max-steps", "-5"}, "nisa run: --max-steps '-5': expected a count"},
      {{"run", "loop.nasm", "--trace", "t.txt", "--trace-from=-5"},
       "nisa run: --trace-from -5: expected a modelled time in ns from 0 to 1e+15"},
      {{"run", "loop.nasm", "--trace", "t.txt", "--trace-to", "nan"},
       "nisa run: --trace-to nan: expected a modelled time in ns"},
      {{"run", "loop.nasm", "--trace", "t.txt", "--trace-to", "1e300"},
       "nisa run: --trace-to 1e+300: expected a modelled time in ns"},
      {{"run", "loop.nasm", "--trace", "t.txt", "--trace-from", "10", "--trace-to", "5"},
       "nisa run: --trace-to 5 is before --trace-from 10: the trace would be empty"},
      {{"run", "loop.nasm", "--trace", "t.txt", "--trace-engines", ""},
       "nisa run: --trace-engines '' names no engine or queue"},
      {{"run", "loop.nasm", "--trace", "t.txt", "--trace-engines", "q99"},
       "nisa run: --trace-engines: unknown engine 'q99'"},
      {{"run", "loop.nasm", "--trace-from", "10"},
       "nisa run: --trace-from, --trace-to, --trace-engines and --trace-limit apply to a trace: "
       "add --trace FILE"},
      {{"run", "loop.nasm", "--timeline-limit", "10"},
       "nisa run: --timeline-limit applies to a timeline: add --timeline FILE"},
      {{"run", "loop.nasm", "--trace", "t.txt", "--trace-limit", "-1"},
       "nisa run: --trace-limit '-1': expected a count"},
  };
  for (const Case& c : cases) {
    Outcome r = nisa(c.args, as);
    EXPECT_EQ(r.code, 1) << c.args[2] << ": " << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_LT(r.err.size(), 300u) << r.err;
  }
  EXPECT_FALSE(fs::exists(p("t.txt")));
  // In range they run (to the budget).
  Outcome r = nisa({"run",        "loop.nasm", "--ranks",         "2",
                    "--lnc",      "2",         "--seed",          "7",
                    "--schedule", "random",    "--max-steps",     "1000",
                    "--trace",    "t.txt",     "--trace-from",    "0",
                    "--trace-to", "1e15",      "--trace-engines", "dve"},
                   as);
  EXPECT_EQ(r.code, 5) << r.err;
}

} // namespace
} // namespace nisa::test
