// The debugger's model (interp/debug/model.h), through its structs: stops with their reason
// and event, frames with the expansion chain, registers, semaphores, engines and queues, and
// values, checked against what the kernels must compute (the prefix sums of cumsum.nasm
// written out here, the constants of a small inline kernel).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include <fmt/format.h>

#include "asm/asm.h"
#include "interp/debug/model.h"
#include "interp/debug/session.h"
#include "interp/run/npy.h"

namespace nisa::interp::debug {
namespace {

namespace fs = std::filesystem;
constexpr int kRows = 130, kCols = 2500;

class ModelTest : public ::testing::Test {
protected:
  static fs::path dir;
  static std::vector<float> x; // cumsum's input: k/8 - 2, k in 0..31 (its sums are exact)
  static void SetUpTestSuite() {
    dir = fs::temp_directory_path() / fmt::format("nisa_model_{}", getpid());
    fs::create_directories(dir);
    std::mt19937 rng(99);
    x.resize(size_t(kRows) * kCols);
    for (float& v : x) v = float(rng() % 32) / 8.0f - 2.0f;
    write_npy((dir / "x.npy").string(), DType::fp32, {kRows, kCols},
              reinterpret_cast<const uint8_t*>(x.data()));
  }
  static void TearDownTestSuite() { fs::remove_all(dir); }
  // The inclusive prefix sum of row r up to column c, in fp32 left to right.
  static float prefix(int r, int c) {
    float acc = 0;
    for (int k = 0; k <= c; ++k) acc += x[size_t(r) * kCols + size_t(k)];
    return acc;
  }

public:
  static Module assemble(const std::string& path, nasm::AsmOptions ao = {}) {
    nasm::AsmResult r = nasm::assemble_file(path, ao);
    EXPECT_TRUE(r.ok()) << r.diagnostics_text();
    return std::move(*r.module);
  }

protected:
  // A kernel of the source tree with ROWS and COLS of the input.
  static Module sized(const std::string& kernel) {
    nasm::AsmOptions ao;
    ao.defines = {{"ROWS", std::to_string(kRows)}, {"COLS", std::to_string(kCols)}};
    return assemble(std::string(NISA_SOURCE_DIR) + "/" + kernel, ao);
  }
  static RunConfig config() {
    RunConfig cfg;
    cfg.inputs = {{"x", (dir / "x.npy").string()}};
    return cfg;
  }
};
fs::path ModelTest::dir;
std::vector<float> ModelTest::x;

std::string base(const std::string& p) { return fs::path(p).filename().string(); }

TEST_F(ModelTest, CumsumStopsFramesSemaphoresAndValues) {
  Module mod = sized("kernels_asm/cumsum.nasm");
  Model m(mod, config());
  const int file = m.file_index("cumsum.nasm");
  ASSERT_GE(file, 0);
  BreakpointInfo b = m.add_line_breakpoint(file, 45);
  EXPECT_EQ(b.id, 1);
  EXPECT_EQ(b.instructions, 4u); // the scan of NP = 2 partition tiles x NF = 2 free tiles
  EXPECT_EQ(b.what, "cumsum.nasm:45");

  // The first scan, before it completes: the first load has signalled s_in, nothing else.
  Stop s = m.run();
  ASSERT_EQ(s.reason, Stop::Reason::breakpoint);
  ASSERT_TRUE(s.breakpoint && s.next);
  EXPECT_EQ(s.breakpoint->id, 1);
  EXPECT_EQ(s.next->engine, Engine::dve);
  EXPECT_EQ(s.next->pc, 2);
  EXPECT_EQ(s.next->dma_queue, -1);
  std::vector<Frame> fr = m.frames(s.next->engine, s.next->pc);
  ASSERT_EQ(fr.size(), 3u);
  EXPECT_EQ(fr[0].title(), "dve[2]");
  ASSERT_TRUE(fr[0].loc);
  EXPECT_EQ(base(fr[0].loc->file), "cumsum.nasm");
  EXPECT_EQ(fr[0].loc->line, 45u);
  EXPECT_EQ(fr[0].loc->col, 9u);
  EXPECT_EQ(fr[1].kind, Frame::for_iteration);
  EXPECT_EQ(fr[1].title(), "in .for iteration f=0");
  EXPECT_EQ(fr[1].loc->line, 41u);
  EXPECT_EQ(fr[2].title(), "in .for iteration p=0");
  EXPECT_EQ(fr[2].loc->line, 38u);
  std::map<std::string, uint32_t> sems;
  for (const SemValue& v : m.semaphores(0)) sems[v.name] = v.value;
  EXPECT_EQ(sems, (std::map<std::string, uint32_t>{{"s_in", 1}, {"s_scan", 0}, {"s_out", 0}}));
  // data holds the first tile of x; carry is zero.
  std::vector<double> data = m.read("data[0:2, 0:4]").numbers();
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 4; ++c)
      EXPECT_EQ(data[size_t(r * 4 + c)], x[size_t(r) * kCols + size_t(c)]);
  for (double v : m.read("carry").numbers()) EXPECT_EQ(v, 0.0);
  // The engines: dve runs the scan, sp's store of the first tile waits for it.
  bool sp_waits = false;
  for (const Agent& g : m.agents()) {
    if (g.state.queue >= 0 || g.state.engine != Engine::sp) continue;
    ASSERT_EQ(g.state.state, AgentState::waiting);
    ASSERT_EQ(g.unmet.size(), 1u);
    EXPECT_EQ(g.unmet[0].sem, "s_scan");
    EXPECT_EQ(g.unmet[0].value, 1u);
    EXPECT_EQ(g.unmet[0].current, 0u);
    ASSERT_TRUE(g.loc);
    EXPECT_EQ(g.loc->line, 46u); // sp.dma q1, y[...], res[...] @wait(s_scan >= I+1)
    sp_waits = true;
  }
  EXPECT_TRUE(sp_waits);

