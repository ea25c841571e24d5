// .nbin validating reader and object files (docs/encoding.md, "Object file"); the writer is
// object_write.cpp.
#include "isa/object.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <string_view>

#include "isa/encode_io.h"
#include "isa/launch.h"
#include "isa/limits.h"
#include "isa/object_format.h"
#include "isa/output_file.h"
#include "isa/quote.h"

namespace nisa {
namespace {

using namespace objfmt;

constexpr int kMaxTensorRank = 8;

const char* section_name(Section s) {
  switch (s) {
  case Section::strings: return "strings";
  case Section::kernel: return "kernel";
  case Section::params: return "params";
  case Section::files: return "files";
  case Section::frames: return "frames";
  case Section::tensors: return "tensors";
  case Section::sems: return "sems";
  case Section::groups: return "groups";
  case Section::streams: return "streams";
  case Section::debug: return "debug";
  case Section::labels: return "labels";
  case Section::launch: return "launch";
  }
  return "?";
}

// ---- reader ---------------------------------------------------------------------------------

class ObjectReader {
public:
  ObjectReader(std::span<const uint8_t> bytes, ReadOptions opts) : b_(bytes), opts_(opts) {}

  Module run() {
    read_header();
    io::Reader r(b_, kHeaderBytes, b_.size() - kChecksumBytes, "object");
    for (uint32_t k = 0; k < sections_of(version_); ++k) read_section(r, kSectionOrder[k]);
    if (r.remaining() != 0)
      io::fail(r.pos(), fmt::format("{} unexpected bytes after the last section", r.remaining()));
    return std::move(m_);
  }

private:
  void read_header() {
    io::Reader r(b_, 0, b_.size(), "header");
    auto magic = r.bytes(4);
    if (std::memcmp(magic.data(), kObjectMagic, 4) != 0)
      io::fail(0, "bad magic: not a .nbin object (expected \"NISA\")");
    const uint16_t version = r.u16();
    if (version < kOldestObjectVersion || version > kObjectVersion)
      io::fail(4, fmt::format("unsupported format version {} (this nisa reads versions {} to {})",
                              version, kOldestObjectVersion, kObjectVersion));
    version_ = version;
    r.skip_zero(2, "the header flags");
    const uint8_t target = r.u8();
    if (enum_name(EnumType::Target, target).empty())
      io::fail(8, fmt::format("unknown target {}", target));
    m_.target = static_cast<Target>(target);
    r.skip_zero(3, "the header");
    const uint32_t nsections = r.u32();
    if (nsections != sections_of(version_))
      io::fail(12, fmt::format("section count {} (version {} has {})", nsections, version_,
                               sections_of(version_)));
    const uint64_t size = r.u64();
    if (size != b_.size())
      io::fail(16, fmt::format("header says the object is {} bytes but it is {} ({})", size,
                               b_.size(), size > b_.size() ? "truncated" : "trailing bytes"));
    if (size < kHeaderBytes + kChecksumBytes)
      io::fail(16, fmt::format("object size {} is below the minimum {}", size,
                               kHeaderBytes + kChecksumBytes));
    const uint64_t sum_at = size - kChecksumBytes;
    io::Reader cr(b_, sum_at, size, "checksum");
    const uint64_t stored = cr.u64();
    if (opts_.verify_checksum && stored != object_body_checksum(version_, b_.first(sum_at)))
      io::fail(sum_at, "checksum mismatch: the object is corrupt");
  }

  void read_section(io::Reader& r, Section expect) {
    const uint64_t at = r.pos();
    const uint16_t kind = r.u16();
    if (kind != static_cast<uint16_t>(expect))
      io::fail(at, fmt::format("expected section '{}' (kind {}), found kind {}",
                               section_name(expect), static_cast<int>(expect), kind));
    r.skip_zero(2, "a section header");
    const uint64_t len_at = r.pos();
    const uint32_t len = r.u32();
    if (len > r.remaining())
      io::fail(len_at, fmt::format("section '{}' length {} runs past the end ({} bytes left)",
                                   section_name(expect), len, r.remaining()));
    const uint64_t end = r.pos() + len;
    io::Reader s(b_, r.pos(), end, section_name(expect));
    read_payload(s, expect);
    if (s.remaining() != 0)
      io::fail(s.pos(), fmt::format("section '{}' has {} unused bytes", section_name(expect),
                                    s.remaining()));
    r.bytes(len);
  }

