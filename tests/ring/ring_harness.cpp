#include "tests/ring/ring_harness.h"

#include <optional>
#include <stdexcept>

#include "asm/asm.h"
#include "interp/core/machine.h"
#include "interp/observe/race.h"

namespace nisa::ring {

RankRun run_ranks(const Module& m, const RunOpts& o,
                  const std::map<std::string, std::vector<Bytes>>& in) {
  interp::MachineOptions mo;
  mo.target = o.target;
  mo.lnc = o.lnc;
  mo.ranks = o.ranks;
  mo.check_uninit = o.check_uninit;
  mo.cost_scale = o.cost_scale;
  interp::Machine machine(m, mo);
  for (const auto& [name, per_rank] : in) {
    const TensorDecl* t = machine.find_tensor(name);
    if (!t) throw std::runtime_error("kernel has no tensor '" + name + "'");
    if (int(per_rank.size()) != o.ranks) throw std::runtime_error("one input per rank: " + name);
    for (int r = 0; r < o.ranks; ++r) {
      if (per_rank[r].size() != interp::Machine::tensor_bytes(*t))
        throw std::runtime_error("input '" + name + "' has the wrong size");
      machine.write_tensor(*t, per_rank[r].data(), r);
    }
  }
  interp::SchedOptions so;
  so.timeline = o.timeline;
  if (o.seed) {
    so.mode = interp::ScheduleMode::random;
    so.seed = o.seed;
  }
  // Only when asked: its vector clocks are (cores x agents)^2 (44 MB at 64 ranks x 2 cores).
  std::optional<interp::RaceChecker> races;
  if (o.check_races) so.observer = &races.emplace(machine);
  interp::RunResult r = interp::run(machine, so);
  RankRun out;
  out.status = r.status;
  out.report = r.report;
  out.stats = r.stats;
  out.timeline = std::move(r.timeline);
  out.hbm_bytes_per_rank = machine.ranks[0].hbm_bytes;
  if (o.check_races) {
    out.races = races->races().size();
    if (out.races) out.race_text = races->report_text(races->races()[0]);
  }
  for (const TensorDecl& t : m.tensors) {
    if (t.space != MemSpace::hbm || t.role != Role::output) continue;
    for (int rank = 0; rank < o.ranks; ++rank) {
      const uint8_t* p = machine.hbm_tensor(rank, t);
      out.out[t.name].emplace_back(p, p + interp::Machine::tensor_bytes(t));
    }
  }
  return out;
}

Module assemble_text(const std::string& text, Target t) {
  nasm::AsmOptions o;
  o.target = t;
  nasm::AsmResult r = nasm::assemble_string(text, "t.nasm", o);
  if (!r.ok() || !r.module) throw std::runtime_error("assembly failed:\n" + r.diagnostics_text());
  return std::move(*r.module);
}

} // namespace nisa::ring
