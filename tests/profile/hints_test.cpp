// The profile's hints (docs/profile.md "Hints"): each kind fires on a kernel written here with
// the problem it names, at the line it should name, and stays quiet on the kernel with the
// problem fixed, whose makespan the fix lowers.
#include <gtest/gtest.h>

#include <string>

#include "tests/profile/profile_support.h"

namespace nisa::test {
namespace {

using nlohmann::json;

std::vector<json> hints_of(const Profiled& r, const std::string& kind) {
  std::vector<json> out;
  for (const json& h : r.profile.at("hints"))
    if (h.at("kind") == kind) out.push_back(h);
  return out;
}

Profiled run_profile(const std::string& text, const std::string& name) {
  Profiled r = profile_module(assemble(text), 1, 1, name, false);
  EXPECT_EQ(r.rc, 0) << r.err;
  return r;
}

int64_t makespan(const Profiled& r) { return r.profile.at("makespan_ticks"); }

// Loads and stores from one engine (sp): each store waits for its compute, and the next load
// waits behind it. The fix issues the loads from act.
std::string loads_and_stores(const char* load_engine) {
  return std::string(".kernel ls\n"
                     ".hbm x : fp32[128, 8*512] input\n"
                     ".hbm y : fp32[128, 8*512] output\n"
                     ".sbuf a : fp32[128, 8*512]\n"
                     ".sbuf b : fp32[128, 8*512]\n"
                     ".sem s_in, s_c\n"
                     ".for i in 0 .. 8\n"
                     "  ") +
         load_engine +
         ".dma q0, a[:, i*512 : (i+1)*512], x[:, i*512 : (i+1)*512] @signal(s_in)\n"
         "  sp.dma q1, y[:, i*512 : (i+1)*512], b[:, i*512 : (i+1)*512] @wait(s_c >= i+1)\n"
         ".endfor\n"
         ".for i in 0 .. 8\n"
         "  dve.copy b[:, i*512 : (i+1)*512], a[:, i*512 : (i+1)*512] @wait(s_in >= i+1) "
         "@signal(s_c)\n"
         ".endfor\n";
}

TEST(Hints, TriggerBlocksStreamFiresOnLoadsBehindStores) {
  Profiled bad = run_profile(loads_and_stores("sp"), "tbs_bad");
  auto h = hints_of(bad, "trigger-blocks-stream");
  ASSERT_EQ(h.size(), 1u) << bad.profile.at("hints").dump(1);
  EXPECT_EQ(h[0].at("line"), 9); // the store
  EXPECT_GT(h[0].at("ns").get<double>(), 0);
  Profiled good = run_profile(loads_and_stores("act"), "tbs_good");
  EXPECT_TRUE(hints_of(good, "trigger-blocks-stream").empty()) << good.profile.at("hints").dump(1);
  EXPECT_LT(makespan(good), makespan(bad));
}

// Narrow transfers (16 rows: two of the 16 DMA engines each) on one queue wait for each other
// while the link has room; one queue each, eight run at once (the link's share).
std::string narrow_loads(bool spread) {
  std::string s = ".kernel q\n"
                  ".hbm x : fp32[16, 16*1024] input\n"
                  ".sbuf t : fp32[16, 16*1024]\n";
  if (!spread)
    return s + ".for i in 0 .. 16\n"
               "  sp.dma q0, t[:, i*1024 : (i+1)*1024], x[:, i*1024 : (i+1)*1024]\n"
               ".endfor\n";
  for (int i = 0; i < 16; ++i) {
    const std::string lo = std::to_string(i * 1024), hi = std::to_string((i + 1) * 1024);
    s += "  sp.dma q" + std::to_string(i) + ", t[:, " + lo + ":" + hi + "], x[:, " + lo + ":" + hi +
         "]\n";
  }
  return s;
}

TEST(Hints, QueueSerialisesFiresOnOneQueue) {
  Profiled bad = run_profile(narrow_loads(false), "qs_bad");
  auto h = hints_of(bad, "queue-serialises");
  ASSERT_EQ(h.size(), 1u) << bad.profile.at("hints").dump(1);
  EXPECT_EQ(h[0].at("line"), 5);
  EXPECT_GT(h[0].at("ns").get<double>(), 0);
  Profiled good = run_profile(narrow_loads(true), "qs_good");
  EXPECT_TRUE(hints_of(good, "queue-serialises").empty()) << good.profile.at("hints").dump(1);
  EXPECT_LT(makespan(good), makespan(bad));
}

// One buffer: each load waits for the compute before it, so the queue idles while dve
// computes. Two buffers: the next load runs during the compute.
std::string single_or_double(bool two) {
  std::string s = ".kernel fb\n"
                  ".hbm x : fp32[128, 8*2048] input\n"
                  ".sbuf a0 : fp32[128, 2048]\n"
                  ".sbuf a1 : fp32[128, 2048]\n"
                  ".sbuf b : fp32[128, 2048]\n"
                  ".sem s_in, s_c\n"
                  ".for i in 0 .. 8\n";
  if (two)
    s += "  .if i % 2 == 0\n"
         "    sp.dma q0, a0, x[:, i*2048 : (i+1)*2048] @wait(s_c >= max(0, i-1)) @signal(s_in)\n"
         "    dve.copy b, a0 @wait(s_in >= i+1) @signal(s_c)\n"
         "  .else\n"
         "    sp.dma q0, a1, x[:, i*2048 : (i+1)*2048] @wait(s_c >= max(0, i-1)) @signal(s_in)\n"
         "    dve.copy b, a1 @wait(s_in >= i+1) @signal(s_c)\n"
         "  .endif\n";
  else
    s += "  sp.dma q0, a0, x[:, i*2048 : (i+1)*2048] @wait(s_c >= i) @signal(s_in)\n"
         "  dve.copy b, a0 @wait(s_in >= i+1) @signal(s_c)\n";
  return s + ".endfor\n";
}

TEST(Hints, IdleFeederFiresWithoutDoubleBuffering) {
  Profiled bad = run_profile(single_or_double(false), "if_bad");
  auto h = hints_of(bad, "idle-feeder");
  ASSERT_EQ(h.size(), 1u) << bad.profile.at("hints").dump(1);
  EXPECT_EQ(h[0].at("line"), 9); // the compute
  Profiled good = run_profile(single_or_double(true), "if_good");
  EXPECT_TRUE(hints_of(good, "idle-feeder").empty()) << good.profile.at("hints").dump(1);
  EXPECT_LT(makespan(good), makespan(bad));
}

// dve waits on a semaphore only dve's own earlier instruction signals (program order already
// orders them); the wait of act on the same semaphore orders two engines and stays.
TEST(Hints, RedundantWaitFiresOnlyOnAnOwnEngineSignal) {
  Profiled r = run_profile(".kernel rw\n"
                           ".sbuf a : fp32[128, 512]\n"
                           ".sbuf b : fp32[128, 512]\n"
                           ".sbuf c : fp32[128, 512]\n"
                           ".sem s\n"
                           "  dve.memset a, 1.0 @signal(s)\n"
                           "  dve.copy b, a @wait(s >= 1)\n"
                           "  act.copy c, a @wait(s >= 1)\n",
                           "rw");
  auto h = hints_of(r, "redundant-wait");
  ASSERT_EQ(h.size(), 1u) << r.profile.at("hints").dump(1);
  EXPECT_EQ(h[0].at("line"), 7);
}

TEST(Hints, RedundantWaitQuietWhenTheWaitStalls) {
  Profiled r = run_profile(".kernel rw2\n"
                           ".sbuf a : fp32[128, 512]\n"
                           ".sbuf b : fp32[128, 512]\n"
                           ".sem s\n"
                           "  pool.memset a, 1.0 @signal(s)\n"
                           "  dve.copy b, a @wait(s >= 1)\n",
                           "rw2");
  EXPECT_TRUE(hints_of(r, "redundant-wait").empty()) << r.profile.at("hints").dump(1);
}

// The text report names the hint and the top lines with their source text.
TEST(Hints, TextReportShowsLinesAndHints) {
  Profiled r = run_profile(loads_and_stores("sp"), "tbs_text");
  EXPECT_NE(r.out.find("[trigger-blocks-stream]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dve.copy b[:, i*512"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("critical path:"), std::string::npos) << r.out;
}

} // namespace
} // namespace nisa::test
