// Instruction encoder, validating decoder and the table-rule check (docs/encoding.md).
#include "isa/encode.h"

#include <fmt/format.h>

#include <bit>
#include <cstdlib>
#include <cstring>

#include "isa/encode_io.h"
#include "isa/legality.h"

namespace nisa {
namespace {

using K = OperandKind;

bool valid_opcode(Opcode op) { return static_cast<unsigned>(op) < kNumOpcodes; }
bool valid_engine(Engine e) { return static_cast<unsigned>(e) < kNumEngines; }
bool valid_dtype(DType t) { return static_cast<unsigned>(t) < kNumDTypes; }

std::string spaces_text(uint8_t mask) {
  std::string s;
  for (MemSpace sp : {MemSpace::hbm, MemSpace::sbuf, MemSpace::psum})
    if (mask & space_bit(sp)) s += (s.empty() ? "" : "|") + std::string(name_of(sp));
  return s;
}

std::string space_text(MemSpace s) {
  auto n = name_of(s);
  return n.empty() ? fmt::format("{}", static_cast<int>(s)) : std::string(n);
}

// ---- table rules ----------------------------------------------------------------------------
//
// Each rule reads `if (broken) return out.fail(message);`, the message a string or a lambda that
// builds it. The rules run first with Quiet, which builds no message (the success path is a
// bool); only when one breaks do they run again with Why, which keeps the first message.
struct Quiet {
  template <class F> static bool fail(F&&) { return false; }
};
struct Why {
  std::string text;
  bool fail(const char* s) {
    text = s;
    return false;
  }
  template <class F> bool fail(F&& f) {
    text = f();
    return false;
  }
};
// nullopt when rules(out) hold, else the message of the first broken one.
template <class R> std::optional<std::string> first_broken(R rules) {
  if (Quiet q; rules(q)) return std::nullopt;
  Why w;
  rules(w);
  return std::move(w.text);
}

// Nonzero when a and b differ: the defaulted operator== without a branch per field (these tests
// run on every operand of every instruction checked). The size asserts catch a new field; a
// FreeDim has no padding, so its 8 bytes are its value.
constexpr uint64_t diff(const FreeDim& a, const FreeDim& b) {
  return std::bit_cast<uint64_t>(a) ^ std::bit_cast<uint64_t>(b);
}
constexpr uint64_t diff(const VecIndex& a, const VecIndex& b) {
  return uint32_t(a.part_start ^ b.part_start) | uint32_t(a.part_count ^ b.part_count) |
         (a.offset ^ b.offset) | uint32_t(uint8_t(a.dtype) ^ uint8_t(b.dtype));
}
constexpr uint64_t diff(const AccessPattern& a, const AccessPattern& b) {
  uint64_t d = uint32_t(uint8_t(a.space) ^ uint8_t(b.space)) |
               uint32_t(uint8_t(a.dtype) ^ uint8_t(b.dtype)) | uint32_t(a.ndims ^ b.ndims) |
               uint32_t(a.part_start ^ b.part_start) | uint32_t(a.part_count ^ b.part_count) |
               uint64_t(a.part_stride ^ b.part_stride) | (a.offset ^ b.offset) |
               uint32_t(uint8_t(a.dyn) ^ uint8_t(b.dyn)) | uint32_t(a.dyn_reg ^ b.dyn_reg) |
               uint64_t(a.dyn_mult ^ b.dyn_mult) | (a.dyn_limit ^ b.dyn_limit) |
               diff(a.vidx, b.vidx);
#pragma GCC unroll 4
  for (int k = 0; k < kMaxFreeDims; ++k) d |= diff(a.dims[k], b.dims[k]);
  return d;
}
static_assert(sizeof(FreeDim) == 8 && sizeof(VecIndex) == 12 && sizeof(AccessPattern) == 88,
              "a field was added: add it to diff()");
// a == AccessPattern{}.
bool is_no_ap(const AccessPattern& a) {
  static constexpr AccessPattern kNoAp{};
  return !diff(a, kNoAp);
}

// !enum_name(t, v).empty(): whether v is a member of t, decided from isa/enums.def's members
// where this compiles (enum_name searches them at run time). Every member has a name.
#define NISA_NAMED(id, name, value) static_assert(!std::string_view(name).empty());
#define NISA_NAMED_TYPE(T) NISA_ENUM_##T(NISA_NAMED)
NISA_ENUM_TYPES(NISA_NAMED_TYPE)
#undef NISA_NAMED_TYPE
#undef NISA_NAMED
constexpr bool is_member(EnumType t, uint8_t v) {
  switch (t) {
#define NISA_IS(id, name, value) || v == (value)
#define NISA_MEMBER_CASE(T)                                                                        \
  case EnumType::T: return false NISA_ENUM_##T(NISA_IS);
    NISA_ENUM_TYPES(NISA_MEMBER_CASE)
#undef NISA_MEMBER_CASE
#undef NISA_IS
  }
  return false;
}

template <class Out> bool vidx_rules(const VecIndex& v, Out& out) {
  if (!valid_dtype(v.dtype))
    return out.fail([&] { return fmt::format("unknown vector-index dtype {}", int(v.dtype)); });
  if (info(v.dtype).is_float)
    return out.fail([&] {
      return fmt::format("vector-index dtype {} is not an integer type", dtype_name(v.dtype));
    });
  if (v.part_count < 1 || v.part_start + v.part_count > kNumPartitions)
    return out.fail([&] {
      return fmt::format("vector-index partitions [{}, {}) outside 0..128", v.part_start,
                         v.part_start + v.part_count);
    });
  return true;
}

template <class Out> bool dyn_rules(const AccessPattern& ap, Out& out) {
  switch (ap.dyn) {
  case DynKind::none:
    if ((ap.dyn_reg | uint64_t(ap.dyn_mult) | ap.dyn_limit | diff(ap.vidx, VecIndex{})) != 0)
      return out.fail("dynamic-offset fields set without a dynamic offset");
    return true;
  case DynKind::reg:
    if (ap.dyn_reg >= kNumRegs)
      return out.fail([&] { return fmt::format("register r{} > r63", ap.dyn_reg); });
    if (diff(ap.vidx, VecIndex{})) return out.fail("vector-index fields set on a register offset");
    return true;
  case DynKind::vec:
    if (ap.space != MemSpace::hbm) return out.fail("vector offset on a non-hbm access pattern");
    if (ap.dyn_reg != 0) return out.fail("register field set on a vector offset");
    return vidx_rules(ap.vidx, out);
  }
  return out.fail(
      [&] { return fmt::format("unknown dynamic-offset kind {}", static_cast<int>(ap.dyn)); });
}

template <class Out> bool ap_rules(uint8_t spaces, const AccessPattern& ap, Out& out) {
  if (ap.space != MemSpace::hbm && ap.space != MemSpace::sbuf && ap.space != MemSpace::psum)
    return out.fail(
        [&] { return fmt::format("unknown memory space {}", static_cast<int>(ap.space)); });
  if (!(space_bit(ap.space) & spaces))
    return out.fail([&] {
      return fmt::format("space {} not allowed ({})", space_text(ap.space), spaces_text(spaces));
    });
  if (!valid_dtype(ap.dtype))
    return out.fail([&] { return fmt::format("unknown dtype {}", static_cast<int>(ap.dtype)); });
  if (ap.ndims < 1 || ap.ndims > kMaxFreeDims)
    return out.fail([&] { return fmt::format("ndims {} outside 1..{}", ap.ndims, kMaxFreeDims); });
  for (int k = 0; k < ap.ndims; ++k)
    if (ap.dims[k].count < 1)
      return out.fail([&] { return fmt::format("free dim {} has count 0", k); });
  for (int k = ap.ndims; k < kMaxFreeDims; ++k)
    if (diff(ap.dims[k], FreeDim{}))
      return out.fail([&] { return fmt::format("unused free dim {} is not [0, 1]", k); });
  if (ap.part_count < 1) return out.fail("partition count 0");
  if (ap.space == MemSpace::hbm) {
    if (ap.part_start != 0) return out.fail("partition start set on an hbm access pattern");
  } else {
    if (ap.part_start + ap.part_count > kNumPartitions)
      return out.fail([&] {
        return fmt::format("partitions [{}, {}) outside 0..128", ap.part_start,
                           ap.part_start + ap.part_count);
      });
    if (ap.part_stride != 0) return out.fail("row stride set on an on-chip access pattern");
  }
  return dyn_rules(ap, out);
}

std::optional<std::string> check_ap(uint8_t spaces, const AccessPattern& ap) {
  return first_broken([&](auto& out) { return ap_rules(spaces, ap, out); });
}

// The one field of an Operand its kind uses (besides the flags): ap, f, i, pat or mask.
enum class Live { ap, f, i, pat, mask };

// Fields of an Operand not used by its kind must hold their defaults. ap, pat and mask share
// storage: the kind's payload must be the live one, and an ap not used must be the default.
template <Live L, class Out> bool unused_rules(const Operand& o, Out& out) {
  if (L != Live::i && o.i != 0) return out.fail("unused integer field is not 0");
  if (L != Live::f && !(o.f == 0.0f)) return out.fail("unused float field is not 0");
  switch (o.payload) {
  case Payload::pat:
    if (L != Live::pat) return out.fail("unused pattern set");
    break;
  case Payload::mask:
    if (L != Live::mask) return out.fail("unused mask set");
    break;
  default:
    if (L == Live::pat) return out.fail("pattern not set (Operand::set_pat)");
    if (L == Live::mask) return out.fail("mask not set (Operand::set_mask)");
    if (L != Live::ap && !is_no_ap(o.ap)) return out.fail("unused access pattern set");
  }
  return true;
}

template <class Out> bool int_range(int64_t v, int64_t lo, int64_t hi, const char* what, Out& out) {
  if (v < lo || v > hi)
    return out.fail([&] { return fmt::format("{} {} outside {}..{}", what, v, lo, hi); });
  return true;
}

template <class Out> bool pattern_rules(const AffinePattern& p, Out& out) {
  if (p.n < 1 || p.n > 4)
    return out.fail([&] { return fmt::format("pattern has {} pairs (1..4)", p.n); });
  for (int k = 0; k < 4; ++k) {
    if (k < p.n && p.d[k][1] < 1)
      return out.fail([&] { return fmt::format("pattern pair {} has num {} < 1", k, p.d[k][1]); });
    if (k >= p.n && (p.d[k][0] != 0 || p.d[k][1] != 0))
      return out.fail([&] { return fmt::format("unused pattern pair {} is not [0, 0]", k); });
  }
  return true;
}

template <class Out> bool mask_rules(const ShuffleMask& m, Out& out) {
  for (int k = 0; k < 32; ++k)
    if (m.v[k] >= 32 && m.v[k] != 255)
      return out.fail([&] { return fmt::format("mask entry {} is {} (0..31 or 255)", k, m.v[k]); });
  return true;
}

template <class Out> bool operand_rules(const OperandDesc& d, const Operand& o, Out& out) {
  if (d.kind == K::Dst || d.kind == K::Src) {
    if (!o.present) return d.optional || out.fail("missing");
    if (o.is_ap || o.is_reg) return out.fail("is_ap/is_reg flag set on an access pattern");
    return unused_rules<Live::ap>(o, out) && ap_rules(d.spaces, o.ap, out);
  }
  if (!o.present) return out.fail("marked absent (only optional access patterns may be)");
  if (o.is_ap && d.kind != K::Scalar) return out.fail("is_ap flag set");
  if (o.is_reg && d.kind != K::RegOrImm) return out.fail("is_reg flag set");
  switch (d.kind) {
  case K::Scalar:
    if (o.is_ap) return unused_rules<Live::ap>(o, out) && ap_rules(d.spaces, o.ap, out);
    return unused_rules<Live::f>(o, out);
  case K::ImmF: return unused_rules<Live::f>(o, out);
  case K::Pattern: return unused_rules<Live::pat>(o, out) && pattern_rules(o.pat, out);
  case K::Mask: return unused_rules<Live::mask>(o, out) && mask_rules(o.mask, out);
  default: break;
  }
  if (!unused_rules<Live::i>(o, out)) return false;
  switch (d.kind) {
  case K::ImmI: return int_range(o.i, INT32_MIN, INT32_MAX, "value", out);
  case K::Bool: return int_range(o.i, 0, 1, "flag", out);
  case K::Enum:
    if (o.i < 0 || o.i > 255 || !is_member(d.enum_type, static_cast<uint8_t>(o.i)))
      return out.fail([&] {
        return fmt::format("enum value {} out of range ({})", o.i, enum_type_name(d.enum_type));
      });
    return true;
  case K::Reg: return int_range(o.i, 0, kNumRegs - 1, "register", out);
  case K::RegOrImm:
    return o.is_reg ? int_range(o.i, 0, kNumRegs - 1, "register", out)
                    : int_range(o.i, INT32_MIN, INT32_MAX, "value", out);
  case K::Queue: return int_range(o.i, 0, kNumDmaQueues - 1, "queue", out);
  case K::Sem: return int_range(o.i, 0, 0xffff, "semaphore", out);
  case K::Label: return int_range(o.i, 0, 0xffffffffll, "label index", out);
  case K::Group: return int_range(o.i, 0, 0xffff, "replica group", out);
  default: return true;
  }
}

std::string operand_error(const Inst& in, const OperandDesc& d, const std::string& why) {
  return fmt::format("operand '{}' of {}: {}", d.name, inst_name(in), why);
}

template <class Out> bool inst_rules(const Inst& in, Out& out) {
  if (!valid_opcode(in.op))
    return out.fail([&] { return fmt::format("unknown opcode id {}", static_cast<int>(in.op)); });
  if (!valid_engine(in.engine))
    return out.fail([&] { return fmt::format("unknown engine {}", int(in.engine)); });
  const InstDesc& d = desc(in.op);
  if (!(d.engines & engine_bit(in.engine)))
    return out.fail([&] {
      return fmt::format("{} is not available on engine {}", d.mnemonic, name_of(in.engine));
    });
  if (in.waits.size() > kMaxWaits)
    return out.fail([&] {
      return fmt::format("{}: {} waits (at most {})", inst_name(in), in.waits.size(), kMaxWaits);
    });
  if (in.signals.size() > kMaxSignals)
    return out.fail([&] {
      return fmt::format("{}: {} signals (at most {})", inst_name(in), in.signals.size(),
                         kMaxSignals);
    });
  for (const auto& w : in.waits)
    if (!is_member(EnumType::WaitCmp, uint8_t(w.cmp)))
      return out.fail(
          [&] { return fmt::format("{}: unknown wait comparison {}", inst_name(in), int(w.cmp)); });
  if (in.ops.size() != d.operands.size())
    return out.fail([&] {
      return fmt::format("{}: {} operands, the table has {}", inst_name(in), in.ops.size(),
                         d.operands.size());
    });
  for (size_t k = 0, n = in.ops.size(); k < n; ++k)
    if (!operand_rules(d.operands[k], in.ops[k], out)) {
      if constexpr (std::is_same_v<Out, Why>) out.text = operand_error(in, d.operands[k], out.text);
      return false;
    }
  return true;
}

} // namespace

std::string DecodeError::str() const {
  return fmt::format("byte {} (0x{:x}): {}", offset, offset, message);
}

std::string inst_name(const Inst& in) {
  std::string_view eng = valid_engine(in.engine) ? name_of(in.engine) : "?";
  std::string_view mn = valid_opcode(in.op) ? desc(in.op).mnemonic : "?";
  return fmt::format("{}.{}", eng, mn);
}

std::optional<std::string> check_inst(const Inst& in) {
  return first_broken([&](auto& out) { return inst_rules(in, out); });
}

std::optional<std::string> check_inst_for_target(const Inst& in, Target target) {
  if (auto e = check_inst(in)) return e;
  const InstDesc& d = desc(in.op);
  if (!gen_allows(d.gens, target))
    return fmt::format("{} is not available on {}", inst_name(in), name_of(target));
  for (size_t k = 0; k < in.ops.size(); ++k) {
    const OperandDesc& od = d.operands[k];
    if (!gen_allows(od.gens, target) && !is_default(od, in.ops[k]))
      return operand_error(in, od, fmt::format("not available on {}", name_of(target)));
  }
  return std::nullopt;
}

// ---- encoder --------------------------------------------------------------------------------

namespace {

// The most bytes an access pattern takes: the fixed fields, every free dim, a vector index.
constexpr size_t kMaxApBytes = 24 + 8 * kMaxFreeDims + 9 + 12;

size_t max_operand_bytes(OperandKind kind) {
  switch (kind) {
  case K::Dst:
  case K::Src: return kMaxApBytes;
  case K::Scalar: return 1 + kMaxApBytes;
  case K::ImmF:
  case K::ImmI:
  case K::Label: return 4;
  case K::Bool:
  case K::Enum:
  case K::Reg:
  case K::Queue: return 1;
  case K::RegOrImm: return 5;
  case K::Sem:
  case K::Group: return 2;
  case K::Pattern: return 1 + 8 * 4;
  case K::Mask: return std::tuple_size_v<decltype(ShuffleMask::v)>;
  }
  return 1 + kMaxApBytes;
}

} // namespace

std::array<uint32_t, kNumOpcodes> io::make_operand_bounds() {
  std::array<uint32_t, kNumOpcodes> t{};
  for (const InstDesc& d : inst_table()) {
    size_t n = 0;
    for (const OperandDesc& od : d.operands) n += max_operand_bytes(od.kind);
    t[static_cast<size_t>(d.op)] = static_cast<uint32_t>(n);
  }
  return t;
}

namespace {

// The encoders take and return the write position by value, so that it stays in a register.
uint8_t* encode_ap(uint8_t* at, const AccessPattern& ap) {
  io::Put w{at};
  w.u8(static_cast<uint8_t>(ap.space));
  w.u8(static_cast<uint8_t>(ap.dtype));
  w.u8(ap.ndims);
  w.u8(static_cast<uint8_t>(ap.dyn));
  w.u16(ap.part_start);
  w.u16(ap.part_count);
  w.i64(ap.part_stride);
  w.u64(ap.offset);
  for (int k = 0; k < ap.ndims && k < kMaxFreeDims; ++k) {
    w.i32(ap.dims[k].stride);
    w.u32(ap.dims[k].count);
  }
  if (ap.dyn == DynKind::reg) {
    w.u8(ap.dyn_reg);
  } else if (ap.dyn == DynKind::vec) {
    w.u16(ap.vidx.part_start);
    w.u16(ap.vidx.part_count);
    w.u32(ap.vidx.offset);
    w.u8(static_cast<uint8_t>(ap.vidx.dtype));
  }
  if (ap.dyn != DynKind::none) {
    w.i64(ap.dyn_mult);
    w.u32(ap.dyn_limit);
  }
  return w.p;
}

uint8_t* encode_operand(uint8_t* at, const OperandDesc& d, const Operand& o) {
  io::Put w{at};
  switch (d.kind) {
  case K::Dst:
  case K::Src:
    if (o.present)
      w.p = encode_ap(w.p, o.ap);
    else
      w.u8(0);
    break;
  case K::Scalar:
    w.u8(o.is_ap ? 1 : 0);
    if (o.is_ap)
      w.p = encode_ap(w.p, o.ap);
    else
      w.f32(o.f);
    break;
  case K::ImmF: w.f32(o.f); break;
  case K::ImmI: w.i32(static_cast<int32_t>(o.i)); break;
  case K::Bool:
  case K::Enum:
  case K::Reg:
  case K::Queue: w.u8(static_cast<uint8_t>(o.i)); break;
  case K::RegOrImm:
    w.u8(o.is_reg ? 1 : 0);
    w.i32(static_cast<int32_t>(o.i));
    break;
  case K::Sem:
  case K::Group: w.u16(static_cast<uint16_t>(o.i)); break;
  case K::Label: w.u32(static_cast<uint32_t>(o.i)); break;
  case K::Pattern:
    w.u8(o.pat.n);
    for (int k = 0; k < o.pat.n && k < 4; ++k) {
      w.i32(o.pat.d[k][0]);
      w.i32(o.pat.d[k][1]);
    }
    break;
  case K::Mask: w.bytes(o.mask.v.data(), o.mask.v.size()); break;
  }
  return w.p;
}

} // namespace

void encode_inst(const Inst& in, std::vector<uint8_t>& out) {
  io::Writer w(out);
  io::encode_inst(w, in);
}

// Into room made once for the instruction's bound: no bounds check per field.
void io::encode_inst(io::Writer& out, const Inst& in) {
  const InstDesc& d = desc(in.op);
  const size_t bound = io::max_inst_bytes(in);
  io::Put w = out.room(bound);
  uint8_t* const start = w.p;
  w.u16(d.opcode);
  w.u16(0); // length, patched below
  w.u8(static_cast<uint8_t>(in.engine));
  w.u8(static_cast<uint8_t>((in.waits.size() << 4) | in.signals.size()));
  w.u16(0);
  for (const auto& wt : in.waits) {
    w.u16(wt.sem);
    w.u8(static_cast<uint8_t>(wt.cmp));
    w.u8(0);
    w.u32(wt.value);
  }
  for (const auto& s : in.signals) {
    w.u16(s.sem);
    w.u16(0);
    w.u32(s.delta);
  }
  const Operand* ops = in.ops.data();
  const OperandDesc* descs = d.operands.data();
  const size_t n = std::min(in.ops.size(), d.operands.size());
  for (size_t k = 0; k < n; ++k) w.p = encode_operand(w.p, descs[k], ops[k]);
  // max_operand_bytes must bound every kind's encoding: past it, the bytes overran the room.
  if (static_cast<size_t>(w.p - start) > bound) std::abort();
  io::Put len{start + 2};
  len.u16(static_cast<uint16_t>(w.p - start));
  out.commit(w);
}

// ---- decoder --------------------------------------------------------------------------------

namespace {

class InstDecoder {
public:
  InstDecoder(std::span<const uint8_t> bytes, uint64_t offset, Inst& out)
      : bytes_(bytes), start_(offset), in_(out) {}

