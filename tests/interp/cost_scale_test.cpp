// --cost-scale UNIT=F (docs/machine.md "Cost scale (what-if)"): a unit's modelled durations
// divided by F, rounded up (scaled(t) = t == 0 ? 0 : max(1, ceil(t / F))). Expected figures
// are computed here from the rule and the unscaled run's own durations (or the documented
// DMA formula), not from the model's scaling code; outputs never change; F = 1 is the model.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "asm/asm.h"
#include "builders.h"
#include "interp/core/cost.h"
#include "interp/core/cost_scale.h"
#include "interp/run/npy.h"
#include "tests/support/test_files.h"

namespace nisa::test {
namespace {

using interp::CostScale;
using interp::CostUnit;
using interp::kNoCostScale;

Module assemble(const std::string& text) {
  nasm::AsmResult r = nasm::assemble_string(text, "k.nasm");
  if (!r.ok()) ADD_FAILURE() << r.diagnostics_text();
  return r.ok() ? std::move(*r.module) : Module{};
}

CostScale one_unit(CostUnit u, double f) {
  CostScale s = kNoCostScale;
  s[int(u)] = f;
  return s;
}

struct Ran {
  interp::RunResult r;
  std::map<std::string, std::vector<uint8_t>> out; // every output tensor's bytes
};

Ran run_scaled(const Module& mod, const CostScale& s, int lnc = 1,
               const std::map<std::string, std::vector<uint8_t>>& in = {}) {
  interp::MachineOptions mo;
  mo.target = mod.target;
  mo.lnc = lnc;
  mo.cost_scale = s;
  interp::Machine m(mod, mo);
  for (const auto& [name, bytes] : in) m.write_tensor(*m.find_tensor(name), bytes.data());
  interp::SchedOptions so;
  so.timeline = true;
  Ran ran;
  ran.r = interp::run(m, so);
  for (const TensorDecl& t : mod.tensors)
    if (t.role == Role::output) ran.out[t.name] = hbm_bytes(m, t);
  return ran;
}

// ---- the rule ----------------------------------------------------------------------------------

// The least n >= 1 with n * f >= t, in exact integer arithmetic: f = m * 2^e.
int64_t exact_scaled(int64_t t, double f) {
  if (t == 0) return 0;
  int e = 0;
  const double mant = std::frexp(f, &e); // f = mant * 2^e, mant in [0.5, 1)
  const __int128 m = __int128(std::ldexp(mant, 53));
  e -= 53; // f = m * 2^e exactly
  // n * m * 2^e >= t  <=>  n * m >= t * 2^-e (e < 0 here for every f tested)
  EXPECT_LT(e, 0);
  const __int128 rhs = __int128(t) << -e;
  const __int128 n = (rhs + m - 1) / m;
  return std::max<int64_t>(1, int64_t(n));
}

TEST(CostScale, ScaleTicksIsTheExactRoundedUpQuotient) {
  std::mt19937_64 rng(7);
  std::vector<int64_t> ts{0, 1, 2, 3, 4, 5, 13, 14, 35, 1792, 67200, 220201, 1 << 20};
  for (int i = 0; i < 2000; ++i) ts.push_back(int64_t(rng() % (uint64_t(1) << 40)));
  for (int64_t t : ts) {
    SCOPED_TRACE(t);
    EXPECT_EQ(interp::scale_ticks(t, 1.0), t); // F = 1 is the identity
    EXPECT_EQ(interp::scale_ticks(t, 2.0), t == 0 ? 0 : (t + 1) / 2);
    EXPECT_EQ(interp::scale_ticks(t, 3.0), t == 0 ? 0 : (t + 2) / 3);
    EXPECT_EQ(interp::scale_ticks(t, 0.5), 2 * t);
    // Factors whose quotients round: 0.1 and 0.3 are not binary fractions.
    for (double f : {0.1, 0.3, 0.7, 1.1, 1.5, 2.5, 7.0, 1000.0, 1e6, 1e-3})
      EXPECT_EQ(interp::scale_ticks(t, f), exact_scaled(t, f)) << f;
  }
  EXPECT_EQ(interp::scale_ticks(int64_t(1) << 62, 1.0), int64_t(1) << 62);
  EXPECT_EQ(interp::scale_ticks(1, 1e6), 1); // never below one tick
  // The double 0.3 is a little below 3/10, so 10 x 0.3 < 3: 11, though 3.0 / 0.3 rounds to 10.0
  // (the naive ceil(t / f) is 10).
  EXPECT_EQ(3.0 / 0.3, 10.0);
  EXPECT_EQ(interp::scale_ticks(3, 0.3), 11);
  EXPECT_EQ(interp::scale_ticks(7, 0.7), 11);
  EXPECT_EQ(interp::scale_ticks(10, 3.0), 4);
}

TEST(CostScale, UnitNamesAreOneTableAndTheEnginesComeFirst) {
  EXPECT_EQ(interp::kCostUnitNames.size(), size_t(interp::kNumCostUnits));
  for (int u = 0; u < interp::kNumCostUnits; ++u)
    EXPECT_EQ(interp::find_cost_unit(interp::kCostUnitNames[u]), CostUnit(u));
  for (int e = 0; e < kNumEngines; ++e)
    EXPECT_EQ(interp::cost_unit_name(interp::cost_unit_of(Engine(e))), name_of(Engine(e)));
  EXPECT_EQ(interp::find_cost_unit("dma"), CostUnit::dma);
  EXPECT_EQ(interp::find_cost_unit("q0"), std::nullopt);
  EXPECT_EQ(interp::cost_unit_list(), "pe, act, dve, pool, sp, cc, dma");
  EXPECT_FALSE(interp::cost_scale_error(2.0));
  for (double f : {0.0, -1.0, double(NAN), double(INFINITY), 1e-4, 2e6})
    EXPECT_TRUE(interp::cost_scale_error(f));
  // The library checks the options too (a caller other than the CLI).
  interp::MachineOptions mo;
  mo.cost_scale[int(CostUnit::pe)] = 0;
  try {
    interp::Machine m(assemble(".kernel k\n  sp.nop\n"), mo);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--cost-scale pe=0: expected a finite factor"),
              std::string::npos)
        << e.what();
  }
}

// ---- engines -----------------------------------------------------------------------------------

// One kernel per engine: only that engine works (no DMA, no waits), so its instructions run
// back to back from 0 and the makespan is its busy time. Sizes vary so that latencies do.
struct EngineKernel {
  Engine engine;
  const char* text;
};
const EngineKernel kEngineKernels[] = {
    {Engine::pe, R"(.kernel k
.sbuf a : bf16[128, 512]
.sbuf f : fp32[128, 512]
.sbuf w : bf16[128, 128]
.sbuf wf : fp32[128, 128]
.psum p : fp32[128, 512]
.for i in 0 .. 5
        pe.matmul p[0:128, 0:37 + 67 * i], w, a[0:128, 0:37 + 67 * i], acc=overwrite
.endfor
        pe.matmul p[0:128, 0:101], wf, f[0:128, 0:101], acc=overwrite
)"},
    {Engine::act, R"(.kernel k
.sbuf a : fp32[128, 1024]
.sbuf b : fp32[128, 1024]
.for i in 0 .. 5
        act.activation b[:, 0:37 + 151 * i], a[:, 0:37 + 151 * i], func=copy
.endfor
        act.copy b[:, 0:3], a[:, 0:3]
)"},
    {Engine::dve, R"(.kernel k
.sbuf a : fp32[128, 1024]
.sbuf b : fp32[128, 1024]
.for i in 0 .. 5
        dve.tensor_tensor b[:, 0:37 + 151 * i], a[:, 0:37 + 151 * i], a[:, 0:37 + 151 * i], op=add
        dve.copy b[:, 0:1 + 2 * i], a[:, 0:1 + 2 * i]
.endfor
)"},
    {Engine::pool, R"(.kernel k
.sbuf a : fp32[128, 1024]
.sbuf b : fp32[128, 1024]
.for i in 0 .. 5
        pool.tensor_tensor b[:, 0:37 + 151 * i], a[:, 0:37 + 151 * i], a[:, 0:37 + 151 * i], op=add
        pool.memset b[:, 0:5 + i], 1.0
.endfor
)"},
    {Engine::sp, R"(.kernel k
        sp.li r1, 9
top:    sp.sub r1, r1, 1
        sp.bnz r1, top
        sp.nop
)"},
    {Engine::cc, R"(.kernel k
        cc.li r1, 3
top:    cc.sub r1, r1, 1
        cc.bnz r1, top
)"},
};

TEST(CostScale, EachEngineUnitDividesItsLatenciesBusyTimeAndMakespan) {
  const interp::TargetParams& tp = interp::target_params(Target::trn2);
  for (const EngineKernel& k : kEngineKernels) {
    const int e = int(k.engine);
    SCOPED_TRACE(name_of(k.engine));
    const Module mod = assemble(k.text);
    const Ran base = run_scaled(mod, kNoCostScale);
    ASSERT_EQ(base.r.status, interp::RunStatus::ok) << base.r.report;
    // The unscaled run's instruction durations on the engine (timeline), which the model
    // prices as cost_ticks: back to back, so they add up to the makespan.
    std::vector<int64_t> lat;
    for (const interp::TimelineEvent& ev : base.r.timeline)
      if (ev.kind == interp::TimelineEvent::inst && int(ev.engine) == e) lat.push_back(ev.dur);
    ASSERT_GE(lat.size(), 4u);
    int64_t sum = 0;
    for (int64_t d : lat) sum += d;
    const interp::EngineStats& b = base.r.stats.cores[0].eng[e];
    ASSERT_EQ(b.busy_ticks, sum);
    ASSERT_EQ(base.r.stats.makespan_ticks, sum);
    for (int f : {2, 3}) {
      SCOPED_TRACE(f);
      int64_t want = 0, want_cycles = 0;
      for (int64_t d : lat) {
        want += (d + f - 1) / f;
        want_cycles += (d / tp.ticks_per_cycle[e] + f - 1) / f;
      }
      const Ran r = run_scaled(mod, one_unit(interp::cost_unit_of(k.engine), f));
      ASSERT_EQ(r.r.status, interp::RunStatus::ok) << r.r.report;
      const interp::EngineStats& s = r.r.stats.cores[0].eng[e];
      EXPECT_EQ(s.insts, b.insts);
      EXPECT_EQ(s.busy_ticks, want);
      EXPECT_EQ(s.cycles, want_cycles);
      EXPECT_EQ(r.r.stats.makespan_ticks, want);
      EXPECT_LT(r.r.stats.makespan_ticks, base.r.stats.makespan_ticks);
    }
    // Every other unit scaled: this engine's figures are those of the model.
    CostScale others = kNoCostScale;
    for (double& x : others) x = 2;
    others[int(interp::cost_unit_of(k.engine))] = 1;
    const Ran o = run_scaled(mod, others);
    EXPECT_EQ(o.r.stats.cores[0].eng[e].busy_ticks, b.busy_ticks);
    EXPECT_EQ(o.r.stats.cores[0].eng[e].cycles, b.cycles);
    EXPECT_EQ(o.r.stats.makespan_ticks, base.r.stats.makespan_ticks);
  }
}

// send_recv (--lnc 2): the issuing engine pays its trigger, then one transfer time (data +
// fixed latency) on both cores; dma=F divides the data time only.
TEST(CostScale, SendRecvTransferFollowsTheDmaUnit) {
  const Module mod = assemble(R"(.kernel k
.sbuf a : fp32[128, 512]
.sbuf b : fp32[128, 512]
        pool.send_recv b, a, 5
)");
  const interp::TargetParams& tp = interp::target_params(Target::trn2);
  const uint64_t bytes = 128 * 512 * 4;
  const int64_t trigger = 64 * tp.ticks_per_cycle[int(Engine::pool)];
  const int64_t data = int64_t((bytes * interp::kTickMHz + 16 * tp.dma_engine_mbps - 1) /
                               (16 * uint64_t(tp.dma_engine_mbps))); // 16 engines for 128 rows
  const int64_t latency = interp::ns_to_ticks(tp.dma_latency_ns);
  const Ran base = run_scaled(mod, kNoCostScale, 2);
  ASSERT_EQ(base.r.status, interp::RunStatus::ok) << base.r.report;
  ASSERT_EQ(base.r.stats.makespan_ticks, trigger + data + latency);
  for (int f : {2, 3}) {
    const Ran r = run_scaled(mod, one_unit(CostUnit::dma, f), 2);
    ASSERT_EQ(r.r.status, interp::RunStatus::ok) << r.r.report;
    const int64_t want = trigger + (data + f - 1) / f + latency;
    EXPECT_EQ(r.r.stats.makespan_ticks, want) << f;
    for (int c = 0; c < 2; ++c)
      EXPECT_EQ(r.r.stats.cores[size_t(c)].eng[int(Engine::pool)].busy_ticks, want) << f;
  }
}

// ---- the command line --------------------------------------------------------------------------

// A kernel that uses every unit but cc's channels (cc_timing_test covers them): a DMA in, DVE,
// ACT and POOL elementwise, a PE matmul, ACT out of PSUM, two DMAs out, a cc nop.
constexpr const char* kMix = R"(.kernel mix
.hbm x : fp32[128, 256] input
.hbm y : fp32[128, 256] output
.hbm z : fp32[128, 128] output
.sbuf a : fp32[128, 256]
.sbuf b : fp32[128, 256]
.sbuf c : fp32[128, 256]
.sbuf o : fp32[128, 128]
.psum p : fp32[128, 128]
.sem ld, s1, s2, s3, s5, s6
        sp.dma q0, a, x @signal(ld)
        dve.tensor_scalar b, a, op0=multiply, operand0=2.0 @wait(ld >= 1) @signal(s1)
        act.activation c, b, func=copy @wait(s1 >= 1) @signal(s2)
        pool.tensor_tensor c, c, a, op=add @wait(s2 >= 1) @signal(s3)
        sp.dma q1, y, c @wait(s3 >= 1)
        pe.matmul p, c[:, 0:128], a[:, 0:128], acc=overwrite @wait(s3 >= 1) @signal(s5)
        act.activation o, p, func=copy @wait(s5 >= 1) @signal(s6)
        act.dma q2, z, o @wait(s6 >= 1)
        cc.nop
)";

