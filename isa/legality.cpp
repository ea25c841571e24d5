// The static legality rules of isa/legality.h.
#include "isa/legality.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <utility>
#include <vector>

#include "isa/formulas.h"

namespace nisa {
namespace {

// The operand names the rules below use. A rule names an operand with a literal, checked
// against this list when it compiles (Name's constructor); each row's operands are looked up
// by these names once (row_args), not per instruction.
constexpr std::string_view kArgNames[] = {
    "dst",        "src",       "in0",  "in1",     "scale",    "bias",     "reduce_res",
    "reduce_cmd", "op",        "op0",  "op1",     "operand0", "operand1", "stationary",
    "moving",     "transpose", "axes", "pred",    "data",     "vals",     "idx",
    "mask",       "pattern",   "cmp",  "on_true", "init",     "src0",     "src1"};
constexpr size_t kNumArgs = std::size(kArgNames);

struct Name {
  consteval Name(const char* s) : id(find(s)) {}
  std::string_view text() const { return kArgNames[id]; }
  uint8_t id;

private:
  static consteval uint8_t find(std::string_view s) {
    for (size_t k = 0; k < kNumArgs; ++k)
      if (kArgNames[k] == s) return uint8_t(k);
    throw "not in kArgNames"; // a compile-time error
  }
};

// What the rules need of one row of the table, derived from it once: the index of the first
// operand of each name (-1 if none), which operands are access patterns (Dst/Src; Scalar when
// given as a tile), and the row's access-pattern rules (ap_operand_error).
using RowArgs = std::array<int8_t, kNumArgs>;
struct Row {
  RowArgs args;
  uint64_t aps = 0;     // bit k: operand k (< 64) is a Dst or Src
  uint64_t scalars = 0; // bit k: operand k (< 64) is a Scalar
  bool no_psum = false; // a DMA transfer: no operand in PSUM
  bool starts = false;  // the start-partition rule applies
};
const Row& row(Opcode op) {
  static const std::vector<Row> rows = [] {
    std::vector<Row> v;
    for (const InstDesc& d : inst_table()) {
      Row& r = v.emplace_back();
      for (size_t n = 0; n < kNumArgs; ++n) {
        r.args[n] = -1;
        for (size_t k = 0; k < d.operands.size(); ++k)
          if (d.operands[k].name == kArgNames[n]) {
            r.args[n] = int8_t(k);
            break;
          }
      }
      for (size_t k = 0; k < d.operands.size() && k < 64; ++k) {
        const OperandKind kind = d.operands[k].kind;
        if (kind == OperandKind::Dst || kind == OperandKind::Src) r.aps |= uint64_t(1) << k;
        if (kind == OperandKind::Scalar) r.scalars |= uint64_t(1) << k;
      }
      r.no_psum = d.cost == CostClass::dma_xfer;
      r.starts = start_partition_rule_applies(d);
    }
    return v;
  }();
  return rows[size_t(op)];
}

// Operand lookups and the first broken rule of one instruction.
class Rules {
public:
  Rules(const Inst& in, Target t, uint64_t skip)
      : in_(in), d_(desc(in.op)), row_(row(in.op)), t_(t), skip_(skip) {}

  int idx(Name name) const {
    const int k = row_.args[name.id];
    return k < int(in_.ops.size()) ? k : -1;
  }
  // The access pattern of operand `name` (a Dst/Src, or a Scalar given as a tile), or nullptr
  // when it is absent, an immediate or skipped.
  const AccessPattern* ap(Name name) const { return ap(idx(name)); }
  const AccessPattern* ap(int k) const {
    if (k < 0 || (k < 64 && (skip_ >> k) & 1) || !in_.ops[size_t(k)].present) return nullptr;
    const OperandKind kind = d_.operands[size_t(k)].kind;
    if (kind == OperandKind::Dst || kind == OperandKind::Src) return &in_.ops[size_t(k)].ap;
    if (kind == OperandKind::Scalar && in_.ops[size_t(k)].is_ap) return &in_.ops[size_t(k)].ap;
    return nullptr;
  }
  int64_t i(Name name) const {
    const int k = idx(name);
    return k < 0 ? 0 : in_.ops[size_t(k)].i;
  }
  template <class E> E e(Name name) const { return static_cast<E>(i(name)); }

