#include "interp/run/npy.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "isa/output_file.h"
#include "isa/quote.h"

namespace nisa::interp {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr uint64_t kMaxHeader = 1u << 20;

[[noreturn]] void fail(const std::string& name, const std::string& why) {
  throw NpyError(fmt::format("{}: {}", name, why));
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\n')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

// The header dict, parsed whole: {'descr': <str>, 'fortran_order': <bool>, 'shape': <tuple>}
// with the three keys exactly once each (numpy keeps the last of a duplicate key, an older
// reader the first: a file that two readers see differently is rejected) and nothing else.
struct HeaderDict {
  std::string_view descr, fortran_order, shape;
};

HeaderDict parse_dict(std::string_view h, const std::string& name) {
  auto skip = [&] {
    while (!h.empty() && (h.front() == ' ' || h.front() == '\n' || h.front() == '\t'))
      h.remove_prefix(1);
  };
  auto quoted = [&](std::string_view what) {
    const char q = h.front();
    const size_t end = h.find(q, 1);
    if (end == std::string_view::npos) fail(name, fmt::format("unterminated string in {}", what));
    std::string_view v = h.substr(1, end - 1);
    h.remove_prefix(end + 1);
    return v;
  };
  skip();
  if (h.empty() || h.front() != '{') fail(name, "header is not a dict (no '{')");
  h.remove_prefix(1);
  HeaderDict d;
  bool have[3] = {false, false, false};
  for (;;) {
    skip();
    if (!h.empty() && h.front() == '}') break;
    if (h.empty() || (h.front() != '\'' && h.front() != '"'))
      fail(name, fmt::format("header dict: expected a quoted key at '{}'", elide(h, 40)));
    const std::string_view key = quoted("a key");
    int slot = key == "descr" ? 0 : key == "fortran_order" ? 1 : key == "shape" ? 2 : -1;
    if (slot < 0) fail(name, fmt::format("header has an unknown key '{}'", elide(key)));
    if (have[slot]) fail(name, fmt::format("header has the key '{}' twice", key));
    have[slot] = true;
    skip();
    if (h.empty() || h.front() != ':')
      fail(name, fmt::format("header entry '{}' has no value", key));
    h.remove_prefix(1);
    skip();
    std::string_view v;
    if (!h.empty() && (h.front() == '\'' || h.front() == '"')) {
      v = quoted(fmt::format("'{}'", key));
    } else if (!h.empty() && h.front() == '(') {
      const size_t end = h.find(')');
      if (end == std::string_view::npos) fail(name, "unterminated shape tuple");
      v = h.substr(0, end + 1);
      h.remove_prefix(end + 1);
    } else if (!h.empty() && h.front() == '[') {
      fail(name, "structured dtypes (a descr list) are not supported");
    } else {
      const size_t end = h.find_first_of(",}");
      v = trim(h.substr(0, end));
      h.remove_prefix(end == std::string_view::npos ? h.size() : end);
    }
    (slot == 0 ? d.descr : slot == 1 ? d.fortran_order : d.shape) = v;
    skip();
    if (!h.empty() && h.front() == ',') {
      h.remove_prefix(1);
      continue;
    }
    if (h.empty() || h.front() != '}')
      fail(name, fmt::format("header dict: expected ',' or '}}' after '{}'", key));
    break;
  }
  h.remove_prefix(1);
  if (!trim(h).empty())
    fail(name, fmt::format("header has text after the dict: '{}'", elide(trim(h), 40)));
  static constexpr const char* kKeys[] = {"descr", "fortran_order", "shape"};
  for (int k = 0; k < 3; ++k)
    if (!have[k]) fail(name, fmt::format("header has no '{}' entry", kKeys[k]));
  return d;
}

std::vector<int64_t> parse_shape(std::string_view t, const std::string& name) {
  std::vector<int64_t> shape;
  t = trim(t.substr(1, t.size() - 2));
  while (!t.empty()) {
    size_t comma = t.find(',');
    std::string_view item = trim(t.substr(0, comma));
    if (!item.empty()) {
      int64_t v = 0;
      for (char c : item) {
        if (c == 'L') continue; // Python 2 long suffix
        if (c < '0' || c > '9') fail(name, fmt::format("bad shape entry '{}'", elide(item)));
        v = v * 10 + (c - '0');
        if (v > (int64_t(1) << 40))
          fail(name, fmt::format("shape entry '{}' is too large", elide(item)));
      }
      shape.push_back(v);
    }
    if (comma == std::string_view::npos) break;
    t.remove_prefix(comma + 1);
  }
  return shape;
}

// Width in bytes encoded by a descriptor, or 0 for a named one.
uint32_t descr_width(std::string_view d) {
  if (d.size() >= 3 && (d[0] == '<' || d[0] == '>' || d[0] == '|' || d[0] == '='))
    d.remove_prefix(1);
  if (d.size() < 2) return 0;
  uint32_t w = 0;
  for (char c : d.substr(1)) {
    if (c < '0' || c > '9') return 0;
    w = w * 10 + uint32_t(c - '0');
  }
  return w;
}

uint32_t named_width(std::string_view d) {
  if (d == "bfloat16") return 2;
  if (d == "float8_e4m3" || d == "float8_e5m2" || d == "float8_e4m3fn" || d == "float8_e4m3fnuz" ||
      d == "float8_e5m2fnuz" || d == "float8_e4m3b11fnuz")
    return 1;
  return 0;
}

// Puts the elements of a Fortran-order array, as stored (whole elements, in order, possibly in
// several calls), where C order has them: `pieces` are equal consecutive parts of the C-order
// array (the ranks of a per-rank file). State is kept between calls, so a file is converted
// through a small buffer instead of a full-size copy.
class FortranScatter {
public:
  FortranScatter(const std::vector<int64_t>& shape, uint32_t w, const std::vector<uint8_t*>& pieces,
                 uint64_t total_bytes)
      : shape_(shape), w_(w), pieces_(pieces), idx_(shape.size(), 0), cstride_(shape.size(), 1) {
    piece_bytes_ = pieces.empty() ? 0 : total_bytes / pieces.size();
    for (size_t k = shape.size(); k-- > 1;) cstride_[k - 1] = cstride_[k] * uint64_t(shape[k]);
  }
  void put(const uint8_t* src, uint64_t n) {
    for (uint64_t i = 0; i < n; i += w_) {
      const uint64_t o = c_ * w_;
      if (uint8_t* dst = pieces_[o / piece_bytes_])
        std::memcpy(dst + o % piece_bytes_, src + i, w_);
      for (size_t k = 0; k < shape_.size(); ++k) { // the first axis varies fastest
        c_ += cstride_[k];
        if (++idx_[k] < shape_[k]) break;
        c_ -= cstride_[k] * uint64_t(shape_[k]);
        idx_[k] = 0;
      }
    }
  }

private:
  std::vector<int64_t> shape_;
  uint32_t w_;
  std::vector<uint8_t*> pieces_;
  uint64_t piece_bytes_ = 0;
  std::vector<int64_t> idx_;
  std::vector<uint64_t> cstride_;
  uint64_t c_ = 0; // C-order element index of the next stored element
};

void swap_bytes(uint8_t* p, uint64_t n, uint32_t w) {
  if (w == 2)
    for (uint64_t i = 0; i + 2 <= n; i += 2) std::swap(p[i], p[i + 1]);
  else if (w == 4)
    for (uint64_t i = 0; i + 4 <= n; i += 4) {
      std::swap(p[i], p[i + 3]);
      std::swap(p[i + 1], p[i + 2]);
    }
}

bool big_endian(const NpyArray& a) { return a.descr[0] == '>' && a.item_bytes > 1; }

std::string shape_text(const std::vector<int64_t>& s) {
  std::string o = "(";
  for (size_t i = 0; i < s.size(); ++i) o += fmt::format("{}{}", i ? ", " : "", s[i]);
  return o + (s.size() == 1 ? ",)" : ")");
}

} // namespace

uint64_t NpyArray::elems() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= uint64_t(d);
  return n;
}

