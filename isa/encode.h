// Binary encoding of one instruction (layout: docs/encoding.md), its validating decoder, and
// the table-driven validity check shared by the assembler, the encoder and the decoder.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "isa/isa.h"

namespace nisa {

// A decoding failure: the absolute byte offset (in the buffer given to the decoder) of the
// field that is wrong, and why.
struct DecodeError {
  uint64_t offset = 0;
  std::string message;
  std::string str() const; // "byte 42 (0x2a): message"
};

// A value or an error (std::expected is C++23).
template <class T, class E = DecodeError> class Result {
public:
  Result(T value) : v_(std::move(value)) {}
  Result(E error) : v_(std::move(error)) {}
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const E& error() const { return std::get<1>(v_); }

private:
  std::variant<T, E> v_;
};

// Fixed instruction header size and the largest encoded instruction (u16 length field).
inline constexpr uint32_t kInstHeaderBytes = 8;
inline constexpr uint32_t kMaxInstBytes = 0xffff;

// Appends the encoding of `in` to `out`. Precondition: check_inst(in) succeeds (the encoder
// does not re-validate; encoding an invalid instruction gives bytes the decoder rejects).
void encode_inst(const Inst& in, std::vector<uint8_t>& out);

struct Decoded {
  Inst inst;
  uint32_t length = 0; // bytes consumed
};
// Decodes the instruction starting at bytes[offset]. Validates every field (check_inst rules
// included); errors name the absolute offset within `bytes`.
Result<Decoded> decode_inst(std::span<const uint8_t> bytes, uint64_t offset);
// Same, into a caller-owned record (reuses its vectors; for hot loops).
std::optional<DecodeError> decode_inst_into(std::span<const uint8_t> bytes, uint64_t offset,
                                            Inst& out, uint32_t& length);
// Decodes back-to-back instructions filling bytes[begin, end) exactly.
Result<std::vector<Inst>> decode_stream(std::span<const uint8_t> bytes, uint64_t begin,
                                        uint64_t end);

// Table rules, independent of semantics and target: operand count and kinds, enum ranges,
// engine allowed, register/queue/partition ranges, memory spaces allowed per operand, and
// canonical records (fields a flag makes unused hold their defaults, so that
// decode(encode(x)) == x). Returns the first violation, phrased for a user
// ("operand 'dst' of dve.tensor_tensor: space psum not allowed (sbuf)"), or nullopt.
//
// Canonical operand records, per descriptor kind (anything not listed stays default):
//   Dst/Src   present, ap      (absent optional: present=false, nothing else matters)
//   Scalar    is_ap ? ap : f
//   RegOrImm  is_reg, i
//   ImmF      f          Pattern  pat     Mask  mask
//   ImmI/Bool/Enum/Reg/Queue/Sem/Label/Group  i
// Access patterns: 1 <= ndims <= 4, dims[ndims..] = {stride 0, count 1}, every count >= 1,
// part_count >= 1; on chip: part_start + part_count <= 128, part_stride 0; hbm: part_start 0;
// dyn none: dyn_* and vidx default; dyn reg: vidx default; dyn vec: dyn_reg 0, vidx an
// integer SBUF tile inside the 128 partitions with part_count >= 1, hbm operands only.
std::optional<std::string> check_inst(const Inst& in);
// check_inst plus the generation rules: the opcode exists on `target` and operands whose
// non-default value is generation-limited hold their default elsewhere.
std::optional<std::string> check_inst_for_target(const Inst& in, Target target);

// "dve.tensor_tensor" — how diagnostics name an instruction.
std::string inst_name(const Inst& in);

} // namespace nisa
