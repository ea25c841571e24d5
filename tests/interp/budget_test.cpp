// The budget of events per run (SchedOptions::max_steps, `--max-steps`), and the bounded
// memory of what an endless kernel would otherwise grow: the timeline, the trace and the race
// checker (issue 11). Endless kernels are built by hand (`top: ENGINE.br top`); the CLI tests
// run the binary on the same kernels written as .nasm.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

#include "builders.h"
#include "interp/observe/race.h"
#include "interp/observe/trace.h"
#include "interp/run/run.h"
#include "tests/support/test_files.h"

namespace nisa::test {
namespace {

using interp::Machine;
using interp::RunResult;
using interp::RunStatus;
using interp::SchedOptions;

Inst li(Engine e, int rd, int v) {
  Inst in = make_inst(Opcode::li, e);
  in.ops[0].i = rd;
  in.ops[1].i = v;
  return in;
}
Inst add_reg(Engine e, int rd, int rs, int rt) {
  Inst in = make_inst(Opcode::add, e);
  in.ops[0].i = rd;
  in.ops[1].i = rs;
  in.ops[2].i = rt;
  in.ops[2].is_reg = true;
  return in;
}
Inst br(Engine e, int target) {
  Inst in = make_inst(Opcode::br, e);
  in.ops[0].i = target;
  return in;
}

// dve: r0 = 1; top: r1 += r0 @signal(s); br top. Event k (1-based) of dve is the li (k = 1),
// an add (k even) or a br (k odd): after n events of dve r1 = s = n / 2. With `waiter`, pool
// waits for s >= 3 and runs one nop.
struct Endless {
  KB k;
  uint16_t s;
  explicit Endless(bool waiter = true) {
    s = k.sem("s");
    k.add(Engine::dve, li(Engine::dve, 0, 1));
    k.add(Engine::dve, with_signal(add_reg(Engine::dve, 1, 1, 0), s));
    k.add(Engine::dve, br(Engine::dve, 1));
    if (waiter) k.add(Engine::pool, with_wait(nop(Engine::pool), s, 3));
  }
};

TEST(Budget, StopsAnEndlessLoopAfterExactlyMaxStepsEvents) {
  for (uint64_t n : {1ull, 2ull, 7ull, 10000ull, 10001ull, 123457ull}) {
    Endless e(false);
    Machine m(e.k.m, {});
    SchedOptions o;
    o.max_steps = n;
    RunResult r = interp::run(m, o);
    ASSERT_EQ(r.status, RunStatus::budget) << n;
    EXPECT_EQ(r.exit_code, interp::kExitBudget);
    EXPECT_EQ(r.steps, n);
    EXPECT_EQ(m.cores[0].st.regs[int(Engine::dve)][1], int32_t(n / 2)) << n;
    EXPECT_EQ(m.cores[0].st.sems[e.s], uint32_t(n / 2)) << n;
  }
}

TEST(Budget, TheDefaultStopsAnEndlessLoop) {
  Endless e;
  Machine m(e.k.m, {});
  RunResult r = interp::run(m); // default options: kDefaultMaxSteps
  ASSERT_EQ(r.status, RunStatus::budget);
  EXPECT_EQ(r.steps, interp::kDefaultMaxSteps);
}

// A run that needs exactly n events finishes with max_steps = n and is stopped with n - 1.
TEST(Budget, AKernelNeedingExactlyTheBudgetFinishes) {
  KB k;
  uint16_t s = k.sem("s");
  for (int i = 0; i < 5; ++i) k.add(Engine::act, with_signal(nop(Engine::act), s));
  k.add(Engine::sp, with_wait(nop(Engine::sp), s, 5));
  uint64_t need = 0;
  {
    Machine m(k.m, {});
    SchedOptions o;
    o.max_steps = 0; // unlimited
    RunResult r = interp::run(m, o);
    ASSERT_EQ(r.status, RunStatus::ok) << r.report;
    need = r.steps;
    EXPECT_EQ(need, 6u); // five act nops, one sp nop
  }
  for (uint64_t n : {need, need - 1}) {
    Machine m(k.m, {});
    SchedOptions o;
    o.max_steps = n;
    RunResult r = interp::run(m, o);
    EXPECT_EQ(r.status, n == need ? RunStatus::ok : RunStatus::budget) << n << r.report;
  }
}

// The report names each engine: the looping ones with their pc range and source lines, a
// waiting one with its instruction, the finished ones as done.
TEST(Budget, ReportSaysWhereEachEngineLoops) {
  Endless e;
  // sp loops too, over two instructions (pcs 1..2 after a first nop).
  e.k.add(Engine::sp, nop(Engine::sp));
  e.k.add(Engine::sp, nop(Engine::sp));
  e.k.add(Engine::sp, br(Engine::sp, 1));
  // act waits for a value s never has in the window.
  e.k.add(Engine::act, with_wait(nop(Engine::act), e.s, 4000000000u));
  Machine m(e.k.m, {});
  SchedOptions o;
  o.max_steps = 50000;
  RunResult r = interp::run(m, o);
  ASSERT_EQ(r.status, RunStatus::budget);
  const std::string& t = r.report;
  EXPECT_NE(t.find("budget: stopped after 50000 events"), std::string::npos) << t;
  EXPECT_NE(t.find("(--max-steps 50000)"), std::string::npos) << t;
  // Lines are 100 * engine + index + 1 (builders.h); dve = 2, sp = 4, act = 1.
  EXPECT_NE(t.find("dve looping:"), std::string::npos) << t;
  EXPECT_NE(t.find("over dve[1..2] (k.nasm:202 .. k.nasm:203)"), std::string::npos) << t;
  EXPECT_NE(t.find("over sp[1..2] (k.nasm:402 .. k.nasm:403)"), std::string::npos) << t;
  EXPECT_NE(t.find("act waiting since t = 0.0 ns\n    now at k.nasm:101:1: act.nop"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("  pool done\n"), std::string::npos) << t;
  EXPECT_NE(t.find("  pe done\n"), std::string::npos) << t;
}

// Stepping (the debugger's scheduler) stops at the same event as run().
TEST(Budget, SteppingStopsAtTheSameEvent) {
  Endless e;
  Machine m(e.k.m, {});
  SchedOptions o;
  o.max_steps = 999;
  interp::Scheduler s(m, o);
  uint64_t steps = 0;
  while (s.step()) ++steps;
  EXPECT_EQ(s.result().status, RunStatus::budget);
  EXPECT_EQ(s.result().steps, 999u);
  EXPECT_EQ(m.cores[0].st.regs[int(Engine::dve)][1], (999 - 1) / 2);
  EXPECT_FALSE(s.peek().has_value());
}

// ---- bounded memory ---------------------------------------------------------------------------

TEST(Budget, TimelineKeepsTheFirstEventsUpToItsCap) {
  SchedOptions o;
  o.timeline = true;
  o.max_steps = 20000;
  o.max_timeline_events = 0;
  Endless full;
  Machine m1(full.k.m, {});
  RunResult all = interp::run(m1, o);
  ASSERT_EQ(all.timeline_dropped, 0u);
  ASSERT_GT(all.timeline.size(), 20000u); // instructions, semaphore changes, the pool wait
  o.max_timeline_events = 1000;
  Endless capped;
  Machine m2(capped.k.m, {});
  RunResult part = interp::run(m2, o);
  ASSERT_EQ(part.timeline.size(), 1000u);
  EXPECT_EQ(part.timeline_dropped, all.timeline.size() - 1000);
  for (size_t i = 0; i < 1000; ++i) { // the same events, in the same order
    const auto &a = all.timeline[i], &b = part.timeline[i];
    ASSERT_TRUE(a.kind == b.kind && a.core == b.core && a.track == b.track && a.pc == b.pc &&
                a.start == b.start && a.dur == b.dur && a.bytes == b.bytes)
        << i;
  }
}

TEST(Budget, TraceFileStopsAtItsCapOnALineBoundary) {
  auto trace = [](uint64_t cap, uint64_t& dropped) {
    Endless e;
    Machine m(e.k.m, {});
    std::ostringstream os;
    interp::TraceRecorder rec(m, {}, &os, false, cap);
    SchedOptions o;
    o.observer = &rec;
    o.max_steps = 3000;
    EXPECT_EQ(interp::run(m, o).status, RunStatus::budget);
    dropped = rec.dropped();
    EXPECT_EQ(rec.bytes_written(), os.str().size());
    return os.str();
  };
  uint64_t none = 0, some = 0;
  std::string all = trace(0, none), part = trace(4096, some);
  EXPECT_EQ(none, 0u);
  ASSERT_GT(all.size(), 4096u);
  ASSERT_LE(part.size(), 4096u);
  ASSERT_FALSE(part.empty());
  EXPECT_EQ(part.back(), '\n');
  EXPECT_EQ(all.compare(0, part.size(), part), 0); // a prefix of the whole trace
  // Whole lines only: the next line of the full trace would not have fitted.
  size_t next = all.find('\n', part.size());
  EXPECT_GT(next + 1, 4096u);
  size_t lines = size_t(std::count(all.begin(), all.end(), '\n'));
  EXPECT_EQ(some, lines - size_t(std::count(part.begin(), part.end(), '\n')));
}

TEST(Budget, TraceRecorderKeepsTheLastRecords) {
  Endless e;
  Machine m(e.k.m, {});
  interp::TraceRecorder rec(m, {}, nullptr, true, 0, 100);
  SchedOptions o;
  o.observer = &rec;
  o.max_steps = 5000;
  interp::run(m, o);
  ASSERT_EQ(rec.records().size(), 100u);
  // The last record is the 5000th event: dve's event 4999 (pool ran once), an add or a br.
  const interp::TraceRecord& last = rec.records().back();
  EXPECT_EQ(last.engine, Engine::dve);
  EXPECT_EQ(last.pc, 4999 % 2 ? 2 : 1);
}

// The race checker keeps per semaphore one clock per awaited value, not one per signal: its
// state after 2,000 and after 200,000 signals has the same size.
TEST(Budget, RaceCheckerStateDoesNotGrowWithSignals) {
  auto state = [](uint64_t steps) {
    Endless e;
    Machine m(e.k.m, {});
    interp::RaceChecker rc(m);
    SchedOptions o;
    o.observer = &rc;
    o.max_steps = steps;
    EXPECT_EQ(interp::run(m, o).status, RunStatus::budget);
    EXPECT_TRUE(rc.races().empty());
    return rc.state_size();
  };
  size_t small = state(4000), large = state(400000);
  EXPECT_GT(small, 0u);
  EXPECT_EQ(small, large);
}

// ---- the command line -------------------------------------------------------------------------

namespace fs = std::filesystem;

struct BudgetCli : ::testing::Test {
  fs::path dir;
  void SetUp() override {
    dir = fs::temp_directory_path() / ("nisa_budget_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    std::ofstream(p("loop.nasm")) << ".kernel loop\n"
                                     ".sem s\n"
                                     "top:    dve.br top\n"
                                     "        act.nop @signal(s)\n"
                                     "        sp.nop @wait(s >= 1)\n"
                                     "spin:   sp.nop\n"
                                     "        sp.br spin\n";
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string p(const std::string& f) const { return (dir / f).string(); }
  int nisa(const std::string& args, std::string& err) {
    std::string cmd =
        std::string(NISA_BINARY) + " " + args + " 2> " + p("err.txt") + " > " + p("out.txt");
    int rc = std::system(cmd.c_str());
    err = test::read_file(p("err.txt"));
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  }
};

TEST_F(BudgetCli, RunExitsFiveWithTheReport) {
  std::string err;
  ASSERT_EQ(nisa("run " + p("loop.nasm") + " --max-steps 30000", err), 5) << err;
  EXPECT_NE(err.find("budget: stopped after 30000 events"), std::string::npos) << err;
  EXPECT_NE(err.find("dve looping: "), std::string::npos) << err;
  EXPECT_NE(err.find("over dve[0] (" + p("loop.nasm") + ":3)"), std::string::npos) << err;
  EXPECT_NE(err.find("over sp[1..2] (" + p("loop.nasm") + ":6 .. " + p("loop.nasm") + ":7)"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("now at " + p("loop.nasm") + ":3:9: dve.br top"), std::string::npos) << err;
  EXPECT_NE(err.find("  act done"), std::string::npos) << err;
}

TEST_F(BudgetCli, BadMaxStepsValuesAreUsageErrors) {
  std::string err;
  for (const char* v : {"-1", "1x", "", "18446744073709551616", "+5", "0x10"}) {
    EXPECT_EQ(nisa("run " + p("loop.nasm") + " --max-steps '" + v + "'", err), 1) << v;
    EXPECT_NE(err.find("--max-steps"), std::string::npos) << v << ": " << err;
  }
  EXPECT_NE(err.find("expected a count"), std::string::npos) << err;
}

TEST_F(BudgetCli, TimelineAndTraceAreCappedWithAWarning) {
  std::string err;
  ASSERT_EQ(nisa("run " + p("loop.nasm") + " --max-steps 20000 --timeline " + p("t.json") +
                     " --timeline-limit 500 --trace " + p("t.txt") + " --trace-limit 10000",
                 err),
            5)
      << err;
  EXPECT_NE(err.find("the timeline holds the first 500 events (--timeline-limit 500)"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("the trace stops at "), std::string::npos) << err;
  std::string trace = test::read_file(p("t.txt"));
  size_t header = trace.find("\n", trace.find("\n") + 1) + 1; // two lines
  EXPECT_LE(trace.size() - header, 10000u);
  EXPECT_GT(trace.size() - header, 9000u); // lines are ~100 bytes
  EXPECT_EQ(trace.back(), '\n');
  std::string json = test::read_file(p("t.json"));
  EXPECT_EQ(json.substr(json.size() - 3), "]}\n"); // a complete document
}

TEST_F(BudgetCli, DebuggerStopsAtTheBudgetAndBatchExitsFive) {
  std::ofstream(p("s.cmd")) << "run\ninfo engines\n";
  std::string err;
  EXPECT_EQ(
      nisa("debug " + p("loop.nasm") + " --max-steps 2000 -x " + p("s.cmd") + " --batch", err), 5)
      << err;
  std::string out = test::read_file(p("out.txt"));
  EXPECT_NE(out.find("budget: stopped after 2000 events"), std::string::npos) << out;
  EXPECT_NE(out.find("Stopped by the budget"), std::string::npos) << out;
  EXPECT_NE(out.find("dve looping: "), std::string::npos) << out;
}

} // namespace
} // namespace nisa::test