  uint32_t run() {
    if (start_ >= bytes_.size())
      io::fail(
          bytes_.empty() ? 0 : bytes_.size() - 1,
          fmt::format("no instruction at offset {}: the buffer ends at {}", start_, bytes_.size()));
    io::Reader hdr(bytes_, start_, bytes_.size(), "instruction header");
    const uint16_t code = hdr.u16();
    const InstDesc* d = find_by_opcode(code);
    if (!d) io::fail(start_, fmt::format("unknown opcode 0x{:04x}", code));
    desc_ = d;
    in_.op = d->op;
    const uint16_t length = hdr.u16();
    if (length < kInstHeaderBytes)
      io::fail(start_ + 2, fmt::format("length field {} is shorter than the {}-byte header", length,
                                       kInstHeaderBytes));
    if (length > bytes_.size() - start_)
      io::fail(start_ + 2, fmt::format("length field {} runs past the end of the buffer "
                                       "({} bytes left)",
                                       length, bytes_.size() - start_));
    io::Reader r(bytes_, hdr.pos(), start_ + length, "instruction (see its length field)");
    decode_header_rest(r);
    for (size_t k = 0; k < d->operands.size(); ++k) decode_operand(r, d->operands[k], in_.ops[k]);
    if (r.remaining() != 0)
      io::fail(start_ + 2, fmt::format("length field inconsistent: {} says {} bytes, the "
                                       "operands end after {}",
                                       inst_name(in_), length, r.pos() - start_));
    // No final check_inst: each field is checked as it is read (check_ap for the cross-field
    // rules) and unread fields keep their defaults; tests/isa/robustness_test.cpp verifies
    // that every decoded instruction passes check_inst.
    return length;
  }

private:
  std::string where(const OperandDesc& d) const {
    return fmt::format("operand '{}' of {}", d.name, inst_name(in_));
  }