  void read_payload(io::Reader& s, Section sec) {
    switch (sec) {
    case Section::strings: read_strings(s); break;
    case Section::kernel: m_.kernel = str(s); break;
    case Section::params: read_params(s); break;
    case Section::files: read_files(s); break;
    case Section::frames: read_frames(s); break;
    case Section::tensors: read_tensors(s); break;
    case Section::sems: read_sems(s); break;
    case Section::groups: read_groups(s); break;
    case Section::streams: read_streams(s); break;
    case Section::debug: read_debug(s); break;
    case Section::labels: read_labels(s); break;
    case Section::launch: read_launch(s); break;
    }
  }

  // Reads a record count and checks the records can fit before anything is allocated.
  uint32_t count(io::Reader& s, uint64_t min_record_bytes, const char* what) {
    const uint64_t at = s.pos();
    const uint32_t n = s.u32();
    s.need_records(n, min_record_bytes, at, what);
    return n;
  }

  void read_strings(io::Reader& s) {
    const uint32_t n = count(s, 4, "string");
    strings_.reserve(n);
    for (uint32_t k = 0; k < n; ++k) {
      const uint64_t at = s.pos();
      const uint32_t len = s.u32();
      if (len > s.remaining())
        io::fail(at, fmt::format("string {} length {} runs past the section end", k, len));
      auto b = s.bytes(len);
      strings_.emplace_back(reinterpret_cast<const char*>(b.data()), b.size());
    }
  }

  const std::string& str(io::Reader& s) {
    const uint64_t at = s.pos();
    const uint32_t idx = s.u32();
    if (idx >= strings_.size())
      io::fail(at, fmt::format("string index {} out of range ({} strings)", idx, strings_.size()));
    return strings_[idx];
  }

  // Names declared in one namespace must be unique and non-empty.
  void check_name(std::set<std::string_view>& seen, const std::string& name, uint64_t at,
                  const char* what) {
    if (name.empty()) io::fail(at, fmt::format("{} with an empty name", what));
    if (!seen.insert(name).second) io::fail(at, fmt::format("duplicate {} '{}'", what, name));
  }

  void read_params(io::Reader& s) {
    const uint32_t n = count(s, 8, "param");
    m_.params.reserve(n);
    for (uint32_t k = 0; k < n; ++k) {
      std::string key = str(s);
      m_.params.emplace_back(std::move(key), str(s));
    }
  }

  void read_files(io::Reader& s) {
    const uint32_t n = count(s, 4, "file");
    m_.files.reserve(n);
    for (uint32_t k = 0; k < n; ++k) m_.files.push_back(str(s));
  }

  uint32_t file_index(io::Reader& s) {
    const uint64_t at = s.pos();
    const uint32_t f = s.u32();
    if (f >= m_.files.size())
      io::fail(at, fmt::format("file index {} out of range ({} files)", f, m_.files.size()));
    return f;
  }

  void read_frames(io::Reader& s) {
    const uint32_t n = count(s, 24, "expansion frame");
    m_.frames.reserve(n);
    for (uint32_t k = 0; k < n; ++k) {
      ExpansionFrame f;
      const uint64_t kind_at = s.pos();
      const uint8_t kind = s.u8();
      if (kind > ExpansionFrame::Include)
        io::fail(kind_at, fmt::format("unknown expansion-frame kind {}", kind));
      f.kind = static_cast<ExpansionFrame::Kind>(kind);
      s.skip_zero(3, "an expansion frame");
      f.what = str(s);
      f.file = file_index(s);
      f.line = s.u32();
      f.col = s.u32();
      const uint64_t parent_at = s.pos();
      f.parent = s.i32();
      // Parents come first: the chain is finite and acyclic.
      if (f.parent < -1 || f.parent >= static_cast<int64_t>(k))
        io::fail(parent_at, fmt::format("frame {} has parent {} (must be -1..{})", k, f.parent,
                                        static_cast<int64_t>(k) - 1));
      m_.frames.push_back(std::move(f));
    }
  }

