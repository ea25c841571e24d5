// Decoding: every stream of the module once per Machine into PInsts (semantics, latency,
// scheduling kind) with flat wait/signal arrays; instructions that cannot run on the target
// become Kind::bad and fault when they are reached.
#include <algorithm>

#include <fmt/format.h>

#include "interp/core/cost.h"
#include "interp/sched/sched_internal.h"
#include "isa/exec_kind.h"
#include "isa/legality.h"

namespace nisa::interp {
namespace {

using namespace detail;

PInst decode_one(const Machine& m, const Inst& in, const TargetParams& tp,
                 std::vector<std::string>& msgs) {
  const Module& mod = *m.mod;
  PInst p;
  p.in = &in;
  p.fn = semantics(in.op);
  const InstDesc& d = desc(in.op);
  // --cost-scale: the engine's unit divides both (busy ticks and cycles follow), once here.
  const double f = m.opt.cost_scale[int(cost_unit_of(in.engine))];
  const int64_t cycles = cost_cycles(in, tp);
  p.cycles = scale_ticks(cycles, f);
  p.lat = scale_ticks(
      std::max<int64_t>(1, cycles * tp.ticks_per_cycle[static_cast<int>(in.engine)]), f);
  p.sets_sems = in.op == Opcode::sem_set;
  // The static rules once here, not at every execution (an illegal instruction is checked
  // again when it runs, and faults there with the rule's text).
  p.legal = !legality_error(in, tp.target);
  const int64_t ch = cc_channel(in);
  switch (exec_kind(d)) {
  case ExecKind::dma:
    p.kind = Kind::dma;
    p.queue = static_cast<uint8_t>(dma_queue(in));
    p.bytes = dma_bytes(in);
    p.rows = dma_rows(in);
    break;
  case ExecKind::barrier: p.kind = Kind::barrier; break;
  case ExecKind::send_recv:
    p.kind = Kind::sendrecv;
    p.bytes = dma_bytes(in);
    p.rows = dma_rows(in);
    break;
  case ExecKind::collective:
    p.kind = Kind::cc;
    p.bytes = dma_bytes(in);
    p.queue = static_cast<uint8_t>(std::clamp<int64_t>(ch, 0, 255));
    if (ch < 0 || ch >= kNumCcChannels) p.queue = 255; // reported below
    break;
  case ExecKind::engine: break;
  }
  auto bad = [&](std::string msg) {
    p.kind = Kind::bad;
    p.bad = static_cast<uint32_t>(msgs.size());
    msgs.push_back(std::move(msg));
  };
  if (!gen_allows(d.gens, tp.target))
    bad(fmt::format("'{}' is not available on {} (gen{})", d.mnemonic, tp.name, tp.gen));
  for (size_t k = 0; k < d.operands.size() && k < in.ops.size(); ++k)
    if (!gen_allows(d.operands[k].gens, tp.target) && !is_default(d.operands[k], in.ops[k]))
      bad(fmt::format("operand '{}' of '{}' is not available on {} (gen{})", d.operands[k].name,
                      d.mnemonic, tp.name, tp.gen));
  if ((p.kind == Kind::barrier || p.kind == Kind::sendrecv) && m.opt.lnc != 2)
    bad(fmt::format("'{}' needs two cores (--lnc 2)", d.mnemonic));
  if (p.kind == Kind::dma && p.queue >= tp.dma_queues)
    bad(fmt::format("DMA queue q{} does not exist (q0..q{})", p.queue, tp.dma_queues - 1));
  if (p.kind == Kind::cc && p.queue >= kNumCcChannels)
    bad(fmt::format("collective channel {} does not exist (0..{})", ch, kNumCcChannels - 1));
  for (const Wait& w : in.waits)
    if (w.sem >= mod.sems.size()) bad(fmt::format("semaphore #{} is not declared", w.sem));
  for (const Signal& s : in.signals)
    if (s.sem >= mod.sems.size()) bad(fmt::format("semaphore #{} is not declared", s.sem));
  return p;
}

} // namespace

std::shared_ptr<const Program> build_program(const Machine& m) {
  auto p = std::make_shared<Program>();
  const TargetParams& tp = *m.tp;
  for (int e = 0; e < kNumEngines; ++e) {
    const auto& s = m.mod->streams[e];
    p->prog[e].resize(s.size());
    for (size_t i = 0; i < s.size(); ++i) {
      PInst& pi = p->prog[e][i];
      pi = decode_one(m, s[i], tp, p->msgs);
      pi.wait0 = uint32_t(p->waits.size());
      pi.nwaits = uint8_t(std::min<size_t>(s[i].waits.size(), 255));
      p->waits.insert(p->waits.end(), s[i].waits.begin(), s[i].waits.begin() + pi.nwaits);
      pi.sig0 = uint32_t(p->sigs.size());
      pi.nsigs = uint8_t(std::min<size_t>(s[i].signals.size(), 255));
      p->sigs.insert(p->sigs.end(), s[i].signals.begin(), s[i].signals.begin() + pi.nsigs);
    }
  }
  return p;
}

} // namespace nisa::interp
