// nisa check (interp/check/check.*, docs/check.md): every kernel of kernels_asm is proved at its
// default parameters (and the ring kernels on the ranks they need); the planted bugs of
// tests/check/*.nasm are found at their lines, including one that the fixed and random
// schedules of `nisa run --check-races` hide.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>
#include <vector>

#include "asm/asm.h"
#include "interp/check/check.h"
#include "interp/core/machine.h"
#include "interp/observe/race.h"
#include "interp/run/precheck.h"
#include "interp/sched/scheduler.h"
#include "isa/legality.h"
#include "tests/isa/random_inst.h"
#include "tests/support/test_files.h"

using namespace nisa;

namespace {

using Defines = std::vector<std::pair<std::string, std::string>>;

Module assemble(const std::string& path, const Defines& d = {}) {
  nasm::AsmOptions o;
  o.defines = d;
  nasm::AsmResult r = nasm::assemble_file(path, o);
  EXPECT_TRUE(r.ok()) << r.diagnostics_text();
  return r.module ? std::move(*r.module) : Module{};
}

std::string kernel(const std::string& f) {
  return std::string(NISA_SOURCE_DIR) + "/kernels_asm/" + f;
}
std::string planted(const std::string& f) {
  return std::string(NISA_SOURCE_DIR) + "/tests/check/" + f;
}

interp::CheckResult check(const Module& m, int lnc = 1, int ranks = 1) {
  interp::CheckOptions o;
  o.lnc = lnc, o.ranks = ranks, o.target = m.target;
  return interp::check_module(m, o);
}

struct KernelCase {
  const char* file;
  Defines defines;
  int lnc, ranks;
};

class KernelsProved : public ::testing::TestWithParam<KernelCase> {};

TEST_P(KernelsProved, ProvedAtDefaults) {
  const KernelCase& c = GetParam();
  Module m = assemble(kernel(c.file), c.defines);
  interp::CheckResult r = check(m, c.lnc, c.ranks);
  EXPECT_EQ(r.status, interp::CheckStatus::proved) << r.report;
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_GT(r.instructions, 10u);
  EXPECT_NE(r.report.find("proved:"), std::string::npos);
  // the bounded check before a run admits it and prints nothing (time bound off: the node
  // bound decides, the same in every build)
  EXPECT_EQ(interp::precheck_text(interp::precheck(m, m.target, c.lnc, c.ranks, 0), "nisa run"),
            "");
}

// Every kernel of kernels_asm, at its defaults and at shapes that exercised a fixed race.
const std::vector<KernelCase>& kernel_cases() {
  static const std::vector<KernelCase> cases{
      KernelCase{"cascaded_max.nasm", {}, 1, 1}, KernelCase{"cascaded_max.nasm", {}, 2, 1},
      KernelCase{"conv1d.nasm", {}, 1, 1}, KernelCase{"conv1d.nasm", {}, 2, 1},
      // the shape that showed the scatter copies' shared count (s_cp, now s_cpd / s_cpa)
      KernelCase{
          "conv1d.nasm",
          {{"STRIDE", "2"}, {"DIL", "2"}, {"PAD_L", "1"}, {"PAD_R", "2"}, {"L", "700"}, {"K", "5"}},
          1,
          1},
      KernelCase{"cross_entropy_bwd.nasm", {}, 1, 1},
      KernelCase{"cross_entropy_bwd.nasm", {}, 2, 1},
      KernelCase{"cross_entropy_fwd.nasm", {}, 1, 1},
      KernelCase{"cross_entropy_fwd.nasm", {}, 2, 1}, KernelCase{"cumsum.nasm", {}, 1, 1},
      KernelCase{"cumsum_double_buffered.nasm", {}, 1, 1},
      KernelCase{"cumsum_after.nasm", {}, 1, 1}, KernelCase{"cumsum_auto.nasm", {}, 1, 1},
      KernelCase{"depthwise_conv1d.nasm", {}, 1, 1}, KernelCase{"depthwise_conv1d.nasm", {}, 2, 1},
      // the shape that showed the copies' shared count (s_cp, now s_ce / s_co)
      KernelCase{"depthwise_conv1d.nasm", {{"C", "40"}, {"W", "600"}}, 1, 1},
      KernelCase{"depthwise_conv1d.nasm", {{"C", "40"}, {"W", "600"}}, 2, 1},
      KernelCase{"moe_bwd.nasm", {}, 1, 1}, KernelCase{"moe_bwd.nasm", {}, 2, 1},
      KernelCase{"moe_fwd_shard_h.nasm", {}, 1, 1}, KernelCase{"moe_fwd_shard_h.nasm", {}, 2, 1},
      KernelCase{"topk.nasm", {}, 1, 1}, KernelCase{"topk.nasm", {}, 2, 1},
      KernelCase{"topk.nasm", {{"METHOD", "rotational"}, {"K", "64"}}, 2, 1},
      KernelCase{"topk_reduce.nasm", {}, 1, 1}, KernelCase{"topk_reduce.nasm", {}, 2, 1},
      KernelCase{"fgcc.nasm", {}, 1, 4}, KernelCase{"fgcc.nasm", {}, 2, 4},
      KernelCase{"fgcc.nasm", {{"TP", "8"}, {"NUM_GROUPS", "2"}}, 2, 8},
      KernelCase{"fg_allgather.nasm", {}, 1, 4}, KernelCase{"fg_allgather.nasm", {}, 2, 4},
      KernelCase{"sb2sb_allgather.nasm", {}, 1, 8},
      KernelCase{"sb2sb_allgather.nasm", {{"TILED", "1"}}, 2, 8},
      // the cache update's "no update" pos is data: branch-free (oob=skip), so still proved
      KernelCase{"attention_block_tkg.nasm", {}, 1, 1},
      KernelCase{"attention_block_tkg.nasm", {{"S_CTX", "9000"}, {"FP8_KV", "1"}}, 2, 1},
      KernelCase{"transformer_tkg.nasm", {{"TP", "2"}, {"LAYERS", "2"}}, 2, 2},
      KernelCase{"transformer_tkg.nasm", {{"TP", "2"}, {"SBUF_RESIDUAL", "1"}}, 2, 2}};
  return cases;
}

// A new kernel in kernels_asm must join the list above.
TEST(KernelsProvedList, CoversEveryKernel) {
  for (const auto& f :
       nisa::test::files_in(std::string(NISA_SOURCE_DIR) + "/kernels_asm", {".nasm"})) {
    bool listed = false;
    for (const KernelCase& c : kernel_cases()) listed |= c.file == f.filename().string();
    EXPECT_TRUE(listed) << f.filename() << " is not in kernel_cases()";
  }
}

INSTANTIATE_TEST_SUITE_P(Check, KernelsProved, ::testing::ValuesIn(kernel_cases()),
                         [](const ::testing::TestParamInfo<KernelCase>& i) {
                           std::string n = i.param.file;
                           n = n.substr(0, n.find('.'));
                           for (const auto& [k, v] : i.param.defines) n += "_" + k + v;
                           return n + "_lnc" + std::to_string(i.param.lnc) + "_r" +
                                  std::to_string(i.param.ranks) + "_" + std::to_string(i.index);
                         });

// One pair, at the planted lines, with the wait that orders it.
void expect_pair(const interp::CheckResult& r, const std::string& a, const std::string& b,
                 const std::string& suggestion) {
  bool found = false;
  for (const interp::CheckPair& p : r.pairs)
    if (p.a_loc.ends_with(a) && p.b_loc.ends_with(b)) {
      found = true;
      EXPECT_NE(p.suggestion.find(suggestion), std::string::npos) << p.suggestion;
    }
  EXPECT_TRUE(found) << "no pair " << a << " / " << b << " in\n" << r.report;
}

TEST(CheckPlanted, MissingWait) {
  interp::CheckResult r = check(assemble(planted("missing_wait.nasm")));
  EXPECT_EQ(r.status, interp::CheckStatus::races);
  EXPECT_EQ(r.exit_code, 4);
  ASSERT_EQ(r.pairs.size(), 1u) << r.report;
  expect_pair(r, "missing_wait.nasm:8", "missing_wait.nasm:9",
              "add @wait(s_in >= 1) to " + planted("missing_wait.nasm") + ":9");
  EXPECT_TRUE(r.pairs[0].a_write);
  EXPECT_FALSE(r.pairs[0].b_write);
  EXPECT_NE(r.pairs[0].region.find("(tensor a)"), std::string::npos);
}

TEST(CheckPlanted, WrongCount) {
  interp::CheckResult r = check(assemble(planted("wrong_count.nasm")));
  EXPECT_EQ(r.status, interp::CheckStatus::races);
  expect_pair(r, "wrong_count.nasm:11", "wrong_count.nasm:12", "@wait(s_in >= i + 1)");
  // the right count is proved
  interp::CheckResult ok = check(assemble(planted("wrong_count.nasm"), {{"OK", "1"}}));
  EXPECT_EQ(ok.status, interp::CheckStatus::proved) << ok.report;
}

TEST(CheckPlanted, WarAcrossDmaQueues) {
  interp::CheckResult r = check(assemble(planted("war_queues.nasm")));
  EXPECT_EQ(r.status, interp::CheckStatus::races);
  ASSERT_EQ(r.pairs.size(), 1u) << r.report;
  expect_pair(r, "war_queues.nasm:10", "war_queues.nasm:11", "@wait(s2 >= 1)");
  EXPECT_FALSE(r.pairs[0].a_write);
  EXPECT_TRUE(r.pairs[0].b_write);
  EXPECT_NE(r.pairs[0].a_who.find("q1"), std::string::npos);
  EXPECT_NE(r.pairs[0].b_who.find("q2"), std::string::npos);
}

TEST(CheckPlanted, BarrierOnOneCoreOnly) {
  interp::CheckResult r = check(assemble(planted("barrier_one_core.nasm")), 2);
  EXPECT_EQ(r.status, interp::CheckStatus::deadlock);
  EXPECT_EQ(r.exit_code, 2);
  ASSERT_EQ(r.deadlocks.size(), 1u) << r.report;
  EXPECT_NE(r.deadlocks[0].find("barrier_one_core.nasm:13: 'core_barrier' on core 0 sp waits "
                                "for core 1"),
            std::string::npos)
      << r.deadlocks[0];
  expect_pair(r, "barrier_one_core.nasm:11", "barrier_one_core.nasm:19", "different cores");
  interp::CheckResult ok = check(assemble(planted("barrier_one_core.nasm"), {{"FIXED", "1"}}), 2);
  EXPECT_EQ(ok.status, interp::CheckStatus::proved) << ok.report;
}

TEST(CheckPlanted, EqualWaitThatCanBeOvertaken) {
  interp::CheckResult r = check(assemble(planted("eq_overtaken.nasm")));
  EXPECT_EQ(r.status, interp::CheckStatus::deadlock);
  ASSERT_EQ(r.deadlocks.size(), 1u);
  EXPECT_NE(r.deadlocks[0].find("s == 1"), std::string::npos);
  EXPECT_NE(r.deadlocks[0].find("to 2"), std::string::npos);
}

TEST(CheckPlanted, RunTimeFaultsAreOutside) {
  // a barrier without --lnc 2 faults when reached: not a schedule question
  interp::CheckResult r = check(assemble(planted("barrier_one_core.nasm"), {{"FIXED", "1"}}), 1);
  EXPECT_EQ(r.status, interp::CheckStatus::outside);
  EXPECT_NE(r.outside.find("'core_barrier' needs two cores"), std::string::npos) << r.outside;
}

TEST(CheckPlanted, DataDependentBranchIsOutside) {
  interp::CheckResult r = check(assemble(planted("data_branch.nasm")));
  EXPECT_EQ(r.status, interp::CheckStatus::outside);
  EXPECT_EQ(r.exit_code, interp::kExitCheckOutside);
  EXPECT_NE(r.outside.find("data_branch.nasm:5"), std::string::npos) << r.outside;
}

// The race the schedules hide: --check-races in the fixed schedule and eight random ones
// reports nothing (the small load always signals first), the static proof finds it.
TEST(CheckPlanted, FoundWhereFixedAndRandomSchedulesHideIt) {
  Module m = assemble(planted("hidden_two_queues.nasm"));
  interp::MachineOptions mo;
  mo.target = m.target;
  interp::Machine machine(m, mo);
  for (uint64_t seed = 0; seed <= 8; ++seed) {
    machine.reset();
    for (const TensorDecl& t : m.tensors)
      if (t.role == Role::input) {
        std::vector<uint8_t> bytes(interp::Machine::tensor_bytes(t), 0);
        machine.write_tensor(t, bytes.data());
      }
    interp::RaceChecker rc(machine);
    interp::SchedOptions so;
    so.mode = seed ? interp::ScheduleMode::random : interp::ScheduleMode::fixed;
    so.seed = seed;
    so.observer = &rc;
    interp::RunResult rr = interp::run(machine, so);
    EXPECT_EQ(rr.status, interp::RunStatus::ok) << rr.report;
    EXPECT_EQ(rc.races().size(), 0u) << "seed " << seed;
  }
  interp::CheckResult r = check(m);
  EXPECT_EQ(r.status, interp::CheckStatus::races);
  expect_pair(r, "hidden_two_queues.nasm:12", "hidden_two_queues.nasm:14", "@wait(s >= 2)");
}

// The static rules of isa/legality.h hold in `nisa check` as in a run: an illegal instruction
// (here a trn2 matmul of N = 1024, taken as written from raw operands) is a fault when reached.
TEST(Check, IllegalInstructionIsAFaultWhenReached) {
  nasm::AsmOptions o;
  o.target = Target::trn2;
  nasm::AsmResult a = nasm::assemble_string("  pe.matmul ap(psum, fp32, 0, 128, 0x0, [[1, 1024]]), "
                                            "ap(sbuf, bf16, 0, 128, 0x0, [[1, 128]]), "
                                            "ap(sbuf, bf16, 0, 128, 0x100, [[1, 1024]])\n",
                                            "raw.nasm", o);
  ASSERT_TRUE(a.ok()) << a.diagnostics_text();
  interp::CheckResult r = check(*a.module);
  EXPECT_EQ(r.status, interp::CheckStatus::outside);
  EXPECT_NE(r.outside.find("pe.matmul operand `moving`: has N = 1024 columns (at most 512 on trn2) "
                           "(a fault when reached)"),
            std::string::npos)
      << r.outside;
}

// No input crashes the checker: random modules (random operands, waits, signals, branches,
// collectives, groups) give a status and a report, never an exception or a crash, on 1 and 2
// cores and 2 ranks; an endless loop stops at the node limit with where it loops.
TEST(CheckRobustness, RandomModulesAndEndlessLoops) {
  std::mt19937_64 rng(17);
  int counts[4] = {};
  for (int i = 0; i < 200; ++i) {
    Module m = nisa::testing::random_module(rng);
    // Random shapes are almost never legal, and an illegal instruction stops the check (a
    // fault when reached: Check.IllegalInstructionIsAFaultWhenReached): such instructions
    // become nops with the same waits and signals, keeping the random synchronisation.
    for (auto& stream : m.streams)
      for (Inst& in : stream)
        if (legality_error(in, m.target)) {
          Inst nop = make_inst(Opcode::nop, in.engine);
          nop.waits = std::move(in.waits), nop.signals = std::move(in.signals);
          in = std::move(nop);
        }
    interp::CheckOptions o;
    o.lnc = 1 + i % 2, o.ranks = 1 + (i / 2) % 2, o.target = m.target;
    o.max_nodes = 3000;
    interp::CheckResult r;
    ASSERT_NO_THROW(r = interp::check_module(m, o)) << "module " << i;
    EXPECT_FALSE(r.report.empty());
    ++counts[int(r.status)];
  }
  EXPECT_GT(counts[int(interp::CheckStatus::proved)] + counts[int(interp::CheckStatus::races)] +
                counts[int(interp::CheckStatus::deadlock)],
            0);
  nasm::AsmOptions ao;
  nasm::AsmResult a = nasm::assemble_string("top:\n  dve.br top\n", "loop.nasm", ao);
  ASSERT_TRUE(a.ok());
  interp::CheckOptions o;
  o.max_nodes = 10000;
  interp::CheckResult r = interp::check_module(*a.module, o);
  EXPECT_EQ(r.status, interp::CheckStatus::outside);
  EXPECT_NE(r.outside.find("loop.nasm:2 on core 0 dve loops forever: its walk comes back to the "
                           "same instruction with the same registers every 1 instructions"),
            std::string::npos)
      << r.outside;
}

// The command line: output and exit codes.
std::pair<int, std::string> nisa(const std::string& args) {
  std::string cmd = std::string(NISA_BINARY) + " " + args + " 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), f)) > 0) out.append(buf.data(), n);
  int st = pclose(f);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

TEST(CheckCli, ExitCodesAndReport) {
  auto [rc, out] = nisa("check " + planted("missing_wait.nasm"));
  EXPECT_EQ(rc, 4) << out;
  EXPECT_NE(out.find("unordered: " + planted("missing_wait.nasm") +
                     ":8 writes (core 0 sp -> q0) "
                     "and " +
                     planted("missing_wait.nasm") + ":9 reads (core 0 dve)"),
            std::string::npos)
      << out;
  auto [rc2, out2] = nisa("check " + kernel("cumsum.nasm") + " -D ROWS=300 -D COLS=600");
  EXPECT_EQ(rc2, 0) << out2;
  EXPECT_NE(out2.find("proved:"), std::string::npos);
  auto [rc3, out3] = nisa("check " + planted("data_branch.nasm"));
  EXPECT_EQ(rc3, 6) << out3;
  EXPECT_NE(out3.find("outside what is proved"), std::string::npos);
  auto [rc4, out4] = nisa("check " + planted("barrier_one_core.nasm") + " --lnc 2");
  EXPECT_EQ(rc4, 2) << out4;
  auto [rc5, out5] = nisa("check " + planted("nope.nasm"));
  EXPECT_EQ(rc5, 1) << out5;
}

} // namespace
