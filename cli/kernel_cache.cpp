// The cache of assembled kernels (kernel_cache.h).
#include "cli/kernel_cache.h"

#include <fmt/format.h>

#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <span>
#include <string_view>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "interp/run/precheck.h"
#include "isa/object.h"
#include "isa/output_file.h"

namespace nisa::cli {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kMagic = "nisa-asm/1\n";

uint64_t hash_of(std::string_view s) {
  return fnv1a64({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
}

// The entry's check of its object, in place of the object's own checksum (FNV-1a before
// object version 3, a byte at a time: ~2.5 ms for depthwise_conv1d's 1.3 MB): 8 bytes a step
// over 4 independent lanes.
uint64_t quick_hash(std::span<const uint8_t> b) {
  constexpr uint64_t kMul = 0xff51afd7ed558ccdull;
  uint64_t h[4] = {0x9e3779b97f4a7c15ull ^ b.size(), 1, 2, 3};
  size_t i = 0;
  for (; i + 32 <= b.size(); i += 32)
    for (int l = 0; l < 4; ++l) {
      uint64_t w;
      std::memcpy(&w, b.data() + i + 8 * l, 8);
      h[l] = (h[l] ^ w) * kMul;
      h[l] ^= h[l] >> 29;
    }
  for (; i < b.size(); ++i) h[0] = (h[0] ^ b[i]) * kMul;
  uint64_t r = 0;
  for (uint64_t x : h) r = (r ^ x) * kMul, r ^= r >> 32;
  return r;
}

// A cache file mapped read-only (no copy of its 10^6 bytes into a buffer first).
class Mapped {
public:
  explicit Mapped(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
      void* p = ::mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
      if (p != MAP_FAILED) data_ = static_cast<const uint8_t*>(p), size_ = size_t(st.st_size);
    }
    ::close(fd);
  }
  ~Mapped() {
    if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
  }
  Mapped(const Mapped&) = delete;
  Mapped& operator=(const Mapped&) = delete;
  std::span<const uint8_t> bytes() const { return {data_, size_}; }

private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

void put_u64(std::string& out, uint64_t v) {
  for (int k = 0; k < 8; ++k) out.push_back(static_cast<char>(v >> (8 * k)));
}
void put_str(std::string& out, std::string_view s) {
  put_u64(out, s.size());
  out += s;
}

// Reads what put_u64 / put_str wrote; any overrun leaves ok false.
struct Cursor {
  std::span<const uint8_t> b;
  size_t at = 0;
  bool ok = true;
  uint64_t u64() {
    if (b.size() - at < 8) return ok = false, 0;
    uint64_t v = 0;
    for (int k = 0; k < 8; ++k) v |= uint64_t(b[at + k]) << (8 * k);
    at += 8;
    return v;
  }
  std::string_view str() {
    const uint64_t n = u64();
    if (!ok || n > b.size() - at) return ok = false, std::string_view{};
    std::string_view s(reinterpret_cast<const char*>(b.data() + at), n);
    at += n;
    return s;
  }
};

// Everything besides the files' bytes that decides what the assembler makes of `path`: the
// binary, where relative paths start from, the path as given and every option.
std::string key_text(const std::string& path, const nasm::AsmOptions& o) {
  std::error_code ec;
  std::string k = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|", interp::binary_stamp(),
                              fs::current_path(ec).string(), path, o.target ? int(*o.target) : -1,
                              o.max_errors, o.max_depth, o.max_iterations, o.max_instructions,
                              o.max_steps, o.max_lexed_bytes);
  for (const auto& [n, v] : o.defines) put_str(k, n), put_str(k, v);
  k += '|';
  for (const auto& d : o.include_dirs) put_str(k, d);
  return k;
}

// The file's bytes still hash to `want`.
bool same_file(const std::string& path, uint64_t want) {
  std::vector<uint8_t> bytes;
  if (read_object_bytes(path, bytes)) return false;
  return fnv1a64(bytes) == want;
}

std::optional<CachedModule> lookup(const fs::path& file, const std::string& key) {
  const Mapped map(file.string());
  const std::span<const uint8_t> bytes = map.bytes();
  if (bytes.size() < kMagic.size() ||
      std::string_view(reinterpret_cast<const char*>(bytes.data()), kMagic.size()) != kMagic)
    return std::nullopt;
  Cursor c{bytes, kMagic.size()};
  if (c.str() != key || !c.ok) return std::nullopt; // another key of the same hash
  for (uint64_t n = c.u64(); c.ok && n > 0; --n) {
    const std::string path(c.str());
    const uint64_t h = c.u64();
    if (!c.ok || !same_file(path, h)) return std::nullopt;
  }
  for (uint64_t n = c.u64(); c.ok && n > 0; --n) {
    std::error_code ec;
    const fs::path p(c.str());
    if (!c.ok || fs::exists(p, ec) || ec) return std::nullopt;
  }
  const uint64_t check = c.u64();
  if (!c.ok) return std::nullopt;
  const std::span<const uint8_t> object = bytes.subspan(c.at);
  if (quick_hash(object) != check) return std::nullopt; // a damaged entry is a miss
  ReadOptions ro;
  // quick_hash checked the bytes, which this binary wrote (its stamp is in the key) from a
  // module the assembler checked: no checksum, no check_inst again; the decoder's own checks
  // of each field still hold.
  ro.verify_checksum = false;
  ro.check_instructions = false;
  auto m = read_object(object, ro);
  if (!m) return std::nullopt;
  return CachedModule{std::move(*m), object_checksum(object)};
}

void store(const fs::path& dir, const fs::path& file, const std::string& key,
           const nasm::AsmResult& r, const std::vector<uint8_t>& object) {
  std::string entry(kMagic);
  put_str(entry, key);
  put_u64(entry, r.read_files.size());
  for (const auto& [path, h] : r.read_files) put_str(entry, path), put_u64(entry, h);
  put_u64(entry, r.absent_files.size());
  for (const auto& path : r.absent_files) put_str(entry, path);
  put_u64(entry, quick_hash(object));
  entry.append(reinterpret_cast<const char*>(object.data()), object.size());
  std::error_code ec;
  fs::create_directories(dir, ec);
  try {
    write_file_atomic(file.string(), entry); // a reader sees the whole entry or none
  } catch (const std::exception&) {
    return;
  }
  interp::after_cache_store(dir.string());
}

} // namespace

std::optional<CachedModule> assemble_cached(const std::string& path, const nasm::AsmOptions& opts,
                                            std::string& diags) {
  const fs::path dir = interp::cache_dir();
  const std::string key = dir.empty() ? std::string() : key_text(path, opts);
  const fs::path file = dir / fmt::format("asm-{:016x}.bin", hash_of(key));
  if (!dir.empty())
    if (auto hit = lookup(file, key)) {
      interp::touch_cache_entry(file.string()); // recently used: pruned last
      return hit;
    }
  nasm::AsmResult r = nasm::assemble_file(path, opts);
  if (!r.ok()) {
    diags = r.diagnostics_text();
    return std::nullopt;
  }
  if (dir.empty()) return CachedModule{std::move(*r.module), 0};
  const std::vector<uint8_t> object = write_object(*r.module);
  store(dir, file, key, r, object);
  return CachedModule{std::move(*r.module), object_checksum(object)};
}

} // namespace nisa::cli