  // A watchpoint on y: the store of the first tile (before the second scan, which waits for
  // it) writes the prefix sums.
  BreakpointInfo w = m.add_watchpoint("y[0:2, 0:4]");
  EXPECT_EQ(w.id, 2);
  EXPECT_EQ(w.kind, BreakpointInfo::watch);
  EXPECT_EQ(w.bytes, 32u);
  s = m.resume();
  ASSERT_EQ(s.reason, Stop::Reason::watchpoint);
  ASSERT_EQ(s.watches.size(), 1u);
  const WatchHit& h = s.watches[0];
  EXPECT_EQ(h.id, 2);
  EXPECT_EQ(h.by.dma_queue, 1);
  EXPECT_EQ(h.by.engine, Engine::sp);
  EXPECT_EQ(h.by.pc, 1);
  EXPECT_EQ(h.changed, 8u);
  EXPECT_EQ(h.elements, 8u);
  ASSERT_EQ(h.changes.size(), 8u);
  EXPECT_EQ(h.changes[5].index, (std::vector<int64_t>{1, 1}));
  float after;
  std::memcpy(&after, h.changes[5].after.data(), 4);
  EXPECT_EQ(after, prefix(1, 1));
  // The same values through a raw read of HBM at y's address (row 1 starts kCols floats on).
  const TensorDecl* y = m.machine().find_tensor("y");
  MemRef ref = parse_memref(fmt::format("hbm:{:#x}", y->address + kCols * 4));
  std::vector<uint8_t> raw = m.read_memory(ref, 8);
  float row1[2];
  std::memcpy(row1, raw.data(), 8);
  EXPECT_EQ(row1[0], prefix(1, 0));
  EXPECT_EQ(row1[1], prefix(1, 1));
  EXPECT_THROW(m.read_memory(parse_memref("hbm:0xffffffffff"), 4), Error);

  // The second scan (f = 1): carry holds each row's sum over the first tile (2048 columns),
  // res the first tile's prefix sums.
  s = m.resume();
  ASSERT_EQ(s.reason, Stop::Reason::breakpoint);
  const int64_t second_scan = s.steps;
  EXPECT_EQ(s.next->pc, 4);
  EXPECT_EQ(m.frames(Engine::dve, 4)[1].title(), "in .for iteration f=1");
  std::vector<double> carry = m.read("carry").numbers();
  ASSERT_EQ(carry.size(), 128u);
  for (int r = 0; r < 128; ++r) ASSERT_EQ(carry[size_t(r)], prefix(r, 2047)) << "row " << r;
  std::vector<double> res = m.read("res[0:2, 0:4]").numbers();
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 4; ++c) EXPECT_EQ(res[size_t(r * 4 + c)], prefix(r, c));

  // Breakpoints by id.
  EXPECT_EQ(m.breakpoints().size(), 2u);
  EXPECT_THROW(m.delete_breakpoint(7), Error);
  m.delete_breakpoints();
  EXPECT_TRUE(m.breakpoints().empty());

