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
  void populate(const uint8_t* lo, const uint8_t* hi) const;
  // All pages shared with the file again (after MADV_DONTNEED).
  void clear();
  // Every byte `poison` again, as after clear() but keeping the private copies made: the pages
  // populated are overwritten in place (a memset: a 4 KiB page's copy-on-write fault cost
  // 1.7-4 us, its memset ~0.1 us; a reused machine writes the same pages every run), the rest
  // dropped (MADV_DONTNEED: pages a stray fault made private, or mapped for reading).
  void repoison(uint8_t poison);

private:
  uint8_t* base_;
  size_t pages_;
  std::unique_ptr<std::atomic<uint64_t>[]> bits_; // 1 = private copy made
};

} // namespace nisa::interp