  // Records the first broken rule; returns false so rules read `return fail(...)`.
  bool fail(int k, std::string msg) {
    if (!err) err = Illegal{k, std::move(msg)};
    return false;
  }
  bool fail(Name name, std::string msg) { return fail(idx(name), std::move(msg)); }
  bool fail(std::string msg) { return fail(-1, std::move(msg)); }

  const Inst& in_;
  const InstDesc& d_;
  const Row& row_;
  Target t_;
  uint64_t skip_;
  std::optional<Illegal> err;
};

// ---- shared shape rules ----------------------------------------------------------------------

// dst and operand `name` have the same partitions and elements per partition.
bool same_shape(Rules& r, Name name) {
  const AccessPattern *d = r.ap("dst"), *s = r.ap(name);
  if (!d || !s || (d->part_count == s->part_count && d->free_elems() == s->free_elems()))
    return true;
  return r.fail(name,
                fmt::format("dst is {} partitions x {} elements but {} is {} x {}", d->part_count,
                            d->free_elems(), name.text(), s->part_count, s->free_elems()));
}
// A scalar operand given as a tile is [P, 1] with P = dst's partitions.
bool per_partition(Rules& r, Name name) {
  const AccessPattern *d = r.ap("dst"), *s = r.ap(name);
  if (!d || !s || (s->part_count == d->part_count && s->free_elems() == 1)) return true;
  return r.fail(name, fmt::format("must be a [{}, 1] per-partition tile, got {} x {}",
                                  d->part_count, s->part_count, s->free_elems()));
}
bool not_both_psum(Rules& r, Name a, Name b) {
  const AccessPattern *x = r.ap(a), *y = r.ap(b);
  if (!x || !y || x->space != MemSpace::psum || y->space != MemSpace::psum) return true;
  return r.fail(fmt::format("`{}` and `{}` may not both be in psum", a.text(), b.text()));
}
bool same_dtype(Rules& r, Name a, Name b) {
  const AccessPattern *x = r.ap(a), *y = r.ap(b);
  if (!x || !y || x->dtype == y->dtype) return true;
  return r.fail(fmt::format("{} ({}) and {} ({}) must have the same dtype", a.text(),
                            dtype_name(x->dtype), b.text(), dtype_name(y->dtype)));
}
bool integer_dtype(Rules& r, Name name) {
  const AccessPattern* a = r.ap(name);
  if (!a || !info(a->dtype).is_float) return true;
  return r.fail(name, fmt::format("must be an integer dtype, not {}", dtype_name(a->dtype)));
}
bool all_int(Rules& r, std::initializer_list<Name> names) {
  for (Name n : names)
    if (const AccessPattern* a = r.ap(n); a && info(a->dtype).is_float) return false;
  return true;
}

// An ALU operator of an elementwise instruction.
bool alu_op(Rules& r, Name name, bool allow_bitvec) {
  const AluOp op = r.e<AluOp>(name);
  if (name_of(op).empty()) return r.fail(name, fmt::format("{} is not an ALU operator", r.i(name)));
  if (op == AluOp::average) return r.fail(name, "average is a partition-reduce operator only");
  if (!allow_bitvec && is_bitvec(op))
    return r.fail(name, fmt::format("{} is a bitvec operator; this instruction is arithmetic only",
                                    name_of(op)));
  if ((op == AluOp::abs_max || op == AluOp::abs_min) && r.t_ != Target::trn3)
    return r.fail(name, fmt::format("{} needs trn3", name_of(op)));
  if (op == AluOp::power && r.in_.op != Opcode::tensor_tensor)
    return r.fail(name, "power takes a tensor exponent (tensor_tensor on pool) only");
  return true;
}
bool binary_op(Rules& r, Name name) {
  const AluOp op = r.e<AluOp>(name);
  if (!is_unary(op) && op != AluOp::bypass) return true;
  return r.fail(name, fmt::format("{} is not a binary operator", name_of(op)));
}

// The search instructions' data: 8..16384 elements per partition.
constexpr uint64_t kSearchMin = 8, kSearchMax = 16384;
bool search_size(Rules& r, Name name) {
  const AccessPattern* a = r.ap(name);
  if (!a || (a->free_elems() >= kSearchMin && a->free_elems() <= kSearchMax)) return true;
  return r.fail(name,
                fmt::format("has {} elements per partition; the search instructions take {}..{}",
                            a->free_elems(), kSearchMin, kSearchMax));
}
// [P, 8] with P = the partitions of operand `of`.
bool eight(Rules& r, Name name, Name of) {
  const AccessPattern *a = r.ap(name), *o = r.ap(of);
  if (!a || !o || (a->part_count == o->part_count && a->free_elems() == 8)) return true;
  return r.fail(name, fmt::format("must be {} partitions x 8 elements, got {} x {}", o->part_count,
                                  a->part_count, a->free_elems()));
}

bool pattern_covers_dst(Rules& r) {
  const AccessPattern* d = r.ap("dst");
  const int k = r.idx("pattern");
  if (k < 0) return true;
  const AffinePattern& pat = r.in_.ops[size_t(k)].pat;
  if (pat.n > 4) return r.fail(k, fmt::format("has {} pairs (at most 4)", pat.n));
  uint64_t n = 1;
  for (int j = 0; j < pat.n; ++j) {
    if (pat.d[j][1] < 1)
      return r.fail(k, fmt::format("pair {} has num {} (must be >= 1)", j, pat.d[j][1]));
    n *= uint64_t(pat.d[j][1]);
  }
  if (!d || n == d->free_elems()) return true;
  return r.fail(
      fmt::format("pattern covers {} elements but dst has {} per partition", n, d->free_elems()));
}

// ---- per-opcode rules --------------------------------------------------------------------------

bool matmul(Rules& r) {
  const AccessPattern *d = r.ap("dst"), *st = r.ap("stationary"), *mv = r.ap("moving");
  if (st && mv && st->part_count != mv->part_count)
    return r.fail("moving", fmt::format("stationary has K = {} partitions but moving has {}",
                                        st->part_count, mv->part_count));
  // M and N, counted once.
  const uint64_t m = st ? st->free_elems() : 0, n = mv ? mv->free_elems() : 0;
  const MatmulLimits lim = matmul_limits(r.t_, d ? d->dtype : DType::fp32);
  if (st && m > lim.max_m)
    return r.fail("stationary", fmt::format("has M = {} columns (at most {})", m, lim.max_m));
  if (mv && n > lim.max_n)
    return r.fail("moving", fmt::format("has N = {} columns (at most {} on {})", n, lim.max_n,
                                        name_of(r.t_)));
  if (d && st && mv && (d->part_count != m || d->free_elems() != n))
    return r.fail("dst", fmt::format("must be M x N = {} x {}, got {} x {}", m, n, d->part_count,
                                     d->free_elems()));
  using NamedAp = std::pair<Name, const AccessPattern*>;
  for (auto [name, a] : {NamedAp{Name("stationary"), st}, NamedAp{Name("moving"), mv}})
    if (a && !info(a->dtype).is_float)
      return r.fail(name, fmt::format("must be a float dtype, not {}", dtype_name(a->dtype)));
  if (st && mv && (st->dtype == DType::fp32) != (mv->dtype == DType::fp32))
    return r.fail("moving",
                  fmt::format("fp32 inputs pair only with fp32 (stationary {}, moving {})",
                              dtype_name(st->dtype), dtype_name(mv->dtype)));
  if (r.i("transpose") && lim.transpose_mode) {
    if (d && st && d->dtype != st->dtype)
      return r.fail(fmt::format("transpose mode writes the stationary dtype ({}) but dst is {}",
                                dtype_name(st->dtype), dtype_name(d->dtype)));
    if (st && dtype_bytes(st->dtype) == 1)
      return r.fail("stationary", "transpose mode needs a 2- or 4-byte dtype");
    return true;
  }
  if (d && !matmul_dst_dtype_ok(r.t_, d->dtype))
    return r.fail("dst", fmt::format("must be fp32{}, not {}",
                                     matmul_dst_dtype_ok(r.t_, DType::bf16) ? " or bf16" : "",
                                     dtype_name(d->dtype)));
  return true;
}

bool pe_transpose(Rules& r) {
  const AccessPattern *d = r.ap("dst"), *s = r.ap("src");
  if (d && s && d->dtype != s->dtype)
    return r.fail(fmt::format("dst ({}) and src ({}) must have the same dtype",
                              dtype_name(d->dtype), dtype_name(s->dtype)));
  if (s && s->free_elems() > 128)
    return r.fail("src",
                  fmt::format("has {} elements per partition (at most 128)", s->free_elems()));
  if (d && s && (d->part_count != s->free_elems() || d->free_elems() != s->part_count))
    return r.fail("dst",
                  fmt::format("must be {} x {} (src transposed), got {} x {}", s->free_elems(),
                              s->part_count, d->part_count, d->free_elems()));
  return true;
}

bool activation(Rules& r) {
  if (r.e<ReduceCmd>("reduce_cmd") == ReduceCmd::load_reduce)
    return r.fail("reduce_cmd", "load_reduce is a vector-engine accumulator command");
  if (!same_shape(r, "src") || !per_partition(r, "scale") || !per_partition(r, "bias"))
    return false;
  const AccessPattern *d = r.ap("dst"), *rr = r.ap("reduce_res");
  if (d && rr && (rr->part_count != d->part_count || rr->free_elems() != 1))
    return r.fail("reduce_res", fmt::format("must be [{}, 1], got {} x {}", d->part_count,
                                            rr->part_count, rr->free_elems()));
  return true;
}

bool tensor_scalar(Rules& r) {
  const AluOp op0 = r.e<AluOp>("op0"), op1 = r.e<AluOp>("op1");
  if (!alu_op(r, "op0", true) || !alu_op(r, "op1", true)) return false;
  if (op0 == AluOp::bypass) return r.fail("op0", "must be an operator, not bypass");
  const bool bitvec = is_bitvec(op0);
  if (op1 != AluOp::bypass && is_bitvec(op1) != bitvec)
    return r.fail(fmt::format("op0 ({}) and op1 ({}) must both be bitvec or both arithmetic",
                              name_of(op0), name_of(op1)));
  if (bitvec && r.in_.engine != Engine::dve) return r.fail("bitvec operators run on dve only");
  // ScalarE on trn1/trn2 runs tensor_scalar only as (multiply, add), (multiply), (add).
  if (r.in_.engine == Engine::act && r.t_ != Target::trn3) {
    const bool ok = (op0 == AluOp::multiply && (op1 == AluOp::add || op1 == AluOp::bypass)) ||
                    (op0 == AluOp::add && op1 == AluOp::bypass);
    if (!ok)
      return r.fail(fmt::format("act runs tensor_scalar only as (multiply, add), (multiply) or "
                                "(add) on {}, not ({}, {})",
                                name_of(r.t_), name_of(op0), name_of(op1)));
  }
  if (!same_shape(r, "src") || !per_partition(r, "operand0") || !per_partition(r, "operand1"))
    return false;
  if (bitvec && !all_int(r, {"dst", "src"}))
    return r.fail(fmt::format("bitvec operators need integer dst and src (dst {}, src {})",
                              dtype_name(r.ap("dst")->dtype), dtype_name(r.ap("src")->dtype)));
  return true;
}

bool two_inputs(Rules& r) {
  return same_shape(r, "in0") && same_shape(r, "in1") && not_both_psum(r, "in0", "in1");
}

bool tensor_tensor(Rules& r) {
  const AluOp op = r.e<AluOp>("op");
  if (!alu_op(r, "op", true) || !binary_op(r, "op")) return false;
  if (op == AluOp::power && r.in_.engine != Engine::pool)
    return r.fail("op", "power runs on pool only");
  if (!two_inputs(r)) return false;
  if (is_bitvec(op) && !all_int(r, {"dst", "in0", "in1"})) {
    const AccessPattern *d = r.ap("dst"), *a = r.ap("in0"), *b = r.ap("in1");
    return r.fail(fmt::format("{} needs integer operands (dst {}, in0 {}, in1 {})", name_of(op),
                              d ? dtype_name(d->dtype) : "?", a ? dtype_name(a->dtype) : "?",
                              b ? dtype_name(b->dtype) : "?"));
  }
  return true;
}

bool scalar_tensor_tensor(Rules& r) {
  return alu_op(r, "op0", false) && alu_op(r, "op1", false) && binary_op(r, "op1") &&
         two_inputs(r) && per_partition(r, "operand0");
}

bool scan(Rules& r) {
  return alu_op(r, "op0", false) && alu_op(r, "op1", false) && two_inputs(r) &&
         per_partition(r, "init");
}

bool tensor_reduce(Rules& r) {
  const AluOp op = r.e<AluOp>("op");
  const int64_t axes = r.i("axes");
  const AccessPattern *d = r.ap("dst"), *s = r.ap("src");
  if (s && (axes < 1 || axes > s->ndims))
    return r.fail("axes",
                  fmt::format("{} is outside 1..{} (the free dims of src)", axes, s->ndims));
  // The reduction operators are the rows of isa/formulas.def's NISA_REDUCE_RULES.
  if (reduce_rule(op).empty())
    return r.fail("op", fmt::format("{} is not a reduction operator", name_of(op)));
  if (d && s) {
    uint64_t inner = 1;
    for (int k = s->ndims - int(axes); k < s->ndims; ++k) inner *= s->dims[size_t(k)].count;
    const uint64_t outer = inner ? s->free_elems() / inner : 0;
    if (d->part_count != s->part_count || d->free_elems() != outer)
      return r.fail(fmt::format("dst must be {} partitions x {} elements (src with its last {} "
                                "dims reduced), got {} x {}",
                                s->part_count, outer, axes, d->part_count, d->free_elems()));
  }
  if (is_bitvec(op) && !all_int(r, {"dst", "src"}))
    return r.fail("bitvec reductions need integer src and dst");
  return true;
}

bool copy_predicated(Rules& r) {
  return same_shape(r, "src") && same_shape(r, "pred") && not_both_psum(r, "src", "pred") &&
         same_dtype(r, "src", "dst");
}

bool match_replace8(Rules& r) {
  return search_size(r, "data") && same_shape(r, "data") && eight(r, "vals", "data") &&
         eight(r, "idx", "data") && integer_dtype(r, "idx");
}

bool dve_transpose(Rules& r) {
  const AccessPattern *d = r.ap("dst"), *s = r.ap("src");
  if (!same_dtype(r, "dst", "src") || !s) return !r.err;
  const uint64_t sp = s->part_count, sf = s->free_elems();
  // Either one block of at most 32x32, or 32x32 blocks in each of several quadrants.
  const bool one_block = sp <= 32 && sf <= 32, quadrants = sp % 32 == 0 && sf == 32;
  if (!one_block && !quadrants)
    return r.fail("src", fmt::format("is {} x {}; dve transpose takes at most 32 x 32, or 32 "
                                     "elements per partition over whole quadrants",
                                     sp, sf));
  const uint64_t bp = one_block ? sp : 32, bf = one_block ? sf : 32, blocks = sp / bp;
  if (d && (d->part_count != bf * blocks || d->free_elems() != bp))
    return r.fail("dst", fmt::format("must be {} x {} (src {} x {} transposed per block), got {} "
                                     "x {}",
                                     bf * blocks, bp, sp, sf, d->part_count, d->free_elems()));
  return true;
}

bool stream_shuffle(Rules& r) {
  const AccessPattern *d = r.ap("dst"), *s = r.ap("src");
  if (d && s && (d->dtype != s->dtype || d->free_elems() != s->free_elems()))
    return r.fail(fmt::format("src ({} x {} {}) and dst ({} x {} {}) need the same dtype and "
                              "elements per partition",
                              s->part_count, s->free_elems(), dtype_name(s->dtype), d->part_count,
                              d->free_elems(), dtype_name(d->dtype)));
  const int k = r.idx("mask");
  if (!d || !s || k < 0) return true;
  const ShuffleMask& mask = r.in_.ops[size_t(k)].mask;
  for (uint32_t p = 0; p < d->part_count; ++p) {
    const uint8_t m = mask.v[p % 32];
    if (m == 255) continue;
    if (m >= 32)
      return r.fail(k, fmt::format("entry {} = {} is not a partition 0..31 or 255", p % 32, m));
    if ((p / 32) * 32 + m >= s->part_count)
      return r.fail(k, fmt::format("entry {} = {} selects src partition {} but src has {} "
                                   "partitions",
                                   p % 32, m, (p / 32) * 32 + m, s->part_count));
  }
  return true;
}

bool affine_select(Rules& r) {
  const AluOp cmp = r.e<AluOp>("cmp");
  if (!is_compare(cmp))
    return r.fail("cmp", fmt::format("{} is not a comparison operator", name_of(cmp)));
  return same_shape(r, "on_true") && pattern_covers_dst(r);
}

bool n_gather(Rules& r) {
  const AccessPattern *d = r.ap("dst"), *data = r.ap("data");
  if (!same_shape(r, "idx")) return false;
  if (d && data && data->part_count != d->part_count)
    return r.fail(
        fmt::format("data has {} partitions but dst has {}", data->part_count, d->part_count));
  return same_dtype(r, "dst", "data") && integer_dtype(r, "idx");
}

bool dma_counts(Rules& r, std::initializer_list<Name> srcs) {
  const AccessPattern* d = r.ap("dst");
  for (Name n : srcs) {
    const AccessPattern* s = r.ap(n);
    if (d && s && d->elems() != s->elems())
      return r.fail(n, fmt::format("element counts differ: dst has {} ({} x {}), {} has {} ({} x "
                                   "{})",
                                   d->elems(), d->part_count, d->free_elems(), n.text(), s->elems(),
                                   s->part_count, s->free_elems()));
  }
  return true;
}

bool dma_transpose(Rules& r) {
  const AccessPattern *d = r.ap("dst"), *s = r.ap("src");
  if (s && dtype_bytes(s->dtype) != 2 && dtype_bytes(s->dtype) != 4)
    return r.fail("src", fmt::format("dma_transpose needs a 2- or 4-byte dtype, not {}",
                                     dtype_name(s->dtype)));
  if (!same_dtype(r, "dst", "src")) return false;
  if (d && s && (d->part_count != s->free_elems() || d->free_elems() != s->part_count))
    return r.fail("dst",
                  fmt::format("is [{}, {}] but the transposed src is [{}, {}]", d->part_count,
                              d->free_elems(), s->free_elems(), s->part_count));
  return true;
}

bool opcode_rules(Rules& r) {
  switch (r.in_.op) {
  case Opcode::matmul: return matmul(r);
  case Opcode::pe_transpose: return pe_transpose(r);
  case Opcode::activation: return activation(r);
  case Opcode::copy:
  case Opcode::reciprocal: return same_shape(r, "src");
  case Opcode::tensor_scalar: return tensor_scalar(r);
  case Opcode::tensor_tensor: return tensor_tensor(r);
  case Opcode::scalar_tensor_tensor: return scalar_tensor_tensor(r);
  case Opcode::tensor_reduce: return tensor_reduce(r);
  case Opcode::copy_predicated: return copy_predicated(r);
  case Opcode::scan: return scan(r);
  case Opcode::max8: return search_size(r, "src") && eight(r, "dst", "src");
  case Opcode::find_index8:
    return search_size(r, "data") && eight(r, "vals", "data") && eight(r, "dst", "data") &&
           integer_dtype(r, "dst");
  case Opcode::match_replace8: return match_replace8(r);
  case Opcode::dve_transpose: return dve_transpose(r);
  case Opcode::stream_shuffle: return stream_shuffle(r);
  case Opcode::iota: return pattern_covers_dst(r);
  case Opcode::affine_select: return affine_select(r);
  case Opcode::n_gather: return n_gather(r);
  case Opcode::dma:
  case Opcode::dma_compute: return dma_counts(r, {"src", "src0", "src1"});
  case Opcode::dma_transpose: return dma_transpose(r);
  default: return true;
  }
}

std::string gens_phrase(uint8_t gens) {
  // "trn2 or later" for a mask of every generation from one on, else the list.
  for (int g = 2; g <= 4; ++g)
    if (gens == uint8_t(kGenAll & ~((1u << (g - 2)) - 1)))
      return g == 4 ? "trn3" : fmt::format("{} or later", name_of(Target(g)));
  return gens_text(gens);
}

} // namespace

std::string gens_text(uint8_t gens) {
  std::string out;
  for (const auto& m : enum_members(EnumType::Target))
    if (gen_allows(gens, static_cast<Target>(m.value)))
      out += (out.empty() ? "" : ", ") + std::string(m.name);
  return out;
}

bool is_bitvec(AluOp op) {
  switch (op) {
  case AluOp::bitwise_and:
  case AluOp::bitwise_or:
  case AluOp::bitwise_xor:
  case AluOp::invert:
  case AluOp::left_shift:
  case AluOp::right_shift: return true;
  default: return false;
  }
}
bool is_unary(AluOp op) {
  switch (op) {
  case AluOp::abs:
  case AluOp::square:
  case AluOp::relu:
  case AluOp::rsqrt:
  case AluOp::reciprocal:
  case AluOp::invert: return true;
  default: return false;
  }
}
bool is_compare(AluOp op) { return op >= AluOp::equal && op <= AluOp::less; }

MatmulLimits matmul_limits(Target t, DType dst) {
  MatmulLimits l;
  l.transpose_mode = t != Target::trn1;
  if (t == Target::trn3) {
    l.max_n = dst == DType::bf16 ? 8192 : 4096;
    l.one_psum_bank = false;
  }
  return l;
}
bool matmul_dst_dtype_ok(Target t, DType dst) {
  return dst == DType::fp32 || (t == Target::trn3 && dst == DType::bf16);
}

std::optional<std::string> ap_operand_error(const Inst& in, size_t k, const AccessPattern& ap) {
  const InstDesc& d = desc(in.op);
  const OperandDesc& od = d.operands[k];
  if (d.cost == CostClass::dma_xfer && ap.space == MemSpace::psum)
    return "is in PSUM; PSUM is never a DMA operand";
  if (od.spaces && !(od.spaces & space_bit(ap.space)))
    return fmt::format("may not be in {}", name_of(ap.space));
  if (in.engine == Engine::pool && ap.space == MemSpace::psum)
    return "pool (GpSimd) cannot access psum";
  if (start_partition_rule_applies(d) && ap.space != MemSpace::hbm) {
    if (auto e = start_partition_error(ap.part_start, ap.part_count)) return e;
  }
  return std::nullopt;
}

std::optional<Illegal> gen_error(const Inst& in, Target t) {
  const InstDesc& d = desc(in.op);
  if (!gen_allows(d.gens, t))
    return Illegal{-1, fmt::format("is not available on {} (available on: {})", name_of(t),
                                   gens_text(d.gens))};
  for (size_t k = 0; k < d.operands.size() && k < in.ops.size(); ++k) {
    const OperandDesc& od = d.operands[k];
    const Operand& o = in.ops[k];
    if (!gen_allows(od.gens, t) && !is_default(od, o))
      return Illegal{int(k), fmt::format("needs {}", gens_phrase(od.gens))};
    if (od.kind == OperandKind::Scalar && !o.is_ap && !gen_allows(od.imm_gens, t) &&
        !is_default(od, o))
      return Illegal{int(k), fmt::format("an immediate {} needs {} (a [P, 1] tile works "
                                         "everywhere)",
                                         od.name, gens_phrase(od.imm_gens))};
  }
  return std::nullopt;
}

std::optional<Illegal> shape_error(const Inst& in, Target t, uint64_t skip) {
  Rules r(in, t, skip);
  // ap_operand_error's rules with what depends only on the row and the engine taken out of the
  // loop; only an operand that breaks one goes to ap_operand_error for the message. The
  // operands are those r.ap(k) gives, in order.
  const Row& w = r.row_;
  const bool no_psum = w.no_psum || in.engine == Engine::pool;
  const size_t n = std::min(r.d_.operands.size(), in.ops.size());
  uint64_t m = (w.aps | w.scalars) & ~skip;
  if (n < 64) m &= (uint64_t(1) << n) - 1;
  for (; m; m &= m - 1) {
    const size_t k = size_t(std::countr_zero(m));
    const Operand& o = in.ops[k];
    if (!o.present || ((w.scalars >> k) & 1 && !o.is_ap)) continue;
    const AccessPattern& a = o.ap;
    const uint8_t spaces = r.d_.operands[k].spaces;
    if ((no_psum && a.space == MemSpace::psum) || (spaces && !(spaces & space_bit(a.space))) ||
        (w.starts && a.space != MemSpace::hbm && !start_partition_ok(a.part_start, a.part_count)))
      if (auto e = ap_operand_error(in, k, a)) return Illegal{int(k), *e};
  }
  for (size_t k = 64; k < n; ++k) // rows of more than 64 operands (none so far)
    if (const AccessPattern* a = r.ap(int(k)))
      if (auto e = ap_operand_error(in, k, *a)) return Illegal{int(k), *e};
  if (skip == 0) opcode_rules(r); // a skipped operand exempts the instruction's own rules
  return r.err;
}

std::optional<Illegal> legality_error(const Inst& in, Target t, uint64_t skip) {
  if (auto e = gen_error(in, t)) return e;
  return shape_error(in, t, skip);
}

std::string legality_text(const Inst& in, const Illegal& e) {
  const InstDesc& d = desc(in.op);
  if (e.operand < 0 || size_t(e.operand) >= d.operands.size())
    return fmt::format("{}.{}: {}", name_of(in.engine), d.mnemonic, e.message);
  return fmt::format("{}.{} operand `{}`: {}", name_of(in.engine), d.mnemonic,
                     d.operands[size_t(e.operand)].name, e.message);
}

} // namespace nisa