// The DMA-bound copy: x -> SBUF on q0, then SBUF -> y on q1 (1 MiB each way).
constexpr const char* kCopy = R"(.kernel copy
.hbm x : fp32[128, 2048] input
.hbm y : fp32[128, 2048] output
.sbuf t : fp32[128, 2048]
.sem s
        sp.dma q0, t, x @signal(s)
        act.dma q1, y, t @wait(s >= 1)
)";

struct CostScaleCli : ::testing::Test {
  std::filesystem::path dir;
  void SetUp() override {
    dir = std::filesystem::temp_directory_path() / ("nisa_cost_scale_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    std::ofstream(p("mix.nasm")) << kMix;
    std::ofstream(p("copy.nasm")) << kCopy;
    std::vector<float> x = random_floats(128 * 256, 5), x2 = random_floats(128 * 2048, 6);
    interp::write_npy(p("x.npy"), DType::fp32, {128, 256}, as_bytes(x).data());
    interp::write_npy(p("x2.npy"), DType::fp32, {128, 2048}, as_bytes(x2).data());
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
  std::string p(const std::string& f) const { return (dir / f).string(); }
  // Runs nisa with the arguments; returns the exit code, stderr in `err`.
  int nisa(const std::string& args, std::string& err) {
    const std::string cmd =
        std::string(NISA_BINARY) + " " + args + " 2> " + p("err.txt") + " > " + p("out.txt");
    const int rc = std::system(cmd.c_str());
    err = read_file(p("err.txt"));
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  }
  // `nisa run mix.nasm` with `opts`: the stats JSON (wall time masked) and both outputs.
  std::string run_mix(const std::string& opts) {
    std::string err;
    EXPECT_EQ(nisa("run " + p("mix.nasm") + " --in x=" + p("x.npy") + " --out y=" + p("y.npy") +
                       " --out z=" + p("z.npy") + " --stats-json " + p("s.json") + " " + opts,
                   err),
              0)
        << err;
    return read_file(p("y.npy")) + read_file(p("z.npy"));
  }
  std::string stats(const std::string& file) {
    std::string s = read_file(p(file));
    const size_t at = s.find("\"wall_seconds\"");
    return at == std::string::npos ? s : s.erase(at, s.find('\n', at) - at);
  }
};

int64_t json_int(const std::string& json, const std::string& key) {
  const size_t at = json.find("\"" + key + "\": ");
  if (at == std::string::npos) return -1;
  return std::stoll(json.substr(at + key.size() + 4));
}

TEST_F(CostScaleCli, FactorOneForEveryUnitIsTheModel) {
  const std::string out = run_mix("");
  const std::string plain = stats("s.json");
  std::string all_ones;
  for (std::string_view u : interp::kCostUnitNames)
    all_ones += " --cost-scale " + std::string(u) + "=1";
  EXPECT_EQ(run_mix(all_ones), out);
  EXPECT_EQ(stats("s.json"), plain); // no "cost_scale" key either: bit for bit the model
  EXPECT_EQ(run_mix("--cost-scale dma=1.0 --cost-scale pe=1e0"), out);
  EXPECT_EQ(stats("s.json"), plain);
}

TEST_F(CostScaleCli, OutputsAreTheSameUnderAnyScale) {
  const std::string out = run_mix("");
  const int64_t makespan = json_int(read_file(p("s.json")), "makespan_ticks");
  ASSERT_GT(makespan, 0);
  for (std::string_view u : interp::kCostUnitNames)
    for (const char* f : {"2", "0.25", "1000"}) {
      SCOPED_TRACE(std::string(u) + "=" + f);
      EXPECT_EQ(run_mix("--cost-scale " + std::string(u) + "=" + f), out);
      const std::string s = read_file(p("s.json"));
      EXPECT_NE(s.find("\"cost_scale\": {\n  \"" + std::string(u) + "\": "), std::string::npos)
          << s;
    }
  std::string every;
  for (std::string_view u : interp::kCostUnitNames)
    every += " --cost-scale " + std::string(u) + "=3";
  EXPECT_EQ(run_mix(every), out);
  EXPECT_LT(json_int(read_file(p("s.json")), "makespan_ticks"), makespan);
}

TEST_F(CostScaleCli, DmaScaleShortensADmaBoundCopyByTheRule) {
  const interp::TargetParams& tp = interp::target_params(Target::trn2);
  const uint64_t bytes = 128 * 2048 * 4;
  const int64_t trigger = 64 * 28; // sp and act at 1.2 GHz
  const int64_t data = int64_t((bytes * interp::kTickMHz + 16 * tp.dma_engine_mbps - 1) /
                               (16 * uint64_t(tp.dma_engine_mbps)));
  const int64_t latency = interp::ns_to_ticks(tp.dma_latency_ns);
  const std::string run = "run " + p("copy.nasm") + " --in x=" + p("x2.npy") +
                          " --out y=" + p("y.npy") + " --stats-json " + p("s.json");
  std::string err;
  ASSERT_EQ(nisa(run, err), 0) << err;
  const std::string y = read_file(p("y.npy"));
  // Trigger, transfer in (data + latency), act's trigger after the signal, transfer out.
  ASSERT_EQ(json_int(read_file(p("s.json")), "makespan_ticks"), 2 * (trigger + data + latency));
  for (int f : {2, 4, 3}) {
    SCOPED_TRACE(f);
    ASSERT_EQ(nisa(run + " --cost-scale dma=" + std::to_string(f), err), 0) << err;
    const std::string s = read_file(p("s.json"));
    const int64_t xfer = (data + f - 1) / f + latency; // the fixed latency is not scaled
    EXPECT_EQ(json_int(s, "makespan_ticks"), 2 * (trigger + xfer));
    size_t queues = 0;
    for (size_t at = s.find("\"queue\""); at != std::string::npos;
         at = s.find("\"queue\"", at + 1)) {
      EXPECT_EQ(json_int(s.substr(at), "busy_ticks"), xfer);
      ++queues;
    }
    EXPECT_EQ(queues, 2u);
    EXPECT_EQ(read_file(p("y.npy")), y);
  }
  // --stats names the scale above its tables.
  ASSERT_EQ(nisa(run + " --stats --cost-scale dma=2 --cost-scale pe=0.5", err), 0) << err;
  EXPECT_NE(read_file(p("out.txt"))
                .find("cost scale (what-if, durations divided by): pe=0.5 "
                      "dma=2\n"),
            std::string::npos)
      << read_file(p("out.txt"));
}

TEST_F(CostScaleCli, BadSettingsAreOneLineErrorsExitOne) {
  const std::string run = "run " + p("mix.nasm") + " --in x=" + p("x.npy") + " --cost-scale ";
  const std::string units = " (units: pe, act, dve, pool, sp, cc, dma)\n";
  const std::string factor = "expected a finite factor from 0.001 to 1000000";
  const std::pair<std::string, std::string> cases[] = {
      {"px=2", "'px=2': unknown unit 'px'; did you mean 'pe'?" + units},
      {"dsa=2", "'dsa=2': unknown unit 'dsa'; did you mean 'dma'?" + units},
      {"xyzzy=2", "'xyzzy=2': unknown unit 'xyzzy'" + units},
      {"pe", "'pe': expected UNIT=F" + units},
      {"pe=0", "'pe=0': " + factor},
      {"pe=-2", "'pe=-2': " + factor},
      {"pe=nan", "'pe=nan': " + factor},
      {"pe=inf", "'pe=inf': " + factor},
      {"pe=1e999", "'pe=1e999': " + factor},
      {"pe=0.0001", "'pe=0.0001': " + factor},
      {"pe=2x", "'pe=2x': expected a number after '=' (e.g. pe=2)\n"},
      {"pe=", "'pe=': expected a number after '=' (e.g. pe=2)\n"},
      {"dma=2 --cost-scale dma=3", "'dma=3': dma is scaled twice (one --cost-scale per unit)\n"},
  };
  for (const auto& [arg, msg] : cases) {
    SCOPED_TRACE(arg);
    std::string err;
    EXPECT_EQ(nisa(run + arg, err), 1);
    EXPECT_EQ(err.substr(0, err.find(msg)), "nisa run: --cost-scale ") << err;
    EXPECT_NE(err.find(msg), std::string::npos) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  }
  std::string err;
  ASSERT_EQ(nisa("run --help", err), 0);
  const std::string help = read_file(p("out.txt"));
  EXPECT_NE(help.find("--cost-scale UNIT=F"), std::string::npos) << help;
}

} // namespace
} // namespace nisa::test
