// The static check before a run (precheck.h).
#include "interp/run/precheck.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <new>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "isa/error.h"
#include "isa/object.h"

namespace nisa::interp {

CheckResult precheck(const Module& mod, Target target, int lnc, int ranks, double max_seconds) {
  CheckOptions o;
  o.lnc = lnc, o.ranks = ranks, o.target = target;
  o.max_nodes = kPrecheckMaxNodes;
  o.max_seconds = max_seconds;
  o.max_reports = 10;
  try {
    return check_module(mod, o);
  } catch (const std::exception& e) { // out of memory (HostError): the run may still fit
    CheckResult r;
    r.status = CheckStatus::outside;
    r.limit = true;
    r.outside = e.what();
    return r;
  }
}

std::string precheck_text(const CheckResult& r, const std::string& who) {
  if (r.status == CheckStatus::proved) return {};
  if (r.status == CheckStatus::outside)
    return r.limit ? fmt::format("{}: note: the static check was skipped: the kernel is larger "
                                 "than its bound before a run ({} unrolled nodes or {} s); `nisa "
                                 "check` has no such bound (--no-check: no check)\n",
                                 who, kPrecheckMaxNodes, kPrecheckMaxSeconds)
                   : fmt::format("{}: note: the static check does not apply: {}\n", who, r.outside);
  std::ostringstream os;
  os << fmt::format("{}: warning: the static check (nisa check) did not prove the kernel: {} "
                    "unordered pair{}, {} deadlock report{}; the run goes on, its output may "
                    "depend on the schedule (--no-check: no check)\n",
                    who, r.pairs.size(), r.pairs.size() == 1 ? "" : "s", r.deadlocks.size(),
                    r.deadlocks.size() == 1 ? "" : "s");
  // the check's own lines, without its closing summary
  std::istringstream is(r.report);
  for (std::string line; std::getline(is, line);)
    if (!line.starts_with("not proved:")) os << line << "\n";
  return os.str();
}

std::string cache_dir() {
  if (const char* d = std::getenv("NISA_CACHE_DIR")) return std::string(d) == "off" ? "" : d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return (std::filesystem::path(x) / "nisa").string();
  if (const char* h = std::getenv("HOME"); h && *h)
    return (std::filesystem::path(h) / ".cache" / "nisa").string();
  return {};
}

namespace {
bool is_cache_entry(const std::string& name) {
  auto between = [&](std::string_view pre, std::string_view suf) {
    return name.size() > pre.size() + suf.size() && name.starts_with(pre) && name.ends_with(suf);
  };
  return between("asm-", ".bin") || between("precheck-", ".txt");
}
} // namespace

size_t prune_cache(const std::string& dir, uint64_t max_bytes) {
  namespace fs = std::filesystem;
  struct Entry {
    fs::file_time_type at;
    uint64_t bytes;
    fs::path path;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!is_cache_entry(it->path().filename().string())) continue;
    std::error_code e1, e2;
    const uint64_t n = it->file_size(e1);
    const fs::file_time_type t = it->last_write_time(e2);
    if (e1 || e2) continue; // gone meanwhile (another nisa pruning): not ours to count
    entries.push_back({t, n, it->path()});
    total += n;
  }
  if (total <= max_bytes) return 0;
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.at < b.at; });
  const uint64_t goal = max_bytes / 4 * 3;
  size_t removed = 0;
  for (const Entry& e : entries) {
    if (total <= goal) break;
    if (fs::remove(e.path, ec)) ++removed;
    total -= e.bytes;
  }
  return removed;
}

void after_cache_store(const std::string& dir) {
  namespace fs = std::filesystem;
  uint64_t max_mb = 256;
  if (const char* m = std::getenv("NISA_CACHE_MAX_MB"); m && *m) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(m, &end, 10);
    if (end != m && *end == '\0' && v <= (uint64_t(1) << 40)) max_mb = v; // else the default
  }
  if (max_mb == 0) return;
  const fs::path stamp = fs::path(dir) / "prune.stamp";
  std::error_code ec;
  const auto last = fs::last_write_time(stamp, ec);
  if (!ec && fs::file_time_type::clock::now() - last < std::chrono::minutes(10)) return;
  std::ofstream(stamp).put('\n'); // claimed before the scan: concurrent runs do not all prune
  prune_cache(dir, max_mb << 20);
}

void touch_cache_entry(const std::string& file) {
  ::utimensat(AT_FDCWD, file.c_str(), nullptr, 0); // a failure only makes the entry look older
}

uint64_t binary_stamp() {
  static const uint64_t stamp = [] {
    struct stat st {};
    if (::stat("/proc/self/exe", &st) != 0) return uint64_t(0);
    return uint64_t(uint64_t(st.st_mtim.tv_sec) * 1000000007ull ^ uint64_t(st.st_mtim.tv_nsec) ^
                    uint64_t(st.st_size) << 20);
  }();
  return stamp;
}

std::string precheck_text_cached(const Module& mod, Target target, int lnc, int ranks,
                                 const std::string& who, uint64_t module_hash) {
  namespace fs = std::filesystem;
  const fs::path dir = cache_dir();
  if (dir.empty()) return precheck_text(precheck(mod, target, lnc, ranks), who);
  // The module's bytes, or their checksum when the caller has it (writing a 10^4-instruction
  // object again cost a run ~5 ms).
  std::vector<uint8_t> key;
  if (module_hash != 0) {
    const std::string h = fmt::format("object {:016x}", module_hash);
    key.assign(h.begin(), h.end());
  } else {
    key = write_object(mod);
  }
  const std::string opts =
      fmt::format("|{}|{}|{}|{}|{}", int(target), lnc, ranks, binary_stamp(), kPrecheckMaxNodes);
  key.insert(key.end(), opts.begin(), opts.end());
  const fs::path file = dir / fmt::format("precheck-{:016x}.txt", fnv1a64(key));
  // The text is stored with "WHO" for the command's name, so one entry serves every caller.
  static constexpr std::string_view kWho = "\x01WHO\x01";
  auto with_who = [&](std::string t) {
    for (size_t at = 0; (at = t.find(kWho, at)) != std::string::npos; at += who.size())
      t.replace(at, kWho.size(), who);
    return t;
  };
  if (std::ifstream in{file, std::ios::binary}) {
    std::ostringstream text;
    text << in.rdbuf();
    const std::string t = text.str();
    if (t.starts_with("nisa-precheck/1\n")) {
      touch_cache_entry(file.string());
      return with_who(t.substr(16));
    }
  }
  const std::string text = precheck_text(precheck(mod, target, lnc, ranks), std::string(kWho));
  std::error_code ec;
  fs::create_directories(dir, ec);
  const fs::path tmp = file.string() + fmt::format(".{}.tmp", ::getpid());
  {
    std::ofstream out{tmp, std::ios::binary};
    out << "nisa-precheck/1\n" << text;
    out.close();
    if (out) fs::rename(tmp, file, ec); // atomic: a reader sees the whole entry or none
  }
  fs::remove(tmp, ec);
  after_cache_store(dir.string());
  return with_who(text);
}

} // namespace nisa::interp