  void decode_header_rest(io::Reader& r) {
    const uint64_t eng_at = r.pos();
    const uint8_t eng = r.u8();
    if (eng >= kNumEngines) io::fail(eng_at, fmt::format("unknown engine {}", eng));
    in_.engine = static_cast<Engine>(eng);
    if (!(desc_->engines & engine_bit(in_.engine)))
      io::fail(eng_at,
               fmt::format("engine {} not allowed for {}", name_of(in_.engine), desc_->mnemonic));
    const uint64_t counts_at = r.pos();
    const uint8_t counts = r.u8();
    const int nwaits = counts >> 4, nsignals = counts & 15;
    if (nwaits > kMaxWaits || nsignals > kMaxSignals)
      io::fail(counts_at, fmt::format("{}: {} waits, {} signals (at most {} each)", inst_name(in_),
                                      nwaits, nsignals, kMaxWaits));
    r.skip_zero(2, "the instruction header");
    in_.waits.resize(nwaits);
    for (auto& w : in_.waits) {
      w.sem = r.u16();
      const uint64_t cmp_at = r.pos();
      const uint8_t cmp = r.u8();
      if (enum_name(EnumType::WaitCmp, cmp).empty())
        io::fail(cmp_at, fmt::format("unknown wait comparison {}", cmp));
      w.cmp = static_cast<WaitCmp>(cmp);
      r.skip_zero(1, "a wait");
      w.value = r.u32();
    }
    in_.signals.resize(nsignals);
    for (auto& s : in_.signals) {
      s.sem = r.u16();
      r.skip_zero(2, "a signal");
      s.delta = r.u32();
    }
    in_.ops.assign(desc_->operands.size(), Operand{});
  }