NpyHeader parse_npy_header(std::string_view b, const std::string& name) {
  if (b.size() < 10 || b.substr(0, 6) != std::string_view(kMagic, 6))
    fail(name, "not a .npy file (bad magic; expected \\x93NUMPY)");
  uint8_t major = uint8_t(b[6]);
  uint64_t hlen, hstart;
  if (major == 1) {
    hlen = uint8_t(b[8]) | uint64_t(uint8_t(b[9])) << 8;
    hstart = 10;
  } else if (major == 2 || major == 3) {
    if (b.size() < 12) fail(name, "truncated header");
    hlen = 0;
    for (int i = 0; i < 4; ++i) hlen |= uint64_t(uint8_t(b[8 + i])) << (8 * i);
    hstart = 12;
  } else {
    fail(name, fmt::format("unsupported .npy format version {}.{}", major, uint8_t(b[7])));
  }
  if (hlen > kMaxHeader)
    fail(name, fmt::format("header of {} bytes (at most {})", hlen, kMaxHeader));
  if (hstart + hlen > b.size())
    fail(name, fmt::format("truncated header: {} bytes declared, {} present", hlen,
                           b.size() - std::min<uint64_t>(b.size(), hstart)));
  NpyHeader hd;
  hd.data_offset = hstart + hlen;
  const HeaderDict d = parse_dict(b.substr(hstart, hlen), name);
  NpyArray& a = hd.array;
  a.descr = std::string(d.descr);
  if (d.fortran_order != "True" && d.fortran_order != "False")
    fail(name, fmt::format("bad fortran_order '{}'", elide(d.fortran_order)));
  hd.fortran = d.fortran_order == "True";
  if (d.shape.empty() || d.shape[0] != '(')
    fail(name, fmt::format("bad shape '{}'", elide(d.shape)));
  a.shape = parse_shape(d.shape, name);
  a.item_bytes = descr_width(a.descr);
  if (!a.item_bytes) a.item_bytes = named_width(a.descr);
  if (!a.item_bytes || (a.item_bytes != 1 && a.item_bytes != 2 && a.item_bytes != 4))
    fail(name, fmt::format("unsupported dtype descriptor '{}'", elide(a.descr)));
  // Entries are <= 2^40 each, but their product may still overflow 64 bits.
  uint64_t need = a.item_bytes;
  for (int64_t dim : a.shape)
    if (__builtin_mul_overflow(need, uint64_t(dim), &need))
      fail(name, fmt::format("shape {} of '{}' has more than 2^64 bytes", shape_text(a.shape),
                             elide(a.descr)));
  hd.data_bytes = need;
  return hd;
}

