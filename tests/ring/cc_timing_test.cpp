// The collective unit's timing model (docs/machine.md "Collectives"): a collective's trigger
// costs the cc engine 64 cycles, then its transfer waits on its channel for every rank of the
// group and takes steps x 2 us + link bytes / 40 GB/s (trn2 channel bandwidth: 1.28 TB/s per
// device / 8 cores / 4 channels). Expected figures are computed here from those documented
// numbers, not from the model's code.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "asm/asm.h"
#include "interp/core/machine.h"
#include "interp/core/stats.h"
#include "interp/observe/stats_report.h"
#include "tests/ring/ring_harness.h"

namespace nisa::ring {
namespace {

constexpr double kTicksPerNs = 33.6;
constexpr int64_t kTrigger = 64 * 28; // 64 cc cycles at 1.2 GHz (28 ticks each)
// One ring step on trn2: 2 us + bytes / 40 GB/s, rounded up to whole ticks.
int64_t step_ticks(uint64_t bytes) {
  return int64_t(2000 * kTicksPerNs) + int64_t(std::ceil(double(bytes) * kTicksPerNs / 40.0));
}

const char* kTwoPermutes = R"(
.param CH1 = 1
.hbm x0 : fp32[128, 512] input
.hbm x1 : fp32[128, 512] input
.hbm y0 : fp32[128, 512] output
.hbm y1 : fp32[128, 512] output
.group g = rank_groups(2, 1)
.sem d0, d1
        cc.permute_implicit y0, x0, g, channel=0 @signal(d0)
        cc.permute_implicit y1, x1, g, channel=CH1 @signal(d1)
        sp.nop @wait(d0 >= 1, d1 >= 1)
)";

std::vector<Bytes> per_rank(int ranks, size_t n, int seed) {
  std::vector<Bytes> v;
  for (int r = 0; r < ranks; ++r) {
    Bytes b(n);
    for (size_t i = 0; i < n; ++i) b[i] = uint8_t((i * 131 + size_t(r) * 7 + size_t(seed)) >> 3);
    v.push_back(std::move(b));
  }
  return v;
}

std::string with_param(const char* text, const std::string& from, const std::string& to) {
  std::string s(text);
  s.replace(s.find(from), from.size(), to);
  return s;
}

TEST(CcTiming, ChannelsMoveInParallelAndOneChannelSerialises) {
  const uint64_t bytes = 128 * 512 * 4;
  RunOpts o;
  o.ranks = 2;
  o.timeline = true;
  std::map<std::string, std::vector<Bytes>> in{{"x0", per_rank(2, bytes, 1)},
                                               {"x1", per_rank(2, bytes, 2)}};
  // Two channels: both transfers overlap; the second starts after the second trigger.
  RankRun two = run_ranks(assemble_text(kTwoPermutes), o, in);
  ASSERT_EQ(two.status, interp::RunStatus::ok) << two.report;
  constexpr int64_t kSpNop = 4 * 28; // the final sp.nop: 4 ctrl cycles
  EXPECT_EQ(two.stats.makespan_ticks, 2 * kTrigger + step_ticks(bytes) + kSpNop);
  // One channel: the second transfer waits for the first.
  RankRun one = run_ranks(assemble_text(with_param(kTwoPermutes, "CH1 = 1", "CH1 = 0")), o, in);
  ASSERT_EQ(one.status, interp::RunStatus::ok) << one.report;
  EXPECT_EQ(one.stats.makespan_ticks, kTrigger + 2 * step_ticks(bytes) + kSpNop);
  // The ring moved the predecessor's data (rank 0 gets rank 1's, rank 1 gets rank 0's).
  EXPECT_EQ(two.out["y0"][0], in["x0"][1]);
  EXPECT_EQ(two.out["y1"][1], in["x1"][0]);
  // Stats and timeline show each channel: one transfer each, the link bytes, busy time.
  for (int core = 0; core < 2; ++core) {
    const interp::CoreStats& cs = two.stats.cores[size_t(core)];
    for (int ch = 0; ch < 2; ++ch) {
      EXPECT_EQ(cs.chan[ch].transfers, 1u);
      EXPECT_EQ(cs.chan[ch].bytes, bytes);
      EXPECT_EQ(cs.chan[ch].busy_ticks, step_ticks(bytes));
    }
    EXPECT_EQ(one.stats.cores[size_t(core)].chan[0].transfers, 2u);
  }
  int cc_slices = 0;
  for (const interp::TimelineEvent& e : two.timeline)
    if (e.kind == interp::TimelineEvent::cc) {
      ++cc_slices;
      EXPECT_GE(e.track, interp::kTrackChan0);
      EXPECT_EQ(e.dur, step_ticks(bytes));
    }
  EXPECT_EQ(cc_slices, 4); // 2 ranks x 2 channels
}

// --cost-scale cc=F (docs/machine.md "Cost scale (what-if)"): the cc engine's trigger and the
// link time of each transfer are divided by F (rounded up), the 2 us step latency stays; the
// data is the same. Expected figures from the documented rule, not from the model's code.
TEST(CcTiming, CostScaleDividesTheTriggerAndTheLinkTimeNotTheStep) {
  const uint64_t bytes = 128 * 512 * 4;
  const int64_t link = int64_t(std::ceil(double(bytes) * kTicksPerNs / 40.0)); // unscaled
  std::map<std::string, std::vector<Bytes>> in{{"x0", per_rank(2, bytes, 1)},
                                               {"x1", per_rank(2, bytes, 2)}};
  const Module one_channel = assemble_text(with_param(kTwoPermutes, "CH1 = 1", "CH1 = 0"));
  RunOpts o;
  o.ranks = 2;
  RankRun base = run_ranks(one_channel, o, in);
  ASSERT_EQ(base.status, interp::RunStatus::ok) << base.report;
  constexpr int64_t kSpNop = 4 * 28;
  for (double f : {2.0, 3.0, 0.5}) {
    SCOPED_TRACE(f);
    auto scaled = [f](int64_t t) { return int64_t(std::ceil(double(t) / f)); }; // exact here
    o.cost_scale = interp::kNoCostScale;
    o.cost_scale[int(interp::CostUnit::cc)] = f;
    RankRun r = run_ranks(one_channel, o, in);
    ASSERT_EQ(r.status, interp::RunStatus::ok) << r.report;
    const int64_t xfer = int64_t(2000 * kTicksPerNs) + scaled(link);
    EXPECT_EQ(r.stats.makespan_ticks, scaled(kTrigger) + 2 * xfer + kSpNop);
    for (int core = 0; core < 2; ++core) {
      const interp::CoreStats& cs = r.stats.cores[size_t(core)];
      EXPECT_EQ(cs.chan[0].busy_ticks, 2 * xfer);
      EXPECT_EQ(cs.eng[int(Engine::cc)].busy_ticks, 2 * scaled(kTrigger));
      EXPECT_EQ(cs.eng[int(Engine::sp)].busy_ticks, kSpNop); // another unit: unchanged
    }
    EXPECT_EQ(r.out, base.out);
  }
}

// A permute cannot start before every rank triggered it: rank 1's consumer holds the
// destination (a long memset before it signals `free`), so rank 0's transfer waits too.
TEST(CcTiming, PermuteWaitsForTheConsumerToRelease) {
  const char* text = R"(
.hbm x : fp32[128, 64] input
.hbm y : fp32[128, 64] output
.sbuf big : fp32[128, 8192]
.group g = rank_groups(2, 1)
.sem free, done
        dve.sysreg r1, rank_id
        dve.bz r1, skip
        dve.memset big, 0.0
skip:
        dve.nop @signal(free)
        cc.permute_implicit y, x, g @wait(free >= 1) @signal(done)
        sp.nop @wait(done >= 1)
)";
  RunOpts o;
  o.ranks = 2;
  o.timeline = true;
  RankRun r = run_ranks(assemble_text(text), o, {{"x", per_rank(2, 128 * 64 * 4, 3)}});
  ASSERT_EQ(r.status, interp::RunStatus::ok) << r.report;
  int64_t memset_end = 0, trigger_end1 = 0, begin0 = -1, begin1 = -1;
  for (const interp::TimelineEvent& e : r.timeline) {
    if (e.kind == interp::TimelineEvent::inst && e.core == 1 && e.engine == Engine::dve &&
        e.dur > 1000)
      memset_end = e.start + e.dur;
    if (e.kind == interp::TimelineEvent::inst && e.core == 1 && e.engine == Engine::cc)
      trigger_end1 = e.start + e.dur;
    if (e.kind == interp::TimelineEvent::cc) (e.core == 0 ? begin0 : begin1) = e.start;
  }
  // memset of 8192 fp32 per partition: 60 + 8192 DVE cycles (35 ticks each).
  EXPECT_GE(memset_end, (60 + 8192) * 35);
  EXPECT_EQ(trigger_end1, memset_end + 4 * 35 + kTrigger); // dve.nop (4 cycles), trigger
  EXPECT_EQ(begin0, trigger_end1);
  EXPECT_EQ(begin1, trigger_end1);
  EXPECT_EQ(r.stats.makespan_ticks, trigger_end1 + step_ticks(128 * 64 * 4) + 4 * 28);
}