  void decode_ap(io::Reader& r, const OperandDesc& d, AccessPattern& ap, uint8_t space) {
    const uint64_t at = r.pos() - 1; // the space byte, already read
    if (space != uint8_t(MemSpace::hbm) && space != uint8_t(MemSpace::sbuf) &&
        space != uint8_t(MemSpace::psum))
      io::fail(at, fmt::format("unknown memory space {} in {}", space, where(d)));
    ap.space = static_cast<MemSpace>(space);
    if (!(space_bit(ap.space) & d.spaces))
      io::fail(at, fmt::format("space {} not allowed for {} ({})", name_of(ap.space), where(d),
                               spaces_text(d.spaces)));
    const uint8_t dt = r.u8();
    if (dt >= kNumDTypes) io::fail(at + 1, fmt::format("unknown dtype {} in {}", dt, where(d)));
    ap.dtype = static_cast<DType>(dt);
    ap.ndims = r.u8();
    if (ap.ndims < 1 || ap.ndims > kMaxFreeDims)
      io::fail(at + 2,
               fmt::format("ndims {} outside 1..{} in {}", ap.ndims, kMaxFreeDims, where(d)));
    const uint8_t dyn = r.u8();
    if (dyn > uint8_t(DynKind::vec))
      io::fail(at + 3, fmt::format("unknown dynamic-offset kind {} in {}", dyn, where(d)));
    ap.dyn = static_cast<DynKind>(dyn);
    ap.part_start = r.u16();
    ap.part_count = r.u16();
    ap.part_stride = r.i64();
    ap.offset = r.u64();
    for (int k = 0; k < ap.ndims; ++k) {
      ap.dims[k].stride = r.i32();
      ap.dims[k].count = r.u32();
    }
    if (ap.dyn == DynKind::reg) {
      const uint64_t reg_at = r.pos();
      ap.dyn_reg = r.u8();
      if (ap.dyn_reg >= kNumRegs)
        io::fail(reg_at, fmt::format("register r{} > r63 in {}", ap.dyn_reg, where(d)));
    } else if (ap.dyn == DynKind::vec) {
      ap.vidx.part_start = r.u16();
      ap.vidx.part_count = r.u16();
      ap.vidx.offset = r.u32();
      const uint64_t vdt_at = r.pos();
      const uint8_t vdt = r.u8();
      if (vdt >= kNumDTypes)
        io::fail(vdt_at, fmt::format("unknown vector-index dtype {} in {}", vdt, where(d)));
      ap.vidx.dtype = static_cast<DType>(vdt);
    }
    if (ap.dyn != DynKind::none) {
      ap.dyn_mult = r.i64();
      ap.dyn_limit = r.u32();
    }
    if (auto e = check_ap(d.spaces, ap)) io::fail(at, fmt::format("{}: {}", where(d), *e));
  }