namespace {

// Fills a.data from the data bytes as stored: byte order and Fortran order converted.
void convert_data(NpyHeader& hd, std::string_view stored) {
  NpyArray& a = hd.array;
  const uint8_t* p = reinterpret_cast<const uint8_t*>(stored.data());
  a.data.assign(p, p + stored.size());
  if (big_endian(a)) swap_bytes(a.data.data(), a.data.size(), a.item_bytes);
  if (hd.fortran && a.shape.size() >= 2) {
    std::vector<uint8_t> c(a.data.size());
    FortranScatter(a.shape, a.item_bytes, {c.data()}, c.size()).put(a.data.data(), a.data.size());
    a.data.swap(c);
  }
}

std::string truncated(const NpyHeader& hd, uint64_t have) {
  return fmt::format("truncated data: shape {} of '{}' needs {} bytes, the file has {}",
                     shape_text(hd.array.shape), elide(hd.array.descr), hd.data_bytes, have);
}

} // namespace

NpyArray parse_npy(std::string_view b, const std::string& name) {
  NpyHeader hd = parse_npy_header(b, name);
  const uint64_t have = b.size() - hd.data_offset;
  if (have < hd.data_bytes) fail(name, truncated(hd, have));
  if (have > hd.data_bytes)
    fail(name, fmt::format("{} bytes of trailing data after the array", have - hd.data_bytes));
  convert_data(hd, b.substr(hd.data_offset));
  return std::move(hd.array);
}

