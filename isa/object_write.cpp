// .nbin writer (docs/encoding.md, "Object file"): the object's bytes in one buffer, reserved
// once from the sections' sizes (the code's an upper bound), each byte written once.
#include <string>
#include <string_view>
#include <vector>

#include "isa/encode_io.h"
#include "isa/object.h"
#include "isa/object_format.h"

namespace nisa {
namespace {

using namespace objfmt;

// Strings by first use: open addressing with linear probing over FNV-1a hashes. A few hundred
// distinct strings are looked up ~10^4 times (one frame per loop iteration: "k=0" .. "k=3"
// over and over).
class StringTable {
public:
  uint32_t intern(const std::string& s) {
    if (2 * (list_.size() + 1) > slots_.size()) rehash(slots_.empty() ? 256 : 2 * slots_.size());
    const uint32_t h = hash(s);
    const size_t mask = slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      Slot& slot = slots_[i];
      if (slot.id == 0) {
        list_.push_back(s); // a view of the module's string, which outlives the table
        bytes_ += 4 + s.size();
        slot = Slot{static_cast<uint32_t>(list_.size()), h};
        return slot.id - 1;
      }
      if (slot.hash == h && list_[slot.id - 1] == s) return slot.id - 1;
    }
  }
  // The strings section's payload: the count, then each string's length and bytes.
  size_t bytes() const { return 4 + bytes_; }
  void write(io::Writer& w) const {
    w.u32(static_cast<uint32_t>(list_.size()));
    for (std::string_view s : list_) {
      w.u32(static_cast<uint32_t>(s.size()));
      w.bytes(s.data(), s.size());
    }
  }

private:
  struct Slot {
    uint32_t id = 0; // index + 1; 0: empty
    uint32_t hash = 0;
  };
  static uint32_t hash(std::string_view s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
    return static_cast<uint32_t>(h ^ (h >> 32));
  }
  void rehash(size_t n) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(n, Slot{});
    for (const Slot& s : old) {
      if (s.id == 0) continue;
      size_t i = s.hash & (n - 1);
      while (slots_[i].id != 0) i = (i + 1) & (n - 1);
      slots_[i] = s;
    }
  }
  std::vector<Slot> slots_;
  std::vector<std::string_view> list_;
  size_t bytes_ = 0;
};

// The string indices the sections write: interned on the sizing pass, in the order the
// sections name them, then replayed in that order when the sections are written.
class StringIds {
public:
  uint32_t operator()(const std::string& s) {
    if (!replay_) {
      ids_.push_back(table_.intern(s));
      return 0;
    }
    return ids_[next_++];
  }
  void reserve(size_t n) { ids_.reserve(n); }
  void replay() { replay_ = true; }
  const StringTable& table() const { return table_; }

private:
  StringTable table_;
  std::vector<uint32_t> ids_;
  size_t next_ = 0;
  bool replay_ = false;
};

// Counts the bytes io::Writer would append for the same calls (the sizing pass).
class Counter {
public:
  void u8(uint8_t) { n_ += 1; }
  void u16(uint16_t) { n_ += 2; }
  void u32(uint32_t) { n_ += 4; }
  void u64(uint64_t) { n_ += 8; }
  void i32(int32_t) { n_ += 4; }
  void i64(int64_t) { n_ += 8; }
  // A record of exactly `n` bytes (at most 64), written to a scratch buffer.
  io::Put room(size_t n) {
    n_ += n;
    return io::Put{scratch_};
  }
  void commit(const io::Put&) {}
  size_t size() const { return n_; }

private:
  size_t n_ = 0;
  uint8_t scratch_[64];
};

template <class W> void write_frames(W& w, StringIds& id, const Module& m) {
  w.u32(static_cast<uint32_t>(m.frames.size()));
  for (const auto& f : m.frames) {
    io::Put p = w.room(24);
    p.u8(static_cast<uint8_t>(f.kind));
    p.u8(0);
    p.u16(0);
    p.u32(id(f.what));
    p.u32(f.file);
    p.u32(f.line);
    p.u32(f.col);
    p.i32(f.parent);
    w.commit(p);
  }
}

template <class W> void write_tensors(W& w, StringIds& id, const Module& m) {
  w.u32(static_cast<uint32_t>(m.tensors.size()));
  for (const auto& t : m.tensors) {
    w.u32(id(t.name));
    w.u8(static_cast<uint8_t>(t.space));
    w.u8(static_cast<uint8_t>(t.dtype));
    w.u8(static_cast<uint8_t>(t.role));
    w.u8(static_cast<uint8_t>(t.shape.size()));
    w.u16(t.part_start);
    w.u16(0);
    w.u64(t.address);
    for (int64_t d : t.shape) w.i64(d);
  }
}

template <class W> void write_groups(W& w, StringIds& id, const Module& m) {
  w.u32(static_cast<uint32_t>(m.groups.size()));
  for (const auto& g : m.groups) {
    w.u32(id(g.name));
    w.u32(static_cast<uint32_t>(g.groups.size()));
    for (const auto& ranks : g.groups) {
      w.u32(static_cast<uint32_t>(ranks.size()));
      for (uint32_t r : ranks) w.u32(r);
    }
  }
}

template <class W> void write_labels(W& w, StringIds& id, const Module& m) {
  for (const auto& labels : m.labels) {
    w.u32(static_cast<uint32_t>(labels.size()));
    for (const auto& l : labels) {
      w.u32(id(l.name));
      w.u32(l.index);
    }
  }
}

// .ranks then .lnc: value and where it was declared (all zero and frame -1 when undeclared).
template <class W> void write_launch(W& w, const Module& m) {
  for (const LaunchDecl* d : {&m.ranks, &m.lnc}) {
    w.u32(d->value);
    w.u32(d->loc.file);
    w.u32(d->loc.line);
    w.u32(d->loc.col);
    w.i32(d->loc.frame);
  }
}

