// Which pages of a lazy poison buffer (HostBuffer::lazy_poison) hold a private copy already.
// A write that reaches pages still shared with the poison file asks for them in one
// madvise(MADV_POPULATE_WRITE) per run of pages instead of a fault per page: the copy costs
// the same, the trap does not (a fault and its 4 KiB copy took 3.7 us here, the batched
// copy 1.7 us; docs/performance.md "Per-run fixed costs and memory").
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace nisa::interp {

class LazyPages {
public:
  LazyPages(uint8_t* base, size_t bytes);
  // Make [lo, hi) private (host addresses inside the buffer; any thread). Pages copied
  // already cost a bit test each; the kernel's own faults remain the fallback (a kernel
  // without MADV_POPULATE_WRITE, or a page this misses).
  void populate(const uint8_t* lo, const uint8_t* hi) const {
    // Inline test of the common case, a row within one word of bits all copied already (a
    // reused machine: every write of a run; a call per partition per write was 3% of a run).
    if (hi <= lo || lo < base_) return;
    const size_t g0 = size_t(lo - base_) / kPage, g1 = size_t(hi - 1 - base_) / kPage;
    if (g1 < pages_ && g0 / 64 == g1 / 64) {
      const uint64_t m = (~uint64_t(0) >> (63 - g1 % 64)) & (~uint64_t(0) << (g0 % 64));
      if ((bits_[g0 / 64].load(std::memory_order_relaxed) & m) == m) return;
    }
    populate_slow(lo, hi);
  }
  // All pages shared with the file again (after MADV_DONTNEED).
  void clear();
  // Unique per buffer and per clear(): a memo of spans made private (interp/core/view.cpp) is
  // valid while the id is the same (pages only turn private until then).
  uint64_t id() const { return id_.load(std::memory_order_relaxed); }
  // Every byte `poison` again, as after clear() but keeping the private copies made: the pages
  // populated are overwritten in place (a memset: a 4 KiB page's copy-on-write fault cost
  // 1.7-4 us, its memset ~0.1 us; a reused machine writes the same pages every run), the rest
  // dropped (MADV_DONTNEED: pages a stray fault made private, or mapped for reading).
  void repoison(uint8_t poison);

private:
  static constexpr size_t kPage = 4096;
  void populate_slow(const uint8_t* lo, const uint8_t* hi) const;
  uint8_t* base_;
  size_t pages_;
  std::unique_ptr<std::atomic<uint64_t>[]> bits_; // 1 = private copy made
  std::atomic<uint64_t> id_{0};
};

} // namespace nisa::interp
