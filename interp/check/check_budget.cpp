// nisa check: its bounds (check_budget.h).
#include "interp/check/check_budget.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "interp/check/check_graph.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define NISA_CHECK_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) ||                         \
    __has_feature(memory_sanitizer)
#define NISA_CHECK_SANITIZED 1
#endif
#endif

namespace nisa::interp {

uint64_t default_check_memory(uint64_t in_use) {
  const uint64_t as = check_detail::address_space_limit();
  if (!as) return kCheckDefaultMemory;
  return std::min(kCheckDefaultMemory, as > in_use ? (as - in_use) / 2 : 0);
}

uint64_t memory_in_use() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long long size = 0, resident = 0;
  const int n = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  if (n != 2) return 0;
  const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
#ifdef NISA_CHECK_SANITIZED
  return resident * page;
#else
  return size * page;
#endif
}

} // namespace nisa::interp

namespace nisa::interp::check_detail {
namespace {

uint64_t mib(uint64_t bytes) { return (bytes + (uint64_t(1) << 20) - 1) >> 20; }

// "; the address-space limit (ulimit -v) is N MiB" when there is one.
std::string rlimit_note() {
  const uint64_t as = address_space_limit();
  return as ? fmt::format("; the address-space limit (ulimit -v) is {} MiB", mib(as)) : "";
}

} // namespace

uint64_t address_space_limit() {
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return 0;
  return uint64_t(rl.rlim_cur);
}

Budget::Budget(const CheckOptions& o)
    : o_(o), base_(memory_in_use()),
      limit_(o.max_memory ? o.max_memory : default_check_memory(base_)),
      node_limit_(o.max_nodes ? o.max_nodes
                              : std::clamp<uint64_t>(limit_ / kCheckNodeBytes, 1, kCheckMaxNodes)),
      start_(std::chrono::steady_clock::now()), last_read_(start_) {}

uint64_t Budget::used() const {
  const uint64_t now = memory_in_use();
  return now > base_ ? now - base_ : 0;
}

void Budget::check() {
  const auto now = std::chrono::steady_clock::now();
  if (g_) nodes_ = g_->nodes.size();
  const double secs = std::chrono::duration<double>(now - start_).count();
  if (o_.max_seconds > 0 && secs > o_.max_seconds)
    throw OutsideLimit(fmt::format("the check ran for more than {} s, its time limit, while {} ({} "
                                   "nodes): raise the limit with --max-seconds",
                                   o_.max_seconds, phase_, nodes_));
  if (now - last_read_ < std::chrono::milliseconds(10)) return;
  last_read_ = now;
  last_memory_ = used();
  if (last_memory_ > limit_) over_memory(last_memory_);
}

void Budget::over_memory(uint64_t used) const {
  throw OutsideLimit(
      fmt::format("the check's memory grew by {} MiB, past its limit of {} MiB, while "
                  "{} ({} nodes): raise the limit with --max-memory (MiB){}",
                  mib(used), mib(limit_), phase_, nodes_, rlimit_note()));
}

void Budget::reserve(uint64_t bytes, const std::string& what) {
  if (g_) nodes_ = g_->nodes.size();
  last_memory_ = used();
  if (last_memory_ + bytes > limit_)
    throw OutsideLimit(
        fmt::format("{} need {} MiB, and with the {} MiB the check uses that is past the "
                    "memory limit of {} MiB ({} nodes): raise the limit with "
                    "--max-memory (MiB){}",
                    what, mib(bytes), mib(last_memory_), mib(limit_), nodes_, rlimit_note()));
}

void Budget::round(int r) {
  if (r > o_.max_rounds)
    throw OutsideLimit(
        fmt::format("the orders derived from semaphore counts still changed after {} "
                    "rounds, the limit ({} nodes): raise it with --max-rounds",
                    o_.max_rounds, g_ ? g_->nodes.size() : nodes_));
  phase(fmt::format("deriving the orders from semaphore counts (round {})", r));
  check();
}

std::string Budget::out_of_memory() const {
  return fmt::format("out of memory: {} at {} nodes (the check used {} MiB at the last reading{}); "
                     "--max-memory (now {} MiB) stops the check before that, with exit code 6",
                     phase_, nodes_, mib(last_memory_), rlimit_note(), mib(limit_));
}

} // namespace nisa::interp::check_detail
