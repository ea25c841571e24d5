// Deadlock reports (docs/machine.md "Deadlock"): every blocked engine with its instruction and
// source, the waits that do not hold and who could still signal them, collectives waiting for
// ranks that never reach them, and the wait-for cycle if there is one.
#include "interp/sched/sched_report.h"

#include <algorithm>
#include <functional>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "isa/print.h"

namespace nisa::interp::detail {

namespace {
// "rank R core C ", the parts that are not unique in this run.
std::string core_prefix(const Machine& m, int c) {
  const CoreSlot& cs = m.cores[c];
  std::string who = m.opt.ranks > 1 ? fmt::format("rank {} ", cs.rank) : "";
  if (m.opt.lnc > 1) who += fmt::format("core {} ", cs.core);
  return who;
}
} // namespace

std::string where(const Machine& m, int c, int e, int64_t pc) {
  return fmt::format("{}{}[{}]", core_prefix(m, c), name_of(static_cast<Engine>(e)), pc);
}

std::string budget_report(const Machine& m, const Module& mod, const std::vector<CoreRt>& cores,
                          const BudgetWatch& watched, uint64_t steps, int64_t now,
                          uint64_t max_steps) {
  auto line_of = [&](int e, int64_t pc) -> std::string {
    const auto& dbg = mod.debug[e];
    if (pc < 0 || size_t(pc) >= dbg.size()) return "?";
    const DebugLoc& d = dbg[size_t(pc)];
    return fmt::format("{}:{}", d.file < mod.files.size() ? mod.files[d.file] : "?", d.line);
  };
  std::string os = fmt::format(
      "budget: stopped after {} events at t = {:.1f} ns (--max-steps {}); the kernel may loop "
      "forever. In the last {} events:\n",
      steps, ticks_to_ns(now), max_steps, std::min(kBudgetWatch, steps));
  for (size_t c = 0; c < cores.size(); ++c) {
    std::string who = core_prefix(m, int(c));
    for (int a = 0; a < kAgentsPerCore; ++a) {
      auto it = watched.find(uint32_t(c * kAgentsPerCore + a));
      uint64_t n = 0;
      if (it != watched.end())
        for (auto [pc, k] : it->second) n += k;
      if (a >= kNumEngines + kNumDmaQueues) { // collective channels: only those that moved data
        if (n)
          os += fmt::format("  {}cc ch{}: {} transfers\n", who, a - kNumEngines - kNumDmaQueues, n);
        continue;
      }
      if (a >= kNumEngines) { // queues: only those that transferred in the window
        if (n) os += fmt::format("  {}q{}: {} transfers\n", who, a - kNumEngines, n);
        continue;
      }
      const EngRt& E = cores[c].eng[a];
      std::string name = fmt::format("{}{}", who, name_of(Engine(a)));
      if (E.st == St::done || E.pc >= E.len) {
        os += fmt::format("  {} done\n", name);
        continue;
      }
      if (n) {
        int64_t lo = it->second.begin()->first, hi = it->second.rbegin()->first;
        os += fmt::format("  {} looping: {} events over {}[{}] ({})\n", name, n, name_of(Engine(a)),
                          lo == hi ? fmt::format("{}", lo) : fmt::format("{}..{}", lo, hi),
                          lo == hi ? line_of(a, lo) : line_of(a, lo) + " .. " + line_of(a, hi));
      } else if (E.st == St::blocked || E.st == St::rendezvous) {
        os +=
            fmt::format("  {} {} since t = {:.1f} ns\n", name,
                        E.st == St::blocked ? "waiting" : "at a rendezvous", ticks_to_ns(E.since));
      } else {
        os += fmt::format("  {} running one instruction\n", name);
      }
      os += fmt::format("    now at {}: {}\n", source_of(mod, Engine(a), E.pc),
                        describe_inst(mod, *E.prog[E.pc].in));
    }
  }
  return os;
}

namespace {

using Node = std::pair<int, int>; // (core, engine)
using Graph = std::map<Node, std::vector<Node>>;

std::string sem_name(const Module& mod, uint16_t s) {
  return s < mod.sems.size() ? mod.sems[s].name : fmt::format("#{}", s);
}

std::string who_core(const Machine& m, int c) {
  const CoreSlot& cs = m.cores[c];
  std::string who = m.opt.ranks > 1 ? fmt::format("rank {}", cs.rank) : "";
  if (m.opt.lnc > 1) who += fmt::format("{}core {}", who.empty() ? "" : " ", cs.core);
  return who.empty() ? "core 0" : who;
}

// The unfinished engines of core c that still signal semaphore s (from their pc on).
std::vector<int> signallers(const std::vector<CoreRt>& cores, int c, uint16_t s) {
  std::vector<int> out;
  for (int e = 0; e < kNumEngines; ++e) {
    const EngRt& E = cores[c].eng[e];
    for (int64_t pc = E.pc; pc < E.len; ++pc) {
      bool hit = false;
      for (const Signal& g : E.prog[pc].in->signals) hit |= g.sem == s;
      if (hit) {
        out.push_back(e);
        break;
      }
    }
  }
  return out;
}

std::string find_cycle(const Machine& m, const std::vector<CoreRt>& cores, const Graph& g) {
  std::map<Node, int> color;
  std::vector<Node> stack;
  std::string out;
  std::function<bool(Node)> dfs = [&](Node n) {
    color[n] = 1;
    stack.push_back(n);
    auto it = g.find(n);
    if (it != g.end())
      for (auto nx : it->second) {
        if (color[nx] == 1) {
          auto from = std::find(stack.begin(), stack.end(), nx);
          for (auto k = from; k != stack.end(); ++k)
            out += where(m, k->first, k->second, cores[k->first].eng[k->second].pc) + " -> ";
          out += where(m, nx.first, nx.second, cores[nx.first].eng[nx.second].pc);
          return true;
        }
        if (color[nx] == 0 && dfs(nx)) return true;
      }
    color[n] = 2;
    stack.pop_back();
    return false;
  };
  for (auto& [n, _] : g)
    if (color[n] == 0 && dfs(n)) break;
  return out;
}

} // namespace

std::string deadlock_report(const Machine& m, const std::vector<CoreRt>& cores, const CcUnit& cc,
                            int64_t now) {
  const Module& mod = *m.mod;
  std::ostringstream os;
  int blocked = 0;
  std::vector<CcUnit::Waiting> ccw = cc.waiting();
  Graph edges; // wait-for graph over (core, engine) nodes
  for (size_t c = 0; c < cores.size(); ++c)
    for (int e = 0; e < kNumEngines; ++e) {
      const EngRt& E = cores[c].eng[e];
      if (E.st == St::done || E.pc >= E.len) continue;
      ++blocked;
      const Inst& in = *E.prog[E.pc].in;
      os << fmt::format("  {} blocked at {}: {}\n", where(m, int(c), e, E.pc),
                        source_of(mod, Engine(e), E.pc), describe_inst(mod, in));
      if (E.st == St::rendezvous) {
        os << fmt::format("    waits for the other participants of '{}' (never reached)\n",
                          desc(in.op).mnemonic);
        continue;
      }
      for (const Wait& w : in.waits) {
        uint32_t v = m.cores[c].st.sems[w.sem];
        bool ok = w.cmp == WaitCmp::ge ? v >= w.value : v == w.value;
        if (ok) continue;
        std::vector<int> by = signallers(cores, int(c), w.sem);
        std::string who;
        for (int f : by) {
          who += fmt::format("{}{}", who.empty() ? "" : ", ", name_of(Engine(f)));
          if (f != e) edges[{int(c), e}].push_back({int(c), f});
        }
        for (const CcUnit::Waiting& cw : ccw) {
          bool hit = cw.who.core == int(c);
          if (hit) {
            hit = false;
            for (const Signal& g : cw.who.pi->in->signals) hit |= g.sem == w.sem;
          }
          if (hit)
            who +=
                fmt::format("{}a waiting collective (cc[{}])", who.empty() ? "" : ", ", cw.who.pc);
        }
        os << fmt::format("    waits {} {} {} (current value {}); {}\n", sem_name(mod, w.sem),
                          name_of(w.cmp), w.value, v,
                          who.empty() ? std::string("no remaining instruction signals it")
                                      : "still signalled by " + who);
      }
    }
  for (const CcUnit::Waiting& cw : ccw) {
    ++blocked;
    std::string missing;
    for (int mc : cw.missing)
      missing += fmt::format("{}{}", missing.empty() ? "" : ", ", who_core(m, mc));
    os << fmt::format(
        "  {} channel {}: collective from {} at {}: {}\n    waits for {} (never triggered)\n",
        who_core(m, cw.who.core), cw.chan, where(m, cw.who.core, cw.who.eng, cw.who.pc),
        source_of(mod, Engine(cw.who.eng), cw.who.pc), describe_inst(mod, *cw.who.pi->in), missing);
  }
  if (!blocked) return {};
  std::string cycle = find_cycle(m, cores, edges);
  return fmt::format("deadlock: no engine can progress at t = {:.1f} ns; {} blocked:\n{}{}",
                     ticks_to_ns(now), blocked, os.str(),
                     cycle.empty() ? "" : "  wait-for cycle: " + cycle + "\n");
}

} // namespace nisa::interp::detail