  void read_tensors(io::Reader& s) {
    const uint32_t n = count(s, 28, "tensor");
    m_.tensors.reserve(n);
    std::set<std::string_view> seen;
    for (uint32_t k = 0; k < n; ++k) {
      TensorDecl t;
      const uint64_t at = s.pos();
      t.name = str(s);
      const uint8_t space = s.u8(), dtype = s.u8(), role = s.u8(), rank = s.u8();
      if (space < uint8_t(MemSpace::hbm) || space > uint8_t(MemSpace::psum))
        io::fail(at + 4, fmt::format("tensor '{}': unknown memory space {}", t.name, space));
      if (dtype >= kNumDTypes)
        io::fail(at + 5, fmt::format("tensor '{}': unknown dtype {}", t.name, dtype));
      if (enum_name(EnumType::Role, role).empty())
        io::fail(at + 6, fmt::format("tensor '{}': unknown role {}", t.name, role));
      if (rank < 1 || rank > kMaxTensorRank)
        io::fail(at + 7,
                 fmt::format("tensor '{}': rank {} outside 1..{}", t.name, rank, kMaxTensorRank));
      t.space = static_cast<MemSpace>(space);
      t.dtype = static_cast<DType>(dtype);
      t.role = static_cast<Role>(role);
      t.part_start = s.u16();
      s.skip_zero(2, "a tensor record");
      t.address = s.u64();
      for (int d = 0; d < rank; ++d) {
        const uint64_t dim_at = s.pos();
        t.shape.push_back(s.i64());
        if (t.shape.back() < 1)
          io::fail(dim_at,
                   fmt::format("tensor '{}': dimension {} is {}", t.name, d, t.shape.back()));
      }
      check_tensor_partitions(t, at + 8);
      if (auto err = tensor_extent_error(t)) io::fail(at + 12, *err);
      check_name(seen, m_.tensors.emplace_back(std::move(t)).name, at, "tensor");
    }
  }

  static void check_tensor_partitions(const TensorDecl& t, uint64_t at) {
    if (t.space == MemSpace::hbm) {
      if (t.part_start != 0)
        io::fail(at, fmt::format("hbm tensor '{}' has partition start {}", t.name, t.part_start));
    } else if (t.shape[0] > int64_t{kNumPartitions} - t.part_start) {
      io::fail(at, fmt::format("tensor '{}' spans partitions [{}, {}) beyond 128", t.name,
                               t.part_start, t.part_start + t.shape[0]));
    }
  }

  void read_sems(io::Reader& s) {
    const uint32_t n = count(s, 8, "semaphore");
    m_.sems.reserve(n);
    std::set<std::string_view> seen;
    for (uint32_t k = 0; k < n; ++k) {
      const uint64_t at = s.pos();
      SemDecl d;
      d.name = str(s);
      d.init = s.u32();
      check_name(seen, m_.sems.emplace_back(std::move(d)).name, at, "semaphore");
    }
  }

  void read_groups(io::Reader& s) {
    const uint32_t n = count(s, 8, "replica group");
    m_.groups.reserve(n);
    std::set<std::string_view> seen;
    for (uint32_t k = 0; k < n; ++k) {
      const uint64_t at = s.pos();
      ReplicaGroupDecl g;
      g.name = str(s);
      const uint32_t ng = count(s, 4, "rank list");
      g.groups.resize(ng);
      for (auto& ranks : g.groups) {
        const uint32_t nr = count(s, 4, "rank");
        ranks.resize(nr);
        for (auto& rank : ranks) rank = s.u32();
      }
      check_name(seen, m_.groups.emplace_back(std::move(g)).name, at, "replica group");
    }
  }

  void read_streams(io::Reader& s) {
    for (int e = 0; e < kNumEngines; ++e) {
      const Engine engine = static_cast<Engine>(e);
      const uint64_t count_at = s.pos();
      const uint32_t n = s.u32();
      const uint64_t len_at = s.pos();
      const uint32_t len = s.u32();
      if (len > s.remaining())
        io::fail(len_at, fmt::format("{} stream length {} runs past the section end",
                                     name_of(engine), len));
      if (n > len / kInstHeaderBytes)
        io::fail(count_at, fmt::format("{} stream: {} instructions cannot fit in {} bytes",
                                       name_of(engine), n, len));
      const uint64_t begin = s.pos(), end = begin + len;
      read_stream(engine, n, begin, end, count_at);
      s.bytes(len);
    }
  }

