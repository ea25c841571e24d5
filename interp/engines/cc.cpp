// Collectives, executed synchronously once every rank of the replica group has reached the
// instruction (the scheduler's rendezvous); data moves between the ranks' memories at once.
// Element order is the flat order of each access pattern; "chunk i" is the i-th of n equal
// flat slices (dim 0 of a row-major tensor).
#include <algorithm>

#include <fmt/format.h>

#include "interp/core/host_pool.h"
#include "interp/engines/collective.h"
#include "interp/engines/engines.h"
#include "interp/engines/xfer.h"
#include "isa/op_index.h"

namespace nisa::interp {
namespace {

float reduce(AluOp op, float a, float b) {
  switch (op) {
  case AluOp::add: return a + b;
  case AluOp::max: return std::max(a, b);
  case AluOp::min: return std::min(a, b);
  default: return a;
  }
}
bool reduces(AluOp op) { return op == AluOp::add || op == AluOp::max || op == AluOp::min; }

void need(bool ok, const std::string& msg) {
  if (!ok) throw Fault(msg);
}

float elem(const CcSide& s, size_t j) {
  return load_as_f32(s.src_dtype, s.src.data() + j * dtype_bytes(s.src_dtype));
}

// The group's reduction of every source, in fp32, in group order.
std::vector<float> reduced(const CcParty& p, AluOp op) {
  const size_t n = p.side[0].src_elems;
  std::vector<float> acc(n);
  for (size_t j = 0; j < n; ++j) acc[j] = elem(p.side[0], j);
  for (size_t r = 1; r < p.side.size(); ++r)
    for (size_t j = 0; j < n; ++j) acc[j] = reduce(op, acc[j], elem(p.side[r], j));
  return acc;
}

void put_f32(const View& v, const float* x) {
  for (Cursor c(v); !c.done(); c.next()) store_from_f32(v.dtype, c.ptr(), *x++);
}

// Moves (source participant, destination participant) of a permute.
std::vector<std::pair<size_t, size_t>> moves(const CcParty& p) {
  const Inst& i0 = *p.in[0];
  std::vector<std::pair<size_t, size_t>> mv;
  const size_t n = p.side.size();
  if (i0.op == Opcode::permute_implicit) {
    for (size_t k = 0; k < n; ++k) mv.push_back({k, (k + 1) % n});
    return mv;
  }
  auto index_of = [&](uint32_t rank) -> size_t {
    for (size_t k = 0; k < n; ++k)
      if (p.side[k].rank == int(rank)) return k;
    throw Fault(fmt::format("rank {} does not take part in this collective", rank));
  };
  const Module& m = *p.mod;
  for (const auto& pair : m.groups[size_t(i0.ops[op::collective_permute::group].i)].groups) {
    need(pair.size() == 2, "collective_permute: the group must hold [source, target] pairs");
    mv.push_back({index_of(pair[0]), index_of(pair[1])});
  }
  return mv;
}

bool is_permute(Opcode op) {
  return op == Opcode::permute_implicit || op == Opcode::collective_permute;
}

} // namespace

void cc_prepare(ExecCtx& cx, const Inst& in, CcSide& s) {
  s.rank = cx.rank;
  try {
    View src = cx.view(in.ops[op::collective::src].ap, Access::read);
    s.dst = cx.view(in.ops[op::collective::dst].ap, Access::write);
    s.src_dtype = src.dtype;
    s.src_elems = total_elems(src);
    s.src_rows = src.parts;
    s.src_cols = src.free_elems;
    s.dst_elems = total_elems(s.dst);
    s.src = gather_bytes(src);
  } catch (const Fault& f) {
    s.fault = f.what();
    if (s.fault.empty()) s.fault = "collective: a bad operand";
  }
}

// The checks of a single process, in its order: each participant's operands in group order,
// then the operation's sizes.
void cc_check(const CcParty& p) {
  const Inst& i0 = *p.in[0];
  const size_t n = p.side.size();
  for (size_t i = 0; i < n; ++i) {
    if (p.in[i]->op != i0.op)
      throw Fault(fmt::format("rank {} reached '{}' while rank {} reached '{}'", p.side[i].rank,
                              desc(p.in[i]->op).mnemonic, p.side[0].rank, desc(i0.op).mnemonic));
    if (!p.side[i].fault.empty()) throw Fault(p.side[i].fault);
  }
  const uint64_t elems = p.side[0].src_elems;
  auto same_sources = [&](const char* what) {
    for (size_t r = 1; r < n; ++r)
      need(p.side[r].src_elems == elems, fmt::format("{}: sources of different sizes", what));
  };
  switch (i0.op) {
  case Opcode::all_reduce:
  case Opcode::reduce_scatter: {
    static_assert(int(nisa::op::all_reduce::op) == nisa::op::reduce_scatter::op);
    const AluOp op = static_cast<AluOp>(i0.ops[nisa::op::all_reduce::op].i);
    same_sources("collective");
    if (n > 1 && elems > 0 && !reduces(op))
      throw Fault(fmt::format("collective reduction '{}' is not add, max or min", name_of(op)));
    if (i0.op == Opcode::all_reduce) {
      for (const CcSide& q : p.side)
        need(q.dst_elems == elems, "all_reduce: dst and src sizes differ");
    } else {
      need(elems % n == 0, "reduce_scatter: the source does not split into equal chunks");
      for (const CcSide& q : p.side)
        need(q.dst_elems == elems / n, "reduce_scatter: dst is not one chunk of src");
    }
    return;
  }
  case Opcode::all_gather: {
    same_sources("all_gather");
    const int64_t dim = i0.ops[nisa::op::all_gather::dim].i;
    if (dim != 0 && dim != 1)
      throw Fault(fmt::format("all_gather: dim {} is not supported (0 or 1)", dim));
    for (size_t r = 1; dim == 1 && r < n; ++r)
      need(p.side[r].src_rows == p.side[0].src_rows,
           "all_gather: sources of different partition counts");
    for (const CcSide& q : p.side)
      need(q.dst_elems == n * elems, "all_gather: dst is not group-size times src");
    return;
  }
  case Opcode::all_to_all:
    same_sources("all_to_all");
    need(elems % n == 0, "all_to_all: the source does not split into equal chunks");
    for (const CcSide& q : p.side)
      need(q.dst_elems == elems, "all_to_all: dst and src sizes differ");
    return;
  case Opcode::permute_implicit:
  case Opcode::collective_permute:
    for (auto [from, to] : moves(p))
      need(p.side[to].dst_elems == p.side[from].src_elems, "permute: dst and src sizes differ");
    return;
  default: throw Fault(fmt::format("'{}' is not a collective", desc(i0.op).mnemonic));
  }
}

std::vector<bool> cc_sources_needed(const CcParty& p, const std::vector<bool>& writes) {
  const size_t n = p.side.size();
  std::vector<bool> need_src(n, !is_permute(p.in[0]->op));
  if (is_permute(p.in[0]->op))
    for (auto [from, to] : moves(p))
      if (writes[to]) need_src[from] = true;
  return need_src;
}

void cc_apply(CcParty& p, HostPool* pool) {
  const Inst& i0 = *p.in[0];
  const size_t n = p.side.size();
  // Each participant's destination on a host thread: they lie in distinct ranks' memories,
  // and every source was read before (cc_prepare), so the order does not matter.
  auto each_local = [&](auto&& write) {
    run_each(pool, int(n), [&](int r) {
      if (p.local[size_t(r)]) write(size_t(r));
    });
  };
  switch (i0.op) {
  case Opcode::all_reduce:
  case Opcode::reduce_scatter: {
    std::vector<float> acc = reduced(p, static_cast<AluOp>(i0.ops[nisa::op::all_reduce::op].i));
    const size_t chunk = i0.op == Opcode::all_reduce ? 0 : acc.size() / n;
    each_local([&](size_t r) { put_f32(p.side[r].dst, acc.data() + r * chunk); });
    return;
  }
  case Opcode::all_gather: {
    const DType st = p.side[0].src_dtype;
    const size_t w = dtype_bytes(st), elems = p.side[0].src_elems;
    BytePieces all; // the result, in order: pieces of the sources
    if (i0.ops[nisa::op::all_gather::dim].i == 0) {
      for (size_t r = 0; r < n; ++r) all.push_back({p.side[r].src.data(), elems * w});
    } else { // row p of the result = row p of every rank, side by side
      const size_t rows = p.side[0].src_rows, cols = p.side[0].src_cols * w;
      for (size_t row = 0; row < rows; ++row)
        for (size_t r = 0; r < n; ++r) all.push_back({p.side[r].src.data() + row * cols, cols});
    }
    each_local([&](size_t r) { scatter_pieces(p.side[r].dst, all, st); });
    return;
  }
  case Opcode::all_to_all: {
    const DType st = p.side[0].src_dtype;
    const size_t w = dtype_bytes(st), elems = p.side[0].src_elems, chunk = elems / n * w;
    each_local([&](size_t i) { // chunk i of every source, in group order
      BytePieces out;
      for (size_t j = 0; j < n; ++j) out.push_back({p.side[j].src.data() + i * chunk, chunk});
      scatter_pieces(p.side[i].dst, out, st);
    });
    return;
  }
  case Opcode::permute_implicit:
  case Opcode::collective_permute: {
    const std::vector<std::pair<size_t, size_t>> mv = moves(p);
    auto one = [&](int k) {
      auto [from, to] = mv[size_t(k)];
      if (p.local[to])
        scatter_bytes(p.side[to].dst, p.side[from].src.data(), p.side[from].src_dtype);
    };
    // A group may name a target twice (the later move wins): then in order.
    std::vector<bool> seen(n, false);
    bool distinct = true;
    for (auto [from, to] : mv) distinct = distinct && !seen[to], seen[to] = true;
    run_each(distinct ? pool : nullptr, int(mv.size()), one);
    return;
  }
  default: return;
  }
}

void run_collective(const std::vector<ExecCtx*>& cx, const std::vector<const Inst*>& in) {
  CcParty p;
  p.mod = cx[0]->mod;
  p.in = in;
  p.side.resize(cx.size());
  p.local.assign(cx.size(), true);
  HostPool* pool = cx[0]->pool;
  run_each(pool, int(cx.size()),
           [&](int i) { cc_prepare(*cx[size_t(i)], *in[size_t(i)], p.side[size_t(i)]); });
  cc_check(p);
  cc_apply(p, pool);
}

// The scheduler meets the ranks and calls run_collective; a direct call is an error.
#define NISA_CC_DIRECT(id)                                                                         \
  void sem_##id(ExecCtx&, const Inst&) {                                                           \
    throw Fault("collectives run only through the scheduler (every rank must reach them)");        \
  }
NISA_CC_DIRECT(all_reduce)
NISA_CC_DIRECT(all_gather)
NISA_CC_DIRECT(reduce_scatter)
NISA_CC_DIRECT(all_to_all)
NISA_CC_DIRECT(collective_permute)
NISA_CC_DIRECT(permute_implicit)
#undef NISA_CC_DIRECT

} // namespace nisa::interp
