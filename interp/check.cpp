// The static synchronisation proof (interp/check.h, docs/check.md).
#include "interp/check.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "interp/race.h"
#include "interp/scheduler.h"

namespace nisa::interp {
namespace {

__extension__ typedef __int128 i128;

constexpr uint32_t kNoStream = UINT32_MAX;

// Why a kernel is outside what is proved (caught at the top).
struct Outside : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Anchor {
  uint32_t stream, pos;
};

enum class NK : uint8_t { inst, xfer, join, ccdone };

struct Node {
  uint32_t stream = kNoStream, pos = 0; // pos: 1-based place in the stream
  int32_t core = 0;
  Engine eng = Engine::sp;
  int32_t pc = -1;    // the instruction (the trigger for transfers); -1 for joins
  int16_t queue = -1; // DMA queue of a transfer, 16 + channel of a collective completion
  NK kind = NK::inst;
  const Inst* in = nullptr;
  bool sigs = false; // the instruction's signals apply here
  bool set = false;  // sem_set applies here
  uint32_t acc0 = 0, nacc = 0;
  uint32_t anc0 = 0, nanc = 0; // joins: the participants (anchors)
  bool incomplete = false;     // a join some participant never reaches
  std::string missing;         // ... which one
};

struct Acc {
  Region r;
  uint32_t who; // the instruction node reported for this access (trigger / participant)
};

struct WaitRec {
  uint32_t site; // node whose issue the wait gates (a join for rendezvous)
  uint32_t inst; // node of the instruction carrying it (reports)
  int32_t core;
  Wait w;
};

struct SigList { // the signals of one (core, sem) from one stream, in stream order
  uint32_t stream;
  std::vector<uint32_t> nodes;
  std::vector<uint32_t> pos;
  std::vector<uint64_t> prefix; // prefix[i] = sum of the first i deltas
};

struct SetRec {
  uint32_t node;
  uint32_t value;
};

struct SemInfo {
  std::vector<SigList> lists;
  std::map<uint32_t, size_t> by_stream;
  std::vector<SetRec> sets;
  uint32_t init = 0;
};

class Checker {
public:
  Checker(const Module& m, const CheckOptions& o) : m_(m), o_(o) {}
  CheckResult run();

private:
  const Module& m_;
  const CheckOptions& o_;
  int ncores_ = 1;
  std::vector<Node> nodes_;
  std::vector<std::vector<uint32_t>> preds_; // static predecessors
  std::vector<Acc> accs_;
  std::vector<Anchor> anchors_;
  std::vector<WaitRec> waits_;
  std::map<std::tuple<int, int, int>, uint32_t> stream_ids_; // (core, kind, index)
  std::vector<uint32_t> stream_len_;
  std::vector<std::string> stream_name_;
  std::vector<SemInfo> sems_; // [core * nsems + sem]
  uint64_t insts_ = 0;
  // per wait, per signalling stream (index into its SemInfo lists): the latest signal proved
  // to precede the wait (+1; 0 = none)
  std::vector<std::vector<uint32_t>> best_;
  std::vector<uint32_t> vc_;
  std::vector<uint32_t> topo_;
  uint32_t S_ = 0;
  bool cycle_ = false;

  // ---- building ------------------------------------------------------------------------------
  uint32_t stream(int core, int kind, int idx, const std::string& name) {
    auto key = std::make_tuple(core, kind, idx);
    auto it = stream_ids_.find(key);
    if (it != stream_ids_.end()) return it->second;
    uint32_t id = uint32_t(stream_len_.size());
    stream_ids_[key] = id;
    stream_len_.push_back(0);
    stream_name_.push_back(name);
    return id;
  }
  std::string core_name(int c) const {
    if (o_.ranks > 1) return fmt::format("rank {} core {}", c / o_.lnc, c % o_.lnc);
    return fmt::format("core {}", c);
  }
  uint32_t add_node(Node n, uint32_t st) {
    if (nodes_.size() >= o_.max_nodes)
      throw Outside(fmt::format("more than {} unrolled instructions and transfers", o_.max_nodes));
    if (st != kNoStream) {
      n.stream = st;
      n.pos = ++stream_len_[st];
    }
    nodes_.push_back(std::move(n));
    preds_.emplace_back();
    return uint32_t(nodes_.size() - 1);
  }
  std::string loc(Engine e, int64_t pc) const {
    const auto& d = m_.debug[size_t(e)];
    if (pc < 0 || size_t(pc) >= d.size()) return fmt::format("{}[{}]", name_of(e), pc);
    const DebugLoc& l = d[size_t(pc)];
    std::string f = l.file < m_.files.size() ? m_.files[l.file] : "?";
    return fmt::format("{}:{}", f, l.line);
  }
  std::string loc_of(uint32_t n) const { return loc(nodes_[n].eng, nodes_[n].pc); }
  std::tuple<uint32_t, uint32_t, uint32_t, uint32_t> src_key(uint32_t n) const {
    const auto& d = m_.debug[size_t(nodes_[n].eng)];
    const int32_t pc = nodes_[n].pc;
    if (pc < 0 || size_t(pc) >= d.size()) return {UINT32_MAX, 0, 0, uint32_t(n)};
    return {d[size_t(pc)].file, d[size_t(pc)].line, d[size_t(pc)].col, uint32_t(n)};
  }
  std::string who_of(uint32_t n) const {
    const Node& x = nodes_[n];
    std::string s = fmt::format("{} {}", core_name(x.core), name_of(x.eng));
    if (x.queue >= 0 && x.queue < kNumDmaQueues) s += fmt::format(" -> q{}", x.queue);
    if (x.queue >= kNumDmaQueues) s += fmt::format(" -> cc ch{}", x.queue - kNumDmaQueues);
    return s;
  }