NpyReader::NpyReader(const std::string& path) : path_(path) {
  // Read in steps so that nothing large is allocated before the header is known and checked:
  // a stream (a pipe, /dev/zero) is read only as far as the header says, a regular file's size
  // is compared with the header before its data is read.
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw NpyError(fmt::format("{}: cannot open file: {}", path, std::strerror(errno)));
  struct stat st {};
  regular_ = fstat(fd_, &st) == 0 && S_ISREG(st.st_mode);
  file_size_ = regular_ ? uint64_t(st.st_size) : 0;
  try {
    read_header();
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

void NpyReader::read_header() {
  std::string buf;
  auto read_to = [&](uint64_t n) { // buf grows to n bytes, or fewer at end of file
    const size_t old = buf.size();
    if (n <= old) return;
    buf.resize(size_t(n));
    buf.resize(old + fill(reinterpret_cast<uint8_t*>(buf.data()) + old, size_t(n - old)));
  };
  read_to(12);
  if (buf.size() >= 10 && buf.compare(0, 6, kMagic, 6) == 0) {
    const uint8_t major = uint8_t(buf[6]);
    uint64_t hlen = uint8_t(buf[8]) | uint64_t(uint8_t(buf[9])) << 8, hstart = 10;
    if ((major == 2 || major == 3) && buf.size() >= 12) {
      hlen = 0;
      for (int i = 0; i < 4; ++i) hlen |= uint64_t(uint8_t(buf[8 + i])) << (8 * i);
      hstart = 12;
    }
    if (hlen <= kMaxHeader) read_to(hstart + hlen);
  }
  hd_ = parse_npy_header(buf, path_);
  pending_ = buf.substr(size_t(hd_.data_offset)); // a header shorter than the first 12 bytes
}

NpyReader::~NpyReader() {
  if (fd_ >= 0) ::close(fd_);
}

size_t NpyReader::fill(uint8_t* dst, size_t n) {
  size_t got = std::min(n, pending_.size());
  if (got) {
    std::memcpy(dst, pending_.data(), got);
    pending_.erase(0, got);
  }
  while (got < n) {
    // Large reads straight into place; the kernel caps one read below 2 GiB.
    const ssize_t r = ::read(fd_, dst + got, std::min<size_t>(n - got, size_t(1) << 30));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw NpyError(fmt::format("{}: read failed: {}", path_, std::strerror(errno)));
    if (r == 0) break;
    got += size_t(r);
  }
  return got;
}

void NpyReader::skip(uint64_t n) {
  const size_t from_pending = size_t(std::min<uint64_t>(n, pending_.size()));
  pending_.erase(0, from_pending);
  n -= from_pending;
  if (n == 0) return;
  if (regular_) { // the size was checked: the bytes are there
    if (::lseek(fd_, off_t(n), SEEK_CUR) < 0)
      throw NpyError(fmt::format("{}: seek failed: {}", path_, std::strerror(errno)));
    return;
  }
  std::vector<uint8_t> buf(size_t(std::min<uint64_t>(n, uint64_t(1) << 20)));
  while (n > 0) {
    const size_t k = size_t(std::min<uint64_t>(n, buf.size()));
    if (fill(buf.data(), k) < k) fail(path_, "truncated data");
    n -= k;
  }
}

void NpyReader::check_size() const {
  const uint64_t end = hd_.data_offset + hd_.data_bytes; // data_bytes < 2^64 - offset: checked
  if (regular_ && file_size_ != end) {
    const uint64_t have = file_size_ - std::min(file_size_, hd_.data_offset);
    if (have < hd_.data_bytes) fail(path_, truncated(hd_, have));
    fail(path_, fmt::format("{} bytes of trailing data after the array", have - hd_.data_bytes));
  }
}

void NpyReader::read_exact(uint8_t* dst, uint64_t n, uint64_t& have) {
  const size_t got = fill(dst, size_t(n));
  have += got;
  if (got < n) fail(path_, truncated(hd_, have));
}

bool NpyReader::mappable() const {
  return regular_ && (!hd_.fortran || hd_.array.shape.size() < 2) && !big_endian(hd_.array);
}

void NpyReader::map_or_read(uint8_t* dst, uint64_t n, uint64_t& have) {
  auto need = [&](uint8_t* d, uint64_t k) { read_exact(d, k, have); };
  // The file offset of dst[0] (the checked size: data_offset + data_bytes fits).
  const uint64_t start = have;
  const uint64_t pos = hd_.data_offset + start;
  const uintptr_t a = reinterpret_cast<uintptr_t>(dst);
  const uint64_t head = (4096 - a % 4096) % 4096;
  if ((a - pos) % 4096 != 0 || n < head + kMinMappedBytes) return need(dst, n);
  const uint64_t mid = (n - head) / 4096 * 4096;
  need(dst, head);
  uint8_t* m = dst + head;
  void* r = mmap(m, mid, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd_, off_t(pos + head));
  if (r != MAP_FAILED && remember_mapped_input(m, mid, path_)) {
    have += mid;
  } else if (mmap(m, mid, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
                  0) == MAP_FAILED) { // (a failed MAP_FIXED may have unmapped the range)
    if (errno == ENOMEM) throw OutOfMemory(fmt::format("mapping the data of {}", path_), mid);
    fail(path_, fmt::format("cannot map or allocate {} bytes: {}", mid, std::strerror(errno)));
  }
  // On from the logical position (bytes read along with the header are in the mapping or
  // are read again).
  pending_.clear();
  if (::lseek(fd_, off_t(hd_.data_offset + have), SEEK_SET) < 0)
    fail(path_, fmt::format("seek failed: {}", std::strerror(errno)));
  const uint64_t done = have - start;
  need(dst + done, n - done);
}

void NpyReader::read_into(const std::vector<uint8_t*>& pieces, bool map_pages) {
  if (consumed_) fail(path_, "the data was read already");
  consumed_ = true;
  check_size();
  const NpyArray& a = hd_.array;
  const uint64_t total = hd_.data_bytes;
  if (pieces.empty() || total % pieces.size() != 0)
    fail(path_, fmt::format("{} data bytes do not split into {} pieces", total, pieces.size()));
  const uint64_t piece = total / pieces.size();
  uint64_t have = 0; // data bytes read
  auto need = [&](uint8_t* dst, uint64_t n) { read_exact(dst, n, have); };
  if (!hd_.fortran || a.shape.size() < 2) { // C order: read in place, swap in place
    for (uint8_t* p : pieces) {
      if (!p) { // another process's slice (MPI): skipped
        skip(piece);
        have += piece;
        continue;
      }
      if (map_pages && mappable()) {
        map_or_read(p, piece, have);
        continue;
      }
      need(p, piece);
      if (big_endian(a)) swap_bytes(p, piece, a.item_bytes);
    }
  } else { // through a bounce buffer of whole elements
    FortranScatter scatter(a.shape, a.item_bytes, pieces, total);
    std::vector<uint8_t> buf(size_t(1) << 20); // a multiple of every item size
    while (have < total) {
      const uint64_t n = std::min<uint64_t>(buf.size(), total - have);
      need(buf.data(), n);
      if (big_endian(a)) swap_bytes(buf.data(), n, a.item_bytes);
      scatter.put(buf.data(), n);
    }
  }
  uint8_t extra;
  if (fill(&extra, 1) != 0) fail(path_, "trailing data after the array");
}

NpyArray read_npy(const std::string& path, const std::function<void(const NpyArray&)>& check) {
  NpyReader f(path);
  if (check) check(f.header().array);
  f.check_size();
  NpyArray a = f.header().array;
  try {
    a.data.resize(size_t(f.header().data_bytes));
  } catch (const std::bad_alloc&) {
    throw OutOfMemory(fmt::format("the data of {}", path), f.header().data_bytes);
  }
  f.read_into({a.data.data()});
  return a;
}

std::string npy_descr(DType t) {
  switch (t) {
  case DType::fp32: return "<f4";
  case DType::fp16: return "<f2";
  case DType::bf16: return "<u2";
  case DType::fp8e4m3:
  case DType::fp8e5m2: return "|u1";
  case DType::int8: return "|i1";
  case DType::uint8: return "|u1";
  case DType::int16: return "<i2";
  case DType::uint16: return "<u2";
  case DType::int32: return "<i4";
  case DType::uint32: return "<u4";
  }
  return "?";
}

bool npy_descr_matches(std::string_view d, DType t) {
  // Byte order does not matter for the match (big-endian is swapped on reading).
  std::string s(d);
  if (!s.empty() && (s[0] == '>' || s[0] == '=' || s[0] == '|')) s[0] = '<';
  auto any = [&](std::initializer_list<const char*> l) {
    for (const char* x : l)
      if (s == x) return true;
    return false;
  };
  switch (t) {
  case DType::fp32: return any({"<f4"});
  case DType::fp16: return any({"<f2"});
  case DType::bf16: return any({"<u2", "<V2", "bfloat16"});
  case DType::fp8e4m3: return any({"<u1", "<V1", "float8_e4m3"});
  case DType::fp8e5m2: return any({"<u1", "<V1", "<f1", "float8_e5m2"});
  case DType::int8: return any({"<i1"});
  case DType::uint8: return any({"<u1", "<b1"});
  case DType::int16: return any({"<i2"});
  case DType::uint16: return any({"<u2"});
  case DType::int32: return any({"<i4"});
  case DType::uint32: return any({"<u4"});
  }
  return false;
}

void check_npy(const NpyArray& a, DType t, const std::vector<int64_t>& shape,
               const std::string& name, const std::string& tensor) {
  if (!npy_descr_matches(a.descr, t))
    throw NpyError(
        fmt::format("{}: dtype '{}' does not match tensor '{}' of dtype {} (expected '{}')", name,
                    a.descr, tensor, dtype_name(t), npy_descr(t)));
  if (a.shape != shape)
    throw NpyError(fmt::format("{}: shape {} does not match tensor '{}' of shape {}", name,
                               shape_text(a.shape), tensor, shape_text(shape)));
}

std::string npy_header(DType t, const std::vector<int64_t>& shape) {
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
                                 npy_descr(t), shape_text(shape));
  // Pad so that magic + len + header + '\n' is a multiple of 64 (numpy's alignment).
  size_t total = 10 + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';
  std::string out(kMagic, 6);
  out += char(1);
  out += char(0);
  out += char(dict.size() & 0xff);
  out += char(dict.size() >> 8);
  out += dict;
  return out;
}

namespace {
uint64_t npy_bytes(DType t, const std::vector<int64_t>& shape) {
  uint64_t n = dtype_bytes(t);
  for (int64_t d : shape) n *= uint64_t(d);
  return n;
}
} // namespace

std::string format_npy(DType t, const std::vector<int64_t>& shape, const uint8_t* data) {
  std::string out = npy_header(t, shape);
  out.append(reinterpret_cast<const char*>(data), npy_bytes(t, shape));
  return out;
}

void stream_npy(std::ostream& out, DType t, const std::vector<int64_t>& shape,
                const std::vector<std::pair<const uint8_t*, uint64_t>>& chunks) {
  uint64_t n = 0;
  for (const auto& [p, len] : chunks) n += len;
  if (n != npy_bytes(t, shape))
    throw NpyError(fmt::format("{} data bytes for a {} array", n, shape_text(shape)));
  const std::string h = npy_header(t, shape);
  out.write(h.data(), std::streamsize(h.size()));
  for (const auto& [p, len] : chunks)
    out.write(reinterpret_cast<const char*>(p), std::streamsize(len));
}

void write_npy(const std::string& path, DType t, const std::vector<int64_t>& shape,
               const uint8_t* data) {
  try {
    write_file_atomic(path, format_npy(t, shape, data));
  } catch (const OutputError& e) {
    throw NpyError(e.what());
  }
}

} // namespace nisa::interp