// The payload of a section that names strings or is small: sized by a Counter on the first
// pass (which interns the strings), written by an io::Writer on the second.
template <class W> void write_small(Section s, W& w, StringIds& id, const Module& m) {
  switch (s) {
  case Section::strings:
  case Section::streams:
  case Section::debug: break; // write_object
  case Section::kernel: w.u32(id(m.kernel)); break;
  case Section::params:
    w.u32(static_cast<uint32_t>(m.params.size()));
    for (const auto& [k, v] : m.params) {
      w.u32(id(k));
      w.u32(id(v));
    }
    break;
  case Section::files:
    w.u32(static_cast<uint32_t>(m.files.size()));
    for (const auto& f : m.files) w.u32(id(f));
    break;
  case Section::frames: write_frames(w, id, m); break;
  case Section::tensors: write_tensors(w, id, m); break;
  case Section::sems:
    w.u32(static_cast<uint32_t>(m.sems.size()));
    for (const auto& sem : m.sems) {
      w.u32(id(sem.name));
      w.u32(sem.init);
    }
    break;
  case Section::groups: write_groups(w, id, m); break;
  case Section::labels: write_labels(w, id, m); break;
  case Section::launch: write_launch(w, m); break;
  }
}

// Per engine: the instruction count, the code's length, the code. The bound: encode_inst's
// per instruction.
size_t streams_bound(const Module& m) {
  const std::span<const uint32_t> bounds = io::operand_bounds();
  size_t n = 0;
  for (const auto& stream : m.streams) {
    n += 8;
    for (const auto& in : stream) n += io::max_inst_bytes(in, bounds);
  }
  return n;
}

void write_streams(io::Writer& w, const Module& m) {
  for (const auto& stream : m.streams) {
    w.u32(static_cast<uint32_t>(stream.size()));
    const size_t len_at = w.size();
    w.u32(0); // the code's length, patched below
    const size_t start = w.size();
    for (const auto& in : stream) io::encode_inst(w, in);
    w.patch_u32(len_at, static_cast<uint32_t>(w.size() - start));
  }
}

// Per engine: the count, then file, line, column and frame of each instruction.
constexpr size_t kDebugRecordBytes = 16;
size_t debug_bytes(const Module& m) {
  size_t n = 0;
  for (const auto& locs : m.debug) n += 4 + kDebugRecordBytes * locs.size();
  return n;
}

void write_debug(io::Writer& w, const Module& m) {
  for (const auto& locs : m.debug) {
    w.u32(static_cast<uint32_t>(locs.size()));
    for (const auto& l : locs) {
      io::Put p = w.room(kDebugRecordBytes);
      p.u32(l.file);
      p.u32(l.line);
      p.u32(l.col);
      p.i32(l.frame);
      w.commit(p);
    }
  }
}

// Header fields before the sections; the total size is patched in by write_object.
void write_header(io::Writer& w, const Module& m) {
  w.bytes(kObjectMagic, 4);
  w.u16(kObjectVersion);
  w.u16(0);
  w.u8(static_cast<uint8_t>(m.target));
  w.u8(0);
  w.u16(0);
  w.u32(kNumSections);
  w.u64(0);
}

} // namespace

std::vector<uint8_t> write_object(const Module& m) {
  // Sizing pass: every section's payload size (the code's an upper bound), the strings
  // interned in the order the sections name them.
  StringIds ids;
  size_t names = 1 + 2 * m.params.size() + m.files.size() + m.frames.size() + m.tensors.size() +
                 m.sems.size() + m.groups.size();
  for (const auto& labels : m.labels) names += labels.size();
  ids.reserve(names);
  std::array<size_t, kNumSections> bytes{};
  for (uint32_t k = 1; k < kNumSections; ++k) { // strings (k = 0) once all are interned
    const Section s = kSectionOrder[k];
    if (s == Section::streams) {
      bytes[k] = streams_bound(m);
    } else if (s == Section::debug) {
      bytes[k] = debug_bytes(m);
    } else {
      Counter c;
      write_small(s, c, ids, m);
      bytes[k] = c.size();
    }
  }
  bytes[0] = ids.table().bytes();
  size_t total = kHeaderBytes + kChecksumBytes;
  for (size_t b : bytes) total += kSectionHeaderBytes + b;

  // Writing pass, into the buffer reserved once (no reallocation: io::Writer grows the vector
  // inside its capacity).
  ids.replay();
  std::vector<uint8_t> out;
  out.reserve(total);
  {
    // 1 KiB ahead: fewer calls than the default, and still below the size where memset turns
    // to `rep stosb` (2 KiB). Trims `out` to the bytes written when it goes out of scope.
    io::Writer w(out, 1024);
    write_header(w, m);
    for (const Section s : kSectionOrder) {
      w.u16(static_cast<uint16_t>(s));
      w.u16(0);
      const size_t len_at = w.size();
      w.u32(0); // the payload's length, patched below
      const size_t start = w.size();
      switch (s) {
      case Section::strings: ids.table().write(w); break;
      case Section::streams: write_streams(w, m); break;
      case Section::debug: write_debug(w, m); break;
      default: write_small(s, w, ids, m); break;
      }
      w.patch_u32(len_at, static_cast<uint32_t>(w.size() - start));
    }
    const size_t body = w.size();
    w.patch_u64(kSizeFieldAt, body + kChecksumBytes);
    w.u64(object_body_checksum(kObjectVersion, std::span<const uint8_t>(out).first(body)));
  }
  return out;
}

} // namespace nisa
