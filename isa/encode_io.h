// Little-endian byte writer and bounds-checked reader shared by the instruction codec and the
// object format. Internal to isa/ (encode.cpp, object.cpp).
#pragma once
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "isa/encode.h"

namespace nisa::io {

// Thrown inside the decoders and caught at their public entry points.
struct Failure {
  DecodeError error;
};
[[noreturn]] inline void fail(uint64_t offset, std::string message) {
  throw Failure{DecodeError{offset, std::move(message)}};
}

// Little-endian stores through a raw pointer, unchecked: for records whose size is bounded
// and whose room was made beforehand (Writer::room).
struct Put {
  uint8_t* p;
  void u8(uint8_t v) { *p++ = v; }
  void u16(uint16_t v) { le(v); }
  void u32(uint32_t v) { le(v); }
  void u64(uint64_t v) { le(v); }
  void i32(int32_t v) { le(static_cast<uint32_t>(v)); }
  void i64(int64_t v) { le(static_cast<uint64_t>(v)); }
  void f32(float v) {
    uint32_t u;
    std::memcpy(&u, &v, 4);
    le(u);
  }
  void bytes(const void* src, size_t n) {
    std::memcpy(p, src, n);
    p += n;
  }

private:
  template <class T> void le(T v) {
    if constexpr (std::endian::native == std::endian::little) {
      std::memcpy(p, &v, sizeof v);
    } else {
      for (size_t k = 0; k < sizeof v; ++k) p[k] = static_cast<uint8_t>(v >> (8 * k));
    }
    p += sizeof v;
  }
};

// Appends to a byte vector. Grows the vector ahead and writes through memcpy (encoding is on
// the assembler's hot path); the destructor trims the vector to what was written.
class Writer {
public:
  // `ahead`: how far past the bytes written the vector is grown (zero-filled) at a time.
  explicit Writer(std::vector<uint8_t>& out, size_t ahead = 256)
      : out_(out), len_(out.size()), ahead_(ahead) {}
  ~Writer() { out_.resize(len_); }
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  void u8(uint8_t v) { put(v, 1); }
  void u16(uint16_t v) { put(v, 2); }
  void u32(uint32_t v) { put(v, 4); }
  void u64(uint64_t v) { put(v, 8); }
  void i32(int32_t v) { put(static_cast<uint32_t>(v), 4); }
  void i64(int64_t v) { put(static_cast<uint64_t>(v), 8); }
  void f32(float v) {
    uint32_t u;
    std::memcpy(&u, &v, 4);
    put(u, 4);
  }
  void bytes(const void* p, size_t n) {
    if (n == 0) return;
    grow(n);
    std::memcpy(out_.data() + len_, p, n);
    len_ += n;
  }
  size_t size() const { return len_; }
  // Room for at most `n` more bytes, written through the Put returned and then handed back
  // with commit (one bounds check for a whole record instead of one per field).
  Put room(size_t n) {
    grow(n);
    return Put{out_.data() + len_};
  }
  void commit(const Put& p) { len_ = static_cast<size_t>(p.p - out_.data()); }
  // Overwrites a field written earlier (length fields known only at the end).
  void patch_u16(size_t at, uint16_t v) { store(at, v, 2); }
  void patch_u32(size_t at, uint32_t v) { store(at, v, 4); }
  void patch_u64(size_t at, uint64_t v) { store(at, v, 8); }

private:
  // The vector is grown (zero-filled) `ahead_` bytes past what is needed: a constant, as the
  // vector's own capacity doubling keeps appends amortized O(1) and a size-proportional slack
  // would zero-fill O(size) per instruction; never past capacity reserved beforehand
  // (write_object) while the bytes fit in it.
  void grow(size_t n) {
    if (len_ + n > out_.size()) [[unlikely]] {
      const size_t need = len_ + n;
      out_.resize(need <= out_.capacity() ? std::min(out_.capacity(), need + ahead_)
                                          : need + ahead_);
    }
  }
  void put(uint64_t v, int n) {
    grow(static_cast<size_t>(n));
    store(len_, v, n);
    len_ += static_cast<size_t>(n);
  }
  void store(size_t at, uint64_t v, int n) {
    if constexpr (std::endian::native == std::endian::little) {
      std::memcpy(out_.data() + at, &v, static_cast<size_t>(n));
    } else {
      for (int k = 0; k < n; ++k) out_[at + k] = static_cast<uint8_t>(v >> (8 * k));
    }
  }
  std::vector<uint8_t>& out_;
  size_t len_;
  size_t ahead_;
};

// Per opcode (the index), the most bytes its operands take (encode.cpp).
std::array<uint32_t, kNumOpcodes> make_operand_bounds();
inline std::span<const uint32_t> operand_bounds() {
  static const std::array<uint32_t, kNumOpcodes> table = make_operand_bounds();
  return table;
}
// The most bytes encode_inst writes for `in`.
inline size_t max_inst_bytes(const Inst& in, std::span<const uint32_t> bounds = operand_bounds()) {
  return kInstHeaderBytes + 8 * (in.waits.size() + in.signals.size()) +
         bounds[static_cast<size_t>(in.op)];
}

// encode_inst into a writer held across instructions (write_object: the object's bytes in one
// buffer, not each instruction's appended through a writer of its own).
void encode_inst(Writer& w, const Inst& in);

// Reads [pos, end) of a buffer; offsets are absolute within the buffer. A read past `end`
// fails with `truncated` (a description of the window) at the offending field.
class Reader {
public:
  Reader(std::span<const uint8_t> buf, uint64_t pos, uint64_t end, const char* window)
      : buf_(buf), pos_(pos), end_(end), window_(window) {}
  uint64_t pos() const { return pos_; }
  uint64_t end() const { return end_; }
  uint64_t remaining() const { return end_ - pos_; }
  uint8_t u8() { return static_cast<uint8_t>(get(1)); }
  uint16_t u16() { return static_cast<uint16_t>(get(2)); }
  uint32_t u32() { return static_cast<uint32_t>(get(4)); }
  uint64_t u64() { return get(8); }
  int32_t i32() { return static_cast<int32_t>(static_cast<uint32_t>(get(4))); }
  int64_t i64() { return static_cast<int64_t>(get(8)); }
  float f32() {
    uint32_t u = static_cast<uint32_t>(get(4));
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  std::span<const uint8_t> bytes(uint64_t n) {
    need(n);
    auto s = buf_.subspan(pos_, n);
    pos_ += n;
    return s;
  }
  void skip_zero(uint64_t n, const char* what) {
    for (uint64_t k = 0; k < n; ++k) {
      uint64_t at = pos_;
      if (u8() != 0) fail(at, std::string("reserved bits set in ") + what);
    }
  }
  // Fails unless `count` records of at least `min_bytes` each fit in what is left: the check
  // that keeps a corrupt count from driving a huge allocation.
  void need_records(uint64_t count, uint64_t min_bytes, uint64_t count_at, const char* what) {
    if (min_bytes != 0 && count > remaining() / min_bytes)
      fail(count_at, std::string(what) + " count " + std::to_string(count) + " needs at least " +
                         std::to_string(count) + " x " + std::to_string(min_bytes) +
                         " bytes but only " + std::to_string(remaining()) + " remain");
  }
  [[noreturn]] void truncated(uint64_t n) const {
    fail(clamp(pos_), std::string(window_) + " truncated: a " + std::to_string(n) +
                          "-byte field at offset " + std::to_string(pos_) + " crosses its end at " +
                          std::to_string(end_));
  }

private:
  void need(uint64_t n) const {
    if (n > end_ - pos_) truncated(n);
  }
  uint64_t get(int n) {
    need(static_cast<uint64_t>(n));
    uint64_t v = 0;
    for (int k = 0; k < n; ++k) v |= static_cast<uint64_t>(buf_[pos_ + k]) << (8 * k);
    pos_ += static_cast<uint64_t>(n);
    return v;
  }
  // Offsets reported must lie inside the buffer.
  uint64_t clamp(uint64_t at) const {
    return buf_.empty() ? 0 : at < buf_.size() ? at : buf_.size() - 1;
  }
  std::span<const uint8_t> buf_;
  uint64_t pos_, end_;
  const char* window_;
};

} // namespace nisa::io
