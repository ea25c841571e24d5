// The language forms of issue 17 (docs/asm.md): broadcast slices (stride 0 on an HBM row dim
// and on free dims), tensor functions (addr, size, dim, part), math functions (sqrt, pow, exp,
// log, floor, ceil, round), computed queue names (q(N)), and inferred synchronisation
// (@after / @after_opt, lowered to @wait / @signal and proved by nisa check). Each is
// assembled and, where it moves data, run on the machine with the values checked.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "asm/asm.h"
#include "interp/check/check.h"
#include "interp/core/machine.h"
#include "interp/sched/scheduler.h"
#include "isa/print.h"

using namespace nisa;

namespace {

using Defines = std::vector<std::pair<std::string, std::string>>;

Module assemble_text(const std::string& text, const Defines& d = {}) {
  nasm::AsmOptions o;
  o.defines = d;
  nasm::AsmResult r = nasm::assemble_string(text, "t.nasm", o);
  EXPECT_TRUE(r.ok()) << r.diagnostics_text();
  return r.module ? std::move(*r.module) : Module{};
}

Module assemble_file(const std::string& f, const Defines& d = {}) {
  nasm::AsmOptions o;
  o.defines = d;
  nasm::AsmResult r = nasm::assemble_file(std::string(NISA_SOURCE_DIR) + "/" + f, o);
  EXPECT_TRUE(r.ok()) << r.diagnostics_text();
  return r.module ? std::move(*r.module) : Module{};
}

const TensorDecl& tensor(const Module& m, const std::string& n) {
  for (const TensorDecl& t : m.tensors)
    if (t.name == n) return t;
  throw std::runtime_error("no tensor " + n);
}

struct Ran {
  interp::RunResult r;
  std::vector<float> out;
};

// Runs m with fp32 inputs; returns the fp32 output `out_name`.
Ran run(const Module& m, const std::vector<std::pair<std::string, std::vector<float>>>& ins,
        const std::string& out_name) {
  interp::MachineOptions mo;
  mo.target = m.target;
  interp::Machine machine(m, mo);
  for (const auto& [n, v] : ins)
    machine.write_tensor(tensor(m, n), reinterpret_cast<const uint8_t*>(v.data()));
  Ran x;
  x.r = interp::run(machine, {});
  const TensorDecl& t = tensor(m, out_name);
  x.out.resize(interp::Machine::tensor_bytes(t) / 4);
  std::memcpy(x.out.data(), machine.hbm_tensor(0, t), x.out.size() * 4);
  return x;
}

// gamma[1, H] broadcast to 128 rows by a stride-0 row dim (`gamma[:128:0, :]`), and a [P, 1]
// tile broadcast along the free axis (`s[:, 0:H:0]`): y = x * gamma * s.
TEST(Broadcast, RowAndFreeAxisBroadcastsRun) {
  const std::string text = R"(.param H = 64
.hbm  x     : fp32[128, H] input
.hbm  gamma : fp32[1, H] input
.hbm  sc    : fp32[128, 1] input
.hbm  y     : fp32[128, H] output
.sbuf g     : fp32[128, H]
.sbuf xt    : fp32[128, H]
.sbuf s     : fp32[128, 1]
.sem  in, done
        sp.dma q0, g, gamma[:128:0, :]  @signal(in)
        sp.dma q1, xt, x  @signal(in)
        sp.dma q2, s, sc  @signal(in)
        dve.tensor_tensor xt, xt, g, op=mul  @wait(in >= 3)
        dve.tensor_tensor xt, xt, s[:, 0:H:0], op=mul  @signal(done)
        sp.dma q3, y, xt  @wait(done >= 1)
)";
  Module m = assemble_text(text);
  // The broadcasts are stride 0 in the access patterns (row stride, free stride).
  const Inst& load = m.streams[int(Engine::sp)][0];
  EXPECT_EQ(load.ops[2].ap.part_count, 128);
  EXPECT_EQ(load.ops[2].ap.part_stride, 0);
  const Inst& mul = m.streams[int(Engine::dve)][1];
  EXPECT_EQ(mul.ops[2].ap.dims[0].stride, 0);
  EXPECT_EQ(mul.ops[2].ap.dims[0].count, 64u);
  std::vector<float> x(128 * 64), gamma(64), sc(128);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 97) * 0.5f - 3.0f;
  for (size_t i = 0; i < gamma.size(); ++i) gamma[i] = 1.0f + float(i) / 8.0f;
  for (size_t i = 0; i < sc.size(); ++i) sc[i] = float(i % 5) - 2.0f;
  Ran r = run(m, {{"x", x}, {"gamma", gamma}, {"sc", sc}}, "y");
  ASSERT_EQ(r.r.status, interp::RunStatus::ok) << r.r.report;
  for (size_t p = 0; p < 128; ++p)
    for (size_t j = 0; j < 64; ++j)
      ASSERT_EQ(r.out[p * 64 + j], x[p * 64 + j] * gamma[j] * sc[p]) << p << "," << j;
  interp::CheckResult c = interp::check_module(m, {});
  EXPECT_EQ(c.status, interp::CheckStatus::proved) << c.report;
}

