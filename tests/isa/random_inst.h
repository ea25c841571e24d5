// Random valid instructions and modules for property tests (codec round trips here, and
// print -> assemble round trips in tests/asm). Header-only.
//
// Every value stays within what assembly text can express: finite floats (plus +-inf, never
// -0.0 or NaN), semaphore / group / label indices below the limits given (so a test can
// declare s0..s{sems-1}, g0..g{groups-1} and enough instructions), small strides and counts.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "isa/isa.h"
#include "isa/module.h"

namespace nisa::testing {

struct RandomLimits {
  uint16_t sems = 8;    // semaphore indices < sems (waits, signals, Sem operands)
  uint16_t groups = 4;  // replica-group indices < groups
  uint32_t labels = 16; // branch targets < labels
};

class RandomGen {
public:
  explicit RandomGen(std::mt19937_64& rng, RandomLimits lim = {}) : rng_(rng), lim_(lim) {}

  int64_t range(int64_t lo, int64_t hi) { // inclusive
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }

  // Finite fp32 of several flavours: small integers, binary fractions, arbitrary finite bit
  // patterns, and rarely +-inf. Never NaN or -0.0.
  float f32() {
    switch (range(0, 9)) {
    case 0: return static_cast<float>(range(-8, 8));
    case 1: return static_cast<float>(range(-4096, 4096)) / 64.0f;
    case 2: return chance(0.5) ? INFINITY : -INFINITY;
    default: {
      for (;;) {
        uint32_t u = static_cast<uint32_t>(range(0, 0xffffffffll));
        float f;
        std::memcpy(&f, &u, 4);
        if (std::isfinite(f) && u != 0x80000000u) return f;
      }
    }
    }
  }
  int32_t i32() {
    switch (range(0, 2)) {
    case 0: return static_cast<int32_t>(range(-16, 16));
    case 1: return static_cast<int32_t>(range(-100000, 100000));
    default: return static_cast<int32_t>(range(INT32_MIN, INT32_MAX));
    }
  }
  template <class E> E pick_enum() {
    auto ms = enum_members(enum_type_of<E>());
    return static_cast<E>(ms[range(0, static_cast<int64_t>(ms.size()) - 1)].value);
  }
  DType dtype() { return static_cast<DType>(range(0, kNumDTypes - 1)); }
  MemSpace space(uint8_t mask) {
    std::vector<MemSpace> ok;
    for (MemSpace s : {MemSpace::hbm, MemSpace::sbuf, MemSpace::psum})
      if (mask & space_bit(s)) ok.push_back(s);
    return ok[range(0, static_cast<int64_t>(ok.size()) - 1)];
  }
  Engine engine(uint8_t mask) {
    std::vector<Engine> ok;
    for (int e = 0; e < kNumEngines; ++e)
      if (mask & (1u << e)) ok.push_back(static_cast<Engine>(e));
    return ok[range(0, static_cast<int64_t>(ok.size()) - 1)];
  }

  VecIndex vidx() {
    VecIndex v;
    v.part_count = static_cast<uint16_t>(range(1, kNumPartitions));
    v.part_start = static_cast<uint16_t>(range(0, kNumPartitions - v.part_count));
    v.offset = static_cast<uint32_t>(range(0, 200000));
    const DType ints[] = {DType::int32,  DType::uint32, DType::int16,
                          DType::uint16, DType::int8,   DType::uint8};
    v.dtype = ints[range(0, 5)];
    return v;
  }

  AccessPattern ap(uint8_t spaces) {
    AccessPattern a;
    a.space = space(spaces);
    a.dtype = dtype();
    a.ndims = static_cast<uint8_t>(range(1, kMaxFreeDims));
    for (int k = 0; k < a.ndims; ++k) {
      a.dims[k].stride = static_cast<int32_t>(chance(0.8) ? range(0, 64) : range(-64, -1));
      a.dims[k].count = static_cast<uint32_t>(chance(0.9) ? range(1, 32) : range(1, 100000));
    }
    if (a.space == MemSpace::hbm) {
      a.part_count = static_cast<uint16_t>(range(1, 1024));
      a.part_stride = chance(0.9) ? range(0, 1 << 20) : range(-4096, -1);
      a.offset = static_cast<uint64_t>(range(0, int64_t{1} << 34));
    } else {
      a.part_count = static_cast<uint16_t>(range(1, kNumPartitions));
      a.part_start = static_cast<uint16_t>(range(0, kNumPartitions - a.part_count));
      a.offset = static_cast<uint64_t>(range(0, 245752));
    }
    const int64_t dyn = range(0, 4); // 0-2: none, 3: reg, 4: vec (hbm only, else reg)
    if (dyn >= 3) {
      a.dyn = dyn == 4 && a.space == MemSpace::hbm ? DynKind::vec : DynKind::reg;
      if (a.dyn == DynKind::reg)
        a.dyn_reg = static_cast<uint8_t>(range(0, kNumRegs - 1));
      else
        a.vidx = vidx();
      a.dyn_mult = range(0, 1 << 20);
      a.dyn_limit = static_cast<uint32_t>(range(1, 1 << 24));
    }
    return a;
  }

