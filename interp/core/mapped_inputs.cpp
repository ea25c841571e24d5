// The registry of input files mapped into machine memory (core/mapped_inputs.h).
#include "interp/core/mapped_inputs.h"

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unistd.h>

#include <fmt/format.h>

#include "isa/quote.h"

namespace nisa::interp {

namespace {

// The mapped input ranges, read by the SIGBUS handler: fixed slots of atomics (no allocation,
// no lock in the handler). A full table means the next input is read instead of mapped.
struct MappedInput {
  std::atomic<uintptr_t> lo{0}, hi{0};
  std::atomic<const char*> message{nullptr}; // what the handler writes (leaked: few, small)
};
constexpr int kMaxMappedInputs = 256;
MappedInput mapped_inputs[kMaxMappedInputs];
std::mutex mapped_mu; // writers only
struct sigaction previous_bus {};

void on_sigbus(int sig, siginfo_t* si, void* ctx) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(si->si_addr);
  for (const MappedInput& m : mapped_inputs) {
    const char* msg = m.message.load();
    if (msg && a >= m.lo.load() && a < m.hi.load()) {
      ssize_t ignored = ::write(2, msg, std::strlen(msg));
      (void)ignored;
      _exit(1);
    }
  }
  // Not an input's page: what was there before (the default: the core dump of a crash).
  if (previous_bus.sa_flags & SA_SIGINFO) {
    if (previous_bus.sa_sigaction) return previous_bus.sa_sigaction(sig, si, ctx);
  } else if (previous_bus.sa_handler != SIG_DFL && previous_bus.sa_handler != SIG_IGN) {
    return previous_bus.sa_handler(sig);
  }
  signal(SIGBUS, SIG_DFL); // returning re-runs the access, which now ends the process
}

// Registers [lo, lo + n) as input `path`'s pages; false when the table is full.
bool remember(const uint8_t* lo, size_t n, const std::string& path) {
  std::lock_guard<std::mutex> lock(mapped_mu);
  static bool installed = false;
  if (!installed) {
    struct sigaction sa {};
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGBUS, &sa, &previous_bus) != 0) return false;
    installed = true;
  }
  for (MappedInput& m : mapped_inputs) {
    if (m.message.load()) continue;
    const std::string text = fmt::format(
        "nisa: error: {}: the input file was truncated while the run had it mapped (its data "
        "is gone); do not rewrite an input during a run, or run with --copy-inputs\n",
        elide(path));
    m.lo = reinterpret_cast<uintptr_t>(lo);
    m.hi = reinterpret_cast<uintptr_t>(lo) + n;
    m.message = strdup(text.c_str());
    return true;
  }
  return false;
}

} // namespace

bool remember_mapped_input(const uint8_t* lo, size_t n, const std::string& path) {
  return remember(lo, n, path);
}

void forget_mapped_inputs(const uint8_t* lo, size_t bytes) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(lo), b = a + bytes;
  std::lock_guard<std::mutex> lock(mapped_mu);
  for (MappedInput& m : mapped_inputs) {
    const char* msg = m.message.load();
    if (!msg || m.hi.load() <= a || m.lo.load() >= b) continue;
    m.message = nullptr;
    m.lo = m.hi = 0;
    free(const_cast<char*>(msg)); // the handler runs on faults of mapped pages only: not now
  }
}

} // namespace nisa::interp