  uint8_t read_u8_max(io::Reader& r, const OperandDesc& d, unsigned max, const char* what) {
    const uint64_t at = r.pos();
    const uint8_t v = r.u8();
    if (v > max) io::fail(at, fmt::format("{} {} > {} in {}", what, v, max, where(d)));
    return v;
  }

  void decode_operand(io::Reader& r, const OperandDesc& d, Operand& o) {
    const uint64_t at = r.pos();
    switch (d.kind) {
    case K::Dst:
    case K::Src: {
      const uint8_t space = r.u8();
      if (space == 0) {
        if (!d.optional) io::fail(at, fmt::format("required {} is absent", where(d)));
        o.present = false;
      } else {
        decode_ap(r, d, o.ap, space);
      }
      break;
    }
    case K::Scalar: {
      const uint8_t tag = read_u8_max(r, d, 1, "scalar tag");
      o.is_ap = tag == 1;
      if (!o.is_ap) {
        o.f = r.f32();
        break;
      }
      const uint8_t space = r.u8();
      if (space == 0) io::fail(at + 1, fmt::format("scalar {} has no access pattern", where(d)));
      decode_ap(r, d, o.ap, space);
      break;
    }
    case K::ImmF: o.f = r.f32(); break;
    case K::ImmI: o.i = r.i32(); break;
    case K::Bool: o.i = read_u8_max(r, d, 1, "flag"); break;
    case K::Enum: {
      o.i = r.u8();
      if (enum_name(d.enum_type, static_cast<uint8_t>(o.i)).empty())
        io::fail(at, fmt::format("enum value {} out of range for {} ({})", o.i, where(d),
                                 enum_type_name(d.enum_type)));
      break;
    }
    case K::Reg: o.i = read_u8_max(r, d, kNumRegs - 1, "register"); break;
    case K::RegOrImm:
      o.is_reg = read_u8_max(r, d, 1, "register-or-immediate tag") == 1;
      o.i = r.i32();
      if (o.is_reg && (o.i < 0 || o.i >= kNumRegs))
        io::fail(at + 1, fmt::format("register {} outside r0..r63 in {}", o.i, where(d)));
      break;
    case K::Queue: o.i = read_u8_max(r, d, kNumDmaQueues - 1, "queue"); break;
    case K::Sem:
    case K::Group: o.i = r.u16(); break;
    case K::Label: o.i = r.u32(); break;
    case K::Pattern: {
      o.set_pat().n = r.u8();
      if (o.pat.n < 1 || o.pat.n > 4)
        io::fail(at, fmt::format("pattern of {} has {} pairs (1..4)", where(d), o.pat.n));
      for (int k = 0; k < o.pat.n; ++k) {
        o.pat.d[k][0] = r.i32();
        const uint64_t num_at = r.pos();
        o.pat.d[k][1] = r.i32();
        if (o.pat.d[k][1] < 1)
          io::fail(num_at,
                   fmt::format("pattern pair {} of {} has num {} < 1", k, where(d), o.pat.d[k][1]));
      }
      break;
    }
    case K::Mask: {
      o.set_mask();
      auto b = r.bytes(32);
      for (int k = 0; k < 32; ++k) {
        o.mask.v[k] = b[k];
        if (b[k] >= 32 && b[k] != 255)
          io::fail(at + k,
                   fmt::format("mask entry {} of {} is {} (0..31 or 255)", k, where(d), b[k]));
      }
      break;
    }
    }
  }