  AffinePattern pattern() {
    AffinePattern p;
    p.n = static_cast<uint8_t>(range(1, 4));
    for (int k = 0; k < p.n; ++k) {
      p.d[k][0] = static_cast<int32_t>(range(-1000, 1000));
      p.d[k][1] = static_cast<int32_t>(range(1, 512));
    }
    return p;
  }

  ShuffleMask mask() {
    ShuffleMask m;
    for (auto& v : m.v) v = chance(0.2) ? 255 : static_cast<uint8_t>(range(0, 31));
    return m;
  }

  // A non-default value of operand d (required operands always get one).
  Operand operand(const OperandDesc& d) {
    Operand o;
    switch (d.kind) {
    case OperandKind::Dst:
    case OperandKind::Src: o.ap = ap(d.spaces); break;
    case OperandKind::Scalar:
      o.is_ap = chance(0.5);
      if (o.is_ap)
        o.ap = ap(d.spaces);
      else
        o.f = f32();
      break;
    case OperandKind::ImmF: o.f = f32(); break;
    case OperandKind::ImmI: o.i = i32(); break;
    case OperandKind::Bool: o.i = range(0, 1); break;
    case OperandKind::Enum: {
      auto ms = enum_members(d.enum_type);
      o.i = ms[range(0, static_cast<int64_t>(ms.size()) - 1)].value;
      break;
    }
    case OperandKind::Reg: o.i = range(0, kNumRegs - 1); break;
    case OperandKind::RegOrImm:
      o.is_reg = chance(0.5);
      o.i = o.is_reg ? range(0, kNumRegs - 1) : i32();
      break;
    case OperandKind::Queue: o.i = range(0, kNumDmaQueues - 1); break;
    case OperandKind::Sem: o.i = range(0, lim_.sems - 1); break;
    case OperandKind::Label: o.i = range(0, lim_.labels - 1); break;
    case OperandKind::Group: o.i = range(0, lim_.groups - 1); break;
    case OperandKind::Pattern: o.set_pat() = pattern(); break;
    case OperandKind::Mask: o.set_mask() = mask(); break;
    }
    return o;
  }

  // A valid instance of `op` on a random allowed engine. With a target, operands that are
  // generation-limited keep their default where the target lacks them.
  Inst inst(Opcode op, std::optional<Target> target = std::nullopt) {
    const InstDesc& d = desc(op);
    return inst_on(op, engine(d.engines), target);
  }

  Inst inst_on(Opcode op, Engine eng, std::optional<Target> target = std::nullopt) {
    const InstDesc& d = desc(op);
    Inst in = make_inst(op, eng);
    for (size_t k = 0; k < d.operands.size(); ++k) {
      const OperandDesc& od = d.operands[k];
      const bool gen_ok = !target || (od.gens & gen_bit(*target));
      if (!od.optional || (gen_ok && chance(0.7))) in.ops[k] = operand(od);
      // A scalar whose immediate form is generation-limited: a tile where the target lacks it.
      if (target && od.kind == OperandKind::Scalar && !(od.imm_gens & gen_bit(*target)) &&
          !in.ops[k].is_ap && !is_default(od, in.ops[k]))
        in.ops[k] = default_operand(od);
    }
    if (lim_.sems > 0) {
      in.waits.resize(static_cast<size_t>(chance(0.5) ? 0 : range(1, kMaxWaits)));
      for (auto& w : in.waits) {
        w.sem = static_cast<uint16_t>(range(0, lim_.sems - 1));
        w.cmp = pick_enum<WaitCmp>();
        w.value = static_cast<uint32_t>(chance(0.9) ? range(0, 1000) : range(0, 0xffffffffll));
      }
      in.signals.resize(static_cast<size_t>(chance(0.5) ? 0 : range(1, kMaxSignals)));
      for (auto& s : in.signals) {
        s.sem = static_cast<uint16_t>(range(0, lim_.sems - 1));
        s.delta = static_cast<uint32_t>(chance(0.9) ? range(1, 16) : range(0, 0xffffffffll));
      }
    }
    return in;
  }

  std::string name(const char* prefix, size_t k) { return prefix + std::to_string(k); }

