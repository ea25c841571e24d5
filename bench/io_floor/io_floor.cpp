// The least system time a process can spend on a row-wise cumsum from one fp32 .npy file to
// another on this host: no interpreter, no machine model, only the input mapped, the running
// sums and the output written. It bounds what "system time under 10% of the wall time" can
// mean for nisa's cumsum row (docs/performance.md "The io floor (bench_io_floor)"):
//   in-memory: the result in fresh huge-page memory, then written, as nisa writes an HBM tensor;
//   streamed:  32 rows at a time computed into one reused buffer and written (no result-sized
//              memory at all: the least any design can touch).
// Both then replace OUT through nisa's own isa/output_file.h.
//   bench_io_floor IN.npy OUT.npy [--repeat N]
// prints wall, user and system time per mode (median of N, default 7).
//   bench_io_floor --touch BYTES
// is one process that maps BYTES as nisa's machine maps its HBM (2 MiB aligned, MADV_HUGEPAGE),
// writes every page once and exits: the least a fresh process pays for a kernel's memory
// (bench/fixed_cost.py's memory floor).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "interp/run/npy.h"
#include "isa/output_file.h"

namespace {

struct Times {
  double wall = 0, user = 0, sys = 0;
};

double secs(const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) * 1e-6; }

// One run of a mode in a child process (so that every run starts from fresh memory, as a
// `nisa run` does); its rusage gives user and system time.
Times run_child(const std::string& in, const std::string& out, bool stream) {
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    try {
      const int fd = open(in.c_str(), O_RDONLY | O_CLOEXEC);
      struct stat st {};
      if (fd < 0 || fstat(fd, &st) != 0) throw std::runtime_error(in + ": cannot open");
      const size_t size = size_t(st.st_size);
      const auto* file = static_cast<const uint8_t*>(
          mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0));
      if (file == MAP_FAILED) throw std::runtime_error(in + ": cannot map");
      const nisa::interp::NpyHeader h = nisa::interp::parse_npy_header(
          std::string_view(reinterpret_cast<const char*>(file), size), in);
      if (h.array.descr != "<f4" || h.array.shape.size() != 2 || h.fortran)
        throw std::runtime_error(in + ": not a 2-D C-order fp32 array");
      const size_t rows = size_t(h.array.shape[0]), cols = size_t(h.array.shape[1]);
      const float* x = reinterpret_cast<const float*>(file + h.data_offset);
      nisa::OutputFile o(out); // nisa's own way: a temporary, exchanged into place
      o.write(std::string_view(reinterpret_cast<const char*>(file), h.data_offset)); // the header
      auto sums = [&](size_t r0, size_t r1, float* y) {
        for (size_t r = r0; r < r1; ++r) {
          float s = 0;
          for (size_t c = 0; c < cols; ++c) y[(r - r0) * cols + c] = s += x[r * cols + c];
        }
      };
      auto put = [&](const float* y, size_t elems) {
        o.write(std::string_view(reinterpret_cast<const char*>(y), elems * 4));
      };
      if (stream) {
        std::vector<float> buf(32 * cols);
        for (size_t r0 = 0; r0 < rows; r0 += 32) {
          const size_t r1 = std::min(rows, r0 + 32);
          sums(r0, r1, buf.data());
          put(buf.data(), (r1 - r0) * cols);
        }
      } else {
        const size_t bytes = std::max<size_t>(rows * cols * 4, 1);
        void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) throw std::runtime_error("cannot map the result");
        madvise(p, bytes, MADV_HUGEPAGE);
        sums(0, rows, static_cast<float*>(p));
        put(static_cast<const float*>(p), rows * cols);
      }
      o.commit();
      _exit(0);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_io_floor: %s\n", e.what());
      _exit(1);
    }
  }
  int status = 0;
  rusage ru{};
  if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("the measured run failed");
  Times t;
  t.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  t.user = secs(ru.ru_utime);
  t.sys = secs(ru.ru_stime);
  return t;
}

// --touch: first touch of `bytes` of fresh memory, the way interp::HostBuffer maps it.
int touch(const char* arg) {
  char* end = nullptr;
  const unsigned long long n = std::strtoull(arg, &end, 10);
  if (end == arg || *end != '\0' || n == 0 || n > (1ull << 40)) {
    std::fprintf(stderr, "bench_io_floor: --touch wants a byte count in [1, 2^40], not '%s'\n",
                 arg);
    return 1;
  }
  constexpr size_t kHuge = size_t(2) << 20;
  const size_t len = (size_t(n) + kHuge - 1) & ~(kHuge - 1);
  void* p = mmap(nullptr, len + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    std::fprintf(stderr, "bench_io_floor: cannot map %zu bytes\n", len);
    return 1;
  }
  auto* base = reinterpret_cast<volatile uint8_t*>((reinterpret_cast<uintptr_t>(p) + kHuge - 1) &
                                                   ~(uintptr_t(kHuge) - 1));
  madvise(const_cast<uint8_t*>(base), len, MADV_HUGEPAGE);
  for (size_t i = 0; i < len; i += 4096) base[i] = 1;
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--touch") return touch(argv[2]);
  if (argc < 3 || std::string(argv[1]) == "--help") {
    std::fprintf(stderr, "usage: bench_io_floor IN.npy OUT.npy [--repeat N]\n"
                         "       bench_io_floor --touch BYTES\n");
    return argc < 3 ? 1 : 0;
  }
  int repeat = 7;
  if (argc == 5 && std::string(argv[3]) == "--repeat") repeat = std::atoi(argv[4]);
  if (repeat < 1 || (argc != 3 && argc != 5)) {
    std::fprintf(stderr, "bench_io_floor: bad arguments (see --help)\n");
    return 1;
  }
  try {
    for (const bool stream : {false, true}) {
      std::vector<Times> ts;
      for (int i = 0; i < repeat; ++i) ts.push_back(run_child(argv[1], argv[2], stream));
      auto med = [&](double Times::*f) {
        std::vector<double> v;
        for (const Times& t : ts) v.push_back(t.*f);
        std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
        return v[v.size() / 2];
      };
      const double w = med(&Times::wall), u = med(&Times::user), s = med(&Times::sys);
      std::printf("%s  wall %.1f ms  user %.1f ms  sys %.1f ms  (sys %.0f%% of wall)\n",
                  stream ? "streamed " : "in-memory", w * 1e3, u * 1e3, s * 1e3, 100 * s / w);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_io_floor: %s\n", e.what());
    return 1;
  }
  return 0;
}