  std::span<const uint8_t> bytes_;
  uint64_t start_;
  Inst& in_;
  const InstDesc* desc_ = nullptr;
};

} // namespace

std::optional<DecodeError> decode_inst_into(std::span<const uint8_t> bytes, uint64_t offset,
                                            Inst& out, uint32_t& length) {
  try {
    length = InstDecoder(bytes, offset, out).run();
    return std::nullopt;
  } catch (io::Failure& f) {
    return std::move(f.error);
  }
}

Result<Decoded> decode_inst(std::span<const uint8_t> bytes, uint64_t offset) {
  Decoded d;
  if (auto e = decode_inst_into(bytes, offset, d.inst, d.length)) return std::move(*e);
  return d;
}

Result<std::vector<Inst>> decode_stream(std::span<const uint8_t> bytes, uint64_t begin,
                                        uint64_t end) {
  std::vector<Inst> out;
  if (end > bytes.size() || begin > end)
    return DecodeError{bytes.empty() ? 0 : bytes.size() - 1, "stream range outside the buffer"};
  auto window = bytes.first(end); // instructions may not run past `end`
  for (uint64_t at = begin; at < end;) {
    Inst in;
    uint32_t len = 0;
    if (auto e = decode_inst_into(window, at, in, len)) return std::move(*e);
    out.push_back(std::move(in));
    at += len;
  }
  return out;
}

} // namespace nisa
