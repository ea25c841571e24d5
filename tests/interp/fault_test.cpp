// Faults: each kind stops the run with its message, instruction, source line and exit code 3.
#include <gtest/gtest.h>

#include "builders.h"

namespace nisa::test {
namespace {

using interp::Machine;
using interp::MachineOptions;
using interp::RunStatus;

interp::RunResult run_one(KB& k, MachineOptions mo = {}) {
  Machine m(k.m, mo);
  return interp::run(m);
}

void expect_fault(const interp::RunResult& r, const std::string& what, const std::string& where) {
  EXPECT_EQ(r.status, RunStatus::fault);
  EXPECT_EQ(r.exit_code, interp::kExitFault);
  EXPECT_NE(r.report.find(what), std::string::npos) << r.report;
  EXPECT_NE(r.report.find(where), std::string::npos) << r.report;
}

TEST(Fault, DmaOutOfBounds) {
  KB k;
  int x = k.hbm("x", DType::fp32, {4, 8}, Role::input);
  AccessPattern src = hbm_ap(k.m.tensors[x]);
  src.offset += 1 << 20; // far past the end of HBM
  k.add(Engine::sp, nop(Engine::sp));
  k.add(Engine::sp, dma(Engine::sp, 0, sbuf_ap(0, 4, 0, DType::fp32, 8), src));
  auto r = run_one(k);
  expect_fault(r, "fault: hbm read of bytes", "k.nasm:402:1");
  EXPECT_NE(r.report.find("sp[1]: sp.dma q0, ap(sbuf, fp32, 0, 4, 0x0, [[1, 8]]), ap(hbm"),
            std::string::npos)
      << r.report;
}

TEST(Fault, PsumIsNeverADmaOperand) {
  KB k;
  int x = k.hbm("x", DType::fp32, {4, 8}, Role::input);
  k.add(Engine::act, dma(Engine::act, 5, psum_ap(0, 4, 0, DType::fp32, 8), hbm_ap(k.m.tensors[x])));
  expect_fault(run_one(k), "PSUM is never a DMA operand", "k.nasm:101:1");
}

TEST(Fault, ElementCountMismatch) {
  KB k;
  int x = k.hbm("x", DType::fp32, {4, 8}, Role::input);
  k.add(Engine::sp, dma(Engine::sp, 0, sbuf_ap(0, 4, 0, DType::fp32, 7), hbm_ap(k.m.tensors[x])));
  expect_fault(run_one(k), "element counts differ: dst has 28 (4 x 7), src has 32 (4 x 8)",
               "k.nasm:401:1");
}

// The static rules are checked once per instruction when the streams are decoded (a legal
// instruction skips them when it runs): an illegal DMA after a legal one of the same opcode
// still faults, at its own line.
TEST(Fault, LegalityIsDecidedPerInstruction) {
  KB k;
  int x = k.hbm("x", DType::fp32, {4, 8}, Role::input);
  k.add(Engine::sp, dma(Engine::sp, 0, sbuf_ap(0, 4, 0, DType::fp32, 8), hbm_ap(k.m.tensors[x])));
  k.add(Engine::sp, dma(Engine::sp, 0, sbuf_ap(0, 4, 0, DType::fp32, 7), hbm_ap(k.m.tensors[x])));
  expect_fault(run_one(k), "element counts differ: dst has 28 (4 x 7), src has 32 (4 x 8)",
               "k.nasm:402:1");
}

TEST(Fault, InstructionMissingOnTarget) {
  KB k(Target::trn1);
  k.add(Engine::pool, make_inst(Opcode::core_barrier, Engine::pool));
  MachineOptions mo;
  mo.target = Target::trn1;
  expect_fault(run_one(k, mo), "'core_barrier' is not available on trn1 (gen2)", "k.nasm:301:1");
}

TEST(Fault, CoreBarrierNeedsTwoCores) {
  KB k;
  k.add(Engine::pool, make_inst(Opcode::core_barrier, Engine::pool));
  expect_fault(run_one(k), "'core_barrier' needs two cores (--lnc 2)", "k.nasm:301:1");
}

TEST(Fault, LncTwoOnTrn1IsAnOptionError) {
  KB k(Target::trn1);
  MachineOptions mo;
  mo.target = Target::trn1;
  mo.lnc = 2;
  EXPECT_THROW(Machine(k.m, mo), std::runtime_error);
}

TEST(Fault, BadRegisterAndBranchTarget) {
  KB k;
  Inst li = make_inst(Opcode::li, Engine::dve);
  li.ops[0].i = 64;
  k.add(Engine::dve, li);
  expect_fault(run_one(k), "register r64 does not exist", "k.nasm:201:1");
  KB k2;
  Inst br = make_inst(Opcode::br, Engine::dve);
  br.ops[0].i = 9;
  k2.add(Engine::dve, br);
  expect_fault(run_one(k2), "branch target 9 is outside the stream (0..1)", "k.nasm:201:1");
}

TEST(Fault, CheckUninitReportsReadOfUnwrittenBytes) {
  KB k;
  int y = k.hbm("y", DType::fp32, {4, 8}, Role::output);
  uint16_t s = k.sem("s");
  int x = k.hbm("x", DType::fp32, {4, 8}, Role::input);
  // Only 2 of the 4 rows are loaded, then all 4 are stored.
  AccessPattern half = hbm_ap(k.m.tensors[x]);
  half.part_count = 2;
  k.add(Engine::sp, with_signal(dma(Engine::sp, 0, sbuf_ap(0, 2, 0, DType::fp32, 8), half), s));
  k.add(Engine::sp,
        with_wait(dma(Engine::sp, 0, hbm_ap(k.m.tensors[y]), sbuf_ap(0, 4, 0, DType::fp32, 8)), s,
                  1));
  MachineOptions mo;
  mo.check_uninit = true;
  Machine m(k.m, mo);
  std::vector<float> in(32, 1.5f);
  m.write_tensor(k.m.tensors[x], as_bytes(in).data());
  auto r = interp::run(m);
  expect_fault(r, "operand 'src' reads memory never written (uninitialised)", "k.nasm:402:1");
  // Off by default: the same kernel runs and copies poison (NaN).
  Machine m2(k.m, {});
  m2.write_tensor(k.m.tensors[x], as_bytes(in).data());
  EXPECT_EQ(interp::run(m2).status, RunStatus::ok);
}

TEST(Fault, UndeclaredSemaphore) {
  KB k;
  k.add(Engine::sp, with_signal(nop(Engine::sp), 3));
  expect_fault(run_one(k), "semaphore #3 is not declared", "k.nasm:401:1");
  KB k2;
  k2.add(Engine::act, with_wait(nop(Engine::act), 7, 1));
  expect_fault(run_one(k2), "semaphore #7 is not declared", "k.nasm:101:1");
}

} // namespace
} // namespace nisa::test
