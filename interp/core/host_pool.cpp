#include "interp/core/host_pool.h"

#include <chrono>

namespace nisa::interp {

thread_local bool HostPool::in_piece_ = false;

int default_host_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n ? int(n) : 1;
}

HostPool::HostPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
}

HostPool::~HostPool() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void HostPool::take_pieces() {
  in_piece_ = true;
  for (int i; (i = next_.fetch_add(1)) < n_;) {
    try {
      fn_(arg_, i);
    } catch (...) {
      errors_[size_t(i)] = std::current_exception();
    }
    done_.fetch_add(1);
  }
  in_piece_ = false;
}

void HostPool::dispatch(int n, Thunk fn, void* arg) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    fn_ = fn;
    arg_ = arg;
    n_ = n;
    errors_.assign(size_t(n), nullptr);
    done_.store(0);
    next_.store(0);
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  take_pieces();
  // Every piece done, and no worker still inside take_pieces() (one that joined late may be
  // about to find no piece left): then nothing touches this job's state any more.
  while (done_.load() < n || active_.load() != 0) std::this_thread::yield();
  for (auto& e : errors_)
    if (e) std::rethrow_exception(e);
}

void HostPool::work() {
  uint64_t seen = 0;
  for (;;) {
    // Spin briefly (the next instruction's rows usually follow within microseconds), then
    // sleep until the next job.
    auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
    while (generation_.load(std::memory_order_acquire) == seen &&
           std::chrono::steady_clock::now() < spin_until)
      std::this_thread::yield();
    if (generation_.load(std::memory_order_acquire) == seen) {
      std::unique_lock<std::mutex> lk(mu_);
      wake_.wait(lk, [&] { return generation_.load() != seen; });
    }
    std::unique_lock<std::mutex> lk(mu_);
    if (stop_) return;
    seen = generation_.load();
    active_.fetch_add(1); // under the lock: a dispatch waits for it before returning
    lk.unlock();
    take_pieces();
    active_.fetch_sub(1);
  }
}

} // namespace nisa::interp