TEST(CcTiming, RankThatNeverTriggersIsADeadlock) {
  const char* text = R"(
.hbm x : fp32[4, 8] input
.hbm y : fp32[4, 8] output
.group g = rank_groups(2, 1)
.sem done
        cc.sysreg r1, rank_id
        cc.bnz r1, skip
        cc.permute_implicit y, x, g, channel=2 @signal(done)
skip:
        sp.nop
)";
  RunOpts o;
  o.ranks = 2;
  RankRun r = run_ranks(assemble_text(text), o, {{"x", per_rank(2, 128, 4)}});
  EXPECT_EQ(r.status, interp::RunStatus::deadlock);
  EXPECT_NE(r.report.find("rank 0 channel 2: collective from rank 0 cc[2]"), std::string::npos)
      << r.report;
  EXPECT_NE(r.report.find("waits for rank 1 (never triggered)"), std::string::npos) << r.report;
}

TEST(CcTiming, ChannelOutsideTheUnitFaults) {
  RunOpts o;
  o.ranks = 2;
  RankRun r =
      run_ranks(assemble_text(with_param(kTwoPermutes, "CH1 = 1", "CH1 = 4")), o,
                {{"x0", per_rank(2, 128 * 512 * 4, 1)}, {"x1", per_rank(2, 128 * 512 * 4, 2)}});
  EXPECT_EQ(r.status, interp::RunStatus::fault);
  EXPECT_NE(r.report.find("collective channel 4 does not exist (0..3)"), std::string::npos)
      << r.report;
}

