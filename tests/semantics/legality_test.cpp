// The assembler and the interpreter agree on what is legal: for every opcode with shape rules,
// operand shapes and dtypes at and around the limits, on trn1, trn2 and trn3, are assembled
// (text -> Module: accepted or a diagnostic) and run through the instruction's semantics on a
// bench (no Fault, or a Fault). Both verdicts come from isa/legality.h; this walk checks that no
// path adds or misses a rule of its own.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <regex>
#include <variant>

#include "asm/asm.h"
#include "isa/legality.h"
#include "tests/semantics/harness.h"

namespace nisa::interp::test {
namespace {

struct Tile {
  MemSpace sp;
  DType dt;
  uint16_t parts;
  uint32_t free;
  uint16_t p0 = 0;
};
using Value = std::variant<Tile, std::string>; // a tile, or the operand's text
struct Arg {
  std::string name;
  Value v;
};
struct Case {
  std::string label;
  Opcode op;
  Engine eng;
  std::vector<Arg> args;
};

Tile sb(DType dt, uint16_t parts, uint32_t free, uint16_t p0 = 0) {
  return {MemSpace::sbuf, dt, parts, free, p0};
}
Tile ps(DType dt, uint16_t parts, uint32_t free, uint16_t p0 = 0) {
  return {MemSpace::psum, dt, parts, free, p0};
}
Tile hb(DType dt, uint16_t parts, uint32_t free) { return {MemSpace::hbm, dt, parts, free, 0}; }

constexpr DType F32 = DType::fp32, BF = DType::bf16, I32 = DType::int32, I8 = DType::int8,
                U32 = DType::uint32;

std::vector<Case> cases() {
  using O = Opcode;
  using E = Engine;
  std::vector<Case> c;
  auto add = [&](std::string l, O op, E e, std::vector<Arg> a) {
    c.push_back({std::move(l), op, e, std::move(a)});
  };
  // matmul: K, M <= 128; N <= 512 (gen2/3), 4096 fp32 / 8192 bf16 dst (gen4); dst fp32 (bf16 on
  // gen4); fp32 inputs pair with fp32; transpose mode (gen3+).
  auto mm = [&](std::string l, Tile d, Tile s, Tile m, std::string tr = "0") {
    add("matmul " + l, O::matmul, E::pe,
        {{"dst", d}, {"stationary", s}, {"moving", m}, {"transpose", tr}});
  };
  mm("base", ps(F32, 128, 512), sb(BF, 128, 128), sb(BF, 128, 512));
  mm("N=513", ps(F32, 128, 513), sb(BF, 128, 128), sb(BF, 128, 513));
  mm("N=1024", ps(F32, 128, 1024), sb(BF, 128, 128), sb(BF, 128, 1024));
  mm("N=4096", ps(F32, 4, 4096), sb(BF, 4, 4), sb(BF, 4, 4096));
  mm("N=4097", ps(F32, 4, 4097), sb(BF, 4, 4), sb(BF, 4, 4097));
  mm("bf16 dst", ps(BF, 128, 512), sb(BF, 128, 128), sb(BF, 128, 512));
  mm("bf16 dst N=8192", ps(BF, 4, 8192), sb(BF, 4, 4), sb(BF, 4, 8192));
  mm("bf16 dst N=8193", ps(BF, 4, 8193), sb(BF, 4, 4), sb(BF, 4, 8193));
  mm("int32 dst", ps(I32, 128, 512), sb(BF, 128, 128), sb(BF, 128, 512));
  mm("M=129", ps(F32, 128, 512), sb(BF, 128, 129), sb(BF, 128, 512));
  mm("K mismatch", ps(F32, 128, 512), sb(BF, 128, 128), sb(BF, 64, 512));
  mm("dst shape", ps(F32, 100, 512), sb(BF, 128, 128), sb(BF, 128, 512));
  mm("fp32 pairing", ps(F32, 128, 128), sb(BF, 128, 128), sb(F32, 128, 128));
  mm("fp32 inputs", ps(F32, 128, 128), sb(F32, 128, 128), sb(F32, 128, 128));
  mm("int8 input", ps(F32, 128, 128), sb(I8, 128, 128), sb(BF, 128, 128));
  mm("transpose", ps(BF, 16, 32), sb(BF, 32, 16), sb(BF, 32, 32), "1");
  mm("transpose fp32 dst", ps(F32, 16, 32), sb(BF, 32, 16), sb(BF, 32, 32), "1");
  mm("stationary in psum", ps(F32, 128, 512), ps(BF, 128, 128), sb(BF, 128, 512));
  // pe transpose: src <= 128 elements per partition, same dtype.
  add("pe_transpose base", O::pe_transpose, E::pe,
      {{"dst", ps(BF, 128, 64)}, {"src", sb(BF, 64, 128)}});
  add("pe_transpose 129", O::pe_transpose, E::pe,
      {{"dst", ps(BF, 129 - 1, 64)}, {"src", sb(BF, 64, 129)}});
  add("pe_transpose dtype", O::pe_transpose, E::pe,
      {{"dst", ps(F32, 128, 64)}, {"src", sb(BF, 64, 128)}});
  // activation
  add("activation base", O::activation, E::act,
      {{"dst", sb(BF, 128, 64)}, {"src", ps(F32, 128, 64)}});
  add("activation imm bias", O::activation, E::act,
      {{"dst", sb(BF, 128, 64)}, {"src", sb(BF, 128, 64)}, {"bias", "1.0"}});
  add("activation tile bias", O::activation, E::act,
      {{"dst", sb(BF, 128, 64)}, {"src", sb(BF, 128, 64)}, {"bias", sb(F32, 128, 1)}});
  add("activation scale [P,2]", O::activation, E::act,
      {{"dst", sb(BF, 128, 64)}, {"src", sb(BF, 128, 64)}, {"scale", sb(F32, 128, 2)}});
  add("activation reduce_res", O::activation, E::act,
      {{"dst", sb(BF, 128, 64)},
       {"src", sb(BF, 128, 64)},
       {"reduce_cmd", "reset_reduce"},
       {"reduce_res", sb(F32, 128, 1)}});
  add("activation load_reduce", O::activation, E::act,
      {{"dst", sb(BF, 128, 64)}, {"src", sb(BF, 128, 64)}, {"reduce_cmd", "load_reduce"}});
  add("activation src shape", O::activation, E::act,
      {{"dst", sb(BF, 128, 64)}, {"src", sb(BF, 64, 64)}});
  // copy on three engines; start partitions; pool never in psum
  for (E e : {E::act, E::dve, E::pool}) {
    const std::string n(name_of(e));
    add(n + " copy base", O::copy, e, {{"dst", sb(BF, 128, 64)}, {"src", sb(F32, 128, 64)}});
    add(n + " copy psum", O::copy, e, {{"dst", sb(BF, 128, 64)}, {"src", ps(F32, 128, 64)}});
    add(n + " copy size", O::copy, e, {{"dst", sb(BF, 128, 64)}, {"src", sb(F32, 128, 65)}});
    add(n + " copy start 32/32", O::copy, e,
        {{"dst", sb(BF, 32, 64, 32)}, {"src", sb(F32, 32, 64, 96)}});
    add(n + " copy start 32/33", O::copy, e,
        {{"dst", sb(BF, 33, 64, 32)}, {"src", sb(F32, 33, 64)}});
    add(n + " copy start 64/64", O::copy, e,
        {{"dst", sb(BF, 64, 64, 64)}, {"src", sb(F32, 64, 64)}});
    add(n + " copy start 64/65", O::copy, e,
        {{"dst", sb(BF, 63, 64, 64)}, {"src", sb(F32, 63, 64, 1)}});
    add(n + " tensor_scalar add", O::tensor_scalar, e,
        {{"dst", sb(F32, 128, 64)},
         {"src", sb(F32, 128, 64)},
         {"op0", "add"},
         {"operand0", "2.0"}});
    add(n + " tensor_scalar subtract", O::tensor_scalar, e,
        {{"dst", sb(F32, 128, 64)}, {"src", sb(F32, 128, 64)}, {"op0", "subtract"}});
    add(n + " tensor_scalar mul add tile", O::tensor_scalar, e,
        {{"dst", sb(F32, 128, 64)},
         {"src", sb(F32, 128, 64)},
         {"op0", "multiply"},
         {"operand0", sb(F32, 128, 1)},
         {"op1", "add"}});
    add(n + " tensor_scalar shl int", O::tensor_scalar, e,
        {{"dst", sb(I32, 128, 64)},
         {"src", sb(I32, 128, 64)},
         {"op0", "left_shift"},
         {"operand0", "1.0"}});
    add(n + " tensor_scalar shl float", O::tensor_scalar, e,
        {{"dst", sb(F32, 128, 64)}, {"src", sb(F32, 128, 64)}, {"op0", "left_shift"}});
    add(n + " tensor_scalar bypass", O::tensor_scalar, e,
        {{"dst", sb(F32, 128, 64)}, {"src", sb(F32, 128, 64)}, {"op0", "bypass"}});
  }
  for (E e : {E::dve, E::pool}) {
    const std::string n(name_of(e));
    auto tt = [&](std::string l, std::string op, Tile d, Tile a, Tile b) {
      add(n + " tensor_tensor " + l, O::tensor_tensor, e,
          {{"dst", d}, {"in0", a}, {"in1", b}, {"op", op}});
    };
    tt("add", "add", sb(F32, 128, 64), sb(F32, 128, 64), sb(BF, 128, 64));
    tt("abs_max", "abs_max", sb(F32, 128, 64), sb(F32, 128, 64), sb(F32, 128, 64));
    tt("power", "power", sb(F32, 128, 64), sb(F32, 128, 64), sb(F32, 128, 64));
    tt("abs", "abs", sb(F32, 128, 64), sb(F32, 128, 64), sb(F32, 128, 64));
    tt("both psum", "add", sb(F32, 128, 64), ps(F32, 128, 64), ps(F32, 128, 64));
    tt("xor float", "bitwise_xor", sb(F32, 128, 64), sb(I32, 128, 64), sb(I32, 128, 64));
    tt("xor int", "bitwise_xor", sb(I32, 128, 64), sb(I32, 128, 64), sb(I32, 128, 64));
    tt("in1 shape", "add", sb(F32, 128, 64), sb(F32, 128, 64), sb(F32, 64, 64));
    add(n + " memset", O::memset, e, {{"dst", sb(BF, 128, 64)}, {"value", "1.5"}});
    add(n + " memset psum", O::memset, e, {{"dst", ps(F32, 128, 64)}, {"value", "1.5"}});
  }
  add("stt base", O::scalar_tensor_tensor, E::dve,
      {{"dst", sb(F32, 128, 64)},
       {"in0", sb(F32, 128, 64)},
       {"op0", "multiply"},
       {"operand0", "2.0"},
       {"op1", "add"},
       {"in1", sb(F32, 128, 64)}});
  add("stt bitvec", O::scalar_tensor_tensor, E::dve,
      {{"dst", sb(I32, 128, 64)},
       {"in0", sb(I32, 128, 64)},
       {"op0", "bitwise_and"},
       {"op1", "add"},
       {"in1", sb(I32, 128, 64)}});
  add("stt unary op1", O::scalar_tensor_tensor, E::dve,
      {{"dst", sb(F32, 128, 64)},
       {"in0", sb(F32, 128, 64)},
       {"op0", "add"},
       {"op1", "relu"},
       {"in1", sb(F32, 128, 64)}});
  add("tensor_reduce base", O::tensor_reduce, E::dve,
      {{"dst", sb(F32, 128, 1)}, {"src", sb(F32, 128, 64)}, {"op", "max"}});
  add("tensor_reduce axes 2", O::tensor_reduce, E::dve,
      {{"dst", sb(F32, 128, 1)}, {"src", sb(F32, 128, 64)}, {"op", "add"}, {"axes", "2"}});
  add("tensor_reduce subtract", O::tensor_reduce, E::dve,
      {{"dst", sb(F32, 128, 1)}, {"src", sb(F32, 128, 64)}, {"op", "subtract"}});
  add("tensor_reduce dst", O::tensor_reduce, E::dve,
      {{"dst", sb(F32, 128, 2)}, {"src", sb(F32, 128, 64)}, {"op", "add"}});
  add("copy_predicated base", O::copy_predicated, E::dve,
      {{"dst", sb(BF, 128, 64)}, {"src", sb(BF, 128, 64)}, {"pred", sb(U32, 128, 64)}});
  add("copy_predicated dtype", O::copy_predicated, E::dve,
      {{"dst", sb(BF, 128, 64)}, {"src", sb(F32, 128, 64)}, {"pred", sb(U32, 128, 64)}});
  add("scan base", O::scan, E::dve,
      {{"dst", sb(F32, 128, 64)}, {"in0", sb(F32, 128, 64)}, {"in1", sb(F32, 128, 64)}});
  add("scan init [P,2]", O::scan, E::dve,
      {{"dst", sb(F32, 128, 64)},
       {"in0", sb(F32, 128, 64)},
       {"in1", sb(F32, 128, 64)},
       {"init", sb(F32, 128, 2)}});
  add("reciprocal", O::reciprocal, E::dve, {{"dst", sb(F32, 128, 64)}, {"src", ps(F32, 128, 64)}});
  for (uint32_t n : {7u, 8u, 16384u, 16385u})
    add(fmt::format("max8 src {}", n), O::max8, E::dve,
        {{"dst", sb(F32, 4, 8)}, {"src", sb(F32, 4, n)}});
  add("max8 dst 16", O::max8, E::dve, {{"dst", sb(F32, 4, 16)}, {"src", sb(F32, 4, 64)}});
  add("find_index8 base", O::find_index8, E::dve,
      {{"dst", sb(U32, 4, 8)}, {"data", sb(F32, 4, 64)}, {"vals", sb(F32, 4, 8)}});
  add("find_index8 float dst", O::find_index8, E::dve,
      {{"dst", sb(F32, 4, 8)}, {"data", sb(F32, 4, 64)}, {"vals", sb(F32, 4, 8)}});
  add("match_replace8 base", O::match_replace8, E::dve,
      {{"dst", sb(F32, 4, 64)}, {"data", sb(F32, 4, 64)}, {"vals", sb(F32, 4, 8)}});
  add("match_replace8 idx", O::match_replace8, E::dve,
      {{"dst", sb(F32, 4, 64)},
       {"data", sb(F32, 4, 64)},
       {"vals", sb(F32, 4, 8)},
       {"idx", sb(U32, 4, 8)}});
  add("match_replace8 float idx", O::match_replace8, E::dve,
      {{"dst", sb(F32, 4, 64)},
       {"data", sb(F32, 4, 64)},
       {"vals", sb(F32, 4, 8)},
       {"idx", sb(F32, 4, 8)}});
  add("dve transpose 32", O::dve_transpose, E::dve,
      {{"dst", sb(BF, 32, 32)}, {"src", sb(BF, 32, 32)}});
  add("dve transpose 33", O::dve_transpose, E::dve,
      {{"dst", sb(BF, 32, 32)}, {"src", sb(BF, 32, 33)}});
  add("dve transpose 64x32", O::dve_transpose, E::dve,
      {{"dst", sb(BF, 64, 32)}, {"src", sb(BF, 64, 32)}});
  const std::string ident = "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, "
                            "19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31]";
  add("stream_shuffle base", O::stream_shuffle, E::dve,
      {{"dst", sb(F32, 32, 16)}, {"src", sb(F32, 32, 16)}, {"mask", ident}});
  add("stream_shuffle short src", O::stream_shuffle, E::dve,
      {{"dst", sb(F32, 32, 16)}, {"src", sb(F32, 16, 16)}, {"mask", ident}});
  add("iota base", O::iota, E::pool, {{"dst", sb(I32, 128, 64)}, {"pattern", "[[1, 64]]"}});
  add("iota short", O::iota, E::pool, {{"dst", sb(I32, 128, 64)}, {"pattern", "[[1, 63]]"}});
  add("affine_select base", O::affine_select, E::pool,
      {{"dst", sb(F32, 128, 64)},
       {"on_true", sb(F32, 128, 64)},
       {"pattern", "[[1, 64]]"},
       {"cmp", "greater_equal"}});
  add("affine_select add", O::affine_select, E::pool,
      {{"dst", sb(F32, 128, 64)},
       {"on_true", sb(F32, 128, 64)},
       {"pattern", "[[1, 64]]"},
       {"cmp", "add"}});
  add("n_gather base", O::n_gather, E::pool,
      {{"dst", sb(F32, 128, 16)}, {"data", sb(F32, 128, 64)}, {"idx", sb(U32, 128, 16)}});
  add("n_gather float idx", O::n_gather, E::pool,
      {{"dst", sb(F32, 128, 16)}, {"data", sb(F32, 128, 64)}, {"idx", sb(F32, 128, 16)}});
  add("dma base", O::dma, E::sp,
      {{"queue", "q0"}, {"dst", sb(BF, 128, 64)}, {"src", hb(F32, 128, 64)}});
  add("dma counts", O::dma, E::sp,
      {{"queue", "q0"}, {"dst", sb(BF, 128, 64)}, {"src", hb(F32, 128, 32)}});
  add("dma reshaped", O::dma, E::sp,
      {{"queue", "q0"}, {"dst", sb(F32, 64, 128)}, {"src", hb(F32, 128, 64)}});
  add("dma psum", O::dma, E::sp,
      {{"queue", "q0"}, {"dst", ps(F32, 128, 64)}, {"src", hb(F32, 128, 64)}});
  add("dma_transpose bf16", O::dma_transpose, E::sp,
      {{"queue", "q0"}, {"dst", sb(BF, 64, 32)}, {"src", hb(BF, 32, 64)}});
  add("dma_transpose int8", O::dma_transpose, E::sp,
      {{"queue", "q0"}, {"dst", sb(I8, 64, 32)}, {"src", hb(I8, 32, 64)}});
  add("dma_transpose shape", O::dma_transpose, E::sp,
      {{"queue", "q0"}, {"dst", sb(BF, 32, 64)}, {"src", hb(BF, 32, 64)}});
  add("dma_compute base", O::dma_compute, E::sp,
      {{"queue", "q0"},
       {"dst", sb(F32, 128, 64)},
       {"src0", hb(F32, 128, 64)},
       {"src1", sb(F32, 128, 64)}});
  add("dma_compute counts", O::dma_compute, E::sp,
      {{"queue", "q0"},
       {"dst", sb(F32, 128, 64)},
       {"src0", hb(F32, 128, 64)},
       {"src1", sb(F32, 128, 63)}});
  return c;
}

std::vector<int64_t> ints_of(const std::string& s) {
  std::vector<int64_t> v;
  static const std::regex num("-?[0-9]+");
  for (auto it = std::sregex_iterator(s.begin(), s.end(), num); it != std::sregex_iterator(); ++it)
    v.push_back(std::stoll(it->str()));
  return v;
}

// The assembler's verdict: "" when accepted, else the diagnostics.
std::string assemble_verdict(const Case& c, Target t) {
  std::string decls, line = fmt::format("  {}.{} ", name_of(c.eng), desc(c.op).mnemonic);
  int n = 0;
  for (const Arg& a : c.args) {
    std::string text;
    if (const Tile* x = std::get_if<Tile>(&a.v)) {
      const std::string name = fmt::format("t{}", n++);
      const uint64_t eb = dtype_bytes(x->dt);
      uint64_t cols = x->free; // PSUM tensors: up to one bank, or whole banks
      if (x->sp == MemSpace::psum && cols * eb > kPsumBankBytes)
        cols = (cols * eb + kPsumBankBytes - 1) / kPsumBankBytes * kPsumBankBytes / eb;
      if (x->sp == MemSpace::hbm) {
        decls += fmt::format(".hbm {} : {}[{}, {}]\n", name, dtype_name(x->dt), x->parts, x->free);
        text = name;
      } else {
        decls +=
            fmt::format(".{} {} : {}[128, {}]\n", name_of(x->sp), name, dtype_name(x->dt), cols);
        text = fmt::format("{}[{}:{}, 0:{}]", name, x->p0, x->p0 + x->parts, x->free);
      }
    } else {
      text = std::get<std::string>(a.v);
    }
    line += fmt::format("{}{}={}", &a == &c.args.front() ? "" : ", ", a.name, text);
  }
  nasm::AsmOptions o;
  o.target = t;
  const nasm::AsmResult r = nasm::assemble_string(decls + line + "\n", "case.nasm", o);
  return r.ok() ? "" : r.diagnostics_text();
}

// The interpreter's verdict: "" when the semantics run, else the Fault.
std::string run_verdict(const Case& c, Target t) {
  Bench b(t);
  Inst in = make(c.op, c.eng);
  uint64_t sbuf = 0, psum = 0, hbm = 0;
  for (const Arg& a : c.args) {
    const int k = ew::operand_index(in, a.name);
    const OperandDesc& od = desc(c.op).operands[size_t(k)];
    Operand& o = in.ops[size_t(k)];
    if (const Tile* x = std::get_if<Tile>(&a.v)) {
      const uint64_t bytes = uint64_t(x->free) * dtype_bytes(x->dt);
      uint64_t& top = x->sp == MemSpace::sbuf ? sbuf : x->sp == MemSpace::psum ? psum : hbm;
      AccessPattern ap = Bench::tile(x->sp, x->dt, x->p0, x->parts, top, x->free);
      if (x->sp == MemSpace::hbm)
        ap.part_stride = x->free, top += bytes * x->parts;
      else
        top += (bytes + 63) / 64 * 64;
      set_ap(in, a.name, ap);
      o.is_ap = od.kind == OperandKind::Scalar;
      continue;
    }
    const std::string& s = std::get<std::string>(a.v);
    switch (od.kind) {
    case OperandKind::Enum: o.i = *enum_parse(od.enum_type, s); break;
    case OperandKind::Scalar:
    case OperandKind::ImmF: o.f = std::stof(s); break;
    case OperandKind::Queue: o.i = std::stoll(s.substr(1)); break;
    case OperandKind::Pattern: {
      const auto v = ints_of(s);
      o.pat.n = uint8_t(v.size() / 2);
      for (size_t j = 0; j < v.size() / 2; ++j)
        o.pat.d[j] = {int32_t(v[2 * j]), int32_t(v[2 * j + 1])};
      break;
    }
    case OperandKind::Mask: {
      const auto v = ints_of(s);
      for (size_t j = 0; j < 32 && j < v.size(); ++j) o.mask.v[j] = uint8_t(v[j]);
      break;
    }
    default: o.i = std::stoll(s); break;
    }
  }
  try {
    b.run(in);
  } catch (const Fault& f) {
    return f.what();
  }
  return "";
}

TEST(Legality, AssemblerAndInterpreterAgreeOnEveryCase) {
  int accepted = 0, rejected = 0;
  for (const Case& c : cases())
    for (Target t : {Target::trn1, Target::trn2, Target::trn3}) {
      const std::string a = assemble_verdict(c, t), r = run_verdict(c, t);
      EXPECT_EQ(a.empty(), r.empty())
          << c.label << " on " << name_of(t) << "\n  assembler: " << (a.empty() ? "accepts" : a)
          << "\n  interpreter: " << (r.empty() ? "accepts" : r);
      (a.empty() ? accepted : rejected) += 1;
    }
  // Both verdicts occur (the cases straddle the limits).
  EXPECT_GT(accepted, 50);
  EXPECT_GT(rejected, 50);
}

TEST(Legality, MatmulLimitsPerTarget) {
  EXPECT_EQ(matmul_limits(Target::trn1, DType::fp32).max_n, 512u);
  EXPECT_EQ(matmul_limits(Target::trn2, DType::bf16).max_n, 512u);
  EXPECT_EQ(matmul_limits(Target::trn3, DType::fp32).max_n, 4096u);
  EXPECT_EQ(matmul_limits(Target::trn3, DType::bf16).max_n, 8192u);
  EXPECT_TRUE(matmul_limits(Target::trn2, DType::fp32).one_psum_bank);
  EXPECT_FALSE(matmul_limits(Target::trn3, DType::fp32).one_psum_bank);
  EXPECT_FALSE(matmul_dst_dtype_ok(Target::trn2, DType::bf16));
  EXPECT_TRUE(matmul_dst_dtype_ok(Target::trn3, DType::bf16));
  EXPECT_FALSE(matmul_dst_dtype_ok(Target::trn3, DType::fp16));
  EXPECT_FALSE(matmul_limits(Target::trn1, DType::fp32).transpose_mode); // the flag is ignored
  EXPECT_TRUE(matmul_limits(Target::trn2, DType::fp32).transpose_mode);
}

} // namespace
} // namespace nisa::interp::test
