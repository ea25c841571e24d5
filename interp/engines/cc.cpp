// Collectives, executed synchronously once every rank of the replica group has reached the
// instruction (the scheduler's rendezvous); data moves between the ranks' memories at once.
// Element order is the flat order of each access pattern; "chunk i" is the i-th of n equal
// flat slices (dim 0 of a row-major tensor).
#include <algorithm>

#include <fmt/format.h>

#include "interp/engines/engines.h"
#include "interp/engines/xfer.h"
#include "interp/machine.h"
#include "interp/scheduler.h"

namespace nisa::interp {
namespace {

struct Part {
  View src, dst;
};

std::vector<Part> views(const std::vector<ExecCtx*>& cx, const std::vector<const Inst*>& in) {
  std::vector<Part> p;
  for (size_t i = 0; i < cx.size(); ++i) {
    if (in[i]->op != in[0]->op)
      throw Fault(fmt::format("rank {} reached '{}' while rank {} reached '{}'", cx[i]->rank,
                              desc(in[i]->op).mnemonic, cx[0]->rank, desc(in[0]->op).mnemonic));
    p.push_back({cx[i]->view(in[i]->ops[1].ap, Access::read),
                 cx[i]->view(in[i]->ops[0].ap, Access::write)});
  }
  return p;
}

std::vector<float> as_f32(const View& v) {
  std::vector<float> out;
  out.reserve(total_elems(v));
  for (Cursor c(v); !c.done(); c.next()) out.push_back(load_as_f32(v.dtype, c.ptr()));
  return out;
}

void put_f32(const View& v, const float* x) {
  for (Cursor c(v); !c.done(); c.next()) store_from_f32(v.dtype, c.ptr(), *x++);
}

float reduce(AluOp op, float a, float b) {
  switch (op) {
  case AluOp::add: return a + b;
  case AluOp::max: return std::max(a, b);
  case AluOp::min: return std::min(a, b);
  default:
    throw Fault(fmt::format("collective reduction '{}' is not add, max or min", name_of(op)));
  }
}

void need(bool ok, const std::string& msg) {
  if (!ok) throw Fault(msg);
}

// The group's reduction of every source, in fp32, in group order.
std::vector<float> reduced(const std::vector<Part>& p, AluOp op) {
  std::vector<float> acc = as_f32(p[0].src);
  for (size_t r = 1; r < p.size(); ++r) {
    need(total_elems(p[r].src) == acc.size(), "collective: sources of different sizes");
    std::vector<float> x = as_f32(p[r].src);
    for (size_t j = 0; j < acc.size(); ++j) acc[j] = reduce(op, acc[j], x[j]);
  }
  return acc;
}

void all_reduce(std::vector<Part>& p, AluOp op) {
  std::vector<float> acc = reduced(p, op);
  for (Part& q : p) {
    need(total_elems(q.dst) == acc.size(), "all_reduce: dst and src sizes differ");
    put_f32(q.dst, acc.data());
  }
}

void reduce_scatter(std::vector<Part>& p, AluOp op) {
  std::vector<float> acc = reduced(p, op);
  size_t n = p.size(), chunk = acc.size() / n;
  need(acc.size() % n == 0, "reduce_scatter: the source does not split into equal chunks");
  for (size_t r = 0; r < n; ++r) {
    need(total_elems(p[r].dst) == chunk, "reduce_scatter: dst is not one chunk of src");
    put_f32(p[r].dst, acc.data() + r * chunk);
  }
}

void all_gather(std::vector<Part>& p, int64_t dim) {
  size_t n = p.size();
  std::vector<std::vector<uint8_t>> src;
  for (Part& q : p) src.push_back(gather_bytes(q.src));
  DType st = p[0].src.dtype;
  size_t w = dtype_bytes(st), elems = total_elems(p[0].src);
  std::vector<uint8_t> all(n * elems * w);
  if (dim == 0) {
    for (size_t r = 0; r < n; ++r)
      std::copy(src[r].begin(), src[r].end(), all.begin() + r * elems * w);
  } else if (dim == 1) { // row p of the result = row p of every rank, side by side
    size_t rows = p[0].src.parts, cols = p[0].src.free_elems * w;
    for (size_t row = 0; row < rows; ++row)
      for (size_t r = 0; r < n; ++r)
        std::copy_n(src[r].begin() + row * cols, cols, all.begin() + (row * n + r) * cols);
  } else {
    throw Fault(fmt::format("all_gather: dim {} is not supported (0 or 1)", dim));
  }
  for (Part& q : p) {
    need(total_elems(q.dst) == n * elems, "all_gather: dst is not group-size times src");
    scatter_bytes(q.dst, all.data(), st);
  }
}

void all_to_all(std::vector<Part>& p) {
  size_t n = p.size();
  std::vector<std::vector<uint8_t>> src;
  for (Part& q : p) src.push_back(gather_bytes(q.src));
  DType st = p[0].src.dtype;
  size_t w = dtype_bytes(st), elems = total_elems(p[0].src), chunk = elems / n * w;
  need(elems % n == 0, "all_to_all: the source does not split into equal chunks");
  for (size_t i = 0; i < n; ++i) {
    std::vector<uint8_t> out(elems * w);
    for (size_t j = 0; j < n; ++j)
      std::copy_n(src[j].begin() + i * chunk, chunk, out.begin() + j * chunk);
    need(total_elems(p[i].dst) == elems, "all_to_all: dst and src sizes differ");
    scatter_bytes(p[i].dst, out.data(), st);
  }
}

// Moves src of participant from[i] to dst of participant to[i] for every i.
void permute(std::vector<Part>& p, const std::vector<std::pair<size_t, size_t>>& moves) {
  std::vector<std::vector<uint8_t>> src;
  for (Part& q : p) src.push_back(gather_bytes(q.src));
  for (auto [from, to] : moves) {
    need(total_elems(p[to].dst) == total_elems(p[from].src), "permute: dst and src sizes differ");
    scatter_bytes(p[to].dst, src[from].data(), p[from].src.dtype);
  }
}

} // namespace

void run_collective(const std::vector<ExecCtx*>& cx, const std::vector<const Inst*>& in) {
  std::vector<Part> p = views(cx, in);
  const Inst& i0 = *in[0];
  const Module& m = *cx[0]->machine->mod;
  auto index_of = [&](uint32_t rank) -> size_t {
    for (size_t k = 0; k < cx.size(); ++k)
      if (cx[k]->rank == int(rank)) return k;
    throw Fault(fmt::format("rank {} does not take part in this collective", rank));
  };
  switch (i0.op) {
  case Opcode::all_reduce: return all_reduce(p, static_cast<AluOp>(i0.ops[3].i));
  case Opcode::reduce_scatter: return reduce_scatter(p, static_cast<AluOp>(i0.ops[3].i));
  case Opcode::all_gather: return all_gather(p, i0.ops[3].i);
  case Opcode::all_to_all: return all_to_all(p);
  case Opcode::permute_implicit: {
    std::vector<std::pair<size_t, size_t>> mv;
    for (size_t k = 0; k < p.size(); ++k) mv.push_back({k, (k + 1) % p.size()});
    return permute(p, mv);
  }
  case Opcode::collective_permute: {
    std::vector<std::pair<size_t, size_t>> mv;
    for (const auto& pair : m.groups[i0.ops[2].i].groups) {
      need(pair.size() == 2, "collective_permute: the group must hold [source, target] pairs");
      mv.push_back({index_of(pair[0]), index_of(pair[1])});
    }
    return permute(p, mv);
  }
  default: throw Fault(fmt::format("'{}' is not a collective", desc(i0.op).mnemonic));
  }
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
