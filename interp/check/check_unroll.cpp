// nisa check: the streams unrolled into the graph's nodes (check_unroll.h).
#include "interp/check/check_unroll.h"

#include <algorithm>

#include "interp/check/check_budget.h"
#include "interp/check/check_extents.h"
#include "interp/check/check_registers.h"
#include "isa/exec_kind.h"
#include "isa/legality.h"

namespace nisa::interp::check_detail {
namespace {
// Where a walk stopped, for its messages.
struct WalkAt {
  const Module& m;
  const CheckOptions& o;
  const Names& names;
  Graph& g;
  int core, e;
  Engine eng;
};

[[noreturn]] void endless(const WalkAt& w, int64_t pc, uint64_t period) {
  throw Outside(fmt::format("{} on {} {} loops forever: its walk comes back to the same "
                            "instruction with the same registers every {} instructions and never "
                            "ends (an endless loop cannot be unrolled)",
                            w.names.loc(w.eng, pc), w.names.core_name(w.core), name_of(w.eng),
                            period));
}

// The walk reached the node limit: say whether its stream loops forever, ends later or is
// unknown further on.
[[noreturn]] void too_many(const WalkAt& w, const Registers& at, int64_t pc0, uint64_t walked) {
  // A copy of the registers walks on without making nodes (Brent's cycle finding): the walk
  // depends only on (pc, registers), so a state seen again is an endless loop.
  const auto& code = w.m.streams[size_t(w.e)];
  const int64_t len = int64_t(code.size());
  static constexpr uint64_t kMore = uint64_t(1) << 24; // instructions walked on at most
  Registers regs = at;
  int64_t pc = pc0, saved_pc = pc0;
  Registers::State saved = regs.state();
  uint64_t power = 1, lam = 0, more = 0;
  enum { loops, ends, unknown } fate = unknown;
  try {
    while (more < kMore) {
      if (pc >= len) {
        fate = ends;
        break;
      }
      pc = regs.step(code[size_t(pc)], pc);
      ++more, ++lam;
      if (pc == saved_pc && regs.state() == saved) {
        fate = loops;
        break;
      }
      if (lam == power) {
        saved = regs.state(), saved_pc = pc;
        power *= 2, lam = 0;
      }
      if ((more & 4095) == 0) w.g.budget->poll();
    }
  } catch (const Outside&) { // e.g. a branch on loaded data further on: neither is known
  }
  if (fate == loops) endless(w, pc, lam);
  const std::string where = fmt::format("{} on {} {}", w.names.loc(w.eng, pc0),
                                        w.names.core_name(w.core), name_of(w.eng));
  const std::string why =
      w.o.max_nodes ? std::string("the node limit")
                    : fmt::format("the node limit: --max-memory {} MiB at {} bytes a node",
                                  w.g.budget->memory_limit() >> 20, kCheckNodeBytes);
  const std::string rest =
      fate == ends ? fmt::format("a stream that ends after {} instructions ({} walked)",
                                 walked + more, walked)
                   : fmt::format("a stream that had not ended {} instructions further on", more);
  throw OutsideLimit(
      fmt::format("the kernel unrolls into more than {} instructions, transfers and "
                  "joins ({}); the walk was at {}, {}: raise --max-memory, or check a "
                  "smaller configuration (-D)",
                  w.g.budget->node_limit(), why, where, rest));
}

} // namespace

uint32_t Unroller::stream(int core, int kind, int idx, const std::string& name) {
  auto key = std::make_tuple(core, kind, idx);
  auto it = stream_ids_.find(key);
  if (it != stream_ids_.end()) return it->second;
  uint32_t id = uint32_t(g_.stream_len.size());
  stream_ids_[key] = id;
  g_.stream_len.push_back(0);
  g_.stream_name.push_back(name);
  return id;
}

uint32_t Unroller::add_node(Node n, uint32_t st) {
  if (g_.nodes.size() >= g_.budget->node_limit())
    throw OutsideLimit(
        fmt::format("more than {} unrolled instructions, transfers and joins (the node "
                    "limit)",
                    g_.budget->node_limit()));
  if (st != kNoStream) {
    n.stream = st;
    n.pos = ++g_.stream_len[st];
  }
  g_.nodes.push_back(std::move(n));
  g_.preds.emplace_back();
  return uint32_t(g_.nodes.size() - 1);
}

uint32_t Unroller::join_node(Party& p, const Node& n, const Inst& in) {
  if (p.join == UINT32_MAX) {
    Node j;
    j.kind = NK::join, j.core = n.core, j.eng = n.eng, j.pc = n.pc, j.in = &in;
    p.join = add_node(j, kNoStream);
  }
  return p.join;
}

void Unroller::run() {
  g_.ncores = o_.lnc * o_.ranks;
  g_.nsems = m_.sems.size();
  g_.sems.assign(size_t(g_.ncores) * g_.nsems, {});
  for (int c = 0; c < g_.ncores; ++c)
    for (size_t s = 0; s < g_.nsems; ++s) g_.sems[size_t(c) * g_.nsems + s].init = m_.sems[s].init;
  for (int c = 0; c < g_.ncores; ++c) {
    last_xfer_.clear();
    last_cc_.clear();
    for (int e = 0; e < kNumEngines; ++e)
      if (!m_.streams[size_t(e)].empty()) walk(c, e);
  }
  finish_joins();
  gather_accesses();
  sem_histories();
}

void Unroller::walk(int c, int e) {
  const auto& code = m_.streams[size_t(e)];
  const Engine eng = Engine(e);
  Walk w{c, c / o_.lnc, c % o_.lnc, e, eng, 0};
  w.st = stream(c, 0, e, fmt::format("{} {}", names_.core_name(c), name_of(eng)));
  const int64_t len = int64_t(code.size());
  Registers regs(m_, o_, names_, c, eng, len);
  const WalkAt at{m_, o_, names_, g_, c, e, eng};
  int64_t pc = 0;
  const uint64_t limit = g_.budget->node_limit();
  uint64_t walked = 0;
  // Brent's cycle finding on (pc, registers): the walk depends on nothing else, so a state
  // that comes back never ends (found long before the node limit).
  int64_t saved_pc = 0;
  Registers::State saved = regs.state();
  uint64_t power = 1, lam = 0;
  while (pc < len) {
    g_.budget->poll();
    if (g_.nodes.size() + 4 >= limit) too_many(at, regs, pc, walked);
    ++walked;
    const Inst& in = code[size_t(pc)];
    ++g_.insts;
    const InstDesc& d = desc(in.op);
    Node n;
    n.core = c, n.eng = eng, n.pc = int32_t(pc), n.in = &in;
    tmp_.clear();
    const ExecKind kind = exec_kind(d);
    const bool is_dma = kind == ExecKind::dma, is_cc = kind == ExecKind::collective;
    const bool is_barrier = kind == ExecKind::barrier, is_sr = kind == ExecKind::send_recv;
    // What faults when it is reached is not a schedule question: the run stops there.
    if (!gen_allows(d.gens, o_.target))
      throw Outside(fmt::format("{}: '{}' is not available on {} (a fault when reached)",
                                names_.loc(eng, pc), d.mnemonic, name_of(o_.target)));
    // The static rules every run checks (isa/legality.h): a fault when reached, too.
    if (auto err = legality_error(in, o_.target))
      throw Outside(fmt::format("{}: {} (a fault when reached)", names_.loc(eng, pc),
                                legality_text(in, *err)));
    if ((is_barrier || is_sr) && o_.lnc != 2)
      throw Outside(fmt::format("{}: '{}' needs two cores (--lnc 2; a fault when reached)",
                                names_.loc(eng, pc), d.mnemonic));
    if (!is_dma && !is_cc) access_regions(c, o_.lnc, in, regs.values(), regs.unknown(), tmp_);
    const int64_t next = regs.step(in, pc);
    if (is_barrier || is_sr)
      rendezvous(w, n, in, is_barrier);
    else if (is_dma)
      dma(w, n, in, regs);
    else if (is_cc)
      collective(w, n, in, regs);
    else
      plain(w, n, in);
    pc = next;
    if (pc == saved_pc && regs.state() == saved) endless(at, pc, lam + 1);
    if (++lam == power) {
      saved = regs.state(), saved_pc = pc;
      power *= 2, lam = 0;
    }
  }
}

void Unroller::rendezvous(Walk& w, const Node& n0, const Inst& in, bool is_barrier) {
  const int c = w.core;
  Node n = n0;
  n.kind = NK::inst;
  n.sigs = true;
  uint32_t me = add_node(n, w.st);
  int64_t key = is_barrier ? w.e : in.ops[op::send_recv::pipe].i;
  int kind = is_barrier ? 0 : 1;
  if (!is_barrier) {
    auto [it, fresh] = sr_engine_.try_emplace({c, 1, key}, w.e);
    if (!fresh && it->second != w.e)
      throw Outside(fmt::format("{}: send_recv pipe {} is used by two engines of {}: "
                                "which one meets the peer depends on the schedule",
                                names_.loc(w.eng, n.pc), key, names_.core_name(c)));
  }
  int k = rdv_count_[{c, int64_t(kind) * (int64_t(1) << 40) + key}]++;
  Party& p = rdv_[{w.rank, kind, key, k}];
  join_node(p, n, in);
  p.who.push_back({c, me});
  if (w.prev != UINT32_MAX) g_.preds[p.join].push_back(w.prev);
  g_.preds[me].push_back(p.join);
  if (!is_barrier) {
    for (Region& r : tmp_) g_.accs.push_back({r, me});
  }
  for (const Wait& wt : in.waits) g_.waits.push_back({p.join, me, c, wt});
  w.prev = me;
}

void Unroller::dma(Walk& w, const Node& n0, const Inst& in, const Registers& regs) {
  const int c = w.core;
  Node n = n0;
  n.kind = NK::inst;
  uint32_t trig = add_node(n, w.st);
  if (w.prev != UINT32_MAX) g_.preds[trig].push_back(w.prev);
  for (const Wait& wt : in.waits) g_.waits.push_back({trig, trig, c, wt});
  int q = int(dma_queue(in));
  uint32_t qs = stream(c, 1, w.e * 64 + q,
                       fmt::format("{} q{} (from {})", names_.core_name(c), q, name_of(w.eng)));
  Node x = n;
  x.kind = NK::xfer, x.queue = int16_t(q), x.sigs = true;
  access_regions(c, o_.lnc, in, regs.values(), regs.unknown(), tmp_);
  x.acc0 = uint32_t(g_.accs.size());
  uint32_t xn = add_node(x, qs);
  for (Region& r : tmp_) g_.accs.push_back({r, xn});
  g_.nodes[xn].acc0 = uint32_t(g_.accs.size() - tmp_.size());
  g_.nodes[xn].nacc = uint32_t(tmp_.size());
  g_.preds[xn].push_back(trig);
  auto lk = last_xfer_.find({w.e, q});
  if (lk != last_xfer_.end()) g_.preds[xn].push_back(lk->second);
  last_xfer_[{w.e, q}] = xn;
  w.prev = trig;
}

void Unroller::collective(Walk& w, const Node& n, const Inst& in, const Registers& regs) {
  const int c = w.core, rank = w.rank;
  uint32_t trig = add_node(n, w.st);
  if (w.prev != UINT32_MAX) g_.preds[trig].push_back(w.prev);
  for (const Wait& wt : in.waits) g_.waits.push_back({trig, trig, c, wt});
  const int ch = int(cc_channel(in));
  if (ch < 0 || ch >= kNumCcChannels) throw Outside("bad collective channel (a fault)");
  std::vector<int> members;
  int64_t g = in.ops[op::collective::group].i;
  if (g < 0 || size_t(g) >= m_.groups.size()) throw Outside("undeclared replica group");
  const ReplicaGroupDecl& grp = m_.groups[size_t(g)];
  if (in.op == Opcode::collective_permute) {
    for (const auto& pr : grp.groups)
      for (uint32_t r : pr)
        if (std::find(members.begin(), members.end(), int(r)) == members.end())
          members.push_back(int(r));
    std::sort(members.begin(), members.end());
    if (std::find(members.begin(), members.end(), rank) == members.end()) members.clear();
  } else {
    for (const auto& list : grp.groups)
      if (std::find(list.begin(), list.end(), uint32_t(rank)) != list.end())
        for (uint32_t r : list) members.push_back(int(r));
  }
  if (members.empty())
    throw Outside(fmt::format("{}: rank {} is in no list of replica group '{}' (a fault)",
                              names_.loc(w.eng, n.pc), rank, grp.name));
  for (int& r : members) {
    if (r >= o_.ranks)
      throw Outside(fmt::format("{}: replica group '{}' names rank {} but there are {} "
                                "ranks (a fault)",
                                names_.loc(w.eng, n.pc), grp.name, r, o_.ranks));
    r = r * o_.lnc + w.cid;
  }
  int k = cc_count_[{c, ch, g, members}]++;
  Party& p = ccp_[{ch, g, members, k}];
  if (p.join == UINT32_MAX) {
    join_node(p, n, in);
    p.members = members;
  }
  uint32_t cs = stream(c, 2, ch, fmt::format("{} cc ch{}", names_.core_name(c), ch));
  Node done = n;
  done.kind = NK::ccdone, done.queue = int16_t(kNumDmaQueues + ch), done.sigs = true;
  uint32_t dn = add_node(done, cs);
  // the previous transfer on this channel of this core precedes the join
  auto lc = last_cc_.find(ch);
  if (lc != last_cc_.end()) g_.preds[p.join].push_back(lc->second);
  last_cc_[ch] = dn;
  g_.preds[p.join].push_back(trig);
  g_.preds[dn].push_back(p.join);
  p.who.push_back({c, dn});
  access_regions(c, o_.lnc, in, regs.values(), regs.unknown(), tmp_);
  for (Region& r : tmp_) g_.accs.push_back({r, dn});
  w.prev = trig;
}

void Unroller::plain(Walk& w, const Node& n0, const Inst& in) {
  Node n = n0;
  n.kind = NK::inst;
  n.sigs = in.op != Opcode::sem_set;
  n.set = in.op == Opcode::sem_set;
  uint32_t me = add_node(n, w.st);
  if (w.prev != UINT32_MAX) g_.preds[me].push_back(w.prev);
  g_.nodes[me].acc0 = uint32_t(g_.accs.size());
  g_.nodes[me].nacc = uint32_t(tmp_.size());
  for (Region& r : tmp_) g_.accs.push_back({r, me});
  for (const Wait& wt : in.waits) g_.waits.push_back({me, me, w.core, wt});
  w.prev = me;
}

// Joins: participants, completeness.
void Unroller::finish_joins() {
  auto finish = [&](Party& p, const std::vector<int>& members) {
    Node& j = g_.nodes[p.join];
    j.anc0 = uint32_t(g_.anchors.size());
    for (auto& [c, w] : p.who) g_.anchors.push_back({g_.nodes[w].stream, g_.nodes[w].pos});
    j.nanc = uint32_t(p.who.size());
    for (int mc : members) {
      bool found = false;
      for (auto& [c, w] : p.who) found |= c == mc;
      if (!found) {
        j.incomplete = true;
        j.missing += (j.missing.empty() ? "" : ", ") + names_.core_name(mc);
      }
    }
  };
  for (auto& [key, p] : rdv_) {
    std::vector<int> members;
    int rank = std::get<0>(key);
    for (int k = 0; k < o_.lnc; ++k) members.push_back(rank * o_.lnc + k);
    finish(p, members);
  }
  for (auto& [key, p] : ccp_) finish(p, p.members);
}

// Collectives and send_recv move data at the join: their accesses are gathered on it. Every
// node's accesses in one run of `accs`.
void Unroller::gather_accesses() {
  const size_t N = g_.nodes.size();
  std::vector<std::vector<Acc>> at(N);
  std::vector<uint32_t> join_of(N, UINT32_MAX);
  for (auto& [key, p] : rdv_)
    for (auto& [c, w] : p.who) join_of[w] = p.join;
  for (auto& [key, p] : ccp_)
    for (auto& [c, w] : p.who) join_of[w] = p.join;
  for (const Acc& a : g_.accs) {
    uint32_t holder = join_of[a.who] != UINT32_MAX ? join_of[a.who] : a.who;
    at[holder].push_back(a);
  }
  g_.accs.clear();
  for (size_t i = 0; i < N; ++i) {
    g_.nodes[i].acc0 = uint32_t(g_.accs.size());
    g_.nodes[i].nacc = uint32_t(at[i].size());
    g_.accs.insert(g_.accs.end(), at[i].begin(), at[i].end());
  }
}

// Semaphore histories: the signals of each (core, sem) by stream, and its sem_sets.
void Unroller::sem_histories() {
  const size_t nsems = g_.nsems;
  for (uint32_t i = 0; i < g_.nodes.size(); ++i) {
    const Node& n = g_.nodes[i];
    if (!n.in) continue;
    if (n.set) {
      int64_t s = n.in->ops[op::sem_set::sem].i;
      if (s < 0 || size_t(s) >= nsems) throw Outside("sem_set of an undeclared semaphore");
      g_.sems[size_t(n.core) * nsems + size_t(s)].sets.push_back(
          {i, uint32_t(n.in->ops[op::sem_set::value].i)});
    }
    if (!n.sigs || n.kind == NK::join) continue;
    // A DMA trigger or collective trigger carries no signal: its transfer / completion does.
    if (n.kind == NK::inst && (is_async_dma(*n.in) || exec_kind(*n.in) == ExecKind::collective))
      continue;
    for (const Signal& s : n.in->signals) {
      if (s.sem >= nsems) throw Outside("signal of an undeclared semaphore (a fault)");
      SemInfo& si = g_.sems[size_t(n.core) * nsems + s.sem];
      auto it = si.by_stream.find(n.stream);
      if (it == si.by_stream.end()) {
        it = si.by_stream.emplace(n.stream, si.lists.size()).first;
        si.lists.push_back({n.stream, {}, {}, {0}});
      }
      SigList& l = si.lists[it->second];
      if (!l.nodes.empty() && l.nodes.back() == i) { // two signals of one sem on one inst
        l.prefix.back() += s.delta;
        continue;
      }
      l.nodes.push_back(i);
      l.pos.push_back(n.pos);
      l.prefix.push_back(l.prefix.back() + s.delta);
    }
  }
  for (const WaitRec& w : g_.waits)
    if (w.w.sem >= nsems) throw Outside("wait on an undeclared semaphore (a fault)");
}

} // namespace nisa::interp::check_detail