  // The end: y holds every prefix sum.
  s = m.resume();
  ASSERT_EQ(s.reason, Stop::Reason::finished);
  ASSERT_TRUE(s.end && !s.next);
  EXPECT_EQ(s.end->status, RunStatus::ok);
  EXPECT_EQ(m.exit_code(), 0);
  std::vector<double> all = m.read("y").numbers();
  ASSERT_EQ(all.size(), size_t(kRows) * kCols);
  for (int r = 0; r < kRows; ++r) {
    float acc = 0;
    for (int c = 0; c < kCols; ++c) {
      acc += x[size_t(r) * kCols + size_t(c)];
      ASSERT_EQ(all[size_t(r) * kCols + size_t(c)], acc) << r << ", " << c;
    }
  }
  EXPECT_EQ(m.resume().reason, Stop::Reason::not_running);

  // Back to the previous stop (the second scan): carry is the first tile's sum again.
  s = m.reverse_continue();
  EXPECT_EQ(s.origin, Stop::Origin::reverse);
  EXPECT_EQ(s.steps, second_scan);
  EXPECT_EQ(m.read("carry[5, 0]").number(0), prefix(5, 2047));
  EXPECT_EQ(m.read("y[1, 1]").number(0), prefix(1, 1));
}

const char* kSmall = R"(.kernel small
.hbm x : fp32[4, 8] input
.hbm y : fp32[4, 8] output
.sbuf t : fp32[4, 8]
.sem s_in, s_c, s_d
.macro fill V
        dve.memset t, V
.endm
        sp.dma q0, t, x @signal(s_in)
        dve.li r3, 5  @wait(s_in >= 1)
        fill 2.0
        dve.br mid
mid:    dve.memset t, 3.0 @signal(s_c)
        sp.dma q1, y, t @wait(s_c >= 1) @signal(s_d)
        pool.memset t, 4.0 @wait(s_d >= 1)
)";

// kSmall assembled from dir/small.nasm, with x (`in`) bound from dir/small_x.npy.
Module small_kernel(const fs::path& dir, const std::vector<float>& in, RunConfig& cfg) {
  fs::path src = dir / "small.nasm";
  std::ofstream(src) << kSmall;
  write_npy((dir / "small_x.npy").string(), DType::fp32, {4, 8},
            reinterpret_cast<const uint8_t*>(in.data()));
  cfg.inputs = {{"x", (dir / "small_x.npy").string()}};
  return ModelTest::assemble(src.string());
}

TEST_F(ModelTest, MacroFramesRegistersLabelsAndTheConsoleAgree) {
  std::vector<float> in(32);
  for (int i = 0; i < 32; ++i) in[size_t(i)] = float(i);
  RunConfig cfg;
  Module mod = small_kernel(dir, in, cfg);
  std::ostringstream out;
  Session console(mod, cfg, out);
  Model& m = console.model();
  EXPECT_EQ(m.add_breakpoint("7").id, 1);   // the macro body: every expansion
  EXPECT_EQ(m.add_breakpoint("mid").id, 2); // a label
  EXPECT_THROW(m.add_breakpoint("nosuch"), Error);
  EXPECT_THROW(m.add_breakpoint("7", "r3 == nosuch"), Error);

  Stop s = m.run();
  ASSERT_EQ(s.reason, Stop::Reason::breakpoint);
  EXPECT_EQ(s.breakpoint->id, 1);
  EXPECT_EQ(s.next->engine, Engine::dve);
  EXPECT_EQ(s.next->pc, 1);
  std::vector<Frame> fr = m.frames(Engine::dve, 1);
  ASSERT_EQ(fr.size(), 2u);
  EXPECT_EQ(fr[0].loc->line, 7u);
  EXPECT_EQ(fr[1].kind, Frame::macro);
  EXPECT_EQ(fr[1].title(), "in expansion of macro fill");
  EXPECT_EQ(fr[1].loc->line, 11u);
  EXPECT_EQ(m.registers(0, Engine::dve)[3], 5);
  EXPECT_EQ(m.registers(0, Engine::dve)[0], 0);
  EXPECT_EQ(m.value_of("dve.r3"), 5);
  EXPECT_EQ(m.value_of("r3"), 5); // of the next event's engine
  EXPECT_EQ(m.value_of("s_in"), 1);
  SliceValues t = m.read("t");
  for (size_t k = 0; k < 32; ++k) EXPECT_EQ(t.number(k), double(k));
  // The console prints these same structs.
  EXPECT_EQ(console.printer().where_text(fr),
            fmt::format("#0  dve[1] at {0}:7:9\n#1  in expansion of macro fill at {0}:11:9\n",
                        (dir / "small.nasm").string()));
  console.execute("print t[3, 6:8]");
  EXPECT_NE(out.str().find("p3   30   31"), std::string::npos) << out.str();

  // A register change is part of the state, and replayed by reverse execution.
  m.set_register(Engine::dve, 7, -12);
  s = m.resume();
  ASSERT_EQ(s.reason, Stop::Reason::breakpoint);
  EXPECT_EQ(s.breakpoint->id, 2);
  EXPECT_EQ(s.next->pc, 3);
  EXPECT_EQ(m.location(Engine::dve, 3)->line, 13u);
  for (double v : m.read("t").numbers()) EXPECT_EQ(v, 2.0); // after fill 2.0
  s = m.reverse_step(1);
  EXPECT_EQ(s.origin, Stop::Origin::replay);
  EXPECT_EQ(m.registers(0, Engine::dve)[7], -12);

  m.delete_breakpoints();
  s = m.resume();
  ASSERT_EQ(s.reason, Stop::Reason::finished);
  for (double v : m.read("t").numbers()) EXPECT_EQ(v, 4.0); // pool's memset last
  for (double v : m.read("y").numbers()) EXPECT_EQ(v, 3.0); // stored after the 3.0 memset
  std::map<std::string, uint32_t> sems;
  for (const SemValue& v : m.semaphores(0)) sems[v.name] = v.value;
  EXPECT_EQ(sems, (std::map<std::string, uint32_t>{{"s_in", 1}, {"s_c", 1}, {"s_d", 1}}));
}