// all_gather over a group of 4 is 3 ring steps, each moving one rank's chunk.
TEST(CcTiming, AllGatherIsRingSteps) {
  const char* text = R"(
.hbm x : bf16[64, 256] input
.hbm y : bf16[256, 256] output
.group g = rank_groups(4, 1)
        cc.all_gather y, x, g
)";
  RunOpts o;
  o.ranks = 4;
  RankRun r = run_ranks(assemble_text(text), o, {{"x", per_rank(4, 64 * 256 * 2, 5)}});
  ASSERT_EQ(r.status, interp::RunStatus::ok) << r.report;
  const uint64_t chunk = 64 * 256 * 2;
  EXPECT_EQ(r.stats.cores[0].chan[0].busy_ticks,
            3 * int64_t(2000 * kTicksPerNs) + int64_t(std::ceil(3.0 * chunk * kTicksPerNs / 40)));
  for (int rank = 0; rank < 4; ++rank)
    for (int k = 0; k < 4; ++k)
      EXPECT_TRUE(std::equal(r.out["y"][rank].begin() + k * chunk,
                             r.out["y"][rank].begin() + (k + 1) * chunk,
                             per_rank(4, chunk, 5)[k].begin()));
}

TEST(CcTiming, StatsPrintTheChannels) {
  RunOpts o;
  o.ranks = 2;
  Module m = assemble_text(kTwoPermutes);
  interp::MachineOptions mo;
  mo.ranks = 2;
  interp::Machine machine(m, mo);
  interp::RunResult r = interp::run(machine);
  ASSERT_EQ(r.status, interp::RunStatus::ok) << r.report;
  std::ostringstream os;
  interp::print_stats(os, machine, r.stats);
  EXPECT_NE(os.str().find("cc ch"), std::string::npos) << os.str();
  EXPECT_NE(os.str().find("ch1"), std::string::npos) << os.str();
}

