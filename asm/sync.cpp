// Sync clauses, AUTOSYNC, and the lowering of @after edges to semaphores.
#include "asm/sync.h"

#include <fmt/format.h>

#include <algorithm>

#include "asm/assembler_util.h"
#include "asm/eval.h"
#include "asm/labels.h"
#include "asm/reporter.h"
#include "asm/symbols.h"
#include "isa/encode.h"
#include "isa/exec_kind.h"
#include "isa/limits.h"

namespace nisa::nasm {
using namespace detail;

// The word after '@': read straight from the source when it is one of the clause names
// followed by '(' (what the lexer would return), else through the lexer.
std::string_view SyncLowering::sync_kind(uint32_t tok) const {
  const std::string_view src = src_.file().src;
  auto is = [&](std::string_view w) {
    return src.size() > tok + w.size() && src.compare(tok, w.size(), w) == 0 &&
           src[tok + w.size()] == '(';
  };
  switch (tok < src.size() ? src[tok] : '\0') { // the candidates of the first letter only
  case 'w':
    if (is("wait")) return src.substr(tok, 4);
    break;
  case 's':
    if (is("signal")) return src.substr(tok, 6);
    break;
  case 'a':
    if (is("after")) return src.substr(tok, 5);
    if (is("after_opt")) return src.substr(tok, 9);
    break;
  default: break;
  }
  return src_.text(tok);
}

void SyncLowering::parse(const Sync& s, Inst& in) {
  static constexpr std::string_view kKinds[] = {"wait", "signal", "after", "after_opt"};
  const auto& syncs = src_.file().syncs;
  if (src_.cur_unit() != rows_unit_ || !kinds_cur_) {
    rows_unit_ = src_.cur_unit();
    kinds_cur_ = kinds_.row(rows_unit_, syncs.size());
    sem_cur_ = sem_info_.row(rows_unit_, src_.file().items.size());
  }
  uint8_t& known = kinds_cur_[&s - syncs.data()];
  if (!known) {
    const std::string_view kind = sync_kind(s.kind);
    const auto* k = std::find(std::begin(kKinds), std::end(kKinds), kind);
    if (k == std::end(kKinds))
      fail(src_.loc(s.tok),
           fmt::format("unknown sync clause '@{}'{}", kind,
                       did_you_mean("@" + std::string(kind),
                                    {"@wait", "@signal", "@after", "@after_opt"})));
    known = static_cast<uint8_t>(1 + (k - std::begin(kKinds)));
  }
  const std::string_view kind = kKinds[known - 1];
  if (known >= 3) { // after, after_opt
    // @after(L, ...): wait for the latest instruction assembled at label L (for `.Lname`, the
    // latest expansion that defined it: the previous .for iteration's, before this
    // iteration's own). @after_opt: no wait when L has no instruction yet (a first iteration).
    for (uint32_t k = 0; k < s.nitems; ++k) {
      const Item& a = src_.file().items[s.items + k];
      const Node& np = src_.node(a.lhs);
      if (a.rhs != kNone || np.kind != NodeKind::Name)
        fail(src_.loc(a.tok), fmt::format("@{} takes label names", kind));
      const std::string_view name = src_.file().text(np);
      const LabelDef* l = labels_.latest(name);
      if (!l || l->first_engine < 0) {
        if (known == 4) continue; // after_opt
        fail(src_.loc(a.tok),
             !l ? fmt::format("@after: no label '{}' before this instruction (the producer must "
                              "come earlier in the listing; @after_opt allows none){}",
                              name, did_you_mean(name, labels_.keys()))
                : fmt::format("@after: no instruction follows label '{}' yet", name));
      }
      pending_afters_.push_back(
          AfterEdge{in.engine, 0, Engine(l->first_engine), l->first_index, src_.loc(a.tok)});
    }
    return;
  }
  // The usual case: the item's semaphore Name node seen before, naming a semaphore directly (no
  // variable of its name visible now); else sem_of.
  auto sem_fast = [&](uint32_t item, uint32_t e, uint16_t& sem) {
    const Symbols::NodeInfo* info = sem_cur_[item];
    if (!info || info->sem < 0 || sym_.lookup_info(*info, e)) return false;
    sem = static_cast<uint16_t>(info->sem);
    return true;
  };
  auto sem_of = [&](uint32_t e) {
    const Node& np = src_.node(e);
    if (np.kind != NodeKind::Name) src_.fail_at(e, "expected a semaphore name");
    const std::string_view n = src_.file().text(np);
    const Symbols::NodeInfo* info = sym_.node_info(e, n);
    const Var* v = sym_.lookup_info(*info, e);
    if (!v) // the semaphore named directly
      return info->sem >= 0 ? static_cast<uint16_t>(info->sem) : sym_.sem_index_node(e, n);
    return sym_.sem_index(v->v.kind == Value::Name ? std::string_view(v->v.s) : n, e);
  };
  // At most one allocation for the clause's conditions or signals (none within the inline
  // capacity); capacity only: the same bytes.
  auto& waits = in.waits;
  auto& signals = in.signals;
  if (known == 2) // signal
    signals.reserve(std::min<size_t>(signals.size() + s.nitems, kMaxSignals));
  else
    waits.reserve(std::min<size_t>(waits.size() + s.nitems, kMaxWaits));
  for (uint32_t k = 0; k < s.nitems; ++k) {
    const uint32_t item = s.items + k;
    const Item& a = src_.file().items[item];
    if (known == 2) { // signal
      Signal sig;
      if (!sem_fast(item, a.lhs, sig.sem)) {
        sig.sem = sem_of(a.lhs);
        sem_cur_[item] = sym_.node_info(a.lhs, src_.file().text(src_.node(a.lhs)));
      }
      if (a.rhs != kNone) {
        int64_t dv = ev_.eval_int(a.rhs, "signal increment");
        if (dv < 0 || dv > UINT32_MAX) src_.fail_at(a.rhs, "signal increment must fit in 32 bits");
        sig.delta = static_cast<uint32_t>(dv);
      }
      if (in.signals.size() >= kMaxSignals)
        fail(src_.loc(a.tok), fmt::format("at most {} signals", kMaxSignals));
      in.signals.push_back(sig);
      continue;
    }
    const Node* b = a.rhs == kNone ? &src_.node(a.lhs) : nullptr;
    if (!b || b->kind != NodeKind::Binary || (b->op != Tok::Ge && b->op != Tok::EqEq))
      fail(src_.loc(a.tok), "@wait takes conditions 'sem >= value' or 'sem == value'");
    Wait w;
    if (!sem_fast(item, b->a, w.sem)) {
      w.sem = sem_of(b->a);
      sem_cur_[item] = sym_.node_info(b->a, src_.file().text(src_.node(b->a)));
    }
    w.cmp = b->op == Tok::Ge ? WaitCmp::ge : WaitCmp::eq;
    int64_t val = ev_.eval_int(b->b, "wait value");
    if (val < 0 || val > UINT32_MAX)
      src_.fail_at(b->b, fmt::format("wait value {} must be in [0, 2^32)", val));
    w.value = static_cast<uint32_t>(val);
    if (in.waits.size() >= kMaxWaits)
      fail(src_.loc(a.tok), fmt::format("at most {} waits", kMaxWaits));
    in.waits.push_back(w);
  }
}

void SyncLowering::commit(Engine e, uint32_t index) {
  for (AfterEdge a : pending_afters_) {
    a.consumer = e, a.consumer_index = index;
    afters_.push_back(a);
  }
  pending_afters_.clear();
}

namespace {

__extension__ typedef __int128 i128;

// The bytes an access pattern may touch: one rectangle (partitions x byte hull) on chip, one
// byte hull in HBM; dynamic offsets take every value in [0, limit).
bool extent_of(const AccessPattern& ap, bool write, std::vector<SyncExtent>& out) {
  if (ap.space == MemSpace::none || ap.ndims < 1 || ap.ndims > kMaxFreeDims) return false;
  const i128 eb = dtype_bytes(ap.dtype);
  const ApSpan span = ap_free_span(ap);
  i128 lo = span.lo, hi = span.hi;
  bool unbounded = false;
  if (ap.dyn != DynKind::none) {
    if (ap.dyn_limit == 0) unbounded = true;
    const i128 d = i128(ap.dyn_limit ? ap.dyn_limit - 1 : 0) * ap.dyn_mult;
    (d < 0 ? lo : hi) += d;
    if (ap.dyn == DynKind::vec)
      out.push_back({MemSpace::sbuf, ap.vidx.part_start,
                     uint32_t(ap.vidx.part_start) + ap.part_count, ap.vidx.offset,
                     uint64_t(ap.vidx.offset) + dtype_bytes(ap.vidx.dtype), false});
  }
  if (ap.space == MemSpace::hbm && ap.part_count > 1) {
    const i128 pr = i128(ap.part_stride) * (ap.part_count - 1);
    (pr < 0 ? lo : hi) += pr;
  }
  auto clampu = [](i128 v) -> uint64_t {
    return v < 0 ? 0 : v > i128(INT64_MAX) ? uint64_t(INT64_MAX) : uint64_t(v);
  };
  SyncExtent x{ap.space, 0, 1, 0, uint64_t(INT64_MAX), write};
  if (ap.space != MemSpace::hbm)
    x.p0 = ap.part_start, x.p1 = uint32_t(ap.part_start) + ap.part_count;
  if (!unbounded)
    x.b0 = clampu(i128(ap.offset) + lo * eb), x.b1 = clampu(i128(ap.offset) + (hi + 1) * eb);
  out.push_back(x);
  return true;
}

bool conflict(const std::vector<SyncExtent>& a, const std::vector<SyncExtent>& b) {
  for (const auto& x : a)
    for (const auto& y : b)
      if ((x.write || y.write) && x.space == y.space && x.p0 < y.p1 && y.p0 < x.p1 && x.b0 < y.b1 &&
          y.b0 < x.b1)
        return true;
  return false;
}

} // namespace

void SyncLowering::autosync(Engine e, uint32_t index, Loc at) {
  const Inst& in = mod_.streams[int(e)][index];
  AutoRec rec{e, index, {}};
  for_each_mem_operand(in, [&](const OperandDesc&, const Operand& o, bool is_write) {
    extent_of(o.ap, is_write, rec.ext);
  });
  if (rec.ext.empty()) return;
  // This instruction's stream (as lower_afters keys producers).
  std::tuple<int, int, int> mine{int(e), 0, 0};
  if (is_async_dma(in)) mine = {int(e), 1, int(dma_queue(in))};
  if (exec_kind(in) == ExecKind::collective) mine = {int(e), 2, int(cc_channel(in))};
  for (auto& [key, recs] : auto_recs_) {
    // The same stream is ordered already (program order; one engine's transfers of one queue
    // complete in order), except a plain instruction after its engine's DMA or collective.
    if (key == mine) continue;
    for (size_t j = recs.size(); j-- > 0;)
      if (conflict(recs[j].ext, rec.ext)) {
        afters_.push_back(AfterEdge{e, index, recs[j].engine, recs[j].index, at});
        break; // the latest is enough: that stream's earlier ones complete before it
      }
  }
  auto_recs_[mine].push_back(std::move(rec));
}

// Each @after edge: the producer's signal stream (its engine; for a DMA its (engine, queue),
// for a collective its channel) gets a semaphore __after_<stream>; every producer of a stream,
// in stream order, signals it once, so the k-th producer has completed when the count reaches
// k (signals of one stream complete in order). The consumer waits for that count. The result
// is ordinary @wait/@signal: the disassembly shows them and `nisa check` proves them.
void SyncLowering::lower_afters() {
  if (afters_.empty()) return;
  struct Stream {
    std::string name;
    std::vector<uint32_t> producers; // (engine fixed by the key) indices, sorted
    uint16_t sem = 0;
  };
  std::map<std::tuple<int, int, int>, Stream> streams;
  auto key_of = [&](Engine e, uint32_t i) {
    const Inst& in = mod_.streams[int(e)][i];
    if (is_async_dma(in)) return std::make_tuple(int(e), 1, int(dma_queue(in)));
    if (exec_kind(in) == ExecKind::collective)
      return std::make_tuple(int(e), 2, int(cc_channel(in)));
    return std::make_tuple(int(e), 0, 0);
  };
  std::vector<const AfterEdge*> live;
  for (const AfterEdge& a : afters_) {
    auto k = key_of(a.producer, a.producer_index);
    // Program order already orders a plain instruction before a later one of its engine.
    if (std::get<1>(k) == 0 && a.producer == a.consumer && a.producer_index < a.consumer_index)
      continue;
    Stream& st = streams[k];
    if (st.name.empty())
      st.name = fmt::format("__after_{}{}", name_of(a.producer),
                            std::get<1>(k) == 1   ? fmt::format("_q{}", std::get<2>(k))
                            : std::get<1>(k) == 2 ? fmt::format("_ch{}", std::get<2>(k))
                                                  : "");
    st.producers.push_back(a.producer_index);
    live.push_back(&a);
  }
  for (auto& [k, st] : streams) {
    std::sort(st.producers.begin(), st.producers.end());
    st.producers.erase(std::unique(st.producers.begin(), st.producers.end()), st.producers.end());
    if (sym_.lookup(st.name) || sym_.find_tensor(st.name) || sym_.has_sem(st.name)) {
      rep_.report(
          live.front()->loc,
          fmt::format("@after needs the semaphore name '{}', which the kernel declares", st.name));
      return;
    }
    if (mod_.sems.size() >= UINT16_MAX) {
      rep_.report(live.front()->loc, "@after: too many semaphores");
      return;
    }
    st.sem = static_cast<uint16_t>(mod_.sems.size());
    mod_.sems.push_back({st.name, 0});
    for (uint32_t i : st.producers) {
      Inst& in = mod_.streams[std::get<0>(k)][i];
      if (in.signals.size() >= kMaxSignals) {
        rep_.report(live.front()->loc,
                    fmt::format("@after: the producer {}[{}] already has {} signals",
                                name_of(Engine(std::get<0>(k))), i, kMaxSignals));
        return;
      }
      in.signals.push_back({st.sem, 1});
    }
  }
  for (const AfterEdge* a : live) {
    const Stream& st = streams[key_of(a->producer, a->producer_index)];
    const uint32_t rank = static_cast<uint32_t>(
        std::lower_bound(st.producers.begin(), st.producers.end(), a->producer_index) -
        st.producers.begin() + 1);
    Inst& in = mod_.streams[int(a->consumer)][a->consumer_index];
    auto it = std::find_if(in.waits.begin(), in.waits.end(),
                           [&](const Wait& w) { return w.sem == st.sem; });
    if (it != in.waits.end()) {
      it->value = std::max(it->value, rank);
      continue;
    }
    if (in.waits.size() >= kMaxWaits) {
      rep_.report(a->loc,
                  fmt::format("@after: the instruction would need more than {} waits", kMaxWaits));
      continue;
    }
    in.waits.push_back({st.sem, WaitCmp::ge, rank});
  }
}

} // namespace nisa::nasm