// `next` on an engine's last instruction stops once the engine has finished (at another
// engine's event), not at the end of the kernel; so does `step ENGINE N` when the engine has
// fewer than N instructions left.
TEST_F(ModelTest, NextOnAnEnginesLastInstructionStopsWhenTheEngineFinishes) {
  RunConfig cfg;
  Module mod = small_kernel(dir, std::vector<float>(32, 1.0f), cfg);
  std::ostringstream out;
  Session console(mod, cfg, out);
  Model& m = console.model();
  m.add_breakpoint("mid"); // dve[3], dve's last instruction
  Stop s = m.run();
  ASSERT_EQ(s.reason, Stop::Reason::breakpoint);
  ASSERT_EQ(s.next->engine, Engine::dve);
  ASSERT_EQ(s.next->pc, 3);
  m.delete_breakpoints();
  s = m.next();
  EXPECT_EQ(s.reason, Stop::Reason::step);
  EXPECT_FALSE(s.end) << "next ran the kernel to its end";
  ASSERT_TRUE(s.engine_done);
  EXPECT_EQ(s.engine_done->engine, Engine::dve);
  EXPECT_EQ(s.engine_done->pc, 3);
  ASSERT_TRUE(s.next);
  EXPECT_NE(s.next->engine, Engine::dve);
  // dve's memset 3.0 ran; the store of t and pool's memset 4.0 after it did not.
  for (double v : m.read("t").numbers()) EXPECT_EQ(v, 3.0);
  for (const Agent& g : m.agents()) {
    if (g.state.queue >= 0) continue;
    const bool done = g.state.state == AgentState::done;
    EXPECT_EQ(done, g.state.engine == Engine::dve || g.state.engine == Engine::pe ||
                        g.state.engine == Engine::act || g.state.engine == Engine::cc)
        << name_of(g.state.engine); // pe, act, cc: no instructions; sp and pool: still to run
  }
  s = m.resume();
  EXPECT_EQ(s.reason, Stop::Reason::finished);
  for (double v : m.read("t").numbers()) EXPECT_EQ(v, 4.0);

  // step dve 10 from the start: dve has 4 instructions; the step stops after the fourth.
  m.restart();
  s = m.step(int(Engine::dve), 10);
  EXPECT_FALSE(s.end);
  ASSERT_TRUE(s.engine_done);
  EXPECT_EQ(s.engine_done->pc, 3);
  EXPECT_NE(console.printer().stop_text(s).find("dve has finished: dve[3] was its last "
                                                "instruction.\n"),
            std::string::npos)
      << console.printer().stop_text(s);
}

TEST_F(ModelTest, DeadlockIsTheStopReason) {
  Module mod = sized("tests/debugger/deadlock.nasm");
  Model m(mod, config());
  Stop s = m.run();
  EXPECT_EQ(s.reason, Stop::Reason::deadlock);
  ASSERT_TRUE(s.end);
  EXPECT_EQ(s.end->exit_code, 2);
  EXPECT_FALSE(s.end->report.empty());
  EXPECT_FALSE(s.next);
  bool waiting = false;
  for (const Agent& g : m.agents()) waiting |= !g.unmet.empty();
  EXPECT_TRUE(waiting);
  EXPECT_EQ(m.resume().reason, Stop::Reason::not_running);
}

} // namespace
} // namespace nisa::interp::debug
