#include "interp/npy.h"

#include <unistd.h>

#include <cstdio>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

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

// The value text of 'key' in the header dict: a quoted string, True/False or a tuple.
std::string_view dict_value(std::string_view h, std::string_view key, const std::string& name) {
  std::string k1 = fmt::format("'{}'", key), k2 = fmt::format("\"{}\"", key);
  size_t at = h.find(k1);
  if (at == std::string_view::npos) at = h.find(k2);
  if (at == std::string_view::npos) fail(name, fmt::format("header has no '{}' entry", key));
  size_t colon = h.find(':', at + k1.size());
  if (colon == std::string_view::npos)
    fail(name, fmt::format("header entry '{}' has no value", key));
  std::string_view rest = trim(h.substr(colon + 1));
  size_t end;
  if (!rest.empty() && (rest[0] == '\'' || rest[0] == '"')) {
    end = rest.find(rest[0], 1);
    if (end == std::string_view::npos) fail(name, fmt::format("unterminated string for '{}'", key));
    return rest.substr(1, end - 1);
  }
  if (!rest.empty() && rest[0] == '(') {
    end = rest.find(')');
    if (end == std::string_view::npos) fail(name, "unterminated shape tuple");
    return rest.substr(0, end + 1);
  }
  if (!rest.empty() && rest[0] == '[')
    fail(name, "structured dtypes (a descr list) are not supported");
  end = rest.find_first_of(",}");
  return trim(rest.substr(0, end));
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
        if (c < '0' || c > '9') fail(name, fmt::format("bad shape entry '{}'", item));
        v = v * 10 + (c - '0');
        if (v > (int64_t(1) << 40)) fail(name, fmt::format("shape entry '{}' is too large", item));
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

void fortran_to_c(std::vector<uint8_t>& data, const std::vector<int64_t>& shape, uint32_t w) {
  size_t nd = shape.size();
  if (nd < 2) return;
  std::vector<uint8_t> out(data.size());
  std::vector<int64_t> idx(nd, 0), fstride(nd, 1);
  for (size_t k = 1; k < nd; ++k) fstride[k] = fstride[k - 1] * shape[k - 1];
  uint64_t n = data.size() / w;
  for (uint64_t c = 0; c < n; ++c) {
    int64_t f = 0;
    for (size_t k = 0; k < nd; ++k) f += idx[k] * fstride[k];
    std::memcpy(&out[c * w], &data[f * w], w);
    for (size_t k = nd; k-- > 0;) {
      if (++idx[k] < shape[k]) break;
      idx[k] = 0;
    }
  }
  data.swap(out);
}

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

NpyArray parse_npy(std::string_view b, const std::string& name) {
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
  if (hlen > kMaxHeader || hstart + hlen > b.size())
    fail(name, fmt::format("truncated header: {} bytes declared, {} present", hlen,
                           b.size() - std::min<uint64_t>(b.size(), hstart)));
  std::string_view h = b.substr(hstart, hlen);
  NpyArray a;
  a.descr = std::string(dict_value(h, "descr", name));
  std::string_view fo = dict_value(h, "fortran_order", name);
  if (fo != "True" && fo != "False") fail(name, fmt::format("bad fortran_order '{}'", fo));
  std::string_view sh = dict_value(h, "shape", name);
  if (sh.empty() || sh[0] != '(') fail(name, fmt::format("bad shape '{}'", sh));
  a.shape = parse_shape(sh, name);
  a.item_bytes = descr_width(a.descr);
  if (!a.item_bytes) a.item_bytes = named_width(a.descr);
  if (!a.item_bytes || (a.item_bytes != 1 && a.item_bytes != 2 && a.item_bytes != 4))
    fail(name, fmt::format("unsupported dtype descriptor '{}'", a.descr));
  uint64_t need = a.elems() * a.item_bytes, have = b.size() - hstart - hlen;
  if (have < need)
    fail(name, fmt::format("truncated data: shape {} of '{}' needs {} bytes, the file has {}",
                           shape_text(a.shape), a.descr, need, have));
  if (have > need)
    fail(name, fmt::format("{} bytes of trailing data after the array", have - need));
  const uint8_t* p = reinterpret_cast<const uint8_t*>(b.data() + hstart + hlen);
  a.data.assign(p, p + need);
  if (a.descr[0] == '>' && a.item_bytes > 1)
    for (uint64_t i = 0; i < need; i += a.item_bytes)
      std::reverse(&a.data[i], &a.data[i + a.item_bytes]);
  if (fo == "True") fortran_to_c(a.data, a.shape, a.item_bytes);
  return a;
}

NpyArray read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw NpyError(fmt::format("{}: cannot open file", path));
  std::ostringstream ss;
  ss << f.rdbuf();
  return parse_npy(ss.str(), path);
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

namespace {
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

void write_npy(const std::string& path, DType t, const std::vector<int64_t>& shape,
               const uint8_t* data) {
  write_npy_chunks(path, t, shape, {{data, npy_bytes(t, shape)}});
}

void write_npy_chunks(const std::string& path, DType t, const std::vector<int64_t>& shape,
                      const std::vector<std::pair<const uint8_t*, uint64_t>>& chunks) {
  uint64_t n = 0;
  for (const auto& [p, len] : chunks) n += len;
  if (n != npy_bytes(t, shape))
    throw NpyError(fmt::format("{}: {} data bytes for a {} array", path, n, shape_text(shape)));
  // Written next to the destination, then renamed over it: a failed write leaves no partial file.
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f) throw NpyError(fmt::format("{}: cannot create file", tmp));
    std::string h = npy_header(t, shape);
    f.write(h.data(), std::streamsize(h.size()));
    for (const auto& [p, len] : chunks)
      f.write(reinterpret_cast<const char*>(p), std::streamsize(len));
    f.flush();
    if (!f) {
      f.close();
      std::remove(tmp.c_str());
      throw NpyError(fmt::format("{}: write failed", path));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw NpyError(fmt::format("{}: cannot replace the file", path));
  }
}

} // namespace nisa::interp
