// moe_fwd_shard_h.nasm against a reference of the MoE blockwise forward written from the math
// (double accumulation), with routing generated as the seed's tests do.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ostream>
#include <random>

#include "interp/race.h"
#include "tests/kernels/harness.h"

namespace nisa::kt {
namespace {

const double kU = std::ldexp(1.0, -24); // fp32 unit roundoff
const double kUb = std::ldexp(1.0, -8); // bf16 unit roundoff (8 significant bits)

double sigm(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double act_f(bool swish, double x) { return swish ? x * sigm(1.702 * x) : x * sigm(x); }

struct Routing {
  int n = 0;                // blocks
  std::vector<int32_t> tp;  // token_position_to_id [N*B]
  std::vector<int32_t> b2e; // block_to_expert [N]
  std::vector<float> aff;   // affinities [(T+1)*E]
};

// As the seed's tests: each token to TOPK distinct random experts; blocks per expert =
// ceil(count / B); N = ceil((T*TOPK - (E-1)) / B) + E - 1 (at least the blocks used); padding
// slots hold T (EMPTY: every other padding slot -1 instead); extra blocks go to the last expert.
Routing make_routing(int t, int e, int topk, int b, bool empty, DType dt, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::vector<int>> tok(static_cast<size_t>(e));
  Routing r;
  r.aff.assign(size_t(t + 1) * e, 0.0f);
  std::uniform_real_distribution<float> ud(0.1f, 1.0f);
  for (int i = 0; i < t; ++i) {
    std::vector<int> ex(static_cast<size_t>(e));
    for (int k = 0; k < e; ++k) ex[size_t(k)] = k;
    std::shuffle(ex.begin(), ex.end(), rng);
    for (int k = 0; k < topk; ++k) {
      tok[size_t(ex[size_t(k)])].push_back(i);
      float a = ud(rng);
      if (dt == DType::bf16) a = bf16_to_f32(f32_to_bf16(a));
      r.aff[size_t(i) * e + ex[size_t(k)]] = a;
    }
  }
  int used = 0;
  for (auto& v : tok) used += int((v.size() + b - 1) / b);
  r.n = std::max(used, (t * topk - (e - 1) + b - 1) / b + e - 1);
  int pad = 0;
  auto padding = [&] { return (empty && (pad++ % 2)) ? -1 : t; };
  for (int x = 0; x < e; ++x) {
    const int nb = int((tok[size_t(x)].size() + b - 1) / b);
    for (int k = 0; k < nb; ++k) {
      r.b2e.push_back(x);
      for (int j = 0; j < b; ++j) {
        const size_t s = size_t(k) * b + j;
        r.tp.push_back(s < tok[size_t(x)].size() ? tok[size_t(x)][s] : padding());
      }
    }
  }
  while (int(r.b2e.size()) < r.n) {
    r.b2e.push_back(e - 1);
    for (int j = 0; j < b; ++j) r.tp.push_back(padding());
  }
  return r;
}

struct MoeCase {
  int lnc;
  DType dt;
  int t, h, e, topk, b, i;
  bool swish;
  std::string scale; // post, pre, none
  bool clamp;
  bool empty;
};

std::string moe_name(const testing::TestParamInfo<MoeCase>& info) {
  const MoeCase& c = info.param;
  return case_prefix(Target::trn2, c.lnc, c.dt) + "_t" + std::to_string(c.t) + "_h" +
         std::to_string(c.h) + "_e" + std::to_string(c.e) + "_k" + std::to_string(c.topk) + "_b" +
         std::to_string(c.b) + "_i" + std::to_string(c.i) + (c.swish ? "_swish_" : "_silu_") +
         c.scale + (c.clamp ? "_clamp" : "") + (c.empty ? "_empty" : "");
}

void PrintTo(const MoeCase& c, std::ostream* os) { *os << moe_name({c, 0}); }

// Clamp limits of the tests: tight enough that a good share of g, u is clamped.
const double kGLo = -1.5, kGHi = 2.0, kULo = -1.25, kUHi = 1.75;

struct FwdRun {
  Routing r;
  std::vector<float> hidden, wgu, wd;
  RunOutput out;
  size_t races = 0;
};

// Assembles and runs the forward; random_seed != 0: random schedule, --check-uninit and the
// race checker.
void run_fwd(const MoeCase& c, uint64_t random_seed, FwdRun& f) {
  const auto s = [](auto v) { return std::to_string(v); };
  Defines d = {{"T", s(c.t)},        {"H", s(c.h)},
               {"E", s(c.e)},        {"B", s(c.b)},
               {"I", s(c.i)},        {"ACT", c.swish ? "swish" : "silu"},
               {"SCALE", c.scale},   {"CLAMP", s(int(c.clamp))},
               {"DT", dt_name(c.dt)}};
  if (c.clamp) {
    d.push_back({"GATE_LO", "-1.5"});
    d.push_back({"GATE_HI", "2.0"});
    d.push_back({"UP_LO", "-1.25"});
    d.push_back({"UP_HI", "1.75"});
  }
  f.r = make_routing(c.t, c.e, c.topk, c.b, c.empty, c.dt, 7u + c.t + c.e);
  d.push_back({"N", s(f.r.n)});
  Assembled a = assemble_kernel("moe_fwd_shard_h.nasm", d, Target::trn2);
  ASSERT_TRUE(a.ok) << a.diagnostics;
  f.hidden = random_values(size_t(c.t + 1) * c.h, c.dt, 31u + c.h);
  std::fill(f.hidden.begin() + ptrdiff_t(c.t) * c.h, f.hidden.end(), 0.0f); // padding row
  // weights ~ N(0, 1/sqrt(fan_in)): activations of order 1 (the clamps bite, act is not flat)
  f.wgu = random_values(size_t(c.e) * c.h * 2 * c.i, c.dt, 32u + c.i, float(1.0 / std::sqrt(c.h)));
  f.wd = random_values(size_t(c.e) * c.i * c.h, c.dt, 33u + c.e, float(1.0 / std::sqrt(c.i)));
  std::vector<uint8_t> tpb(f.r.tp.size() * 4), beb(f.r.b2e.size() * 4);
  std::memcpy(tpb.data(), f.r.tp.data(), tpb.size());
  std::memcpy(beb.data(), f.r.b2e.data(), beb.size());
  const std::map<std::string, std::vector<uint8_t>> in = {
      {"hidden", to_bytes(f.hidden, c.dt)}, {"affinities", to_bytes(f.r.aff, c.dt)},
      {"w_gate_up", to_bytes(f.wgu, c.dt)}, {"w_down", to_bytes(f.wd, c.dt)},
      {"token_position_to_id", tpb},        {"block_to_expert", beb}};
  if (random_seed == 0) {
    f.out = run_kernel(a.module, Target::trn2, c.lnc, in);
    return;
  }
  // as run_kernel, plus the race checker
  interp::MachineOptions mo;
  mo.target = Target::trn2;
  mo.lnc = c.lnc;
  mo.check_uninit = true;
  interp::Machine machine(a.module, mo);
  for (const auto& [name, bytes] : in)
    machine.write_tensor(*machine.find_tensor(name), bytes.data());
  interp::RaceChecker rc(machine);
  interp::SchedOptions so;
  so.mode = interp::ScheduleMode::random;
  so.seed = random_seed;
  so.observer = &rc;
  interp::RunResult rr = interp::run(machine, so);
  f.out.status = rr.status;
  f.out.report = rr.report;
  f.races = rc.races().size();
  for (const TensorDecl& t : a.module.tensors) {
    if (t.space != MemSpace::hbm || t.role != Role::output) continue;
    const uint8_t* p = machine.hbm_tensor(0, t);
    f.out.tensors[t.name].assign(p, p + interp::Machine::tensor_bytes(t));
  }
}

// Forward reference in double, with a per-element error bound derived from the kernel's
// arithmetic: fp32 accumulation ((K + 2) u |terms|), DT storage of the checkpoints, of m (the
// matmul input) and of each output read-modify-write (u_DT = 2^-8 bf16, 2^-24 fp32), and for
// PRE with bf16 the rounding of a * x; act' <= 1.2 for SiLU and Swish.
struct FwdRef {
  std::vector<double> gu, gu_tol;   // [N, 2, I, B]
  std::vector<double> y, y_tol;     // [N, B, H]
  std::vector<double> out, out_tol; // [T+1, H]
};

FwdRef fwd_reference(const MoeCase& c, const FwdRun& f) {
  const int H = c.h, I = c.i, B = c.b, E = c.e, N = f.r.n;
  const double ud = c.dt == DType::bf16 ? kUb : kU;
  FwdRef r;
  r.gu.assign(size_t(N) * 2 * I * B, 0.0);
  r.gu_tol = r.gu;
  r.y.assign(size_t(N) * B * H, 0.0);
  r.y_tol = r.y;
  r.out.assign(size_t(c.t + 1) * H, 0.0);
  r.out_tol = r.out;
  std::vector<double> x(static_cast<size_t>(H)), m(static_cast<size_t>(I)),
      em(static_cast<size_t>(I));
  for (int n = 0; n < N; ++n) {
    const int e = f.r.b2e[size_t(n)];
    for (int j = 0; j < B; ++j) {
      const int t = f.r.tp[size_t(n) * B + j];
      const double a = t >= 0 ? f.r.aff[size_t(t) * E + e] : 0.0;
      for (int h = 0; h < H; ++h)
        x[size_t(h)] = t >= 0 ? f.hidden[size_t(t) * H + h] * (c.scale == "pre" ? a : 1.0) : 0.0;
      for (int i = 0; i < I; ++i) {
        double g = 0, u = 0, ga = 0, ua = 0;
        for (int h = 0; h < H; ++h) {
          const size_t w = ((size_t(e) * H + h) * 2) * I + i;
          g += x[size_t(h)] * f.wgu[w];
          u += x[size_t(h)] * f.wgu[w + size_t(I)];
          ga += std::fabs(x[size_t(h)] * f.wgu[w]);
          ua += std::fabs(x[size_t(h)] * f.wgu[w + size_t(I)]);
        }
        const double xr = (c.scale == "pre" && c.dt == DType::bf16) ? kUb : 0.0;
        const double eg = (H + 2) * kU * ga + xr * ga, eu = (H + 2) * kU * ua + xr * ua;
        const size_t gi = ((size_t(n) * 2) * I + i) * B + j, ui = gi + size_t(I) * B;
        r.gu[gi] = g;
        r.gu[ui] = u;
        r.gu_tol[gi] = eg + ud * std::fabs(g) + 1e-30;
        r.gu_tol[ui] = eu + ud * std::fabs(u) + 1e-30;
        const double gc = c.clamp ? std::clamp(g, kGLo, kGHi) : g;
        const double uc = c.clamp ? std::clamp(u, kULo, kUHi) : u;
        m[size_t(i)] = act_f(c.swish, gc) * uc;
        em[size_t(i)] = 1.2 * eg * (std::fabs(uc) + eu) + std::fabs(act_f(c.swish, gc)) * eu +
                        (ud + kU) * std::fabs(m[size_t(i)]);
      }
      for (int h = 0; h < H; ++h) {
        double y = 0, ya = 0, ey = 0;
        for (int i = 0; i < I; ++i) {
          const double w = f.wd[(size_t(e) * I + i) * H + h];
          y += m[size_t(i)] * w;
          ya += std::fabs(m[size_t(i)] * w);
          ey += em[size_t(i)] * std::fabs(w);
        }
        ey += (I + 2) * kU * ya;
        const size_t yi = (size_t(n) * B + j) * H + h;
        r.y[yi] = y;
        r.y_tol[yi] = ey + ud * std::fabs(y) + 1e-30;
        if (t < 0) continue;
        const double s = c.scale == "post" ? a : 1.0;
        r.out[size_t(t) * H + h] += s * y;
        // this contribution's error, and the DT rounding of every later partial sum it is in
        r.out_tol[size_t(t) * H + h] += s * ey + (c.topk + 1) * (ud + kU) * std::fabs(s * y);
      }
    }
  }
  return r;
}

void check_fwd(const MoeCase& c, const FwdRun& f) {
  ASSERT_EQ(f.out.status, interp::RunStatus::ok) << f.out.report;
  const FwdRef r = fwd_reference(c, f);
  const auto it_gu = f.out.tensors.find("gate_up_ckpt");
  const auto it_y = f.out.tensors.find("down_ckpt");
  const auto it_o = f.out.tensors.find("out");
  ASSERT_TRUE(it_gu != f.out.tensors.end() && it_y != f.out.tensors.end() &&
              it_o != f.out.tensors.end());
  const std::vector<float> gu = from_bytes(it_gu->second, c.dt), y = from_bytes(it_y->second, c.dt),
                           out = from_bytes(it_o->second, c.dt);
  ASSERT_EQ(gu.size(), r.gu.size());
  ASSERT_EQ(y.size(), r.y.size());
  ASSERT_EQ(out.size(), r.out.size());
  for (size_t k = 0; k < gu.size(); ++k)
    ASSERT_NEAR(gu[k], r.gu[k], r.gu_tol[k]) << "gate_up_ckpt " << k;
  for (size_t k = 0; k < y.size(); ++k) ASSERT_NEAR(y[k], r.y[k], r.y_tol[k]) << "down_ckpt " << k;
  // row T is scratch (padding slots add into it)
  for (size_t k = 0; k < size_t(c.t) * c.h; ++k)
    ASSERT_NEAR(out[k], r.out[k], r.out_tol[k] + 1e-30)
        << "out row " << k / size_t(c.h) << " col " << k % size_t(c.h);
}

class MoeFwd : public testing::TestWithParam<MoeCase> {};

TEST_P(MoeFwd, MatchesReference) {
  FwdRun f;
  run_fwd(GetParam(), 0, f);
  check_fwd(GetParam(), f);
}

std::vector<MoeCase> fwd_cases() {
  const DType f32 = DType::fp32, b16 = DType::bf16;
  std::vector<MoeCase> v;
  for (int lnc : {1, 2}) {
    v.push_back({lnc, b16, 100, 256, 2, 2, 128, 192, false, "post", false, false});
    v.push_back({lnc, f32, 64, 256, 1, 1, 256, 96, true, "pre", true, true});
    v.push_back({lnc, b16, 150, 256, 16, 4, 128, 96, false, "none", true, false});
    v.push_back({lnc, f32, 300, 256, 2, 1, 512, 192, true, "post", false, true});
  }
  v.push_back({2, f32, 80, 256, 16, 2, 128, 192, false, "post", true, true});
  v.push_back({1, b16, 70, 256, 2, 2, 256, 96, true, "pre", false, true});
  v.push_back({2, b16, 90, 384, 16, 1, 128, 160, true, "none", false, false}); // H/2 not 128k
  return v;
}
INSTANTIATE_TEST_SUITE_P(Grid, MoeFwd, testing::ValuesIn(fwd_cases()), moe_name);

// Race-free under the checker, no uninitialised read, and the same bits for every seed of the
// random schedule (and as the default schedule).
TEST(MoeFwdSync, RaceFreeAndSameBitsUnderRandomSchedules) {
  for (const MoeCase& c :
       {MoeCase{2, DType::bf16, 100, 256, 2, 2, 128, 96, false, "post", true, true},
        MoeCase{1, DType::fp32, 64, 256, 2, 1, 128, 96, true, "pre", false, true}}) {
    FwdRun base;
    run_fwd(c, 0, base);
    ASSERT_EQ(base.out.status, interp::RunStatus::ok) << base.out.report;
    for (uint64_t seed : {5u, 11u}) {
      FwdRun f;
      run_fwd(c, seed, f);
      ASSERT_EQ(f.out.status, interp::RunStatus::ok) << f.out.report;
      EXPECT_EQ(f.races, 0u);
      for (const char* t : {"out", "gate_up_ckpt", "down_ckpt"})
        EXPECT_TRUE(f.out.tensors[t] == base.out.tensors[t]) << t << " seed " << seed;
      check_fwd(c, f);
    }
  }
}

// Each envelope limit stops assembly with an .error naming it.
TEST(MoeEnvelope, ErrorsNameTheLimit) {
  const std::vector<std::pair<Defines, std::string>> cases = {
      {{{"B", "64"}}, "B must be 128, 256, 512 or 1024"},
      {{{"H", "255"}}, "H must be even"},
      {{{"I", "40"}}, "I must be a positive multiple of 16"},
      {{{"DT", "fp16"}}, "DT must be fp32 or bf16"},
      {{{"ACT", "gelu"}}, "ACT must be silu or swish"},
      {{{"SCALE", "both"}}, "SCALE must be post, pre or none"},
      {{{"CLAMP", "2"}}, "CLAMP must be 0 or 1"},
      {{{"N", "0"}}, "T, E and N must be positive"},
  };
  for (const auto& [defs, msg] : cases) {
    Assembled a = assemble_kernel("moe_fwd_shard_h.nasm", defs, Target::trn2);
    EXPECT_FALSE(a.ok) << msg;
    EXPECT_NE(a.diagnostics.find("moe_fwd_shard_h: " + msg), std::string::npos) << a.diagnostics;
  }
}

} // namespace
} // namespace nisa::kt