  void read_stream(Engine engine, uint32_t n, uint64_t begin, uint64_t end, uint64_t count_at) {
    auto& stream = m_.streams[static_cast<int>(engine)];
    stream.reserve(n);
    auto window = b_.first(end);
    for (uint64_t at = begin; at < end;) {
      if (stream.size() == n)
        io::fail(count_at, fmt::format("{} stream holds more than its count of {} instructions",
                                       name_of(engine), n));
      uint32_t len = 0;
      Inst& in = stream.emplace_back();
      if (auto e = decode_inst_into(window, at, in, len)) throw io::Failure{std::move(*e)};
      if (in.engine != engine)
        io::fail(at + 4, fmt::format("{} in the {} stream", inst_name(in), name_of(engine)));
      if (opts_.check_instructions)
        if (auto e = check_inst_for_target(in, m_.target)) io::fail(at, *e);
      starts_[static_cast<int>(engine)].push_back(at);
      at += len;
    }
    if (stream.size() != n)
      io::fail(count_at, fmt::format("{} stream count says {} instructions, its bytes hold {}",
                                     name_of(engine), n, stream.size()));
  }

  void read_debug(io::Reader& s) {
    for (int e = 0; e < kNumEngines; ++e) {
      const uint64_t at = s.pos();
      const uint32_t n = s.u32();
      const size_t ninst = m_.streams[e].size();
      if (n != 0 && n != ninst)
        io::fail(at, fmt::format("{} debug info has {} entries for {} instructions",
                                 name_of(static_cast<Engine>(e)), n, ninst));
      auto& locs = m_.debug[e];
      locs.resize(n);
      for (auto& l : locs) {
        l.file = file_index(s);
        l.line = s.u32();
        l.col = s.u32();
        const uint64_t frame_at = s.pos();
        l.frame = s.i32();
        if (l.frame < -1 || l.frame >= static_cast<int64_t>(m_.frames.size()))
          io::fail(frame_at, fmt::format("expansion frame {} out of range ({} frames)", l.frame,
                                         m_.frames.size()));
      }
    }
  }

  void read_labels(io::Reader& s) {
    for (int e = 0; e < kNumEngines; ++e) {
      const uint32_t n = count(s, 8, "label");
      auto& labels = m_.labels[e];
      labels.reserve(n);
      std::set<std::string_view> seen;
      for (uint32_t k = 0; k < n; ++k) {
        const uint64_t at = s.pos();
        Label l;
        l.name = str(s);
        const uint64_t idx_at = s.pos();
        l.index = s.u32();
        if (l.index > m_.streams[e].size())
          io::fail(idx_at, fmt::format("label '{}' points at instruction {} of a {}-instruction "
                                       "stream",
                                       l.name, l.index, m_.streams[e].size()));
        check_name(seen, labels.emplace_back(std::move(l)).name, at, "label");
      }
    }
    check_references();
  }

  void read_launch(io::Reader& s) {
    for (Launch which : {Launch::ranks, Launch::lnc}) {
      LaunchDecl& d = which == Launch::ranks ? m_.ranks : m_.lnc;
      const uint64_t at = s.pos();
      d.value = s.u32();
      const uint64_t file_at = s.pos();
      d.loc.file = s.u32();
      d.loc.line = s.u32();
      d.loc.col = s.u32();
      const uint64_t frame_at = s.pos();
      d.loc.frame = s.i32();
      if (d.value == 0) {
        if (d.loc != DebugLoc{})
          io::fail(file_at,
                   fmt::format(".{} is not declared but has a location", launch_name(which)));
        continue;
      }
      if (auto why = launch_value_error(which, d.value))
        io::fail(at, fmt::format(".{} {}: {}", launch_name(which), d.value, *why));
      // Line 0: declared without a location (a module not from the assembler).
      if (d.loc.line != 0 && d.loc.file >= m_.files.size())
        io::fail(file_at,
                 fmt::format("file index {} out of range ({} files)", d.loc.file, m_.files.size()));
      if (d.loc.frame < -1 || d.loc.frame >= static_cast<int64_t>(m_.frames.size()))
        io::fail(frame_at, fmt::format("expansion frame {} out of range ({} frames)", d.loc.frame,
                                       m_.frames.size()));
    }
  }

  // Semaphore, replica-group and label operands against the declarations and streams.
  void check_references() {
    for (int e = 0; e < kNumEngines; ++e) {
      const auto& stream = m_.streams[e];
      for (size_t k = 0; k < stream.size(); ++k)
        if (auto why = reference_error(stream[k], stream.size()))
          io::fail(starts_[e][k], fmt::format("{}: {}", inst_name(stream[k]), *why));
    }
  }