TEST(RankGroups, ConsecutiveRanksAndBadArguments) {
  Module m = assemble_text(".group g = rank_groups(8, 2)\n        sp.nop\n");
  ASSERT_EQ(m.groups.size(), 1u);
  EXPECT_EQ(m.groups[0].groups, (std::vector<std::vector<uint32_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  nasm::AsmResult bad = nasm::assemble_string(".group g = rank_groups(6, 4)\n", "b.nasm");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.diagnostics_text().find("g >= 1 dividing n"), std::string::npos)
      << bad.diagnostics_text();
}

} // namespace
} // namespace nisa::ring

namespace nisa::ring {
namespace {

size_t rss_bytes() {
  std::ifstream f("/proc/self/statm");
  size_t pages = 0, resident = 0;
  f >> pages >> resident;
  return resident * size_t(sysconf(_SC_PAGESIZE));
}

// --ranks 64 --lnc 2 is 128 cores: their 128 x 30 MiB of SBUF + PSUM must not be resident;
// a core costs only the pages it touches, and fresh memory still reads as poison.
TEST(CcMachine, SixtyFourRanksTwoCoresCostOnlyWhatTheyTouch) {
  const char* text = R"(
.hbm x : fp32[2, 64] input
.hbm y : fp32[2, 64] output
.sbuf a : fp32[2, 64]
.sbuf b : fp32[2, 64]
.group g = rank_groups(64, 1)
.sem in, out
        sp.sysreg r1, program_id
        sp.dma q0, a, x @signal(in)
        cc.permute_implicit b, a, g @wait(in >= 1) @signal(out)
        sp.dma q1, y, b @wait(out >= 1)
)";
  Module m = assemble_text(text);
  size_t before = rss_bytes();
  interp::MachineOptions mo;
  mo.ranks = 64;
  mo.lnc = 2;
  interp::Machine machine(m, mo);
  std::vector<Bytes> xs = per_rank(64, 2 * 64 * 4, 9);
  for (int r = 0; r < 64; ++r) machine.write_tensor(*machine.find_tensor("x"), xs[r].data(), r);
  interp::RunResult res = interp::run(machine);
  ASSERT_EQ(res.status, interp::RunStatus::ok) << res.report;
  size_t grown = rss_bytes() - std::min(before, rss_bytes());
  EXPECT_LT(grown, size_t(150) << 20) << "resident growth " << (grown >> 20) << " MiB";
  // Both cores of every rank ran the ring (each core its own channel 0 ring).
  const TensorDecl& y = *machine.find_tensor("y");
  for (int r = 0; r < 64; ++r)
    EXPECT_EQ(0, std::memcmp(machine.hbm_tensor(r, y), xs[(r + 63) % 64].data(), xs[0].size()));
  // Untouched SBUF reads as poison; reset() makes touched SBUF poison again.
  const interp::CoreSlot& c5 = machine.cores[5];
  EXPECT_EQ(c5.sbuf.data()[c5.sbuf.size() - 1], interp::kPoisonByte);
  EXPECT_NE(c5.sbuf.data()[0], interp::kPoisonByte); // `a` was written
  machine.reset();
  EXPECT_EQ(c5.sbuf.data()[0], interp::kPoisonByte);
}

// --ranks goes up to kMaxRanks (128, the top of the seeds' TP envelope); one more is an error
// that names the limit, before anything is allocated.
TEST(CcMachine, RankCountLimit) {
  Module m = assemble_text(".hbm x : fp32[2, 4] input\n        sp.nop\n");
  interp::MachineOptions mo;
  mo.ranks = interp::kMaxRanks;
  mo.lnc = 2;
  interp::Machine big(m, mo);
  EXPECT_EQ(big.num_cores(), 2 * interp::kMaxRanks);
  for (int bad : {0, -1, interp::kMaxRanks + 1}) {
    mo.ranks = bad;
    try {
      interp::Machine machine(m, mo);
      ADD_FAILURE() << "--ranks " << bad << " accepted";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("--ranks must be in 1..128"), std::string::npos)
          << e.what();
    }
  }
}

} // namespace
} // namespace nisa::ring
