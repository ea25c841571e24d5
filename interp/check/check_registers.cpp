// nisa check: an engine's registers and branches in the walk (check_registers.h).
#include "interp/check/check_registers.h"

#include "isa/exec_kind.h"

namespace nisa::interp::check_detail {

int32_t Registers::value(const Operand& o, bool& unk) const {
  if (!o.is_reg) return int32_t(o.i);
  if (o.i < 0 || o.i >= kNumRegs) throw Outside("bad register");
  unk |= (unknown_ >> o.i) & 1;
  return regs_[o.i];
}

void Registers::write(const Inst& in, int32_t v, bool unk) {
  int64_t r = in.ops[op::reg_write::rd].i;
  if (r < 0 || r >= kNumRegs) throw Outside("bad register");
  regs_[r] = v;
  unknown_ = unk ? (unknown_ | (uint64_t(1) << r)) : (unknown_ & ~(uint64_t(1) << r));
}

int64_t Registers::target(const Operand& t, int64_t pc) const {
  if (t.i < 0 || t.i > len_)
    throw Outside(
        fmt::format("{}: branch target {} outside the stream", names_.loc(eng_, pc), t.i));
  return t.i;
}

int32_t Registers::cond(const Inst& in, int64_t r, int64_t pc) const {
  if (r < 0 || r >= kNumRegs) throw Outside("bad register");
  if ((unknown_ >> r) & 1)
    throw Outside(
        fmt::format("{}: '{}' on {} branches on r{}, which holds a value loaded from memory: the "
                    "control flow depends on data",
                    names_.loc(eng_, pc), desc(in.op).mnemonic, names_.core_name(core_), r));
  return regs_[r];
}

int32_t Registers::ring_rank(const Inst& in, int64_t pc, bool& unk) const {
  const int rank = core_ / o_.lnc;
  int32_t step = value(in.ops[op::ring_rank::step], unk);
  int64_t g = in.ops[op::ring_rank::group].i;
  if (g < 0 || size_t(g) >= m_.groups.size()) throw Outside("undeclared replica group");
  for (const auto& list : m_.groups[size_t(g)].groups)
    for (size_t i = 0; i < list.size(); ++i)
      if (list[i] == uint32_t(rank)) {
        int64_t nn = int64_t(list.size());
        int64_t p = ((int64_t(i) - step) % nn + nn) % nn;
        return int32_t(list[size_t(p)]);
      }
  throw Outside(fmt::format("{}: ring_rank: rank {} is in no list of its "
                            "replica group (a fault)",
                            names_.loc(eng_, pc), rank));
}

int64_t Registers::step(const Inst& in, int64_t pc) {
  int64_t next = pc + 1;
  if (is_reg_alu(in.op)) { // rd = rs op rt (isa/exec_kind.h reg_alu)
    bool unk = false;
    Operand rs = in.ops[op::reg_alu::rs];
    rs.is_reg = true;
    const int32_t a = value(rs, unk), b = value(in.ops[op::reg_alu::rt], unk);
    write(in, reg_alu(in.op, a, b), unk);
    return next;
  }
  switch (in.op) {
  case Opcode::li: write(in, int32_t(in.ops[op::li::imm].i), false); break;
  case Opcode::sysreg: {
    int32_t v = 0;
    switch (static_cast<SysReg>(in.ops[op::sysreg::which].i)) {
    case SysReg::program_id: v = core_ % o_.lnc; break;
    case SysReg::num_programs: v = o_.lnc; break;
    case SysReg::rank_id: v = core_ / o_.lnc; break;
    case SysReg::num_ranks: v = o_.ranks; break;
    case SysReg::nc_version: v = static_cast<int32_t>(o_.target); break;
    default: throw Outside("unknown system register");
    }
    write(in, v, false);
    break;
  }
  case Opcode::ring_rank: {
    bool unk = false;
    const int32_t v = ring_rank(in, pc, unk);
    write(in, v, unk);
    break;
  }
  case Opcode::ld: write(in, 0, true); break;
  case Opcode::br: next = target(in.ops[op::br::target], pc); break;
  case Opcode::bnz:
    if (cond(in, in.ops[op::bnz::rs].i, pc) != 0) next = target(in.ops[op::bnz::target], pc);
    break;
  case Opcode::bz:
    if (cond(in, in.ops[op::bz::rs].i, pc) == 0) next = target(in.ops[op::bz::target], pc);
    break;
  case Opcode::blt: {
    const Operand& rt = in.ops[op::blt::rt];
    int32_t a = cond(in, in.ops[op::blt::rs].i, pc);
    int32_t b = rt.is_reg ? cond(in, rt.i, pc) : int32_t(rt.i);
    if (a < b) next = target(in.ops[op::blt::target], pc);
    break;
  }
  case Opcode::halt: next = len_; break;
  default: break;
  }
  return next;
}

} // namespace nisa::interp::check_detail
