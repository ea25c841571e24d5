// nisa check, part 1: the streams unrolled into nodes.
#include "interp/check/check_extents.h"
#include "interp/check/check_internal.h"
#include "isa/exec_kind.h"
#include "isa/legality.h"

namespace nisa::interp::check_detail {

// ---- unrolling ---------------------------------------------------------------------------------

void Checker::build() {
  g_.ncores = o_.lnc * o_.ranks;
  g_.nsems = m_.sems.size();
  const size_t nsems = m_.sems.size();
  g_.sems.assign(size_t(g_.ncores) * nsems, {});
  for (int c = 0; c < g_.ncores; ++c)
    for (size_t s = 0; s < nsems; ++s) g_.sems[size_t(c) * nsems + s].init = m_.sems[s].init;

  // Rendezvous keys -> the participants' join, per rank.
  struct Party {
    uint32_t join = UINT32_MAX;
    std::vector<std::pair<int, uint32_t>> who; // (core, participant node)
    std::vector<int> members;
  };
  std::map<std::tuple<int, int, int64_t, int>, Party> rdv; // (rank, kind, key, k-th)
  std::map<std::tuple<int, int64_t>, int> rdv_count;       // (core, kind*big + key) -> count
  std::map<std::tuple<int, int, int64_t>, int> sr_engine;  // (core, pipe) -> engine
  // Collectives: (chan, group, members, k-th) -> party.
  std::map<std::tuple<int, int64_t, std::vector<int>, int>, Party> ccp;
  std::map<std::tuple<int, int, int64_t, std::vector<int>>, int> cc_count;
  std::vector<Region> tmp;

  for (int c = 0; c < g_.ncores; ++c) {
    const int rank = c / o_.lnc, cid = c % o_.lnc;
    std::map<std::pair<int, int>, uint32_t> last_xfer; // (engine, queue) -> node
    std::map<int, uint32_t> last_cc;                   // channel -> completion node
    for (int e = 0; e < kNumEngines; ++e) {
      const auto& code = m_.streams[size_t(e)];
      if (code.empty()) continue;
      const Engine eng = Engine(e);
      const uint32_t st = stream(c, 0, e, fmt::format("{} {}", names_.core_name(c), name_of(eng)));
      int32_t regs[kNumRegs] = {};
      uint64_t unknown = 0;
      uint32_t prev = UINT32_MAX; // previous node of the engine stream
      int64_t pc = 0;
      const int64_t len = int64_t(code.size());
      auto reg_val = [&](const Operand& o, bool& unk) -> int32_t {
        if (!o.is_reg) return int32_t(o.i);
        if (o.i < 0 || o.i >= kNumRegs) throw Outside("bad register");
        unk |= (unknown >> o.i) & 1;
        return regs[o.i];
      };
      while (pc < len) {
        if (g_.nodes.size() + 4 >= o_.max_nodes)
          throw Outside(fmt::format("more than {} unrolled instructions and transfers, the last at "
                                    "{} on {} {} (an endless loop?)",
                                    o_.max_nodes, names_.loc(eng, pc), names_.core_name(c),
                                    name_of(eng)));
        const Inst& in = code[size_t(pc)];
        ++g_.insts;
        const InstDesc& d = desc(in.op);
        int64_t next = pc + 1;
        Node n;
        n.core = c, n.eng = eng, n.pc = int32_t(pc), n.in = &in;
        tmp.clear();
        const ExecKind kind = exec_kind(d);
        const bool is_dma = kind == ExecKind::dma, is_cc = kind == ExecKind::collective;
        const bool is_barrier = kind == ExecKind::barrier, is_sr = kind == ExecKind::send_recv;
        // What faults when it is reached is not a schedule question: the run stops there.
        if (!gen_allows(d.gens, o_.target))
          throw Outside(fmt::format("{}: '{}' is not available on {} (a fault when reached)",
                                    names_.loc(eng, pc), d.mnemonic, name_of(o_.target)));
        // The static rules every run checks (isa/legality.h): a fault when reached, too.
        if (auto e = legality_error(in, o_.target))
          throw Outside(fmt::format("{}: {} (a fault when reached)", names_.loc(eng, pc),
                                    legality_text(in, *e)));
        if ((is_barrier || is_sr) && o_.lnc != 2)
          throw Outside(fmt::format("{}: '{}' needs two cores (--lnc 2; a fault when reached)",
                                    names_.loc(eng, pc), d.mnemonic));
        if (!is_dma && !is_cc) access_regions(c, o_.lnc, in, regs, unknown, tmp);
        // registers and branches
        auto rd = [&](int32_t v, bool unk) {
          int64_t r = in.ops[op::reg_write::rd].i;
          if (r < 0 || r >= kNumRegs) throw Outside("bad register");
          regs[r] = v;
          unknown = unk ? (unknown | (uint64_t(1) << r)) : (unknown & ~(uint64_t(1) << r));
        };
        auto target = [&](const Operand& t) {
          if (t.i < 0 || t.i > len)
            throw Outside(
                fmt::format("{}: branch target {} outside the stream", names_.loc(eng, pc), t.i));
          return t.i;
        };
        auto cond_reg = [&](int64_t r) -> int32_t {
          if (r < 0 || r >= kNumRegs) throw Outside("bad register");
          if ((unknown >> r) & 1)
            throw Outside(fmt::format(
                "{}: '{}' on {} branches on r{}, which holds a value loaded from memory: the "
                "control flow depends on data",
                names_.loc(eng, pc), d.mnemonic, names_.core_name(c), r));
          return regs[r];
        };
        if (is_reg_alu(in.op)) { // rd = rs op rt (isa/exec_kind.h reg_alu)
          bool unk = false;
          Operand rs = in.ops[op::reg_alu::rs];
          rs.is_reg = true;
          const int32_t a = reg_val(rs, unk), b = reg_val(in.ops[op::reg_alu::rt], unk);
          rd(reg_alu(in.op, a, b), unk);
        } else
          switch (in.op) {
          case Opcode::li: rd(int32_t(in.ops[op::li::imm].i), false); break;
          case Opcode::sysreg: {
            int32_t v = 0;
            switch (static_cast<SysReg>(in.ops[op::sysreg::which].i)) {
            case SysReg::program_id: v = cid; break;
            case SysReg::num_programs: v = o_.lnc; break;
            case SysReg::rank_id: v = rank; break;
            case SysReg::num_ranks: v = o_.ranks; break;
            case SysReg::nc_version: v = static_cast<int32_t>(o_.target); break;
            default: throw Outside("unknown system register");
            }
            rd(v, false);
            break;
          }
          case Opcode::ring_rank: {
            bool unk = false;
            int32_t step = reg_val(in.ops[op::ring_rank::step], unk);
            int64_t g = in.ops[op::ring_rank::group].i;
            if (g < 0 || size_t(g) >= m_.groups.size()) throw Outside("undeclared replica group");
            bool found = false;
            for (const auto& list : m_.groups[size_t(g)].groups)
              for (size_t i = 0; i < list.size() && !found; ++i)
                if (list[i] == uint32_t(rank)) {
                  int64_t nn = int64_t(list.size());
                  int64_t p = ((int64_t(i) - step) % nn + nn) % nn;
                  rd(int32_t(list[size_t(p)]), unk);
                  found = true;
                }
            if (!found)
              throw Outside(fmt::format("{}: ring_rank: rank {} is in no list of its "
                                        "replica group (a fault)",
                                        names_.loc(eng, pc), rank));
            break;
          }
          case Opcode::ld: rd(0, true); break;
          case Opcode::br: next = target(in.ops[op::br::target]); break;
          case Opcode::bnz:
            if (cond_reg(in.ops[op::bnz::rs].i) != 0) next = target(in.ops[op::bnz::target]);
            break;
          case Opcode::bz:
            if (cond_reg(in.ops[op::bz::rs].i) == 0) next = target(in.ops[op::bz::target]);
            break;
          case Opcode::blt: {
            const Operand& rt = in.ops[op::blt::rt];
            int32_t a = cond_reg(in.ops[op::blt::rs].i);
            int32_t b = rt.is_reg ? cond_reg(rt.i) : int32_t(rt.i);
            if (a < b) next = target(in.ops[op::blt::target]);
            break;
          }
          case Opcode::halt: next = len; break;
          default: break;
          }
        // the node(s)
        if (is_barrier || is_sr) {
          n.kind = NK::inst;
          n.sigs = true;
          uint32_t me = add_node(n, st);
          int64_t key = is_barrier ? e : in.ops[op::send_recv::pipe].i;
          int kind = is_barrier ? 0 : 1;
          if (is_sr) {
            auto [it, fresh] = sr_engine.try_emplace({c, 1, key}, e);
            if (!fresh && it->second != e)
              throw Outside(fmt::format("{}: send_recv pipe {} is used by two engines of {}: "
                                        "which one meets the peer depends on the schedule",
                                        names_.loc(eng, pc), key, names_.core_name(c)));
          }
          int k = rdv_count[{c, int64_t(kind) * (int64_t(1) << 40) + key}]++;
          Party& p = rdv[{rank, kind, key, k}];
          if (p.join == UINT32_MAX) {
            Node j;
            j.kind = NK::join, j.core = c, j.eng = eng, j.pc = int32_t(pc), j.in = &in;
            p.join = add_node(j, kNoStream);
          }
          p.who.push_back({c, me});
          if (prev != UINT32_MAX) g_.preds[p.join].push_back(prev);
          g_.preds[me].push_back(p.join);
          if (is_sr) {
            for (Region& g : tmp) g_.accs.push_back({g, me});
          }
          for (const Wait& w : in.waits) g_.waits.push_back({p.join, me, c, w});
          prev = me;
        } else if (is_dma) {
          n.kind = NK::inst;
          uint32_t trig = add_node(n, st);
          if (prev != UINT32_MAX) g_.preds[trig].push_back(prev);
          for (const Wait& w : in.waits) g_.waits.push_back({trig, trig, c, w});
          int q = int(dma_queue(in));
          uint32_t qs =
              stream(c, 1, e * 64 + q,
                     fmt::format("{} q{} (from {})", names_.core_name(c), q, name_of(eng)));
          Node x = n;
          x.kind = NK::xfer, x.queue = int16_t(q), x.sigs = true;
          access_regions(c, o_.lnc, in, regs, unknown, tmp);
          x.acc0 = uint32_t(g_.accs.size());
          uint32_t xn = add_node(x, qs);
          for (Region& g : tmp) g_.accs.push_back({g, xn});
          g_.nodes[xn].acc0 = uint32_t(g_.accs.size() - tmp.size());
          g_.nodes[xn].nacc = uint32_t(tmp.size());
          g_.preds[xn].push_back(trig);
          auto lk = last_xfer.find({e, q});
          if (lk != last_xfer.end()) g_.preds[xn].push_back(lk->second);
          last_xfer[{e, q}] = xn;
          prev = trig;
        } else if (is_cc) {
          uint32_t trig = add_node(n, st);
          if (prev != UINT32_MAX) g_.preds[trig].push_back(prev);
          for (const Wait& w : in.waits) g_.waits.push_back({trig, trig, c, w});
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
                                      names_.loc(eng, pc), rank, grp.name));
          for (int& r : members) {
            if (r >= o_.ranks)
              throw Outside(fmt::format("{}: replica group '{}' names rank {} but there are {} "
                                        "ranks (a fault)",
                                        names_.loc(eng, pc), grp.name, r, o_.ranks));
            r = r * o_.lnc + cid;
          }
          int k = cc_count[{c, ch, g, members}]++;
          Party& p = ccp[{ch, g, members, k}];
          if (p.join == UINT32_MAX) {
            Node j;
            j.kind = NK::join, j.core = c, j.eng = eng, j.pc = int32_t(pc), j.in = &in;
            p.join = add_node(j, kNoStream);
            p.members = members;
          }
          uint32_t cs = stream(c, 2, ch, fmt::format("{} cc ch{}", names_.core_name(c), ch));
          Node done = n;
          done.kind = NK::ccdone, done.queue = int16_t(kNumDmaQueues + ch), done.sigs = true;
          uint32_t dn = add_node(done, cs);
          // the previous transfer on this channel of this core precedes the join
          auto lc = last_cc.find(ch);
          if (lc != last_cc.end()) g_.preds[p.join].push_back(lc->second);
          last_cc[ch] = dn;
          g_.preds[p.join].push_back(trig);
          g_.preds[dn].push_back(p.join);
          p.who.push_back({c, dn});
          access_regions(c, o_.lnc, in, regs, unknown, tmp);
          for (Region& g2 : tmp) g_.accs.push_back({g2, dn});
          prev = trig;
        } else {
          n.kind = NK::inst;
          n.sigs = in.op != Opcode::sem_set;
          n.set = in.op == Opcode::sem_set;
          uint32_t me = add_node(n, st);
          if (prev != UINT32_MAX) g_.preds[me].push_back(prev);
          g_.nodes[me].acc0 = uint32_t(g_.accs.size());
          g_.nodes[me].nacc = uint32_t(tmp.size());
          for (Region& g : tmp) g_.accs.push_back({g, me});
          for (const Wait& w : in.waits) g_.waits.push_back({me, me, c, w});
          prev = me;
        }
        pc = next;
      }
    }
  }
  // Joins: participants, completeness, accesses (collectives and send_recv move data at the
  // join: their accesses are gathered on it).
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
  for (auto& [key, p] : rdv) {
    std::vector<int> members;
    int rank = std::get<0>(key);
    for (int k = 0; k < o_.lnc; ++k) members.push_back(rank * o_.lnc + k);
    finish(p, members);
  }
  for (auto& [key, p] : ccp) finish(p, p.members);
  // Move the accesses of rendezvous and collectives onto their joins.
  std::vector<std::vector<Acc>> at(g_.nodes.size());
  std::vector<Acc> keep;
  std::vector<uint32_t> join_of(g_.nodes.size(), UINT32_MAX);
  for (auto& [key, p] : rdv)
    for (auto& [c, w] : p.who) join_of[w] = p.join;
  for (auto& [key, p] : ccp)
    for (auto& [c, w] : p.who) join_of[w] = p.join;
  for (const Acc& a : g_.accs) {
    uint32_t holder = join_of[a.who] != UINT32_MAX ? join_of[a.who] : a.who;
    at[holder].push_back(a);
  }
  g_.accs.clear();
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    g_.nodes[i].acc0 = uint32_t(g_.accs.size());
    g_.nodes[i].nacc = uint32_t(at[i].size());
    g_.accs.insert(g_.accs.end(), at[i].begin(), at[i].end());
  }
  // Semaphore histories.
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
  S_ = uint32_t(g_.stream_len.size());
  if (uint64_t(g_.nodes.size()) * S_ * 4 > o_.max_vc_bytes)
    throw Outside(fmt::format("{} nodes x {} streams of vector clocks exceed {} bytes",
                              g_.nodes.size(), S_, o_.max_vc_bytes));
  best_.assign(g_.waits.size(), {});
  for (size_t i = 0; i < g_.waits.size(); ++i) {
    const SemInfo& si = g_.sems[size_t(g_.waits[i].core) * nsems + g_.waits[i].w.sem];
    best_[i].assign(si.lists.size(), 0);
  }
}

} // namespace nisa::interp::check_detail
