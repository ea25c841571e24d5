// attention_block_tkg.nasm against a reference of the fused decode attention block written from
// the math of issue 14 in double (never from the kernel).
//
// Tolerances (normwise, per output element; u_DT the unit roundoff of the storage dtype):
// * bf16: u = 2^-8 (8 significant bits): the kernel rounds x * norm_w, q, k, v, the softmax
//   probabilities, the attention output and out to bf16; fp32: u = 2^-24, with the fp32
//   accumulation over H, S_CTX and the heads bounded by (H + S_CTX + QH*D + 16) * 2^-24.
//   A score error of e (absolute) moves a probability by a relative 2e, and scores carry an
//   absolute error ~ 2u * smag (smag = the largest sum_d |q_d k_d| / sqrt(D) of the row), so
//   the attention output of a head is within E = ue * (8 + 4 * smag) of the magnitude
//   A[d] = sum_j p_j |v_j[d]|, and out within E * sum_{h,d} |w_o| A + u |out|.
// * S_CTX past one cache chunk (the kernel's flash-style cascaded softmax): the probability cast
//   to DT is the chunk's unnormalised exp(s - m) in (0, 1] instead of exp(s - m) / l: the same
//   one rounding of relative size u per probability, so the bound above holds unchanged; the
//   cascade adds 4 fp32 roundings per chunk to the output and the sum (alpha * l + sum,
//   alpha * O + P @ V; alpha's own rounding scales O and l alike and cancels in O / l), at most
//   4 * S_CTX / 512 * 2^-24, inside the S_CTX * 2^-24 term of ue. The reference stays the exact
//   softmax in double (the math, not the kernel's chunking).
// * FP8_KV: the cached values are exact e4m3 values (inputs), but the kernel's new k, v are
//   quantised from its own (rounded) k, v: a value near a rounding boundary of e4m3 may land
//   one e4m3 step away from the reference's. e4m3 has 3 mantissa bits: one step is 2^-3 of the
//   binade (2^-9 at the subnormal floor), times the scale. The active tokens' weight in the
//   softmax (pact) therefore adds pact * (2^-3 + 2^-2 * smag_act) to E (a step in v directly, a
//   step in k through the score), and a stored row element may differ by one step.
// * Beside the worst-case bound (which is loose: it assumes every rounding error has the same
//   sign), the relative RMS error of out is checked against a statistical one: bf16 2^-5 (a
//   handful of independent 2^-9-RMS roundings per path, observed ~2^-8), bf16 + FP8 2^-4 (the
//   occasional one-step e4m3 difference of an active token, observed ~2^-6.5), fp32 2^-16
//   (observed ~2^-21), fp32 + FP8 2^-10 (room for a rare one-step difference).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ostream>
#include <random>

#include "interp/observe/race.h"
#include "tests/support/kernel_harness.h"

