// moe_fwd_shard_h.nasm against a reference of the MoE blockwise forward written from the math
// (double accumulation), with routing generated as the seed's tests do.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ostream>
#include <random>

#include "interp/observe/race.h"
#include "tests/support/kernel_harness.h"

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

// The forward's inputs of case C (seeded).
void make_inputs(const MoeCase& c, FwdRun& f) {
  f.r = make_routing(c.t, c.e, c.topk, c.b, c.empty, c.dt, 7u + c.t + c.e);
  f.hidden = random_values(size_t(c.t + 1) * c.h, c.dt, 31u + c.h);
  std::fill(f.hidden.begin() + ptrdiff_t(c.t) * c.h, f.hidden.end(), 0.0f); // padding row
  // weights ~ N(0, 1/sqrt(fan_in)): activations of order 1 (the clamps bite, act is not flat)
  f.wgu = random_values(size_t(c.e) * c.h * 2 * c.i, c.dt, 32u + c.i, float(1.0 / std::sqrt(c.h)));
  f.wd = random_values(size_t(c.e) * c.i * c.h, c.dt, 33u + c.e, float(1.0 / std::sqrt(c.i)));
}

std::map<std::string, std::vector<uint8_t>> input_bytes(const MoeCase& c, const FwdRun& f) {
  std::vector<uint8_t> tpb(f.r.tp.size() * 4), beb(f.r.b2e.size() * 4);
  std::memcpy(tpb.data(), f.r.tp.data(), tpb.size());
  std::memcpy(beb.data(), f.r.b2e.data(), beb.size());
  return {{"hidden", to_bytes(f.hidden, c.dt)}, {"affinities", to_bytes(f.r.aff, c.dt)},
          {"w_gate_up", to_bytes(f.wgu, c.dt)}, {"w_down", to_bytes(f.wd, c.dt)},
          {"token_position_to_id", tpb},        {"block_to_expert", beb}};
}

Defines common_defines(const MoeCase& c, int n) {
  const auto s = [](auto v) { return std::to_string(v); };
  Defines d = {{"T", s(c.t)},
               {"H", s(c.h)},
               {"E", s(c.e)},
               {"B", s(c.b)},
               {"N", s(n)},
               {"I", s(c.i)},
               {"ACT", c.swish ? "swish" : "silu"},
               {"SCALE", c.scale},
               {"CLAMP", s(int(c.clamp))},
               {"DT", dt_name(c.dt)}};
  if (c.clamp) {
    d.push_back({"GATE_LO", "-1.5"});
    d.push_back({"GATE_HI", "2.0"});
    d.push_back({"UP_LO", "-1.25"});
    d.push_back({"UP_HI", "1.75"});
  }
  return d;
}

// Runs module M on INPUTS; random_seed != 0: random schedule, --check-uninit and the race
// checker (the count of races found goes to *races).
RunOutput run_checked(const Module& m, int lnc,
                      const std::map<std::string, std::vector<uint8_t>>& in, uint64_t random_seed,
                      size_t* races) {
  if (random_seed == 0) return run_kernel(m, Target::trn2, lnc, in);
  interp::MachineOptions mo;
  mo.target = Target::trn2;
  mo.lnc = lnc;
  mo.check_uninit = true;
  interp::Machine machine(m, mo);
  for (const auto& [name, bytes] : in)
    machine.write_tensor(*machine.find_tensor(name), bytes.data());
  interp::RaceChecker rc(machine);
  interp::SchedOptions so;
  so.mode = interp::ScheduleMode::random;
  so.seed = random_seed;
  so.observer = &rc;
  interp::RunResult rr = interp::run(machine, so);
  RunOutput out;
  out.status = rr.status;
  out.report = rr.report;
  *races = rc.races().size();
  for (const TensorDecl& t : m.tensors) {
    if (t.space != MemSpace::hbm || t.role != Role::output) continue;
    const uint8_t* p = machine.hbm_tensor(0, t);
    out.tensors[t.name].assign(p, p + interp::Machine::tensor_bytes(t));
  }
  return out;
}