// addr/size/dim/part give the declaration's placement; sqrt, pow, exp, log, floor, ceil,
// round compute immediates; q(N) names a queue.
TEST(Functions, TensorFunctionsMathAndQueues) {
  const std::string text = R"(.hbm  a : fp32[4, 8]
.hbm  b : bf16[3, 5] @ 0x1000
.sbuf t : fp32[32, 6] @ [32, 0x100]
.equ  A  = addr(b)
.equ  SB = size(b)
.equ  ST = size(t)
.equ  D1 = dim(b, 1)
.equ  PT = part(t)
.equ  AT = addr(t)
        dve.memset t, sqrt(16.0) + pow(2, 3) + exp(0.0) + log(1.0)
        dve.memset t, floor(2.5) * 100 + ceil(2.5) * 10 + round(-0.4)
        sp.dma q(A / 0x1000 + 6), a, a
        sp.dma q((SB + ST + D1 + PT + AT) % 16), a, a
)";
  Module m = assemble_text(text);
  const auto& dve = m.streams[int(Engine::dve)];
  ASSERT_EQ(dve.size(), 2u);
  EXPECT_EQ(dve[0].ops[1].f, 4.0f + 8.0f + 1.0f + 0.0f);
  EXPECT_EQ(dve[1].ops[1].f, 230.0f);
  const auto& sp = m.streams[int(Engine::sp)];
  EXPECT_EQ(sp[0].ops[0].i, 7); // 0x1000 / 0x1000 + 6
  // size(b) = 30 bytes, size(t) = 24 bytes per partition, dim(b, 1) = 5, part(t) = 32,
  // addr(t) = 0x100: 30 + 24 + 5 + 32 + 256 = 347 = 21 * 16 + 11
  EXPECT_EQ(sp[1].ops[0].i, 11);
  EXPECT_EQ(tensor(m, "b").address, 0x1000u);
}

// lib/dma.inc's dmaq (one line with q(QI % 16) instead of a 16-way .if) puts DMAs on the
// queues it did before.
TEST(Functions, DmaqComputesItsQueue) {
  const std::string text = R"(.include "lib/dma.inc"
.hbm  x : fp32[128, 8]
.sbuf a : fp32[128, 8]
.sem  s
.for i in 0 .. 20
        dmaq i, a, x, s, i, s
.endfor
)";
  nasm::AsmOptions o;
  o.include_dirs = {std::string(NISA_SOURCE_DIR) + "/kernels_asm"};
  nasm::AsmResult r = nasm::assemble_string(text, "t.nasm", o);
  ASSERT_TRUE(r.ok()) << r.diagnostics_text();
  const auto& sp = r.module->streams[int(Engine::sp)];
  ASSERT_EQ(sp.size(), 20u);
  for (size_t i = 0; i < sp.size(); ++i) {
    EXPECT_EQ(sp[i].ops[0].i, int64_t(i % 16));
    ASSERT_EQ(sp[i].waits.size(), 1u);
    EXPECT_EQ(sp[i].waits[0].value, i);
  }
}

// @after lowers to ordinary waits and signals on one semaphore per producer stream.
TEST(After, LowersToWaitsAndSignals) {
  const std::string text = R"(.hbm  x : fp32[128, 8] input
.hbm  y : fp32[128, 8] output
.sbuf a : fp32[128, 8]
.sbuf b : fp32[128, 8]
ld:     sp.dma q0, a, x
        dve.tensor_scalar b, a, op0=mul, operand0=2.0  @after(ld)
mul:    act.copy a, b  @after(ld)
        sp.dma q1, y, a  @after(mul)
)";
  Module m = assemble_text(text);
  std::vector<std::string> sems;
  for (const SemDecl& s : m.sems) sems.push_back(s.name);
  EXPECT_EQ(sems, (std::vector<std::string>{"__after_act", "__after_sp_q0"}));
  const auto& sp = m.streams[int(Engine::sp)];
  ASSERT_EQ(sp[0].signals.size(), 1u);
  EXPECT_EQ(sp[0].signals[0].sem, 1);
  ASSERT_EQ(sp[1].waits.size(), 1u);
  EXPECT_EQ(sp[1].waits[0].sem, 0);
  EXPECT_EQ(sp[1].waits[0].value, 1u);
  const auto& dve = m.streams[int(Engine::dve)];
  ASSERT_EQ(dve[0].waits.size(), 1u);
  EXPECT_EQ(dve[0].waits[0].value, 1u);
  // The disassembly shows them.
  const std::string text_out = print_inst(m.streams[int(Engine::act)][0]);
  EXPECT_NE(text_out.find("@wait(s1 >= 1) @signal(s0)"), std::string::npos) << text_out;
  // dve and act both read a / write b, a: the act copy overwrites a while dve reads it,
  // which @after(ld) does not order: nisa check says so.
  interp::CheckResult c = interp::check_module(m, {});
  EXPECT_EQ(c.status, interp::CheckStatus::races) << c.report;
}

