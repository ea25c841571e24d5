#include "interp/sched/cc_unit.h"

#include <algorithm>

#include "isa/op_index.h"
#include <fmt/format.h>

namespace nisa::interp::detail {

void CcUnit::reset(int cores) {
  parties_.clear();
  inflight_.assign(size_t(cores) * kNumCcChannels, {});
  free_.assign(size_t(cores) * kNumCcChannels, 0);
}

std::vector<int> CcUnit::members(const Module& mod, int ranks, int rank, const Inst& in) {
  size_t g = static_cast<size_t>(in.ops[op::collective::group].i);
  if (g >= mod.groups.size()) throw Fault(fmt::format("replica group #{} is not declared", g));
  const ReplicaGroupDecl& grp = mod.groups[g];
  auto check = [&](uint32_t r) {
    if (int64_t(r) >= ranks)
      throw Fault(fmt::format("replica group '{}' names rank {} but the run has {} ranks", grp.name,
                              r, ranks));
  };
  if (in.op == Opcode::collective_permute) { // [source, target] pairs: every rank named meets
    std::vector<int> out;
    for (const auto& pair : grp.groups)
      for (uint32_t r : pair)
        if (std::find(out.begin(), out.end(), int(r)) == out.end()) out.push_back(int(r));
    std::sort(out.begin(), out.end());
    for (int r : out) check(uint32_t(r));
    if (std::find(out.begin(), out.end(), rank) == out.end())
      throw Fault(fmt::format("rank {} is in no pair of replica group '{}'", rank, grp.name));
    return out;
  }
  for (const auto& list : grp.groups)
    if (std::find(list.begin(), list.end(), uint32_t(rank)) != list.end()) {
      std::vector<int> out;
      for (uint32_t r : list) {
        check(r);
        out.push_back(int(r));
      }
      return out;
    }
  throw Fault(fmt::format("rank {} is in no list of replica group '{}'", rank, grp.name));
}

bool CcUnit::arrive(const CcArrival& a, int chan, int64_t group, const std::vector<int>& members,
                    std::vector<CcArrival>& party) {
  Party& p = parties_[{chan, 0, group, members}];
  p.members = members;
  p.chan = chan;
  p.arrived.push_back(a);
  for (int mc : members) {
    bool found = false;
    for (const CcArrival& x : p.arrived) found |= x.core == mc;
    if (!found) return false; // still waiting for someone
  }
  party.clear();
  for (int mc : members) // the earliest arrival of each member (FIFO)
    for (auto it = p.arrived.begin(); it != p.arrived.end(); ++it)
      if (it->core == mc) {
        party.push_back(*it);
        p.arrived.erase(it);
        break;
      }
  if (p.arrived.empty()) parties_.erase({chan, 0, group, members});
  return true;
}

std::vector<CcUnit::Waiting> CcUnit::waiting() const {
  std::vector<Waiting> out;
  for (const auto& [key, p] : parties_)
    for (const CcArrival& a : p.arrived) {
      Waiting w{a, p.chan, {}};
      for (int mc : p.members) {
        bool found = false;
        for (const CcArrival& x : p.arrived) found |= x.core == mc;
        if (!found) w.missing.push_back(mc);
      }
      out.push_back(std::move(w));
    }
  return out;
}

bool CcUnit::idle() const {
  if (!parties_.empty()) return false;
  for (const auto& q : inflight_)
    if (!q.empty()) return false;
  return true;
}

} // namespace nisa::interp::detail