  std::optional<std::string> reference_error(const Inst& in, size_t stream_size) const {
    auto sem_bad = [&](uint64_t s) { return s >= m_.sems.size(); };
    for (const auto& w : in.waits)
      if (sem_bad(w.sem)) return fmt::format("wait on undeclared semaphore {}", w.sem);
    for (const auto& sg : in.signals)
      if (sem_bad(sg.sem)) return fmt::format("signal of undeclared semaphore {}", sg.sem);
    const InstDesc& d = desc(in.op);
    for (size_t k = 0; k < in.ops.size(); ++k) {
      const auto& od = d.operands[k];
      const uint64_t v = static_cast<uint64_t>(in.ops[k].i);
      if (od.kind == OperandKind::Sem && sem_bad(v))
        return fmt::format("operand '{}': undeclared semaphore {}", od.name, v);
      if (od.kind == OperandKind::Group && v >= m_.groups.size())
        return fmt::format("operand '{}': undeclared replica group {}", od.name, v);
      if (od.kind == OperandKind::Label && v > stream_size)
        return fmt::format("operand '{}': branch target {} beyond the {}-instruction stream",
                           od.name, v, stream_size);
    }
    return std::nullopt;
  }

  std::span<const uint8_t> b_;
  ReadOptions opts_;
  uint16_t version_ = kObjectVersion;
  Module m_;
  std::vector<std::string> strings_;
  std::array<std::vector<uint64_t>, kNumEngines> starts_; // instruction offsets, for errors
};

} // namespace

Result<Module> read_object(std::span<const uint8_t> bytes, ReadOptions opts) {
  try {
    return ObjectReader(bytes, opts).run();
  } catch (io::Failure& f) {
    return std::move(f.error);
  }
}

std::string ObjectFileError::str() const {
  if (offset) return fmt::format("{}: byte {} (0x{:x}): {}", path, *offset, *offset, message);
  return fmt::format("{}: {}", path, message);
}

std::optional<ObjectFileError> save_object(const std::string& path, const Module& m) {
  return write_object_file(path, write_object(m));
}

std::optional<ObjectFileError> write_object_file(const std::string& path,
                                                 std::span<const uint8_t> bytes) {
  try {
    write_file_atomic(path,
                      std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  } catch (const OutputError& e) {
    std::string_view why = e.what(); // "PATH: why": the error names the path itself
    if (why.starts_with(elide(path) + ": ")) why.remove_prefix(elide(path).size() + 2);
    return ObjectFileError{path, std::nullopt, std::string(why)};
  }
  return std::nullopt;
}

uint64_t object_checksum(std::span<const uint8_t> bytes) {
  uint64_t h = 0;
  if (bytes.size() < kChecksumBytes) return 0;
  for (size_t k = 0; k < kChecksumBytes; ++k)
    h |= uint64_t(bytes[bytes.size() - kChecksumBytes + k]) << (8 * k);
  return h;
}

std::optional<ObjectFileError> read_object_bytes(const std::string& path,
                                                 std::vector<uint8_t>& bytes) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    return ObjectFileError{path, std::nullopt,
                           fmt::format("cannot open: {}", std::strerror(errno))};
  // Whole blocks into a vector sized from the file (a byte-by-byte istreambuf_iterator copy took
  // ~6 ms of a run of depthwise_conv1d's 1.3 MB object); a file that grows or shrinks meanwhile
  // is read to its end all the same.
  bytes.clear();
  f.seekg(0, std::ios::end);
  const std::streamoff size = f.tellg();
  f.clear(); // not seekable (a pipe): read it as it comes
  f.seekg(0, std::ios::beg);
  f.clear();
  size_t have = 0;
  bytes.resize(size > 0 ? static_cast<size_t>(size) + 1 : 4096);
  for (;;) {
    f.read(reinterpret_cast<char*>(bytes.data() + have),
           static_cast<std::streamsize>(bytes.size() - have));
    have += static_cast<size_t>(f.gcount());
    if (!f) break;
    bytes.resize(bytes.size() * 2);
  }
  if (f.bad()) return ObjectFileError{path, std::nullopt, "read failed"};
  bytes.resize(have);
  return std::nullopt;
}

Result<Module, ObjectFileError> load_object(const std::string& path) {
  std::vector<uint8_t> bytes;
  if (auto err = read_object_bytes(path, bytes)) return std::move(*err);
  auto r = read_object(bytes);
  if (!r) return ObjectFileError{path, r.error().offset, r.error().message};
  return std::move(r.value());
}

} // namespace nisa