  void regions(int core, const Inst& in, const int32_t* regs, uint64_t unknown,
               std::vector<Region>& out) const;
  void build();
  // ---- happens-before ------------------------------------------------------------------------
  bool topo_and_clocks();
  bool after(uint32_t node, const Anchor* a, uint32_t na) const {
    const uint32_t* v = &vc_[size_t(node) * S_];
    for (uint32_t i = 0; i < na; ++i)
      if (v[a[i].stream] >= a[i].pos) return true;
    return false;
  }
  void site_anchors(uint32_t site, std::vector<Anchor>& a) const {
    a.clear();
    const Node& n = nodes_[site];
    if (n.stream != kNoStream) a.push_back({n.stream, n.pos});
    for (uint32_t i = 0; i < n.nanc; ++i) a.push_back(anchors_[n.anc0 + i]);
  }
  // The largest value (core, sem) can hold when `site` issues, in a schedule where the node
  // `x` (if any) has not completed.
  uint64_t max_count(const SemInfo& si, uint32_t site, const std::vector<Anchor>& sa,
                     const Anchor* x) const;
  bool derive_edges();
  // ---- checks --------------------------------------------------------------------------------
  void simulate(CheckResult& r);
  void check_sets(CheckResult& r);
  void check_eq_waits(CheckResult& r);
  void races(CheckResult& r);
  std::string region_text(const Region& g) const;
  std::string suggest(uint32_t a, uint32_t b) const;
};

// ---- access extents without memory -------------------------------------------------------------

void Checker::regions(int core, const Inst& in, const int32_t* regs, uint64_t unknown,
                      std::vector<Region>& out) const {
  const InstDesc& d = desc(in.op);
  const int rank = core / o_.lnc;
  for (size_t k = 0; k < d.operands.size() && k < in.ops.size(); ++k) {
    const Operand& o = in.ops[k];
    OperandKind kind = d.operands[k].kind;
    bool is_read = kind == OperandKind::Src || (kind == OperandKind::Scalar && o.is_ap);
    bool is_write = kind == OperandKind::Dst;
    if (!o.present || (!is_read && !is_write)) continue;
    const AccessPattern& ap = o.ap;
    if (ap.space == MemSpace::none || ap.ndims < 1 || ap.ndims > kMaxFreeDims) continue;
    bool hull_dyn = false;
    const i128 eb = dtype_bytes(ap.dtype);
    i128 lo = 0, hi = 0;
    for (int j = 0; j < ap.ndims; ++j) {
      const i128 reach = i128(ap.dims[j].stride) * (ap.dims[j].count ? ap.dims[j].count - 1 : 0);
      (reach < 0 ? lo : hi) += reach;
    }
    // The dynamic part: a known register, or every value in [0, limit) for an unknown
    // register or a vector index (each row may take any of them).
    std::vector<i128> dyn{0};
    bool unbounded = false;
    auto any_of_limit = [&]() {
      if (ap.dyn_limit == 0) {
        unbounded = true;
        return;
      }
      dyn.clear();
      if (ap.dyn_limit > 1024) { // too many: their hull
        dyn.push_back(0);
        dyn.push_back(i128(ap.dyn_limit - 1) * ap.dyn_mult);
        hull_dyn = true;
        return;
      }
      for (uint32_t d = 0; d < ap.dyn_limit; ++d) dyn.push_back(i128(d) * ap.dyn_mult);
    };
    if (ap.dyn == DynKind::reg) {
      if (ap.dyn_reg < kNumRegs && !((unknown >> ap.dyn_reg) & 1))
        dyn[0] = i128(regs[ap.dyn_reg]) * ap.dyn_mult;
      else
        any_of_limit();
    } else if (ap.dyn == DynKind::vec) {
      any_of_limit();
      Region ix; // the index tile is read
      ix.kind = MemKind::sbuf, ix.unit = uint16_t(core), ix.write = false;
      ix.p0 = ap.vidx.part_start;
      ix.p1 = std::min<uint32_t>(kNumPartitions, uint32_t(ap.vidx.part_start) + ap.part_count);
      ix.b0 = ap.vidx.offset, ix.b1 = uint64_t(ap.vidx.offset) + dtype_bytes(ap.vidx.dtype);
      if (ix.p1 > ix.p0) out.push_back(ix);
    }
    auto clampu = [](i128 v) -> uint64_t {
      if (v < 0) return 0;
      if (v > i128(INT64_MAX)) return uint64_t(INT64_MAX);
      return uint64_t(v);
    };
    const i128 off = i128(ap.offset);
    Region r;
    r.write = is_write;
    const bool on_chip = ap.space == MemSpace::sbuf || ap.space == MemSpace::psum;
    if (on_chip) {
      r.kind = ap.space == MemSpace::sbuf ? MemKind::sbuf : MemKind::psum;
      r.unit = uint16_t(core);
      r.p0 = ap.part_start;
      r.p1 = std::min<uint32_t>(kNumPartitions, uint32_t(ap.part_start) + ap.part_count);
      if (r.p1 <= r.p0) continue;
    } else {
      r.kind = MemKind::hbm, r.unit = uint16_t(rank), r.p0 = 0, r.p1 = 1;
    }
    if (unbounded) {
      r.b0 = 0, r.b1 = uint64_t(INT64_MAX);
      out.push_back(r);
      continue;
    }
    // Shifts (elements): every row of an HBM pattern, plus every dynamic value.
    const uint32_t nrows = std::max<uint32_t>(1, ap.part_count);
    const uint32_t erows = on_chip ? 1 : nrows;
    const bool grid_ok = !hull_dyn && !on_chip && nrows > 1 && dyn.size() > 1 && ap.dyn_mult > 0 &&
                         ap.part_stride % ap.dyn_mult == 0;
    if (!grid_ok && (hull_dyn || uint64_t(erows) * dyn.size() > 1024)) { // their hull
      const i128 pr = i128(ap.part_stride) * (erows - 1);
      const i128 mn = std::min<i128>(0, pr) + std::min(dyn.front(), dyn.back());
      const i128 mx = std::max<i128>(0, pr) + std::max(dyn.front(), dyn.back());
      r.b0 = clampu(off + (mn + lo) * eb), r.b1 = clampu(off + (mx + hi + 1) * eb);
      if (r.b1 > r.b0) out.push_back(r);
      continue;
    }
    std::vector<i128> rows{0};
    if (!on_chip && nrows > 1) {
      rows.clear();
      for (uint32_t p = 0; p < nrows; ++p) rows.push_back(i128(p) * ap.part_stride);
    }
    std::vector<std::pair<i128, i128>> iv; // byte intervals
    // Rows and dynamic values on one grid (the row stride a multiple of the dynamic step, as
    // in a gather of whole rows): the distinct shifts, not their product.
    const i128 ps_el = i128(ap.part_stride);
    const i128 mult = ap.dyn_mult;
    if (!hull_dyn && !on_chip && nrows > 1 && dyn.size() > 1 && mult > 0 && ps_el % mult == 0 &&
        rows.size() * dyn.size() > 1024) {
      const i128 q = ps_el / mult;
      const i128 qa = q < 0 ? -q : q;
      const i128 span = qa * (nrows - 1) + i128(dyn.size());
      if (span <= (i128(1) << 16)) {
        std::vector<uint8_t> hit(size_t(span), 0);
        const i128 base = q < 0 ? qa * (nrows - 1) : 0;
        for (uint32_t p = 0; p < nrows; ++p)
          for (size_t d = 0; d < dyn.size(); ++d) {
            const i128 k = base + q * p + i128(d);
            if (hit[size_t(k)]) break; // the rest of this row's run is marked already
            hit[size_t(k)] = 1;
          }
        rows.clear();
        dyn.assign(1, 0);
        for (size_t k = 0; k < hit.size(); ++k)
          if (hit[k]) rows.push_back((i128(k) - base) * mult);
      }
    }
    if (hull_dyn || rows.size() * dyn.size() > 1024) {
      i128 mn = 0, mx = 0;
      bool first = true;
      for (i128 a : {rows.front(), rows.back()})
        for (i128 d : {dyn.front(), dyn.back()}) {
          mn = first ? a + d : std::min(mn, a + d);
          mx = first ? a + d : std::max(mx, a + d);
          first = false;
        }
      iv.push_back({off + (mn + lo) * eb, off + (mx + hi + 1) * eb});
    } else {
      for (i128 a : rows)
        for (i128 d : dyn) iv.push_back({off + (a + d + lo) * eb, off + (a + d + hi + 1) * eb});
      std::sort(iv.begin(), iv.end());
      size_t w = 0;
      for (size_t i = 1; i < iv.size(); ++i) {
        if (iv[i].first <= iv[w].second)
          iv[w].second = std::max(iv[w].second, iv[i].second);
        else
          iv[++w] = iv[i];
      }
      iv.resize(w + 1);
    }
    for (auto [b0, b1] : iv) {
      r.b0 = clampu(b0), r.b1 = clampu(b1);
      if (r.b1 > r.b0) out.push_back(r);
    }
  }
}

// ---- unrolling ---------------------------------------------------------------------------------

void Checker::build() {
  ncores_ = o_.lnc * o_.ranks;
  const size_t nsems = m_.sems.size();
  sems_.assign(size_t(ncores_) * nsems, {});
  for (int c = 0; c < ncores_; ++c)
    for (size_t s = 0; s < nsems; ++s) sems_[size_t(c) * nsems + s].init = m_.sems[s].init;

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

  for (int c = 0; c < ncores_; ++c) {
    const int rank = c / o_.lnc, cid = c % o_.lnc;
    std::map<std::pair<int, int>, uint32_t> last_xfer; // (engine, queue) -> node
    std::map<int, uint32_t> last_cc;                   // channel -> completion node
    for (int e = 0; e < kNumEngines; ++e) {
      const auto& code = m_.streams[size_t(e)];
      if (code.empty()) continue;
      const Engine eng = Engine(e);
      const uint32_t st = stream(c, 0, e, fmt::format("{} {}", core_name(c), name_of(eng)));
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
        if (nodes_.size() + 4 >= o_.max_nodes)
          throw Outside(fmt::format("more than {} unrolled instructions and transfers, the last at "
                                    "{} on {} {} (an endless loop?)",
                                    o_.max_nodes, loc(eng, pc), core_name(c), name_of(eng)));
        const Inst& in = code[size_t(pc)];
        ++insts_;
        const InstDesc& d = desc(in.op);
        int64_t next = pc + 1;
        Node n;
        n.core = c, n.eng = eng, n.pc = int32_t(pc), n.in = &in;
        tmp.clear();
        const bool is_dma =
            in.op == Opcode::dma || in.op == Opcode::dma_transpose || in.op == Opcode::dma_compute;
        const bool is_cc = d.cost == CostClass::cc;
        const bool is_barrier = in.op == Opcode::core_barrier;
        const bool is_sr = in.op == Opcode::send_recv;
        // What faults when it is reached is not a schedule question: the run stops there.
        if (!(d.gens & gen_bit(o_.target)))
          throw Outside(fmt::format("{}: '{}' is not available on {} (a fault when reached)",
                                    loc(eng, pc), d.mnemonic, name_of(o_.target)));
        if ((is_barrier || is_sr) && o_.lnc != 2)
          throw Outside(fmt::format("{}: '{}' needs two cores (--lnc 2; a fault when reached)",
                                    loc(eng, pc), d.mnemonic));
        if (!is_dma && !is_cc) regions(c, in, regs, unknown, tmp);
        // registers and branches
        auto rd = [&](int32_t v, bool unk) {
          int64_t r = in.ops[0].i;
          if (r < 0 || r >= kNumRegs) throw Outside("bad register");
          regs[r] = v;
          unknown = unk ? (unknown | (uint64_t(1) << r)) : (unknown & ~(uint64_t(1) << r));
        };
        auto target = [&](const Operand& t) {
          if (t.i < 0 || t.i > len)
            throw Outside(
                fmt::format("{}: branch target {} outside the stream", loc(eng, pc), t.i));
          return t.i;
        };
        auto cond_reg = [&](int64_t r) -> int32_t {
          if (r < 0 || r >= kNumRegs) throw Outside("bad register");
          if ((unknown >> r) & 1)
            throw Outside(fmt::format(
                "{}: '{}' on {} branches on r{}, which holds a value loaded from memory: the "
                "control flow depends on data",
                loc(eng, pc), d.mnemonic, core_name(c), r));
          return regs[r];
        };
        switch (in.op) {
        case Opcode::li: rd(int32_t(in.ops[1].i), false); break;
        case Opcode::add:
        case Opcode::sub:
        case Opcode::mul:
        case Opcode::shl:
        case Opcode::shr:
        case Opcode::and_:
        case Opcode::or_:
        case Opcode::min:
        case Opcode::max: {
          bool unk = false;
          Operand rs = in.ops[1];
          rs.is_reg = true;
          uint32_t a = uint32_t(reg_val(rs, unk)), b = uint32_t(reg_val(in.ops[2], unk));
          uint32_t v = 0;
          switch (in.op) {
          case Opcode::add: v = a + b; break;
          case Opcode::sub: v = a - b; break;
          case Opcode::mul: v = a * b; break;
          case Opcode::shl: v = a << (b & 31); break;
          case Opcode::shr: v = a >> (b & 31); break;
          case Opcode::and_: v = a & b; break;
          case Opcode::or_: v = a | b; break;
          case Opcode::min: v = uint32_t(std::min(int32_t(a), int32_t(b))); break;
          default: v = uint32_t(std::max(int32_t(a), int32_t(b))); break;
          }
          rd(int32_t(v), unk);
          break;
        }
        case Opcode::sysreg: {
          int32_t v = 0;
          switch (static_cast<SysReg>(in.ops[1].i)) {
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
          int32_t step = reg_val(in.ops[1], unk);
          int64_t g = in.ops[2].i;
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
                                      loc(eng, pc), rank));
          break;
        }
        case Opcode::ld: rd(0, true); break;
        case Opcode::br: next = target(in.ops[0]); break;
        case Opcode::bnz:
          if (cond_reg(in.ops[0].i) != 0) next = target(in.ops[1]);
          break;
        case Opcode::bz:
          if (cond_reg(in.ops[0].i) == 0) next = target(in.ops[1]);
          break;
        case Opcode::blt: {
          int32_t a = cond_reg(in.ops[0].i);
          int32_t b = in.ops[1].is_reg ? cond_reg(in.ops[1].i) : int32_t(in.ops[1].i);
          if (a < b) next = target(in.ops[2]);
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
          int64_t key = is_barrier ? e : in.ops[2].i;
          int kind = is_barrier ? 0 : 1;
          if (is_sr) {
            auto [it, fresh] = sr_engine.try_emplace({c, 1, key}, e);
            if (!fresh && it->second != e)
              throw Outside(fmt::format("{}: send_recv pipe {} is used by two engines of {}: "
                                        "which one meets the peer depends on the schedule",
                                        loc(eng, pc), key, core_name(c)));
          }
          int k = rdv_count[{c, int64_t(kind) * (int64_t(1) << 40) + key}]++;
          Party& p = rdv[{rank, kind, key, k}];
          if (p.join == UINT32_MAX) {
            Node j;
            j.kind = NK::join, j.core = c, j.eng = eng, j.pc = int32_t(pc), j.in = &in;
            p.join = add_node(j, kNoStream);
          }
          p.who.push_back({c, me});
          if (prev != UINT32_MAX) preds_[p.join].push_back(prev);
          preds_[me].push_back(p.join);
          if (is_sr) {
            for (Region& g : tmp) accs_.push_back({g, me});
          }
          for (const Wait& w : in.waits) waits_.push_back({p.join, me, c, w});
          prev = me;
        } else if (is_dma) {
          n.kind = NK::inst;
          uint32_t trig = add_node(n, st);
          if (prev != UINT32_MAX) preds_[trig].push_back(prev);
          for (const Wait& w : in.waits) waits_.push_back({trig, trig, c, w});
          int q = int(in.ops[0].i);
          uint32_t qs = stream(c, 1, e * 64 + q,
                               fmt::format("{} q{} (from {})", core_name(c), q, name_of(eng)));
          Node x = n;
          x.kind = NK::xfer, x.queue = int16_t(q), x.sigs = true;
          regions(c, in, regs, unknown, tmp);
          x.acc0 = uint32_t(accs_.size());
          uint32_t xn = add_node(x, qs);
          for (Region& g : tmp) accs_.push_back({g, xn});
          nodes_[xn].acc0 = uint32_t(accs_.size() - tmp.size());
          nodes_[xn].nacc = uint32_t(tmp.size());
          preds_[xn].push_back(trig);
          auto lk = last_xfer.find({e, q});
          if (lk != last_xfer.end()) preds_[xn].push_back(lk->second);
          last_xfer[{e, q}] = xn;
          prev = trig;
        } else if (is_cc) {
          uint32_t trig = add_node(n, st);
          if (prev != UINT32_MAX) preds_[trig].push_back(prev);
          for (const Wait& w : in.waits) waits_.push_back({trig, trig, c, w});
          int ch = in.op == Opcode::permute_implicit ? int(in.ops[3].i) : 0;
          if (ch < 0 || ch >= kNumCcChannels) throw Outside("bad collective channel (a fault)");
          std::vector<int> members;
          int64_t g = in.ops[2].i;
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
                                      loc(eng, pc), rank, grp.name));
          for (int& r : members) {
            if (r >= o_.ranks)
              throw Outside(fmt::format("{}: replica group '{}' names rank {} but there are {} "
                                        "ranks (a fault)",
                                        loc(eng, pc), grp.name, r, o_.ranks));
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
          uint32_t cs = stream(c, 2, ch, fmt::format("{} cc ch{}", core_name(c), ch));
          Node done = n;
          done.kind = NK::ccdone, done.queue = int16_t(kNumDmaQueues + ch), done.sigs = true;
          uint32_t dn = add_node(done, cs);
          // the previous transfer on this channel of this core precedes the join
          auto lc = last_cc.find(ch);
          if (lc != last_cc.end()) preds_[p.join].push_back(lc->second);
          last_cc[ch] = dn;
          preds_[p.join].push_back(trig);
          preds_[dn].push_back(p.join);
          p.who.push_back({c, dn});
          regions(c, in, regs, unknown, tmp);
          for (Region& g2 : tmp) accs_.push_back({g2, dn});
          prev = trig;
        } else {
          n.kind = NK::inst;
          n.sigs = in.op != Opcode::sem_set;
          n.set = in.op == Opcode::sem_set;
          uint32_t me = add_node(n, st);
          if (prev != UINT32_MAX) preds_[me].push_back(prev);
          nodes_[me].acc0 = uint32_t(accs_.size());
          nodes_[me].nacc = uint32_t(tmp.size());
          for (Region& g : tmp) accs_.push_back({g, me});
          for (const Wait& w : in.waits) waits_.push_back({me, me, c, w});
          prev = me;
        }
        pc = next;
      }
    }
  }
  // Joins: participants, completeness, accesses (collectives and send_recv move data at the
  // join: their accesses are gathered on it).
  auto finish = [&](Party& p, const std::vector<int>& members) {
    Node& j = nodes_[p.join];
    j.anc0 = uint32_t(anchors_.size());
    for (auto& [c, w] : p.who) anchors_.push_back({nodes_[w].stream, nodes_[w].pos});
    j.nanc = uint32_t(p.who.size());
    for (int mc : members) {
      bool found = false;
      for (auto& [c, w] : p.who) found |= c == mc;
      if (!found) {
        j.incomplete = true;
        j.missing += (j.missing.empty() ? "" : ", ") + core_name(mc);
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
  std::vector<std::vector<Acc>> at(nodes_.size());
  std::vector<Acc> keep;
  std::vector<uint32_t> join_of(nodes_.size(), UINT32_MAX);
  for (auto& [key, p] : rdv)
    for (auto& [c, w] : p.who) join_of[w] = p.join;
  for (auto& [key, p] : ccp)
    for (auto& [c, w] : p.who) join_of[w] = p.join;
  for (const Acc& a : accs_) {
    uint32_t holder = join_of[a.who] != UINT32_MAX ? join_of[a.who] : a.who;
    at[holder].push_back(a);
  }
  accs_.clear();
  for (size_t i = 0; i < nodes_.size(); ++i) {
    nodes_[i].acc0 = uint32_t(accs_.size());
    nodes_[i].nacc = uint32_t(at[i].size());
    accs_.insert(accs_.end(), at[i].begin(), at[i].end());
  }
  // Semaphore histories.
  for (uint32_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    if (!n.in) continue;
    if (n.set) {
      int64_t s = n.in->ops[0].i;
      if (s < 0 || size_t(s) >= nsems) throw Outside("sem_set of an undeclared semaphore");
      sems_[size_t(n.core) * nsems + size_t(s)].sets.push_back({i, uint32_t(n.in->ops[1].i)});
    }
    if (!n.sigs || n.kind == NK::join) continue;
    // A DMA trigger or collective trigger carries no signal: its transfer / completion does.
    if (n.kind == NK::inst &&
        (n.in->op == Opcode::dma || n.in->op == Opcode::dma_transpose ||
         n.in->op == Opcode::dma_compute || desc(n.in->op).cost == CostClass::cc))
      continue;
    for (const Signal& s : n.in->signals) {
      if (s.sem >= nsems) throw Outside("signal of an undeclared semaphore (a fault)");
      SemInfo& si = sems_[size_t(n.core) * nsems + s.sem];
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
  for (const WaitRec& w : waits_)
    if (w.w.sem >= nsems) throw Outside("wait on an undeclared semaphore (a fault)");
  S_ = uint32_t(stream_len_.size());
  if (uint64_t(nodes_.size()) * S_ * 4 > o_.max_vc_bytes)
    throw Outside(fmt::format("{} nodes x {} streams of vector clocks exceed {} bytes",
                              nodes_.size(), S_, o_.max_vc_bytes));
  best_.assign(waits_.size(), {});
  for (size_t i = 0; i < waits_.size(); ++i) {
    const SemInfo& si = sems_[size_t(waits_[i].core) * nsems + waits_[i].w.sem];
    best_[i].assign(si.lists.size(), 0);
  }
}

// ---- happens-before ----------------------------------------------------------------------------

bool Checker::topo_and_clocks() {
  const size_t N = nodes_.size();
  std::vector<std::vector<uint32_t>> extra(N);
  const size_t nsems = m_.sems.size();
  for (size_t i = 0; i < waits_.size(); ++i) {
    const SemInfo& si = sems_[size_t(waits_[i].core) * nsems + waits_[i].w.sem];
    for (size_t k = 0; k < best_[i].size(); ++k)
      if (best_[i][k]) extra[waits_[i].site].push_back(si.lists[k].nodes[best_[i][k] - 1]);
  }
  std::vector<uint32_t> indeg(N, 0);
  std::vector<std::vector<uint32_t>> succ(N);
  for (size_t i = 0; i < N; ++i) {
    for (uint32_t p : preds_[i]) succ[p].push_back(uint32_t(i));
    for (uint32_t p : extra[i]) succ[p].push_back(uint32_t(i));
    indeg[i] = uint32_t(preds_[i].size() + extra[i].size());
  }
  topo_.clear();
  topo_.reserve(N);
  for (size_t i = 0; i < N; ++i)
    if (!indeg[i]) topo_.push_back(uint32_t(i));
  vc_.assign(N * S_, 0);
  for (size_t h = 0; h < topo_.size(); ++h) {
    uint32_t n = topo_[h];
    uint32_t* v = &vc_[size_t(n) * S_];
    auto join = [&](uint32_t p) {
      const uint32_t* u = &vc_[size_t(p) * S_];
      for (uint32_t s = 0; s < S_; ++s) v[s] = std::max(v[s], u[s]);
    };
    for (uint32_t p : preds_[n]) join(p);
    for (uint32_t p : extra[n]) join(p);
    if (nodes_[n].stream != kNoStream) v[nodes_[n].stream] = nodes_[n].pos;
    for (uint32_t s : succ[n])
      if (--indeg[s] == 0) topo_.push_back(s);
  }
  cycle_ = topo_.size() != N;
  return !cycle_;
}

uint64_t Checker::max_count(const SemInfo& si, uint32_t site, const std::vector<Anchor>& sa,
                            const Anchor* x) const {
  // per list: how many signals may have completed (not after the site, not after x)
  uint64_t best = 0;
  std::vector<size_t> cut(si.lists.size());
  for (size_t k = 0; k < si.lists.size(); ++k) {
    const SigList& l = si.lists[k];
    auto first_after = [&](auto pred) {
      size_t lo = 0, hi = l.nodes.size();
      while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (pred(l.nodes[mid]))
          hi = mid;
        else
          lo = mid + 1;
      }
      return lo;
    };
    size_t c = first_after([&](uint32_t n) { return after(n, sa.data(), uint32_t(sa.size())); });
    if (x) c = std::min(c, first_after([&](uint32_t n) { return after(n, x, 1); }));
    cut[k] = c;
  }
  const uint32_t* sv = &vc_[size_t(site) * S_];
  bool init_ok = true;
  for (const SetRec& L : si.sets)
    if (sv[nodes_[L.node].stream] >= nodes_[L.node].pos) init_ok = false;
  if (init_ok) {
    uint64_t v = si.init;
    for (size_t k = 0; k < si.lists.size(); ++k) v += si.lists[k].prefix[cut[k]];
    best = std::max(best, v);
  }
  for (const SetRec& L : si.sets) {
    if (after(L.node, sa.data(), uint32_t(sa.size()))) continue;
    if (x && after(L.node, x, 1)) continue;
    const uint32_t* lv = &vc_[size_t(L.node) * S_];
    uint64_t v = L.value;
    for (size_t k = 0; k < si.lists.size(); ++k) {
      const SigList& l = si.lists[k];
      size_t low =
          size_t(std::upper_bound(l.pos.begin(), l.pos.end(), lv[l.stream]) - l.pos.begin());
      if (cut[k] > low) v += l.prefix[cut[k]] - l.prefix[low];
    }
    best = std::max(best, v);
  }
  return best;
}

bool Checker::derive_edges() {
  bool changed = false;
  const size_t nsems = m_.sems.size();
  std::vector<Anchor> sa;
  for (size_t i = 0; i < waits_.size(); ++i) {
    const WaitRec& w = waits_[i];
    const SemInfo& si = sems_[size_t(w.core) * nsems + w.w.sem];
    if (si.lists.empty() || w.w.value == 0) continue;
    site_anchors(w.site, sa);
    for (size_t k = 0; k < si.lists.size(); ++k) {
      const SigList& l = si.lists[k];
      // largest j (0-based) with max_count(without signal j) < value; monotone in j
      size_t lo = best_[i][k], hi = l.nodes.size(); // candidates j in [lo, hi)
      // find the first j in [lo, hi) whose count reaches the value
      size_t a = lo, b = hi;
      while (a < b) {
        size_t mid = (a + b) / 2;
        Anchor x{l.stream, l.pos[mid]};
        if (max_count(si, w.site, sa, &x) >= w.w.value)
          b = mid;
        else
          a = mid + 1;
      }
      // signals [0, a) are each necessary: the latest is a - 1
      if (a > best_[i][k]) {
        best_[i][k] = uint32_t(a);
        changed = true;
      }
    }
  }
  return changed;
}

// ---- checks ------------------------------------------------------------------------------------

void Checker::simulate(CheckResult& r) {
  // One schedule: every node as soon as its predecessors are done and its waits hold. With
  // counts that only grow (checked: every sem_set is ordered with the signals and waits of its
  // semaphore, every == wait cannot be overtaken), a schedule that completes shows that every
  // schedule completes (docs/check.md).
  const size_t N = nodes_.size();
  const size_t nsems = m_.sems.size();
  std::vector<std::vector<uint32_t>> succ(N), site_waits(N);
  std::vector<uint32_t> left(N);
  for (size_t i = 0; i < N; ++i) {
    for (uint32_t p : preds_[i]) succ[p].push_back(uint32_t(i));
    left[i] = uint32_t(preds_[i].size()) + (nodes_[i].incomplete ? 1 : 0);
  }
  for (size_t i = 0; i < waits_.size(); ++i) site_waits[waits_[i].site].push_back(uint32_t(i));
  std::vector<uint64_t> val(size_t(ncores_) * nsems);
  for (int c = 0; c < ncores_; ++c)
    for (size_t s = 0; s < nsems; ++s) val[size_t(c) * nsems + s] = m_.sems[s].init;
  std::vector<std::vector<uint32_t>> blocked(val.size());
  std::vector<uint8_t> done(N, 0);
  std::vector<uint32_t> q;
  for (size_t i = 0; i < N; ++i)
    if (!left[i]) q.push_back(uint32_t(i));
  auto holds = [&](uint32_t n, uint32_t* bad) {
    for (uint32_t wi : site_waits[n]) {
      const WaitRec& w = waits_[wi];
      uint64_t v = val[size_t(w.core) * nsems + w.w.sem];
      if (w.w.cmp == WaitCmp::ge ? v < w.w.value : v != w.w.value) {
        if (bad) *bad = wi;
        return false;
      }
    }
    return true;
  };
  while (!q.empty()) {
    uint32_t n = q.back();
    q.pop_back();
    if (done[n]) continue;
    uint32_t bad = 0;
    if (!holds(n, &bad)) {
      const WaitRec& w = waits_[bad];
      blocked[size_t(w.core) * nsems + w.w.sem].push_back(n);
      continue;
    }
    done[n] = 1;
    const Node& x = nodes_[n];
    auto changed = [&](size_t key) {
      for (uint32_t b : blocked[key]) q.push_back(b);
      blocked[key].clear();
    };
    if (x.in && x.set) {
      size_t key = size_t(x.core) * nsems + size_t(x.in->ops[0].i);
      val[key] = uint32_t(x.in->ops[1].i);
      changed(key);
    }
    if (x.in && x.sigs && x.kind != NK::join &&
        !(x.kind == NK::inst &&
          (x.in->op == Opcode::dma || x.in->op == Opcode::dma_transpose ||
           x.in->op == Opcode::dma_compute || desc(x.in->op).cost == CostClass::cc)))
      for (const Signal& s : x.in->signals) {
        size_t key = size_t(x.core) * nsems + s.sem;
        val[key] += s.delta;
        changed(key);
      }
    for (uint32_t s : succ[n])
      if (--left[s] == 0) q.push_back(s);
  }
  // Report the first stuck node of every stream (and incomplete joins).
  std::set<uint32_t> seen_stream;
  for (uint32_t n = 0; n < N; ++n) {
    if (done[n]) continue;
    const Node& x = nodes_[n];
    if (x.kind == NK::join) {
      if (!x.incomplete) continue;
      r.deadlocks.push_back(
          fmt::format("{}: '{}' on {} {} waits for {}, which never reach{} the matching one",
                      loc_of(n), desc(x.in->op).mnemonic, core_name(x.core), name_of(x.eng),
                      x.missing, x.missing.find(',') == std::string::npos ? "es" : ""));
      continue;
    }
    if (x.stream == kNoStream || seen_stream.count(x.stream)) continue;
    seen_stream.insert(x.stream);
    // only the first undone node of a stream whose predecessors are done is interesting
    bool preds_done = true;
    for (uint32_t p : preds_[n]) preds_done &= done[p] || nodes_[p].kind == NK::join;
    if (!preds_done) continue;
    std::string why;
    for (uint32_t wi : site_waits[n]) {
      const WaitRec& w = waits_[wi];
      uint64_t v = val[size_t(w.core) * nsems + w.w.sem];
      if (w.w.cmp == WaitCmp::ge ? v < w.w.value : v != w.w.value) {
        why =
            fmt::format("waits for {} {} {}, but the count reaches only {} once every other "
                        "engine is stuck",
                        m_.sems[w.w.sem].name, w.w.cmp == WaitCmp::ge ? ">=" : "==", w.w.value, v);
        break;
      }
    }
    if (why.empty()) continue;
    r.deadlocks.push_back(fmt::format("{}: {} {}", loc_of(n), stream_name_[x.stream], why));
  }
  if (r.deadlocks.empty() && std::count(done.begin(), done.end(), 0) > 0)
    r.deadlocks.push_back("some instructions never complete");
}

void Checker::check_sets(CheckResult& r) {
  const size_t nsems = m_.sems.size();
  auto ordered = [&](uint32_t a, uint32_t b) {
    Anchor aa{nodes_[a].stream, nodes_[a].pos}, bb{nodes_[b].stream, nodes_[b].pos};
    return after(b, &aa, 1) || after(a, &bb, 1);
  };
  for (size_t key = 0; key < sems_.size(); ++key) {
    const SemInfo& si = sems_[key];
    for (const SetRec& L : si.sets) {
      auto report = [&](uint32_t other, const char* what) {
        CheckPair p;
        p.a_loc = loc_of(L.node), p.b_loc = loc_of(other);
        p.a_who = who_of(L.node), p.b_who = who_of(other);
        p.a_write = p.b_write = true;
        p.region = fmt::format("semaphore {} ({} of the sem_set)", m_.sems[key % nsems].name, what);
        p.suggestion = "order the sem_set before or after it (the count it sees would depend on "
                       "the schedule)";
        r.pairs.push_back(p);
      };
      for (const SigList& l : si.lists)
        for (uint32_t n : l.nodes)
          if (!ordered(L.node, n)) {
            report(n, "a signal unordered with");
            goto next_set;
          }
      for (const SetRec& L2 : si.sets)
        if (L2.node != L.node && !ordered(L.node, L2.node)) {
          report(L2.node, "another sem_set unordered with");
          goto next_set;
        }
      for (const WaitRec& w : waits_)
        if (size_t(w.core) * nsems + w.w.sem == key) {
          std::vector<Anchor> sa;
          site_anchors(w.site, sa);
          Anchor la{nodes_[L.node].stream, nodes_[L.node].pos};
          if (!after(L.node, sa.data(), uint32_t(sa.size())) && !after(w.site, &la, 1)) {
            report(w.inst, "a wait unordered with");
            goto next_set;
          }
        }
    next_set:;
    }
  }
}

void Checker::check_eq_waits(CheckResult& r) {
  const size_t nsems = m_.sems.size();
  std::vector<Anchor> sa;
  for (const WaitRec& w : waits_) {
    if (w.w.cmp != WaitCmp::eq) continue;
    const SemInfo& si = sems_[size_t(w.core) * nsems + w.w.sem];
    site_anchors(w.site, sa);
    uint64_t mx = max_count(si, w.site, sa, nullptr);
    if (mx > w.w.value)
      r.deadlocks.push_back(fmt::format(
          "{}: {} waits for {} == {}, but signals not ordered after it can bring the count to "
          "{}: in some schedule it passes {} and the wait never holds",
          loc_of(w.inst), who_of(w.inst), m_.sems[w.w.sem].name, w.w.value, mx, w.w.value));
  }
}

std::string Checker::region_text(const Region& g) const {
  std::string s;
  if (g.kind == MemKind::hbm) {
    s = fmt::format("hbm{} bytes [{:#x}, {:#x})",
                    o_.ranks > 1 ? fmt::format(" rank {}", g.unit) : "", g.b0, g.b1);
  } else {
    std::string who = ncores_ > 1 ? " " + core_name(g.unit) : "";
    s = fmt::format("{}{} partitions {}..{} bytes [{:#x}, {:#x})",
                    g.kind == MemKind::sbuf ? "sbuf" : "psum", who, g.p0, g.p1 - 1, g.b0, g.b1);
  }
  return s + tensors_in(m_, g);
}

std::string Checker::suggest(uint32_t a, uint32_t b) const {
  // a: the earlier access's node (may be a join), b: the later one. The wait goes on the
  // instruction that issues b (its trigger for a transfer), on a signal of a.
  const size_t nsems = m_.sems.size();
  std::vector<uint32_t> from;
  const Node& an = nodes_[a];
  if (an.kind == NK::join)
    for (uint32_t i = 0; i < an.nanc; ++i) {
      const Anchor& x = anchors_[an.anc0 + i];
      for (uint32_t n = 0; n < nodes_.size(); ++n)
        if (nodes_[n].stream == x.stream && nodes_[n].pos == x.pos) from.push_back(n);
    }
  else
    from.push_back(a);
  const Node& bn = nodes_[b];
  uint32_t site = b;
  std::string where = loc_of(b);
  if (bn.kind == NK::xfer)
    for (uint32_t p : preds_[b])
      if (nodes_[p].stream != bn.stream) site = p; // the trigger
  if (bn.kind == NK::join) site = b;
  for (uint32_t f : from) {
    const Node& fn = nodes_[f];
    if (fn.core != bn.core || !fn.in) continue;
    if (fn.in->signals.empty()) continue;
    const Signal& s = fn.in->signals[0];
    const SemInfo& si = sems_[size_t(fn.core) * nsems + s.sem];
    std::vector<Anchor> sa;
    site_anchors(site, sa);
    Anchor x{fn.stream, fn.pos};
    uint64_t mx = max_count(si, site, sa, &x);
    return fmt::format("add @wait({} >= {}) to {} (the count {} cannot reach before {} "
                       "completes)",
                       m_.sems[s.sem].name, mx + 1, where, m_.sems[s.sem].name, loc_of(f));
  }
  for (uint32_t f : from)
    if (nodes_[f].core != bn.core)
      return fmt::format("they run on different cores: order them with a core_barrier, a "
                         "send_recv or a collective between {} and {}",
                         loc_of(f), where);
  return fmt::format("add a @signal(s) to {} and a @wait on it to {}", loc_of(from[0]), where);
}

void Checker::races(CheckResult& r) {
  struct Rec {
    Region g;
    uint32_t node; // where the access happens (for clocks)
    uint32_t who;  // the instruction (for reports)
  };
  // Records by start offset, and the longest one, so that the records overlapping [b0, b1)
  // are keyed in [b0 - longest, b1); records longer than kLong (hulls of dynamic accesses)
  // are kept apart so that they do not widen every search.
  static constexpr uint64_t kLong = uint64_t(1) << 16;
  struct Mem {
    std::multimap<uint64_t, Rec> recs;
    uint64_t longest = 0;
    std::vector<Rec> long_recs;
  };
  std::map<std::pair<int, int>, Mem> mems;
  std::set<std::pair<uint32_t, uint32_t>> seen;
  std::set<std::string> seen_inst;
  std::vector<Anchor> origin;
  auto ordered_before = [&](const Rec& x, uint32_t node) {
    const Node& xn = nodes_[x.node];
    if (xn.stream != kNoStream && xn.nanc == 0) return vc_[size_t(node) * S_ + xn.stream] >= xn.pos;
    site_anchors(x.node, origin);
    return after(node, origin.data(), uint32_t(origin.size()));
  };
  for (uint32_t n : topo_) {
    const Node& nd = nodes_[n];
    for (uint32_t ai = nd.acc0; ai < nd.acc0 + nd.nacc; ++ai) {
      const Acc& a = accs_[ai];
      Mem& m = mems[{int(a.r.kind), int(a.r.unit)}];
      uint64_t start = a.r.b0 > m.longest ? a.r.b0 - m.longest : 0;
      auto visit = [&](Rec& x) -> bool { // true: x is superseded by this access
        if (!x.g.overlaps(a.r) || x.node == n) return false;
        const bool ord = ordered_before(x, n);
        if (!ord && (x.g.write || a.r.write)) {
          if (seen.insert({x.who, a.who}).second &&
              seen_inst.insert(loc_of(x.who) + who_of(x.who) + "|" + loc_of(a.who) + who_of(a.who))
                  .second) {
            // Report in source order: the earlier line is taken as the producer, the wait
            // suggested goes on the later one.
            uint32_t ua = x.who, ub = a.who, na = x.node, nb = n;
            bool wa = x.g.write, wb = a.r.write;
            if (src_key(ub) < src_key(ua)) std::swap(ua, ub), std::swap(na, nb), std::swap(wa, wb);
            CheckPair p;
            p.a_loc = loc_of(ua), p.b_loc = loc_of(ub);
            p.a_who = who_of(ua), p.b_who = who_of(ub);
            p.a_write = wa, p.b_write = wb;
            p.region = region_text(x.g.intersect(a.r));
            if (r.pairs.size() < o_.max_reports) p.suggestion = suggest(na, nb);
            r.pairs.push_back(std::move(p));
          }
        }
        // Superseded: an ordered earlier access wholly covered by this write (or a read by
        // a read) can go: any later access unordered with it is unordered with this one.
        return ord && a.r.covers(x.g) && (a.r.write || !x.g.write);
      };
      for (auto it = m.recs.lower_bound(start); it != m.recs.end() && it->first < a.r.b1;)
        it = visit(it->second) ? m.recs.erase(it) : std::next(it);
      for (size_t i = 0; i < m.long_recs.size();)
        if (visit(m.long_recs[i])) {
          m.long_recs[i] = m.long_recs.back();
          m.long_recs.pop_back();
        } else {
          ++i;
        }
      if (a.r.b1 - a.r.b0 > kLong) {
        m.long_recs.push_back(Rec{a.r, n, a.who});
      } else {
        m.recs.emplace(a.r.b0, Rec{a.r, n, a.who});
        m.longest = std::max(m.longest, a.r.b1 - a.r.b0);
      }
    }
  }
}

CheckResult Checker::run() {
  CheckResult r;
  try {
    build();
    r.instructions = insts_;
    r.nodes = nodes_.size();
    r.streams = S_;
    bool ok = true;
    for (;;) {
      ++r.iterations;
      ok = topo_and_clocks();
      if (!ok) break;
      if (!derive_edges()) break;
    }
    for (const auto& b : best_)
      for (uint32_t v : b) r.sem_edges += v ? 1 : 0;
    if (!ok) {
      // a cycle of necessary orders: none of its nodes can ever run
      std::vector<uint8_t> in(nodes_.size(), 0);
      for (uint32_t n : topo_) in[n] = 1;
      std::set<uint32_t> streams;
      for (uint32_t n = 0; n < nodes_.size(); ++n)
        if (!in[n] && nodes_[n].stream != kNoStream && streams.insert(nodes_[n].stream).second)
          r.deadlocks.push_back(fmt::format("{}: {} can never issue (a cycle of waits: each "
                                            "needs a signal that comes only after it)",
                                            loc_of(n), stream_name_[nodes_[n].stream]));
    } else {
      check_sets(r);
      check_eq_waits(r);
      simulate(r);
      races(r);
    }
  } catch (const Outside& e) {
    r.outside = e.what();
  }
  std::ostringstream os;
  if (!r.outside.empty()) {
    r.status = CheckStatus::outside;
    r.exit_code = kExitCheckOutside;
    os << "outside what is proved: " << r.outside << "\n";
    r.report = os.str();
    return r;
  }
  size_t shown = 0;
  for (const CheckPair& p : r.pairs) {
    if (shown++ >= o_.max_reports) break;
    os << fmt::format("unordered: {} {} ({}) and {} {} ({}) on {}\n", p.a_loc,
                      p.a_write ? "writes" : "reads", p.a_who, p.b_loc,
                      p.b_write ? "writes" : "reads", p.b_who, p.region);
    os << "  to order them: " << p.suggestion << "\n";
  }
  if (r.pairs.size() > shown) os << fmt::format("... and {} more pairs\n", r.pairs.size() - shown);
  for (const std::string& d : r.deadlocks) os << "deadlock: " << d << "\n";
  const std::string stats =
      fmt::format("{} instructions unrolled on {} core{}, {} nodes, {} streams, {} semaphore "
                  "orders, {} rounds",
                  r.instructions, ncores_, ncores_ > 1 ? "s" : "", r.nodes, r.streams, r.sem_edges,
                  r.iterations);
  if (!r.deadlocks.empty()) {
    r.status = CheckStatus::deadlock;
    r.exit_code = 2;
  } else if (!r.pairs.empty()) {
    r.status = CheckStatus::races;
    r.exit_code = 4;
  }
  if (r.status == CheckStatus::proved)
    os << "proved: every conflicting access is ordered and no schedule deadlocks (" << stats
       << ")\n";
  else
    os << fmt::format("not proved: {} unordered pair{}, {} deadlock report{} ({})\n",
                      r.pairs.size(), r.pairs.size() == 1 ? "" : "s", r.deadlocks.size(),
                      r.deadlocks.size() == 1 ? "" : "s", stats);
  r.report = os.str();
  return r;
}

} // namespace

CheckResult check_module(const Module& mod, const CheckOptions& opt) {
  Checker c(mod, opt);
  return c.run();
}

} // namespace nisa::interp
