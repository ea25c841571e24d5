// Host threads of a run (`nisa run --threads N`, docs/machine.md "Host threads"). One pool per
// run: N - 1 workers plus the calling thread. Work handed to the pool is split into pieces
// whose results do not depend on which thread runs them or in what order (the partition
// ranges of one instruction, the cores of a run between two synchronisation points), so a run
// gives the same bits for every N.
#pragma once
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace nisa::interp {

// The default of --threads: the host's cores; and the most accepted.
int default_host_threads();
inline constexpr int kMaxHostThreads = 256;

class HostPool {
public:
  explicit HostPool(int threads);
  ~HostPool();
  HostPool(const HostPool&) = delete;
  HostPool& operator=(const HostPool&) = delete;

  int threads() const { return int(workers_.size()) + 1; }

  // Runs fn(i) for every i in [0, n) on the pool's threads (the caller takes part) and returns
  // when all are done. An exception thrown by fn(i) is rethrown after all pieces finished: the
  // one of the lowest i, so the error is the same whatever the interleaving. A call made from
  // inside a piece (nested) runs inline.
  template <class F> void run(int n, F&& fn) {
    if (n <= 0) return;
    if (n == 1 || workers_.empty() || in_piece_) {
      for (int i = 0; i < n; ++i) fn(i);
      return;
    }
    auto thunk = [](void* p, int i) { (*static_cast<std::remove_reference_t<F>*>(p))(i); };
    dispatch(n, thunk, &fn);
  }

private:
  using Thunk = void (*)(void*, int);
  void dispatch(int n, Thunk fn, void* arg);
  void work(); // worker loop
  void take_pieces();

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_;
  // The current job; generation_ counts jobs so that a worker sees each job once.
  std::atomic<uint64_t> generation_{0};
  Thunk fn_ = nullptr;
  void* arg_ = nullptr;
  int n_ = 0;
  std::atomic<int> next_{0}, done_{0};
  std::atomic<int> active_{0}; // workers inside take_pieces()
  std::vector<std::exception_ptr> errors_;
  bool stop_ = false;
  static thread_local bool in_piece_;
};

// fn(i) for every i in [0, n): on the pool's threads when there is a pool, else in order here.
template <class F> void run_each(HostPool* pool, int n, F&& fn) {
  if (pool)
    pool->run(n, fn);
  else
    for (int i = 0; i < n; ++i) fn(i);
}

// fn(at, len) over [0, bytes) in slices of kByteSlice on the pool's threads when there is a pool
// and at least two slices, else one call fn(0, bytes): a large memcpy / memset shared by the
// host threads (one thread's copy of tens of MB beside idle cores).
inline constexpr size_t kByteSlice = size_t(1) << 20;
template <class F> void for_byte_slices(HostPool* pool, size_t bytes, F&& fn) {
  if (!pool || bytes < 2 * kByteSlice) {
    if (bytes) fn(size_t(0), bytes);
    return;
  }
  pool->run(int((bytes + kByteSlice - 1) / kByteSlice), [&](int i) {
    const size_t at = size_t(i) * kByteSlice;
    fn(at, std::min(kByteSlice, bytes - at));
  });
}

// Rows [0, parts) of an instruction split into ranges run on the pool when the work is large
// enough to pay for the hand-off (elems: elements per row); else one call fn(0, parts). fn must
// write disjoint rows for disjoint ranges.
inline constexpr uint64_t kMinParallelElems = 1u << 15;
template <class F> void for_row_ranges(HostPool* pool, uint32_t parts, uint64_t elems, F&& fn) {
  const int t = pool ? pool->threads() : 1;
  if (t <= 1 || parts < 2 || uint64_t(parts) * elems < kMinParallelElems) {
    fn(uint32_t(0), parts);
    return;
  }
  const uint32_t k = std::min<uint32_t>(uint32_t(t), parts);
  pool->run(int(k), [&](int i) {
    const uint32_t p0 = uint32_t(uint64_t(parts) * uint32_t(i) / k);
    const uint32_t p1 = uint32_t(uint64_t(parts) * uint32_t(i + 1) / k);
    fn(p0, p1);
  });
}

} // namespace nisa::interp
