// `nisa run --profile` (issue 34, docs/profile.md): the critical path tiles [0, makespan] for
// every kernel of kernels_asm and the per-line and per-unit critical times sum to the makespan;
// a DMA-bound copy and a matmul loop put their path on the unit the cost model says (the
// expected times computed here from interp/core/cost.h, not from the profiler); every what-if
// makespan equals a re-run with --cost-scale; the JSON parses with the documented fields.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "asm/asm.h"
#include "interp/core/cost.h"
#include "interp/run/run.h"
#include "tests/profile/profile_support.h"
#include "tests/support/kernel_cases.h"

namespace nisa::test {
namespace {

using nlohmann::json;

// The documented fields, and the tiling: segments back to back from 0 to the makespan, each
// non-empty; the lines' and the units' critical times add up to the makespan.
void expect_tiles(const json& p) {
  ASSERT_EQ(p.at("schema"), "nisa-profile/1");
  const int64_t ms = p.at("makespan_ticks");
  ASSERT_GT(ms, 0);
  EXPECT_DOUBLE_EQ(p.at("makespan_ns").get<double>(), interp::ticks_to_ns(ms));
  const json& path = p.at("critical_path");
  ASSERT_FALSE(path.empty());
  int64_t t = 0;
  for (const json& s : path) {
    for (const char* k :
         {"start_ns", "end_ns", "kind", "rank", "core", "engine", "queue", "pc", "file", "line"})
      ASSERT_TRUE(s.contains(k)) << k;
    const int64_t a = s.at("start_ticks"), b = s.at("end_ticks");
    ASSERT_EQ(a, t) << s.dump();
    ASSERT_GT(b, a) << s.dump();
    const std::string kind = s.at("kind");
    EXPECT_TRUE(kind == "exec" || kind == "dma" || kind == "cc" || kind == "latency") << kind;
    EXPECT_GT(s.at("line").get<int>(), 0) << s.dump();
    t = b;
  }
  EXPECT_EQ(t, ms);
  int64_t lines = 0, inner = 0, units = 0;
  for (const json& l : p.at("lines")) lines += l.at("critical_ticks").get<int64_t>();
  for (const json& l : p.at("inner_lines")) inner += l.at("critical_ticks").get<int64_t>();
  for (const json& u : p.at("by_unit")) {
    units += u.at("critical_ticks").get<int64_t>();
    EXPECT_LE(u.at("latency_ticks").get<int64_t>(), u.at("critical_ticks").get<int64_t>());
  }
  EXPECT_EQ(lines, ms);
  EXPECT_EQ(inner, ms);
  EXPECT_EQ(units, ms);
  for (const char* k : {"stalls", "hints", "what_if"}) EXPECT_TRUE(p.at(k).is_array()) << k;
}

class ProfileKernels : public ::testing::TestWithParam<kt::KernelCase> {};

TEST_P(ProfileKernels, PathTilesTheMakespan) {
  const kt::KernelCase& c = GetParam();
  kt::Assembled a = kt::assemble_kernel(c.file, c.defines, Target::trn2);
  ASSERT_TRUE(a.ok) << a.diagnostics;
  Profiled r = profile_module(a.module, c.lnc, c.ranks, c.name, false);
  ASSERT_EQ(r.rc, 0) << r.err;
  expect_tiles(r.profile);
  EXPECT_EQ(r.profile.at("makespan_ticks"), r.stats.at("makespan_ticks"));
  EXPECT_EQ(r.profile.at("status"), "ok");
}

INSTANTIATE_TEST_SUITE_P(Every, ProfileKernels, ::testing::ValuesIn(kt::every_kernel()),
                         [](const auto& info) { return info.param.name; });

int64_t unit_critical(const json& p, const std::string& unit) {
  for (const json& u : p.at("by_unit"))
    if (u.at("unit") == unit) return u.at("critical_ticks");
  ADD_FAILURE() << "no unit " << unit;
  return 0;
}

// K loads on one queue: the queue streams them back to back (each transfer's data time is more
// than a trigger's), so the path is the first trigger, K data phases and one fixed latency.
TEST(Profile, DmaBoundCopyIsOnDma) {
  const Module m = assemble(".kernel copy\n"
                            ".hbm x : fp32[128, 16*512] input\n"
                            ".sbuf t : fp32[128, 16*512]\n"
                            ".for i in 0 .. 16\n"
                            "  sp.dma q0, t[:, i*512 : (i+1)*512], x[:, i*512 : (i+1)*512]\n"
                            ".endfor\n");
  const interp::TargetParams& tp = interp::target_params(m.target);
  const Inst& trig = m.streams[int(Engine::sp)][0];
  const int64_t trig_ticks = interp::cost_ticks(trig, tp);
  const interp::DmaTime d =
      interp::dma_transfer(tp, interp::dma_bytes(trig), interp::dma_rows(trig));
  ASSERT_GE(d.data_ticks, trig_ticks); // the queue, not the triggers, sets the pace
  ASSERT_GE(d.data_ticks, d.link_ticks);
  const int64_t expected = trig_ticks + 16 * d.data_ticks + d.latency_ticks;
  Profiled r = profile_module(m, 1, 1, "dmacopy", false);
  ASSERT_EQ(r.rc, 0) << r.err;
  expect_tiles(r.profile);
  EXPECT_EQ(r.profile.at("makespan_ticks").get<int64_t>(), expected);
  const int64_t dma = unit_critical(r.profile, "dma");
  EXPECT_EQ(dma, expected - trig_ticks);
  EXPECT_GE(double(dma), 0.7 * double(expected));
}

// Matmuls over SBUF-resident operands: two memsets, then the pe stream back to back.
TEST(Profile, MatmulLoopIsOnPe) {
  const Module m = assemble(".kernel mm\n"
                            ".sbuf a : bf16[128, 128]\n"
                            ".sbuf b : bf16[128, 512]\n"
                            ".psum p : fp32[128, 512]\n"
                            ".sem s\n"
                            "  dve.memset a, 1.0\n"
                            "  dve.memset b, 2.0 @signal(s)\n"
                            ".for i in 0 .. 24\n"
                            "  pe.matmul p, a, b, acc=overwrite @wait(s >= 1)\n"
                            ".endfor\n");
  const interp::TargetParams& tp = interp::target_params(m.target);
  int64_t dve = 0, pe = 0;
  for (const Inst& in : m.streams[int(Engine::dve)]) dve += interp::cost_ticks(in, tp);
  for (const Inst& in : m.streams[int(Engine::pe)]) pe += interp::cost_ticks(in, tp);
  Profiled r = profile_module(m, 1, 1, "mmloop", false);
  ASSERT_EQ(r.rc, 0) << r.err;
  expect_tiles(r.profile);
  EXPECT_EQ(r.profile.at("makespan_ticks").get<int64_t>(), dve + pe);
  EXPECT_EQ(unit_critical(r.profile, "pe"), pe);
  EXPECT_EQ(unit_critical(r.profile, "dve"), dve);
  EXPECT_GE(double(pe), 0.7 * double(dve + pe));
}

// Each what-if makespan is a re-run's with that unit 2x faster (--cost-scale UNIT=2), on
// kernels that use the engines, the queues and (fg_allgather) the collectives.
TEST(Profile, WhatIfEqualsTheRerunWithCostScale) {
  for (const char* name : {"cumsum_double_buffered", "fg_allgather", "attention_block_tkg"}) {
    SCOPED_TRACE(name);
    kt::KernelCase c;
    for (const kt::KernelCase& k : kt::every_kernel())
      if (k.name == name) c = k;
    kt::Assembled a = kt::assemble_kernel(c.file, c.defines, Target::trn2);
    ASSERT_TRUE(a.ok) << a.diagnostics;
    Profiled r = profile_module(a.module, c.lnc, c.ranks, c.name, true);
    ASSERT_EQ(r.rc, 0) << r.err;
    const json& wi = r.profile.at("what_if");
    ASSERT_EQ(wi.size(), 7u);
    bool faster = false;
    for (const json& w : wi) {
      const std::string unit = w.at("unit");
      EXPECT_EQ(w.at("scale").get<double>(), 2.0);
      const int64_t rerun = makespan_with_scale(a.module, c.lnc, c.ranks, c.name, unit, 2.0);
      EXPECT_EQ(w.at("makespan_ticks").get<int64_t>(), rerun) << unit;
      EXPECT_LE(rerun, r.profile.at("makespan_ticks").get<int64_t>()) << unit;
      faster |= rerun < r.profile.at("makespan_ticks").get<int64_t>();
    }
    EXPECT_TRUE(faster);
    EXPECT_NE(r.out.find("helps most"), std::string::npos) << r.out;
  }
}

// With --timeline the path is a process of its own: one slice per segment, back to back.
TEST(Profile, TimelineShowsThePath) {
  const Module m = assemble(".kernel tl\n"
                            ".hbm x : fp32[128, 4*512] input\n"
                            ".sbuf t : fp32[128, 4*512]\n"
                            ".sem s\n"
                            ".for i in 0 .. 4\n"
                            "  sp.dma q0, t[:, i*512 : (i+1)*512], x[:, i*512 : (i+1)*512] "
                            "@signal(s)\n"
                            "  dve.copy t[:, i*512 : (i+1)*512], t[:, i*512 : (i+1)*512] "
                            "@wait(s >= i+1)\n"
                            ".endfor\n");
  Profiled r = profile_module(m, 1, 1, "timeline", false, false, true);
  ASSERT_EQ(r.rc, 0) << r.err;
  const json& path = r.profile.at("critical_path");
  std::vector<json> slices;
  bool named = false;
  for (const json& e : r.timeline.at("traceEvents")) {
    if (e.value("cat", "") == "critical") slices.push_back(e);
    if (e.value("name", "") == "process_name" && e.at("args").at("name") == "critical path")
      named = true;
  }
  EXPECT_TRUE(named);
  ASSERT_EQ(slices.size(), path.size());
  for (size_t i = 0; i < slices.size(); ++i) {
    EXPECT_NEAR(slices[i].at("ts").get<double>() * 1000, path[i].at("start_ns").get<double>(), 0.1);
    EXPECT_NEAR(slices[i].at("dur").get<double>() * 1000,
                path[i].at("end_ns").get<double>() - path[i].at("start_ns").get<double>(), 0.1);
    EXPECT_EQ(slices[i].at("args").at("kind"), path[i].at("kind"));
  }
}

} // namespace
} // namespace nisa::test