// Assembles and runs the forward (see run_checked for random_seed).
void run_fwd(const MoeCase& c, uint64_t random_seed, FwdRun& f) {
  make_inputs(c, f);
  Assembled a = assemble_kernel("moe_fwd_shard_h.nasm", common_defines(c, f.r.n), Target::trn2);
  ASSERT_TRUE(a.ok) << a.diagnostics;
  f.out = run_checked(a.module, c.lnc, input_bytes(c, f), random_seed, &f.races);
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
  v.push_back({2, b16, 100, 256, 2, 2, 1024, 96, false, "post", true, true});  // two PSUM chunks
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

// ---- backward ----------------------------------------------------------------------------------

double act_dx(bool swish, double x) {
  const double k = swish ? 1.702 : 1.0, sg = sigm(k * x);
  return sg * (1.0 + k * x * (1.0 - sg));
}

struct BwdCase {
  int lnc;
  DType dt;
  int t, h, e, topk, b, i;
  bool swish, clamp, bias, empty;
  bool from_fwd; // the checkpoints are the forward kernel's outputs (else seeded random)
  MoeCase fwd() const { return {lnc, dt, t, h, e, topk, b, i, swish, "post", clamp, empty}; }
};

std::string bwd_name(const testing::TestParamInfo<BwdCase>& info) {
  const BwdCase& c = info.param;
  return moe_name({c.fwd(), 0}) + (c.bias ? "_bias" : "") + (c.from_fwd ? "_fromfwd" : "");
}
void PrintTo(const BwdCase& c, std::ostream* os) { *os << bwd_name({c, 0}); }

struct BwdRun {
  FwdRun f;
  std::vector<float> gu, y, go; // checkpoints, grad_out
  RunOutput out;
  size_t races = 0;
};

void run_bwd(const BwdCase& c, uint64_t random_seed, BwdRun& b) {
  const MoeCase fc = c.fwd();
  if (c.from_fwd) {
    run_fwd(fc, 0, b.f);
    ASSERT_EQ(b.f.out.status, interp::RunStatus::ok) << b.f.out.report;
    b.gu = from_bytes(b.f.out.tensors["gate_up_ckpt"], c.dt);
    b.y = from_bytes(b.f.out.tensors["down_ckpt"], c.dt);
  } else {
    make_inputs(fc, b.f);
    b.gu = random_values(size_t(b.f.r.n) * 2 * c.i * c.b, c.dt, 41u + c.i);
    b.y = random_values(size_t(b.f.r.n) * c.b * c.h, c.dt, 42u + c.h);
  }
  b.go = random_values(size_t(c.t + 1) * c.h, c.dt, 43u + c.t);
  Defines d = common_defines(fc, b.f.r.n);
  d.push_back({"BIAS", std::to_string(int(c.bias))});
  Assembled a = assemble_kernel("moe_bwd.nasm", d, Target::trn2);
  ASSERT_TRUE(a.ok) << a.diagnostics;
  auto in = input_bytes(fc, b.f);
  in["gate_up_ckpt"] = to_bytes(b.gu, c.dt);
  in["down_ckpt"] = to_bytes(b.y, c.dt);
  in["grad_out"] = to_bytes(b.go, c.dt);
  b.out = run_checked(a.module, c.lnc, in, random_seed, &b.races);
}

// Backward reference in double from the checkpoints, with error bounds derived as for the
// forward: dy and m and [dg, du] are rounded to DT (u_DT) before their matmuls; sums over H, the
// slots and 2I accumulate in fp32 ((K + 2) u |terms|); each per-block read-modify-write of a
// gradient rounds to DT (blocks of the expert + 1, or TOPK + 1 for grad_hidden).
struct Grad {
  std::vector<double> v, abs, err;
  void init(size_t n) { v.assign(n, 0.0), abs.assign(n, 0.0), err.assign(n, 0.0); }
  void add(size_t k, double x, double e) { v[k] += x, abs[k] += std::fabs(x), err[k] += e; }
};

void check_bwd(const BwdCase& c, const BwdRun& b) {
  ASSERT_EQ(b.out.status, interp::RunStatus::ok) << b.out.report;
  const int H = c.h, I = c.i, B = c.b, E = c.e, N = b.f.r.n, T = c.t;
  const double ud = c.dt == DType::bf16 ? kUb : kU;
  const Routing& r = b.f.r;
  std::vector<int> nb(static_cast<size_t>(E), 0);
  for (int e : r.b2e) ++nb[size_t(e)];
  Grad gh, gwgu, gwd, gbgu, gbd;
  gh.init(size_t(T + 1) * H);
  gwgu.init(size_t(E) * H * 2 * I);
  gwd.init(size_t(E) * I * H);
  gbgu.init(size_t(E) * 2 * I);
  gbd.init(size_t(E) * H);
  std::vector<double> ga(size_t(T + 1) * E, 0.0), ga_tol(ga.size(), 0.0);
  std::vector<double> dy(static_cast<size_t>(H)), dgu(size_t(2) * I), edgu(size_t(2) * I);
  for (int n = 0; n < N; ++n) {
    const int e = r.b2e[size_t(n)];
    for (int j = 0; j < B; ++j) {
      const int t = r.tp[size_t(n) * B + j];
      if (t < 0 || t == T) continue; // empty / padding slot: every contribution is zero
      const double a = r.aff[size_t(t) * E + e];
      double da = 0, daa = 0;
      for (int h = 0; h < H; ++h) {
        const double g0 = b.go[size_t(t) * H + h], yv = b.y[(size_t(n) * B + j) * H + h];
        da += g0 * yv;
        daa += std::fabs(g0 * yv);
        dy[size_t(h)] = a * g0;
        gbd.add(size_t(e) * H + h, dy[size_t(h)], 0.0);
      }
      ga[size_t(t) * E + e] = da;
      ga_tol[size_t(t) * E + e] = (H + 2) * kU * daa + ud * std::fabs(da) + 1e-30;
      for (int i = 0; i < I; ++i) {
        const double g = b.gu[((size_t(n) * 2) * I + i) * B + j];
        const double u = b.gu[((size_t(n) * 2 + 1) * I + i) * B + j];
        const double gc = c.clamp ? std::clamp(g, kGLo, kGHi) : g;
        const double uc = c.clamp ? std::clamp(u, kULo, kUHi) : u;
        const double mg = c.clamp ? double(kGLo < g && g < kGHi) : 1.0;
        const double mu = c.clamp ? double(kULo < u && u < kUHi) : 1.0;
        const double sa = act_f(c.swish, gc), sd = act_dx(c.swish, gc), m = sa * uc;
        double dm = 0, dma = 0;
        for (int h = 0; h < H; ++h) {
          const double w = b.f.wd[(size_t(e) * I + i) * H + h];
          gwd.add((size_t(e) * I + i) * H + h, m * dy[size_t(h)], 0.0);
          dm += dy[size_t(h)] * w;
          dma += std::fabs(dy[size_t(h)] * w);
        }
        const double edm = (ud + (H + 2) * kU) * dma;
        const double du = dm * sa * mu, dg = dm * uc * sd * mg;
        dgu[size_t(i)] = dg;
        dgu[size_t(I + i)] = du;
        edgu[size_t(i)] =
            (edm * std::fabs(uc * sd) + 4 * kU * std::fabs(dg)) * mg + ud * std::fabs(dg);
        edgu[size_t(I + i)] =
            (edm * std::fabs(sa) + 3 * kU * std::fabs(du)) * mu + ud * std::fabs(du);
      }
      for (int q = 0; q < 2 * I; ++q)
        gbgu.add(size_t(e) * 2 * I + q, dgu[size_t(q)], edgu[size_t(q)]);
      for (int h = 0; h < H; ++h) {
        const double x = b.f.hidden[size_t(t) * H + h];
        for (int q = 0; q < 2 * I; ++q) {
          const size_t wi = (size_t(e) * H + h) * 2 * I + q;
          gwgu.add(wi, x * dgu[size_t(q)], std::fabs(x) * edgu[size_t(q)]);
          gh.add(size_t(t) * H + h, dgu[size_t(q)] * b.f.wgu[wi],
                 edgu[size_t(q)] * std::fabs(b.f.wgu[wi]));
        }
      }
    }
  }
  auto get = [&](const char* name) {
    const auto it = b.out.tensors.find(name);
    EXPECT_TRUE(it != b.out.tensors.end()) << name;
    return it == b.out.tensors.end() ? std::vector<float>() : from_bytes(it->second, c.dt);
  };
  // per-expert accumulations: tolerance from the expert's block count
  auto check = [&](const char* name, const Grad& g, size_t per_expert, int sum_len, bool weight) {
    const std::vector<float> got = get(name);
    ASSERT_EQ(got.size(), g.v.size()) << name;
    for (size_t k = 0; k < got.size(); ++k) {
      const int e = int(k / per_expert);
      const double rmw = weight ? (nb[size_t(e)] + 4) * (ud + kU) : (c.topk + 1) * (ud + kU);
      const double tol = g.err[k] + (sum_len + 2) * kU * g.abs[k] + rmw * g.abs[k] + 1e-30;
      ASSERT_NEAR(got[k], g.v[k], tol) << name << " " << k;
    }
  };
  check("grad_w_down", gwd, size_t(I) * H, B, true);
  check("grad_w_gate_up", gwgu, size_t(H) * 2 * I, B, true);
  if (c.bias) {
    check("grad_b_down", gbd, size_t(H), B, true);
    check("grad_b_gate_up", gbgu, size_t(2) * I, B, true);
  } else {
    EXPECT_TRUE(b.out.tensors.find("grad_b_down") == b.out.tensors.end());
  }
  { // grad_hidden: rows 0 .. T-1 (row T is scratch); sums over 2I, TOPK read-modify-writes
    const std::vector<float> got = get("grad_hidden");
    ASSERT_EQ(got.size(), gh.v.size());
    for (size_t k = 0; k < size_t(T) * H; ++k) {
      const double tol =
          gh.err[k] + (2 * I + 2) * kU * gh.abs[k] + (c.topk + 1) * (ud + kU) * gh.abs[k] + 1e-30;
      ASSERT_NEAR(got[k], gh.v[k], tol)
          << "grad_hidden row " << k / size_t(H) << " col " << k % size_t(H);
    }
  }
  { // grad_affinities: d_a where routed, 0 elsewhere; rows of token T are scratch
    const std::vector<float> got = get("grad_affinities");
    ASSERT_EQ(got.size(), ga.size());
    for (size_t k = 0; k < size_t(T) * E; ++k)
      ASSERT_NEAR(got[k], ga[k], ga_tol[k])
          << "grad_affinities token " << k / size_t(E) << " expert " << k % size_t(E);
  }
}

class MoeBwd : public testing::TestWithParam<BwdCase> {};

TEST_P(MoeBwd, MatchesReference) {
  BwdRun b;
  run_bwd(GetParam(), 0, b);
  check_bwd(GetParam(), b);
}

std::vector<BwdCase> bwd_cases() {
  const DType f32 = DType::fp32, b16 = DType::bf16;
  std::vector<BwdCase> v;
  for (int lnc : {1, 2}) {
    v.push_back({lnc, b16, 100, 256, 2, 2, 128, 192, false, false, false, false, true});
    v.push_back({lnc, f32, 64, 256, 1, 1, 256, 96, true, true, true, true, false});
    v.push_back({lnc, b16, 150, 256, 16, 4, 128, 96, false, true, true, false, false});
    v.push_back({lnc, f32, 300, 256, 2, 1, 512, 192, true, false, true, true, true});
  }
  v.push_back({2, f32, 80, 256, 16, 2, 128, 192, false, true, false, true, true});
  v.push_back({1, b16, 70, 256, 2, 2, 256, 160, true, true, true, true, true});
  v.push_back({2, b16, 90, 384, 16, 1, 128, 160, true, false, true, false, false});
  v.push_back({2, b16, 100, 256, 2, 2, 1024, 96, false, true, true, true, true}); // B = 1024
  return v;
}
INSTANTIATE_TEST_SUITE_P(Grid, MoeBwd, testing::ValuesIn(bwd_cases()), bwd_name);

TEST(MoeBwdSync, RaceFreeAndSameBitsUnderRandomSchedules) {
  for (const BwdCase& c :
       {BwdCase{2, DType::bf16, 100, 256, 2, 2, 128, 96, false, true, true, true, true},
        BwdCase{1, DType::fp32, 64, 256, 2, 1, 128, 96, true, false, true, true, false}}) {
    BwdRun base;
    run_bwd(c, 0, base);
    ASSERT_EQ(base.out.status, interp::RunStatus::ok) << base.out.report;
    for (uint64_t seed : {5u, 11u}) {
      BwdRun b;
      run_bwd(c, seed, b);
      ASSERT_EQ(b.out.status, interp::RunStatus::ok) << b.out.report;
      EXPECT_EQ(b.races, 0u);
      for (const auto& [name, bytes] : base.out.tensors)
        EXPECT_TRUE(b.out.tensors[name] == bytes) << name << " seed " << seed;
      check_bwd(c, b);
    }
  }
}

// Bad routing data is a run-time fault naming the offending value: a token id outside
// [-1, T] (the range check's gather), an expert outside [0, E) (the weight DMA's register).
TEST(MoeBadInput, TokenOrExpertOutOfRangeFaults) {
  for (const char* kernel : {"moe_fwd_shard_h.nasm", "moe_bwd.nasm"})
    for (int bad : {0, 1, 2}) {
      const MoeCase c{1, DType::fp32, 40, 256, 2, 1, 128, 96, false, "post", false, true};
      FwdRun f;
      make_inputs(c, f);
      if (bad == 0) f.r.tp[5] = c.t + 1;
      if (bad == 1) f.r.tp[7] = -2;
      if (bad == 2) f.r.b2e[0] = c.e;
      Defines d = common_defines(c, f.r.n);
      auto in = input_bytes(c, f);
      if (std::string(kernel) == "moe_bwd.nasm") {
        d.push_back({"BIAS", "0"});
        in["gate_up_ckpt"] = to_bytes(random_values(size_t(f.r.n) * 2 * c.i * c.b, c.dt, 1), c.dt);
        in["down_ckpt"] = to_bytes(random_values(size_t(f.r.n) * c.b * c.h, c.dt, 2), c.dt);
        in["grad_out"] = to_bytes(random_values(size_t(c.t + 1) * c.h, c.dt, 3), c.dt);
      }
      Assembled a = assemble_kernel(kernel, d, Target::trn2);
      ASSERT_TRUE(a.ok) << a.diagnostics;
      RunOutput r = run_kernel(a.module, Target::trn2, 1, in);
      EXPECT_EQ(r.status, interp::RunStatus::fault) << kernel << " case " << bad;
      const std::string want = bad == 0   ? "= 41 is outside [0, 41)"
                               : bad == 1 ? "= -2 is outside [0, 41)"
                                          : "r5 = 2 is outside [0, 2)";
      EXPECT_NE(r.report.find(want), std::string::npos) << r.report;
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
      {{{"CLAMP", "2"}}, "CLAMP must be 0 or 1"},
      {{{"N", "0"}}, "T, E and N must be positive"},
  };
  for (const char* k : {"moe_fwd_shard_h", "moe_bwd"})
    for (const auto& [defs, msg] : cases) {
      Assembled a = assemble_kernel(std::string(k) + ".nasm", defs, Target::trn2);
      EXPECT_FALSE(a.ok) << msg;
      EXPECT_NE(a.diagnostics.find(std::string(k) + ": " + msg), std::string::npos)
          << a.diagnostics;
    }
  Assembled f = assemble_kernel("moe_fwd_shard_h.nasm", {{"SCALE", "both"}}, Target::trn2);
  EXPECT_FALSE(f.ok);
  EXPECT_NE(f.diagnostics.find("moe_fwd_shard_h: SCALE must be post, pre or none"),
            std::string::npos)
      << f.diagnostics;
  const std::vector<std::pair<Defines, std::string>> bwd_only = {
      {{{"SCALE", "pre"}}, "SCALE must be post"},
      {{{"BIAS", "2"}}, "BIAS must be 0 or 1"},
      {{{"I", "1024"}}, "cdiv(I, 128) * cdiv(B, 512) must be <= 6"}};
  for (const auto& [defs, msg] : bwd_only) {
    Assembled a = assemble_kernel("moe_bwd.nasm", defs, Target::trn2);
    EXPECT_FALSE(a.ok) << msg;
    EXPECT_NE(a.diagnostics.find("moe_bwd: " + msg), std::string::npos) << a.diagnostics;
  }
}

} // namespace
} // namespace nisa::kt
