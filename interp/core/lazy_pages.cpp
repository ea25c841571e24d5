#include "interp/core/lazy_pages.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 // Linux 5.14; older kernels answer EINVAL (the faults remain)
#endif

namespace nisa::interp {

LazyPages::LazyPages(uint8_t* base, size_t bytes)
    : base_(base), pages_((bytes + kPage - 1) / kPage),
      bits_(std::make_unique<std::atomic<uint64_t>[]>((pages_ + 63) / 64)) {
  clear();
}

void LazyPages::clear() {
  static std::atomic<uint64_t> ids{0};
  for (size_t w = 0; w < (pages_ + 63) / 64; ++w) bits_[w].store(0, std::memory_order_relaxed);
  id_.store(ids.fetch_add(1, std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

namespace {
// The private (copied) pages among [first, first + n) of this process's pages, from
// /proc/self/pagemap (present or swapped, and not a page of the file: bit 61 clear); false when
// the file cannot be read. One read of 8 bytes a page: a run's 128 partitions leave 128 gaps
// between the pages it asked for, which one madvise each cost a syscall and a TLB shootdown.
bool private_pages(uintptr_t first, size_t n, std::vector<uint8_t>& out) {
  static const int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  std::vector<uint64_t> e(n);
  const ssize_t want = ssize_t(n * sizeof(uint64_t));
  if (pread(fd, e.data(), size_t(want), off_t(first * sizeof(uint64_t))) != want) return false;
  out.resize(n);
  for (size_t i = 0; i < n; ++i) out[i] = (e[i] >> 63 & 1 || e[i] >> 62 & 1) && !(e[i] >> 61 & 1);
  return true;
}
} // namespace

void LazyPages::repoison(uint8_t poison) {
  auto bit = [&](size_t g) {
    return bits_[g / 64].load(std::memory_order_relaxed) >> (g % 64) & 1;
  };
  thread_local std::vector<uint8_t> priv;
  if (private_pages(reinterpret_cast<uintptr_t>(base_) / kPage, pages_, priv)) {
    // Every private page poisoned in place (those a write's own fault copied too, now known
    // as copied); the file's pages are poison already.
    for (size_t g = 0; g < pages_;) {
      const size_t from = g;
      while (g < pages_ && priv[g]) ++g;
      if (g > from) std::memset(base_ + from * kPage, poison, (g - from) * kPage);
      for (size_t i = from; i < g; ++i)
        bits_[i / 64].fetch_or(uint64_t(1) << (i % 64), std::memory_order_relaxed);
      while (g < pages_ && !priv[g]) ++g;
    }
    return;
  }
  for (size_t g = 0; g < pages_;) {
    const size_t from = g;
    const uint64_t b = bit(g);
    while (g < pages_ && bit(g) == b) ++g;
    if (b)
      std::memset(base_ + from * kPage, poison, (g - from) * kPage);
    else
      madvise(base_ + from * kPage, (g - from) * kPage, MADV_DONTNEED);
  }
}

void LazyPages::populate_slow(const uint8_t* lo, const uint8_t* hi) const {
  if (hi <= lo || lo < base_) return;
  size_t g = size_t(lo - base_) / kPage;
  const size_t end = std::min(pages_, (size_t(hi - base_) + kPage - 1) / kPage);
  while (g < end) {
    // The next run of pages not yet copied. Two threads may race for one run: both ask,
    // the second call finds the pages private and copies nothing.
    while (g < end && (bits_[g / 64].load(std::memory_order_relaxed) >> (g % 64) & 1)) ++g;
    const size_t from = g;
    while (g < end && !(bits_[g / 64].load(std::memory_order_relaxed) >> (g % 64) & 1)) {
      bits_[g / 64].fetch_or(uint64_t(1) << (g % 64), std::memory_order_relaxed);
      ++g;
    }
    if (g > from) madvise(base_ + from * kPage, (g - from) * kPage, MADV_POPULATE_WRITE);
  }
}

} // namespace nisa::interp