  // A module whose declarations cover every index its instructions use.
  Module module(size_t max_stream = 12) {
    Module m;
    m.target = pick_enum<Target>();
    m.kernel = chance(0.5) ? "k" + std::to_string(range(0, 99)) : "";
    for (int64_t k = range(0, 3); k > 0; --k)
      m.params.emplace_back(name("P", static_cast<size_t>(k)), std::to_string(range(0, 4096)));
    for (int64_t k = 0, n = range(0, 5); k < n; ++k) m.tensors.push_back(tensor(name("t", k)));
    for (size_t k = 0; k < lim_.sems; ++k)
      m.sems.push_back({name("s", k), static_cast<uint32_t>(range(0, 3))});
    for (size_t k = 0; k < lim_.groups; ++k) m.groups.push_back(group(name("g", k)));
    m.files.push_back("main.nasm");
    for (int64_t k = range(0, 2); k > 0; --k) m.files.push_back(name("inc", k) + ".inc");
    for (int64_t k = 0, n = range(0, 4); k < n; ++k) m.frames.push_back(frame(m, k));
    for (int e = 0; e < kNumEngines; ++e) fill_stream(m, static_cast<Engine>(e), max_stream);
    return m;
  }

private:
  TensorDecl tensor(std::string n) {
    TensorDecl t;
    t.name = std::move(n);
    t.space = space(kSpaceH | kSpaceS | kSpaceP);
    t.dtype = dtype();
    t.role = pick_enum<Role>();
    t.shape.resize(static_cast<size_t>(range(1, 4)));
    for (auto& d : t.shape) d = range(1, 1024); // ends below kMaxHbmExtent (isa/limits.h)
    t.address = static_cast<uint64_t>(range(0, int64_t{1} << 32));
    if (t.space != MemSpace::hbm) {
      // The object reader rejects rows ending past kMaxOnChipExtent (isa/limits.h).
      for (auto& d : t.shape) d = range(1, 64);
      t.shape[0] = range(1, kNumPartitions);
      t.part_start = static_cast<uint16_t>(range(0, kNumPartitions - t.shape[0]));
      t.address = static_cast<uint64_t>(range(0, int64_t{1} << 20));
    }
    return t;
  }

  ReplicaGroupDecl group(std::string n) {
    ReplicaGroupDecl g{std::move(n), {}};
    g.groups.resize(static_cast<size_t>(range(1, 3)));
    uint32_t next = 0;
    for (auto& ranks : g.groups)
      for (int64_t k = range(1, 4); k > 0; --k) ranks.push_back(next++);
    return g;
  }

  ExpansionFrame frame(const Module& m, int64_t k) {
    ExpansionFrame f;
    f.kind = static_cast<ExpansionFrame::Kind>(range(0, 2));
    f.what = f.kind == ExpansionFrame::ForIter ? "i=" + std::to_string(range(0, 9)) : "m";
    f.file = static_cast<uint32_t>(range(0, static_cast<int64_t>(m.files.size()) - 1));
    f.line = static_cast<uint32_t>(range(1, 500));
    f.col = static_cast<uint32_t>(range(1, 80));
    f.parent = static_cast<int32_t>(range(-1, k - 1));
    return f;
  }

  void fill_stream(Module& m, Engine e, size_t max_stream) {
    std::vector<Opcode> ops;
    for (const auto& d : inst_table())
      if ((d.engines & engine_bit(e)) && (d.gens & gen_bit(m.target))) ops.push_back(d.op);
    const auto n = static_cast<size_t>(range(0, static_cast<int64_t>(max_stream)));
    auto& stream = m.streams[static_cast<int>(e)];
    const RandomLimits saved = lim_;
    lim_.labels = static_cast<uint32_t>(n + 1); // branch targets inside the stream (or its end)
    for (size_t k = 0; k < n; ++k)
      stream.push_back(inst_on(ops[range(0, static_cast<int64_t>(ops.size()) - 1)], e, m.target));
    lim_ = saved;
    if (n > 0 && chance(0.7))
      for (size_t k = 0; k < n; ++k)
        m.debug[static_cast<int>(e)].push_back(
            {static_cast<uint32_t>(range(0, static_cast<int64_t>(m.files.size()) - 1)),
             static_cast<uint32_t>(range(1, 1000)), static_cast<uint32_t>(range(1, 100)),
             static_cast<int32_t>(range(-1, static_cast<int64_t>(m.frames.size()) - 1))});
    for (int64_t k = range(0, 2); k > 0; --k)
      m.labels[static_cast<int>(e)].push_back(
          {name("L", static_cast<size_t>(k)),
           static_cast<uint32_t>(range(0, static_cast<int64_t>(n)))});
  }

  std::mt19937_64& rng_;
  RandomLimits lim_;
};

// The entry points the brief names.
inline Inst random_inst(std::mt19937_64& rng, Opcode op, RandomLimits lim = {}) {
  return RandomGen(rng, lim).inst(op);
}
inline Module random_module(std::mt19937_64& rng, RandomLimits lim = {}) {
  return RandomGen(rng, lim).module();
}

} // namespace nisa::testing