// cumsum.nasm and cumsum_after.nasm (the same kernel with @after instead of semaphore
// arithmetic): identical outputs, modelled time within 5% (equal here), and proved.
TEST(After, CumsumWrittenBothWays) {
  const Defines d = {{"ROWS", "300"}, {"COLS", "5000"}};
  Module a = assemble_file("kernels_asm/cumsum.nasm", d);
  for (const char* other : {"kernels_asm/cumsum_after.nasm", "kernels_asm/cumsum_auto.nasm"}) {
    SCOPED_TRACE(other);
    Module b = assemble_file(other, d);
    std::vector<float> x(300 * 5000);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i * 7919 % 201) - 100) / 64.0f;
    Ran ra = run(a, {{"x", x}}, "y"), rb = run(b, {{"x", x}}, "y");
    ASSERT_EQ(ra.r.status, interp::RunStatus::ok) << ra.r.report;
    ASSERT_EQ(rb.r.status, interp::RunStatus::ok) << rb.r.report;
    EXPECT_EQ(ra.out, rb.out);
    const double ta = double(ra.r.stats.makespan_ticks), tb = double(rb.r.stats.makespan_ticks);
    EXPECT_GT(ta, 0);
    EXPECT_LE(std::abs(ta - tb), 0.05 * ta) << ta << " vs " << tb;
    interp::CheckResult c = interp::check_module(b, {});
    EXPECT_EQ(c.status, interp::CheckStatus::proved) << c.report;
    // The streams hold the same instructions in the same order (only the sync differs).
    for (int e = 0; e < kNumEngines; ++e) {
      ASSERT_EQ(a.streams[e].size(), b.streams[e].size());
      for (size_t i = 0; i < a.streams[e].size(); ++i) {
        EXPECT_EQ(a.streams[e][i].op, b.streams[e][i].op);
        EXPECT_EQ(a.streams[e][i].ops, b.streams[e][i].ops);
      }
    }
  }
}

// AUTOSYNC: the waits come from the bytes: a double-buffered load/compute/store loop gets
// exactly the orders it needs (no more: the loads of the other buffer do not wait), and runs
// correctly.
TEST(Autosync, DerivesWaitsFromConflicts) {
  const std::string text = R"(.set AUTOSYNC = 1
.hbm  x : fp32[4, 128, 16] input
.hbm  y : fp32[4, 128, 16] output
.sbuf a : fp32[128, 2, 16]
.sbuf b : fp32[128, 2, 16]
.for i in 0 .. 4
        sp.dma q0, a[:, i % 2, :], x[i]
        dve.tensor_scalar b[:, i % 2, :], a[:, i % 2, :], op0=add, operand0=1.0
        act.dma q1, y[i], b[:, i % 2, :]
.endfor
)";
  Module m = assemble_text(text);
  const auto& sp = m.streams[int(Engine::sp)];
  const auto& dve = m.streams[int(Engine::dve)];
  ASSERT_EQ(sp.size(), 4u);
  // load 0 and 1 wait for nothing; load 2 waits for compute 0 (it read a[:, 0]).
  EXPECT_TRUE(sp[0].waits.empty());
  EXPECT_TRUE(sp[1].waits.empty());
  ASSERT_EQ(sp[2].waits.size(), 1u);
  EXPECT_EQ(m.sems[sp[2].waits[0].sem].name, "__after_dve");
  EXPECT_EQ(sp[2].waits[0].value, 1u);
  // compute i waits for load i and (from i = 2) for store i - 2 (it read b[:, i % 2]).
  ASSERT_EQ(dve[3].waits.size(), 2u);
  interp::CheckResult c = interp::check_module(m, {});
  EXPECT_EQ(c.status, interp::CheckStatus::proved) << c.report;
  std::vector<float> x(4 * 128 * 16);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 1000);
  Ran r = run(m, {{"x", x}}, "y");
  ASSERT_EQ(r.r.status, interp::RunStatus::ok) << r.r.report;
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(r.out[i], x[i] + 1.0f) << i;
}

TEST(After, ErrorsNameTheLabel) {
  nasm::AsmOptions o;
  nasm::AsmResult r = nasm::assemble_string(".sbuf a : fp32[128, 8]\n"
                                            "  dve.memset a, 1.0 @after(nope)\n"
                                            "  dve.memset a, 1.0 @after_opt(.Lx)\n",
                                            "e.nasm", o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.diagnostics_text().find("e.nasm:2:28: error: @after: no label 'nope' before this "
                                      "instruction"),
            std::string::npos)
      << r.diagnostics_text();
  EXPECT_EQ(r.diagnostics_text().find("e.nasm:3"), std::string::npos) << r.diagnostics_text();
}

} // namespace