namespace nisa::kt {
namespace {

const double kU = std::ldexp(1.0, -24);
const double kUb = std::ldexp(1.0, -8);
const uint32_t kNoUpdate = 0xFFFFFFFFu;

struct AttnCase {
  int lnc;
  DType dt;
  int b, s, qh, d, h, sctx;
  bool interleaved;
  std::string qkn; // none, pre, post
  bool fp8;
  int pos_kind; // the first sequence's pos row: 0 start, 1 middle, 2 end, 3 none; then cycled
};

std::string attn_name(const testing::TestParamInfo<AttnCase>& info) {
  const AttnCase& c = info.param;
  const auto s = [](int v) { return std::to_string(v); };
  return case_prefix(Target::trn2, c.lnc, c.dt) + "_b" + s(c.b) + "_s" + s(c.s) + "_qh" + s(c.qh) +
         "_d" + s(c.d) + "_h" + s(c.h) + "_ctx" + s(c.sctx) + (c.interleaved ? "_inter" : "_half") +
         "_" + c.qkn + (c.fp8 ? "_fp8" : "") + "_pos" + s(c.pos_kind);
}
void PrintTo(const AttnCase& c, std::ostream* os) { *os << attn_name({c, 0}); }

struct Inputs {
  std::vector<float> x, nw, wqkv, wo, qnw, knw, cs, sn;
  std::vector<float> kc, vc;        // cache values (FP8: the e4m3 value times the scale)
  std::vector<uint8_t> kcb, vcb;    // the cache bytes as given
  std::vector<uint8_t> mask;        // [B, S, S_CTX]
  std::vector<uint32_t> pos;        // [B]
  float ks = 0.01f, vs = 1.0f / 90; // small enough that some new k, v saturate at +-240
};

float round_dt(float v, DType dt) { return dt == DType::bf16 ? bf16_to_f32(f32_to_bf16(v)) : v; }

std::vector<float> around_one(size_t n, DType dt, uint32_t seed) {
  std::vector<float> v = random_values(n, DType::fp32, seed, 0.2f);
  for (float& x : v) x = round_dt(1.0f + x, dt);
  return v;
}

// pos row of sequence b: start (0), middle, end (S_CTX - S), none; kinds cycle from pos_kind.
uint32_t pos_of(const AttnCase& c, int b) {
  switch ((c.pos_kind + b) % 4) {
  case 0: return 0;
  case 1: return uint32_t(c.sctx / 2 - c.s / 2 - 1);
  case 2: return uint32_t(c.sctx - c.s);
  default: return kNoUpdate;
  }
}

Inputs make_inputs(const AttnCase& c) {
  const int T = c.b * c.s, W = (c.qh + 2) * c.d, HD = c.d / 2;
  const uint32_t sd = uint32_t(c.b * 131 + c.s * 17 + c.qh * 7 + c.d + c.sctx + c.h);
  Inputs in;
  in.x = random_values(size_t(T) * c.h, c.dt, sd + 1);
  in.nw = around_one(size_t(c.h), c.dt, sd + 2);
  in.wqkv = random_values(size_t(c.h) * W, c.dt, sd + 3, float(1.0 / std::sqrt(c.h)));
  in.wo = random_values(size_t(c.qh) * c.d * c.h, c.dt, sd + 4, float(1.0 / std::sqrt(c.qh * c.d)));
  in.qnw = around_one(size_t(c.d), c.dt, sd + 5);
  in.knw = around_one(size_t(c.d), c.dt, sd + 6);
  std::mt19937 rng(sd + 7);
  std::uniform_real_distribution<double> ang(0.0, 6.283185307179586);
  in.cs.resize(size_t(T) * HD);
  in.sn.resize(in.cs.size());
  for (size_t k = 0; k < in.cs.size(); ++k) {
    const double a = ang(rng);
    in.cs[k] = float(std::cos(a));
    in.sn[k] = float(std::sin(a));
  }
  const size_t nc = size_t(c.b) * c.sctx * c.d;
  if (c.fp8) {
    std::normal_distribution<float> nd(0.0f, 60.0f);
    in.kcb.resize(nc);
    in.vcb.resize(nc);
    in.kc.resize(nc);
    in.vc.resize(nc);
    for (size_t k = 0; k < nc; ++k) {
      in.kcb[k] = f32_to_fp8e4m3(nd(rng));
      in.vcb[k] = f32_to_fp8e4m3(nd(rng));
      in.kc[k] = fp8e4m3_to_f32(in.kcb[k]) * in.ks;
      in.vc[k] = fp8e4m3_to_f32(in.vcb[k]) * in.vs;
    }
  } else {
    in.kc = random_values(nc, c.dt, sd + 8);
    in.vc = random_values(nc, c.dt, sd + 9);
    in.kcb = to_bytes(in.kc, c.dt);
    in.vcb = to_bytes(in.vc, c.dt);
  }
  // visible: the sequence's prior context (a random length, 0 .. S_CTX) with 10% holes
  in.mask.assign(size_t(T) * c.sctx, 0);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  for (int b = 0; b < c.b; ++b) {
    const int len = b == 0 && c.b > 1 ? 0 : int(u01(rng) * (c.sctx + 1)) % (c.sctx + 1);
    // past one cache chunk (8192 rows), odd sequences see every other 8192-row block whole
    // (rows visible in several chunks, and whole chunks masked between them)
    const bool striped = c.sctx > 8192 && b % 2 == 1;
    for (int s = 0; s < c.s; ++s)
      for (int j = 0; j < c.sctx; ++j)
        in.mask[(size_t(b) * c.s + s) * c.sctx + j] =
            (striped ? (j / 8192) % 2 == 0 : j < len) && u01(rng) < 0.9 ? 1 : 0;
  }
  for (int b = 0; b < c.b; ++b) in.pos.push_back(pos_of(c, b));
  return in;
}

std::map<std::string, std::vector<uint8_t>> input_bytes(const AttnCase& c, const Inputs& in) {
  std::map<std::string, std::vector<uint8_t>> m = {{"x", to_bytes(in.x, c.dt)},
                                                   {"norm_w", to_bytes(in.nw, c.dt)},
                                                   {"w_qkv", to_bytes(in.wqkv, c.dt)},
                                                   {"w_o", to_bytes(in.wo, c.dt)},
                                                   {"cos", to_bytes(in.cs, DType::fp32)},
                                                   {"sin", to_bytes(in.sn, DType::fp32)},
                                                   {"k_cache", in.kcb},
                                                   {"v_cache", in.vcb},
                                                   {"mask", in.mask}};
  std::vector<uint8_t> pb(in.pos.size() * 4);
  std::memcpy(pb.data(), in.pos.data(), pb.size());
  m["pos"] = pb;
  if (c.qkn != "none") {
    m["q_norm_w"] = to_bytes(in.qnw, c.dt);
    m["k_norm_w"] = to_bytes(in.knw, c.dt);
  }
  if (c.fp8) {
    m["k_scale"] = to_bytes({in.ks}, DType::fp32);
    m["v_scale"] = to_bytes({in.vs}, DType::fp32);
  }
  return m;
}

Defines defines(const AttnCase& c) {
  const auto s = [](int v) { return std::to_string(v); };
  return {{"B", s(c.b)},
          {"S", s(c.s)},
          {"H", s(c.h)},
          {"QH", s(c.qh)},
          {"D", s(c.d)},
          {"S_CTX", s(c.sctx)},
          {"ROPE", c.interleaved ? "interleaved" : "half"},
          {"QK_NORM", c.qkn},
          {"FP8_KV", s(int(c.fp8))},
          {"DT", dt_name(c.dt)}};
}

struct AttnRun {
  interp::RunStatus status = interp::RunStatus::ok;
  std::string report;
  std::map<std::string, std::vector<uint8_t>> t; // out, k_cache, v_cache
  size_t races = 0;
  interp::Stats stats;
};

// random_seed != 0: --schedule random with --check-uninit and the race checker.
AttnRun run_case(const Module& m, int lnc, const std::map<std::string, std::vector<uint8_t>>& in,
                 uint64_t random_seed, Target target = Target::trn2) {
  interp::MachineOptions mo;
  mo.target = target;
  mo.lnc = lnc;
  mo.check_uninit = random_seed != 0;
  interp::Machine machine(m, mo);
  for (const auto& [name, bytes] : in) {
    const TensorDecl* t = machine.find_tensor(name);
    EXPECT_TRUE(t != nullptr) << name;
    if (!t) return {};
    EXPECT_EQ(bytes.size(), interp::Machine::tensor_bytes(*t)) << name;
    machine.write_tensor(*t, bytes.data());
  }
  interp::RaceChecker rc(machine);
  interp::SchedOptions so;
  if (random_seed != 0) {
    so.mode = interp::ScheduleMode::random;
    so.seed = random_seed;
    so.observer = &rc;
  }
  interp::RunResult rr = interp::run(machine, so);
  AttnRun r;
  r.status = rr.status;
  r.report = rr.report;
  r.stats = rr.stats;
  r.races = random_seed != 0 ? rc.races().size() : 0;
  for (const char* name : {"out", "k_cache", "v_cache"}) {
    const TensorDecl* t = machine.find_tensor(name);
    const uint8_t* p = machine.hbm_tensor(0, *t);
    r.t[name].assign(p, p + interp::Machine::tensor_bytes(*t));
  }
  return r;
}

// ---- the reference ---------------------------------------------------------------------------

struct Ref {
  std::vector<double> out, out_tol; // [T, H]
  std::vector<double> knew, vnew;   // [T, D] the new rows as stored (FP8: q * scale)
  std::vector<double> kraw, vraw;   // [T, D] before quantisation
  std::vector<double> kmag, vmag;   // [T] max |.| of the row (normwise tolerance)
};

double e4m3_step(double y) { // spacing of e4m3 at |y| (3 mantissa bits, subnormal step 2^-9)
  const double a = std::fabs(y);
  if (a < std::ldexp(1.0, -6)) return std::ldexp(1.0, -9);
  return std::ldexp(1.0, int(std::floor(std::log2(a))) - 3);
}

double quant(double y, double scale) { // e4m3(clamp(y / scale)) * scale
  const double q = std::clamp(y / scale, -240.0, 240.0);
  return double(fp8e4m3_to_f32(f32_to_fp8e4m3(float(q)))) * scale;
}

void rms_norm(double* v, int n, const std::vector<float>& w, double eps) {
  double ss = 0;
  for (int i = 0; i < n; ++i) ss += v[i] * v[i];
  const double r = 1.0 / std::sqrt(ss / n + eps);
  for (int i = 0; i < n; ++i) v[i] *= r * w[size_t(i)];
}

void rope(double* v, int d, const float* cs, const float* sn, bool inter) {
  for (int i = 0; i < d / 2; ++i) {
    const int a = inter ? 2 * i : i, b = inter ? 2 * i + 1 : i + d / 2;
    const double x1 = v[a], x2 = v[b];
    v[a] = x1 * cs[i] - x2 * sn[i];
    v[b] = x2 * cs[i] + x1 * sn[i];
  }
}

Ref reference(const AttnCase& c, const Inputs& in) {
  const int T = c.b * c.s, H = c.h, D = c.d, QH = c.qh, W = (QH + 2) * D, HD = D / 2;
  const double eps = 1e-6;
  const double u = c.dt == DType::bf16 ? kUb : kU;
  const double ue = u + (H + c.sctx + QH * D + 16) * kU;
  std::vector<double> qkv(size_t(T) * W);
  for (int t = 0; t < T; ++t) {
    double ss = 0;
    for (int h = 0; h < H; ++h) ss += double(in.x[size_t(t) * H + h]) * in.x[size_t(t) * H + h];
    const double r = 1.0 / std::sqrt(ss / H + eps);
    for (int col = 0; col < W; ++col) {
      double a = 0;
      for (int h = 0; h < H; ++h)
        a += in.x[size_t(t) * H + h] * r * in.nw[size_t(h)] * in.wqkv[size_t(h) * W + col];
      qkv[size_t(t) * W + col] = a;
    }
    for (int hd = 0; hd <= QH; ++hd) {
      double* v = &qkv[size_t(t) * W + size_t(hd) * D];
      const std::vector<float>& w = hd < QH ? in.qnw : in.knw;
      if (c.qkn == "pre") rms_norm(v, D, w, eps);
      rope(v, D, &in.cs[size_t(t) * HD], &in.sn[size_t(t) * HD], c.interleaved);
      if (c.qkn == "post") rms_norm(v, D, w, eps);
    }
  }
  Ref r;
  r.knew.resize(size_t(T) * D);
  r.vnew.resize(r.knew.size());
  r.kraw.resize(r.knew.size());
  r.vraw.resize(r.knew.size());
  r.kmag.assign(size_t(T), 0.0);
  r.vmag.assign(size_t(T), 0.0);
  for (int t = 0; t < T; ++t)
    for (int d = 0; d < D; ++d) {
      const double k = qkv[size_t(t) * W + size_t(QH) * D + d];
      const double v = qkv[size_t(t) * W + size_t(QH + 1) * D + d];
      r.kraw[size_t(t) * D + d] = k;
      r.vraw[size_t(t) * D + d] = v;
      r.knew[size_t(t) * D + d] = c.fp8 ? quant(k, in.ks) : k;
      r.vnew[size_t(t) * D + d] = c.fp8 ? quant(v, in.vs) : v;
      r.kmag[size_t(t)] = std::max(r.kmag[size_t(t)], std::fabs(k));
      r.vmag[size_t(t)] = std::max(r.vmag[size_t(t)], std::fabs(v));
    }
  // attention per (b, s, h), then the o-projection
  std::vector<double> att(size_t(T) * QH * D), amag(att.size()), e_head(size_t(T) * QH);
  const int n = c.sctx + c.s;
  std::vector<double> sc(static_cast<size_t>(n)), smag(static_cast<size_t>(n));
  for (int b = 0; b < c.b; ++b)
    for (int s = 0; s < c.s; ++s) {
      const int t = b * c.s + s;
      for (int hh = 0; hh < QH; ++hh) {
        const double* q = &qkv[size_t(t) * W + size_t(hh) * D];
        double mx = -INFINITY, sm = 0, sm_act = 0;
        std::vector<bool> vis(size_t(n), false);
        for (int j = 0; j < n; ++j) {
          const bool act = j >= c.sctx;
          if (!act && !in.mask[size_t(t) * c.sctx + j]) continue;
          if (act && j - c.sctx > s) continue;
          const double* k = act ? &r.knew[size_t(b * c.s + j - c.sctx) * D] : nullptr;
          double a = 0, am = 0;
          for (int d = 0; d < D; ++d) {
            const double kv = act ? k[d] : in.kc[(size_t(b) * c.sctx + j) * D + d];
            a += q[d] * kv;
            am += std::fabs(q[d] * kv);
          }
          sc[size_t(j)] = a / std::sqrt(double(D));
          smag[size_t(j)] = am / std::sqrt(double(D));
          sm = std::max(sm, smag[size_t(j)]);
          if (act) sm_act = std::max(sm_act, smag[size_t(j)]);
          vis[size_t(j)] = true;
          mx = std::max(mx, sc[size_t(j)]);
        }
        double l = 0;
        for (int j = 0; j < n; ++j)
          if (vis[size_t(j)]) l += std::exp(sc[size_t(j)] - mx);
        double pact = 0;
        double* o = &att[(size_t(t) * QH + hh) * D];
        double* om = &amag[(size_t(t) * QH + hh) * D];
        for (int d = 0; d < D; ++d) o[d] = om[d] = 0;
        for (int j = 0; j < n; ++j) {
          if (!vis[size_t(j)]) continue;
          const double p = std::exp(sc[size_t(j)] - mx) / l;
          const bool act = j >= c.sctx;
          if (act) pact += p;
          for (int d = 0; d < D; ++d) {
            const double v = act ? r.vnew[size_t(b * c.s + j - c.sctx) * D + d]
                                 : in.vc[(size_t(b) * c.sctx + j) * D + d];
            o[d] += p * v;
            om[d] += p * std::fabs(v);
          }
        }
        double e = ue * (8 + 4 * sm);
        if (c.fp8) {
          e += pact * (0.125 + 0.25 * sm_act);
          for (int d = 0; d < D; ++d) om[d] += pact * std::ldexp(1.0, -9) * in.vs * 2;
        }
        e_head[size_t(t) * QH + hh] = e;
      }
    }
  r.out.assign(size_t(T) * H, 0.0);
  r.out_tol.assign(r.out.size(), 0.0);
  for (int t = 0; t < T; ++t)
    for (int col = 0; col < H; ++col) {
      double a = 0, tol = 0;
      for (int hh = 0; hh < QH; ++hh)
        for (int d = 0; d < D; ++d) {
          const size_t ai = (size_t(t) * QH + hh) * D + d;
          const double w = in.wo[(size_t(hh) * D + d) * H + col];
          a += att[ai] * w;
          tol += e_head[size_t(t) * QH + hh] * amag[ai] * std::fabs(w);
        }
      r.out[size_t(t) * H + col] = a;
      r.out_tol[size_t(t) * H + col] = tol + u * std::fabs(a) + 1e-30;
    }
  return r;
}

// Checks a run against the reference: out within its tolerance; the written cache rows within
// theirs (FP8: one e4m3 step); every other cache byte identical to the input.
void check(const AttnCase& c, const Inputs& in, const AttnRun& run) {
  ASSERT_EQ(run.status, interp::RunStatus::ok) << run.report;
  const Ref r = reference(c, in);
  const int D = c.d;
  const double u = c.dt == DType::bf16 ? kUb : kU;
  const double ue = u + (c.h + c.sctx + c.qh * D + 16) * kU;
  const std::vector<float> out = from_bytes(run.t.at("out"), c.dt);
  ASSERT_EQ(out.size(), r.out.size());
  double se = 0, so = 0;
  for (size_t k = 0; k < out.size(); ++k) {
    ASSERT_NEAR(out[k], r.out[k], r.out_tol[k])
        << "out token " << k / size_t(c.h) << " col " << k % size_t(c.h);
    se += (out[k] - r.out[k]) * (out[k] - r.out[k]);
    so += r.out[k] * r.out[k];
  }
  // the relative RMS error, a much tighter (statistical) check than the worst-case bound
  const double rms_max =
      c.dt == DType::bf16 ? (c.fp8 ? 0x1p-4 : 0x1p-5) : (c.fp8 ? 0x1p-10 : 0x1p-16);
  EXPECT_LE(std::sqrt(se / so), rms_max) << "relative RMS error of out";
  for (int which = 0; which < 2; ++which) {
    const char* name = which == 0 ? "k_cache" : "v_cache";
    const std::vector<uint8_t>& got = run.t.at(name);
    const std::vector<uint8_t>& given = which == 0 ? in.kcb : in.vcb;
    const std::vector<double>& want = which == 0 ? r.knew : r.vnew;
    const std::vector<double>& raw = which == 0 ? r.kraw : r.vraw;
    const std::vector<double>& mag = which == 0 ? r.kmag : r.vmag;
    const double scale = which == 0 ? in.ks : in.vs;
    ASSERT_EQ(got.size(), given.size()) << name;
    const size_t eb = c.fp8 ? 1 : size_t(dtype_bytes(c.dt));
    std::vector<int> written(size_t(c.b) * c.sctx, -1); // row -> token
    for (int b = 0; b < c.b; ++b)
      if (in.pos[size_t(b)] != kNoUpdate)
        for (int s = 0; s < c.s; ++s)
          written[size_t(b) * c.sctx + in.pos[size_t(b)] + s] = b * c.s + s;
    for (size_t row = 0; row < written.size(); ++row) {
      const size_t o = row * D * eb;
      if (written[row] < 0) {
        ASSERT_TRUE(std::equal(got.begin() + ptrdiff_t(o), got.begin() + ptrdiff_t(o + D * eb),
                               given.begin() + ptrdiff_t(o)))
            << name << " row " << row << " (not written) changed";
        continue;
      }
      const int t = written[row];
      for (int d = 0; d < D; ++d) {
        const size_t ti = size_t(t) * D + d;
        double v, tol;
        if (c.fp8) {
          v = double(fp8e4m3_to_f32(got[o + d])) * scale;
          // one e4m3 step of the quantised value, plus the kernel's own error in k / v
          tol = e4m3_step(std::clamp(raw[ti] / scale, -240.0, 240.0)) * scale +
                8 * ue * mag[size_t(t)] + 1e-30;
        } else {
          v = from_bytes(std::vector<uint8_t>(got.begin() + ptrdiff_t(o + d * eb),
                                              got.begin() + ptrdiff_t(o + (d + 1) * eb)),
                         c.dt)[0];
          tol = 8 * ue * mag[size_t(t)] + u * std::fabs(want[ti]) + 1e-30;
        }
        ASSERT_NEAR(v, want[ti], tol) << name << " row " << row << " (token " << t << ") d " << d;
      }
    }
  }
}

class Attn : public testing::TestWithParam<AttnCase> {};

TEST_P(Attn, MatchesReference) {
  const AttnCase& c = GetParam();
  Assembled a = assemble_kernel("attention_block_tkg.nasm", defines(c), Target::trn2);
  ASSERT_TRUE(a.ok) << a.diagnostics;
  const Inputs in = make_inputs(c);
  check(c, in, run_case(a.module, c.lnc, input_bytes(c, in), 0));
}

// A covering grid: every value of every axis of the issue appears (B 1/4/16, S 1/5/8, QH 1/2/8,
// D 64/128, S_CTX 128/1000/8192, both RoPE layouts, the three QK_NORM modes, FP8 on / off, bf16
// and fp32, LNC 1 and 2; the pos kinds cycle over the sequences: start, middle, end, none),
// within B*S*QH <= 128; H 256 / 384 (an LNC half of 192: a 64-row tile) / 512.
std::vector<AttnCase> grid() {
  const DType f32 = DType::fp32, b16 = DType::bf16;
  return {
      {1, b16, 1, 1, 1, 64, 256, 128, false, "none", false, 0},
      {2, f32, 4, 5, 2, 128, 256, 1000, true, "pre", true, 1},
      {2, b16, 16, 8, 1, 64, 256, 128, false, "post", false, 2},
      {1, f32, 1, 8, 8, 128, 256, 8192, true, "none", true, 3},
      {2, b16, 4, 1, 8, 128, 512, 8192, false, "pre", false, 0},
      {1, b16, 16, 1, 8, 64, 256, 1000, true, "post", true, 1},
      {2, f32, 1, 5, 8, 64, 384, 128, false, "none", false, 2},
      {1, b16, 4, 8, 2, 128, 256, 128, true, "pre", true, 3},
      {2, b16, 16, 5, 1, 128, 384, 1000, false, "post", true, 0},
      {1, f32, 16, 1, 2, 64, 256, 8192, false, "post", false, 1},
      {2, f32, 1, 1, 2, 64, 128, 1000, true, "none", true, 2},  // H = 128: a 64-column half
      {1, b16, 1, 5, 1, 128, 384, 8192, true, "pre", false, 3}, // only pos = none
      {2, b16, 3, 2, 4, 64, 256, 200, true, "post", false, 1},  // odd B: 2 + 1 sequences
      {2, f32, 1, 8, 16, 128, 256, 128, false, "pre", true, 0}, // QH*D = 2048, B*S*QH = 128
      // past one 8192-row chunk: the flash-style cascaded softmax (odd sequences striped)
      {1, b16, 2, 1, 2, 64, 256, 8193, false, "none", false, 2},   // a 1-row last chunk
      {2, f32, 2, 2, 2, 128, 256, 10240, true, "post", true, 1},   // FP8, --lnc 2
      {2, b16, 2, 1, 4, 128, 128, 36864, false, "pre", false, 1},  // pos at the end (b = 1)
      {1, f32, 2, 1, 1, 64, 128, 36864, true, "none", false, 2},   // fp32, 5 chunks
      {1, b16, 2, 1, 1, 64, 128, 131072, false, "none", false, 1}, // 16 chunks, pos at the end
      // QH*D > 2048 (B*S = 1): the per-head work in groups of heads, the exchange in pieces
      {1, b16, 1, 1, 32, 128, 256, 600, false, "pre", false, 0},
      {2, f32, 1, 1, 128, 64, 256, 200, true, "post", true, 2},
      {2, b16, 1, 1, 128, 128, 256, 10000, false, "pre", false, 1}, // QH*D = 16384, 2 chunks
  };
}
INSTANTIATE_TEST_SUITE_P(Grid, Attn, testing::ValuesIn(grid()), attn_name);

// gemma3-27b's attention at its longest context (H 5376, QH 2, D 128, S_CTX 131072: 16 chunks)
// with B = 16 (B = 64 needs ~20 GiB of host memory for the test's copies; `nisa run` of B = 64
// is in docs/performance.md). About 100 s: `make test` runs it, `make asan` leaves it out.
TEST(AttnLarge, Gemma3LongContext) {
  const AttnCase c{2, DType::bf16, 16, 1, 2, 128, 5376, 131072, false, "pre", false, 2};
  Assembled a = assemble_kernel("attention_block_tkg.nasm", defines(c), Target::trn2);
  ASSERT_TRUE(a.ok) << a.diagnostics;
  const Inputs in = make_inputs(c);
  check(c, in, run_case(a.module, c.lnc, input_bytes(c, in), 0));
}

// Race-free under the checker, no uninitialised read, and the same bits as the default schedule
// for several seeds of the random schedule.
TEST(AttnSync, RaceFreeAndSameBitsUnderRandomSchedules) {
  for (const AttnCase& c :
       {AttnCase{2, DType::bf16, 4, 5, 2, 64, 384, 1000, true, "pre", true, 0},
        AttnCase{1, DType::fp32, 2, 8, 4, 128, 256, 128, false, "post", false, 2},
        AttnCase{2, DType::fp32, 16, 1, 1, 64, 256, 128, true, "none", false, 1},
        // two cache chunks (FP8, striped mask) and QH*D > 2048 (head groups, pieces)
        AttnCase{2, DType::bf16, 2, 1, 2, 64, 128, 9000, false, "pre", true, 2},
        AttnCase{2, DType::fp32, 1, 1, 40, 64, 128, 100, true, "post", false, 0}}) {
    Assembled a = assemble_kernel("attention_block_tkg.nasm", defines(c), Target::trn2);
    ASSERT_TRUE(a.ok) << a.diagnostics;
    const Inputs in = make_inputs(c);
    const auto bytes = input_bytes(c, in);
    const AttnRun base = run_case(a.module, c.lnc, bytes, 0);
    check(c, in, base);
    for (uint64_t seed : {3u, 17u}) {
      const AttnRun r = run_case(a.module, c.lnc, bytes, seed);
      ASSERT_EQ(r.status, interp::RunStatus::ok) << r.report;
      EXPECT_EQ(r.races, 0u) << attn_name({c, 0}) << " seed " << seed;
      for (const char* t : {"out", "k_cache", "v_cache"})
        EXPECT_TRUE(r.t.at(t) == base.t.at(t)) << t << " seed " << seed;
    }
  }
}

// trn3 (gen4: other clocks, wider matmuls allowed) runs the same program to the same bits.
TEST(AttnTarget, Trn3SameBitsAsTrn2) {
  const AttnCase c{2, DType::bf16, 4, 2, 2, 64, 256, 300, true, "post", true, 1};
  const Inputs in = make_inputs(c);
  const auto bytes = input_bytes(c, in);
  Assembled a2 = assemble_kernel("attention_block_tkg.nasm", defines(c), Target::trn2);
  Assembled a3 = assemble_kernel("attention_block_tkg.nasm", defines(c), Target::trn3);
  ASSERT_TRUE(a2.ok && a3.ok) << a2.diagnostics << a3.diagnostics;
  const AttnRun r2 = run_case(a2.module, c.lnc, bytes, 0, Target::trn2);
  const AttnRun r3 = run_case(a3.module, c.lnc, bytes, 0, Target::trn3);
  check(c, in, r3);
  for (const char* t : {"out", "k_cache", "v_cache"}) EXPECT_TRUE(r2.t.at(t) == r3.t.at(t)) << t;
}

// LNC 1 and LNC 2 agree within the tolerance (each against the reference, and with each other).
TEST(AttnLnc, OneAndTwoCoresAgree) {
  AttnCase c{1, DType::fp32, 2, 2, 2, 64, 512, 300, false, "none", false, 0};
  Assembled a = assemble_kernel("attention_block_tkg.nasm", defines(c), Target::trn2);
  ASSERT_TRUE(a.ok) << a.diagnostics;
  const Inputs in = make_inputs(c);
  const auto bytes = input_bytes(c, in);
  const AttnRun r1 = run_case(a.module, 1, bytes, 0), r2 = run_case(a.module, 2, bytes, 0);
  check(c, in, r1);
  c.lnc = 2;
  check(c, in, r2);
  // (not the same bits: the fp32 sums over H are added in another order with two halves)
  const std::vector<float> o1 = from_bytes(r1.t.at("out"), c.dt),
                           o2 = from_bytes(r2.t.at("out"), c.dt);
  double md = 0;
  for (size_t k = 0; k < o1.size(); ++k) md = std::max(md, double(std::fabs(o1[k] - o2[k])));
  EXPECT_LT(md, 1e-4);
}

// A pos row outside the cache faults before anything is written (the outputs are then not
// written by nisa run either), naming the register and the range.
TEST(AttnBadInput, PosOutsideTheCacheFaults) {
  const AttnCase c{1, DType::bf16, 2, 4, 1, 64, 128, 128, false, "none", false, 0};
  Assembled a = assemble_kernel("attention_block_tkg.nasm", defines(c), Target::trn2);
  ASSERT_TRUE(a.ok) << a.diagnostics;
  for (int lnc : {1, 2})
    for (uint32_t bad :
         {uint32_t(c.sctx - c.s + 1), uint32_t(c.sctx), 0x80000000u, 0xFFFFFFFEu, 0x7FFFFFFEu}) {
      Inputs in = make_inputs(c);
      in.pos[1] = bad;
      const AttnRun r = run_case(a.module, lnc, input_bytes(c, in), 0);
      EXPECT_EQ(r.status, interp::RunStatus::fault) << bad;
      EXPECT_NE(r.report.find("is outside [0, 128) for dynamic offset"), std::string::npos)
          << r.report;
      // nothing reached the caches before the fault
      EXPECT_TRUE(r.t.at("k_cache") == in.kcb);
      EXPECT_TRUE(r.t.at("v_cache") == in.vcb);
    }
}

// Each envelope limit stops assembly with an .error naming it.
TEST(AttnEnvelope, ErrorsNameTheLimit) {
  const std::vector<std::pair<Defines, std::string>> cases = {
      {{{"DT", "fp16"}}, "DT must be fp32 or bf16"},
      {{{"ROPE", "full"}}, "ROPE must be half or interleaved"},
      {{{"QK_NORM", "both"}}, "QK_NORM must be none, pre or post"},
      {{{"FP8_KV", "2"}}, "FP8_KV must be 0 or 1"},
      {{{"B", "0"}}, "B and QH must be positive"},
      {{{"S", "9"}}, "S must be in [1, 8]"},
      {{{"S", "0"}}, "S must be in [1, 8]"},
      {{{"B", "16"}, {"S", "8"}, {"QH", "2"}}, "B*S*QH must be <= 128"},
      {{{"D", "65"}}, "D must be even and in [2, 128]"},
      {{{"D", "130"}}, "D must be even and in [2, 128]"},
      {{{"H", "200"}}, "H must be a positive multiple of 128"},
      {{{"S_CTX", "0"}}, "S_CTX must be positive"},
  };
  for (const auto& [defs, msg] : cases) {
    Assembled a = assemble_kernel("attention_block_tkg.nasm", defs, Target::trn2);
    EXPECT_FALSE(a.ok) << msg;
    EXPECT_NE(a.diagnostics.find("attention_block_tkg: " + msg), std::string::npos)
        << a.diagnostics;
  }
  // the tiles together beyond the SBUF partition (the x^T tiles alone: 2 * H/128 * B*S * 4 =
  // 256 KiB here): the assembler names the one that does not fit
  Assembled big = assemble_kernel("attention_block_tkg.nasm",
                                  {{"DT", "fp32"},
                                   {"H", "32768"},
                                   {"B", "128"},
                                   {"S", "1"},
                                   {"QH", "1"},
                                   {"D", "128"},
                                   {"S_CTX", "8192"}},
                                  Target::trn2);
  EXPECT_FALSE(big.ok);
  EXPECT_NE(big.diagnostics.find("SBUF over capacity: tensor '"), std::string::npos)
      << big.diagnostics;
  // the largest shapes of the envelope's corners fit (the cache chunk shrinks to fit beside the
  // x^T tiles: 2048 rows at fp32, H = 16384, B*S = 128; QH*D = 16384 at fp32 with QK-norm, FP8)
  for (const Defines& d : std::vector<Defines>{{{"DT", "fp32"},
                                                {"H", "16384"},
                                                {"B", "128"},
                                                {"S", "1"},
                                                {"QH", "1"},
                                                {"D", "128"},
                                                {"S_CTX", "20000"},
                                                {"QK_NORM", "pre"},
                                                {"FP8_KV", "1"}},
                                               {{"DT", "fp32"},
                                                {"H", "16384"},
                                                {"B", "1"},
                                                {"S", "1"},
                                                {"QH", "128"},
                                                {"D", "128"},
                                                {"S_CTX", "20000"},
                                                {"QK_NORM", "post"},
                                                {"FP8_KV", "1"}},
                                               {{"DT", "fp32"},
                                                {"H", "8192"},
                                                {"B", "128"},
                                                {"S", "1"},
                                                {"QH", "1"},
                                                {"D", "128"},
                                                {"S_CTX", "8192"},
                                                {"QK_NORM", "pre"},
                                                {"FP8_KV", "1"}},
                                               {{"DT", "fp32"},
                                                {"H", "8192"},
                                                {"B", "1"},
                                                {"S", "8"},
                                                {"QH", "16"},
                                                {"D", "128"},
                                                {"S_CTX", "8192"},
                                                {"QK_NORM", "pre"},
                                                {"FP8_KV", "1"}},
                                               {{"DT", "bf16"},
                                                {"H", "16384"},
                                                {"B", "128"},
                                                {"S", "1"},
                                                {"QH", "1"},
                                                {"D", "128"},
                                                {"S_CTX", "8192"},
                                                {"QK_NORM", "post"},
                                                {"FP8_KV", "1"}}}) {
    Assembled a = assemble_kernel("attention_block_tkg.nasm", d, Target::trn2);
    EXPECT_TRUE(a.ok) << a.diagnostics;
  }
  Assembled t1 = assemble_kernel("attention_block_tkg.nasm", {}, Target::trn1);
  EXPECT_FALSE(t1.ok);
  EXPECT_NE(t1.diagnostics.find("attention_block_tkg: needs trn2 or later"), std::string::npos)
      << t1.diagnostics;
}

} // namespace
} // namespace nisa::kt
