// Sequencer instructions: semaphores, registers, system registers, branches.
#include <algorithm>
#include <climits>

#include <fmt/format.h>

#include "interp/engines/engines.h"
#include "isa/exec_kind.h"
#include "isa/module.h"

namespace nisa::interp {
namespace {

int32_t& reg(ExecCtx& cx, int64_t r) {
  if (r < 0 || r >= kNumRegs) throw Fault(fmt::format("register r{} does not exist (r0..r63)", r));
  return cx.regs[r];
}
int32_t rhs(ExecCtx& cx, const Operand& o) { return o.is_reg ? reg(cx, o.i) : int32_t(o.i); }

// rd = rs op rt through the sequencers' register ALU (isa/exec_kind.h).
void alu(ExecCtx& cx, const Inst& in) {
  using namespace op::reg_alu;
  reg(cx, in.ops[rd].i) = reg_alu(in.op, reg(cx, in.ops[rs].i), rhs(cx, in.ops[rt]));
}

void branch_if(ExecCtx& cx, bool take, const Operand& target) {
  if (!take) return;
  if (target.i < 0 || target.i > cx.stream_len)
    throw Fault(
        fmt::format("branch target {} is outside the stream (0..{})", target.i, cx.stream_len));
  cx.next_pc = target.i;
}

} // namespace

void sem_nop(ExecCtx&, const Inst&) {}

void sem_sem_set(ExecCtx& cx, const Inst& in) {
  int64_t s = in.ops[op::sem_set::sem].i;
  if (s < 0 || size_t(s) >= cx.state->sems.size())
    throw Fault(fmt::format("semaphore #{} is not declared", s));
  cx.state->sems[s] = uint32_t(in.ops[op::sem_set::value].i);
}

// The scheduler blocks the engine until every core arrives; nothing happens at completion.
void sem_core_barrier(ExecCtx&, const Inst&) {}

void sem_li(ExecCtx& cx, const Inst& in) {
  reg(cx, in.ops[op::li::rd].i) = int32_t(in.ops[op::li::imm].i);
}
void sem_add(ExecCtx& cx, const Inst& in) { alu(cx, in); }
void sem_sub(ExecCtx& cx, const Inst& in) { alu(cx, in); }
void sem_mul(ExecCtx& cx, const Inst& in) { alu(cx, in); }
void sem_shl(ExecCtx& cx, const Inst& in) { alu(cx, in); }
void sem_shr(ExecCtx& cx, const Inst& in) { alu(cx, in); }
void sem_and_(ExecCtx& cx, const Inst& in) { alu(cx, in); }
void sem_or_(ExecCtx& cx, const Inst& in) { alu(cx, in); }
void sem_min(ExecCtx& cx, const Inst& in) { alu(cx, in); }
void sem_max(ExecCtx& cx, const Inst& in) { alu(cx, in); }

void sem_sysreg(ExecCtx& cx, const Inst& in) {
  int32_t v = 0;
  switch (static_cast<SysReg>(in.ops[op::sysreg::which].i)) {
  case SysReg::program_id: v = cx.core_id; break;
  case SysReg::num_programs: v = cx.lnc; break;
  case SysReg::rank_id: v = cx.rank; break;
  case SysReg::num_ranks: v = cx.ranks; break;
  case SysReg::nc_version: v = static_cast<int32_t>(cx.target); break;
  default: throw Fault(fmt::format("unknown system register {}", in.ops[op::sysreg::which].i));
  }
  reg(cx, in.ops[op::sysreg::rd].i) = v;
}

void sem_ld(ExecCtx& cx, const Inst& in) {
  View v = cx.view(in.ops[op::ld::src].ap, Access::read);
  if (v.parts == 0 || v.free_elems == 0) throw Fault("ld: the source has no element");
  const uint8_t* p = v.row(0);
  reg(cx, in.ops[op::ld::rd].i) =
      info(v.dtype).is_float
          ? int32_t(f32_to_int_rne_sat(load_as_f32(v.dtype, p), INT32_MIN, INT32_MAX))
          : int32_t(load_as_int(v.dtype, p));
}

void sem_st(ExecCtx& cx, const Inst& in) {
  View v = cx.view(in.ops[op::st::dst].ap, Access::write);
  if (v.parts == 0 || v.free_elems == 0) throw Fault("st: the destination has no element");
  int32_t r = reg(cx, in.ops[op::st::rs].i);
  if (info(v.dtype).is_float)
    store_from_f32(v.dtype, v.row(0), float(r));
  else
    store_from_int(v.dtype, v.row(0), r);
}

void sem_br(ExecCtx& cx, const Inst& in) { branch_if(cx, true, in.ops[op::br::target]); }
void sem_bnz(ExecCtx& cx, const Inst& in) {
  branch_if(cx, reg(cx, in.ops[op::bnz::rs].i) != 0, in.ops[op::bnz::target]);
}
void sem_bz(ExecCtx& cx, const Inst& in) {
  branch_if(cx, reg(cx, in.ops[op::bz::rs].i) == 0, in.ops[op::bz::target]);
}
void sem_blt(ExecCtx& cx, const Inst& in) {
  using namespace op::blt;
  branch_if(cx, reg(cx, in.ops[rs].i) < rhs(cx, in.ops[rt]), in.ops[target]);
}
void sem_halt(ExecCtx& cx, const Inst&) { cx.next_pc = cx.stream_len; }

// Ring order is the order of the rank's list in the replica group: step s processes the data of
// the rank s positions before this one (own rank at step 0).
void sem_ring_rank(ExecCtx& cx, const Inst& in) {
  if (!cx.mod) throw Fault("ring_rank needs the machine's replica groups");
  const Module& m = *cx.mod;
  int64_t g = in.ops[op::ring_rank::group].i;
  if (g < 0 || size_t(g) >= m.groups.size())
    throw Fault(fmt::format("replica group #{} is not declared", g));
  int32_t step = rhs(cx, in.ops[op::ring_rank::step]);
  for (const auto& list : m.groups[g].groups)
    for (size_t i = 0; i < list.size(); ++i)
      if (list[i] == uint32_t(cx.rank)) {
        int64_t n = int64_t(list.size());
        int64_t pos = ((int64_t(i) - step) % n + n) % n;
        reg(cx, in.ops[op::ring_rank::rd].i) = int32_t(list[pos]);
        return;
      }
  throw Fault(
      fmt::format("rank {} is in no list of replica group '{}'", cx.rank, m.groups[g].name));
}

} // namespace nisa::interp
