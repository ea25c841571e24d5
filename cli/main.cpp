// nisa: one binary, subcommands only; all logic lives in the libraries.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "cli/commands.h"
#include "interp/dist/procs.h"
#include "isa/error.h"

#include <atomic>
#include <exception>
#include <fcntl.h>
#include <malloc.h>
#include <new>
#include <sys/mman.h>
#include <unistd.h>

// The size of the last allocation that failed, for the message of an out-of-memory error that
// no caller named (the libraries name the large ones: nisa::OutOfMemory). operator new is
// replaced for the binary only to note it; delete pairs with it (malloc / free).
// Not under ASan: its own operator new checks new/delete pairing (and aborts on a failed
// allocation whatever we do).
namespace {
std::atomic<uint64_t> g_failed_alloc{0};
}
#if !defined(__SANITIZE_ADDRESS__)
void* operator new(std::size_t n) {
  for (;;) {
    if (void* p = std::malloc(n ? n : 1)) return p;
    std::new_handler h = std::get_new_handler();
    if (!h) {
      g_failed_alloc.store(n, std::memory_order_relaxed);
      throw std::bad_alloc();
    }
    h();
  }
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#endif

namespace {
// The main heap in 2 MiB pages (what GLIBC_TUNABLES=glibc.malloc.hugetlb=1 does, without the
// environment): `nisa asm` of depthwise_conv1d's 10^4 instructions touched ~18 MB of heap in
// 4 KiB pages, 4,600 page faults and a quarter of the process; here the heap grows once by a
// 64 MiB pad marked MADV_HUGEPAGE, ~400 faults. Pages are still backed only when touched.
// Not under ASan, whose allocator is its own.
#if !defined(__SANITIZE_ADDRESS__)
void* g_heap_head = nullptr; // huge_heap's block, kept reachable for leak checkers
#endif
void huge_heap() {
#if !defined(__SANITIZE_ADDRESS__)
  constexpr size_t kPad = size_t(64) << 20, kHuge = size_t(2) << 20, kGrow = size_t(16) << 20;
  // Blocks below 32 MiB from the heap (not each its own mmap), trimmed only past 128 MiB.
  if (mallopt(M_MMAP_THRESHOLD, 32 << 20) != 1 || mallopt(M_TRIM_THRESHOLD, 128 << 20) != 1 ||
      mallopt(M_TOP_PAD, kPad) != 1)
    return;
  // More than the top chunk holds: one brk of it and the pad. malloc writes the new top
  // chunk's header at its end before the madvise below, and a 2 MiB block with a small page in
  // it stays small: that block is 16 MiB in, past what most runs use.
  void* grow = std::malloc(kGrow);
  if (!grow) return;
  const uintptr_t at = reinterpret_cast<uintptr_t>(grow);
  const uintptr_t lo = (at + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t hi = reinterpret_cast<uintptr_t>(sbrk(0));
  if (hi <= lo || madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE) != 0) {
    std::free(grow);
    return;
  }
  std::free(grow);
  // The heap from the top chunk up to the first 2 MiB boundary stays in small pages: hold it in
  // a block never freed nor touched, so that the next blocks come from the huge pages.
  if (lo - at > 4096) g_heap_head = std::malloc(lo - at - 64);
#endif
}

struct Command {
  const char* name;
  int (*fn)(int, char**);
  const char* help;
};
constexpr Command kCommands[] = {
    {"asm", nisa::cli::cmd_asm, "assemble a .nasm kernel into a .nbin object"},
    {"disasm", nisa::cli::cmd_disasm, "print a .nbin object as assembly"},
    {"run", nisa::cli::cmd_run, "run a kernel (.nasm or .nbin) on .npy inputs"},
    {"debug", nisa::cli::cmd_debug, "single-step a kernel in the debugger"},
    {"check", nisa::cli::cmd_check, "prove a kernel's synchronisation without running it"},
    {"dap", nisa::cli::cmd_dap, "Debug Adapter Protocol server over stdio (editors)"},
    {"isa", nisa::cli::cmd_isa, "print the instruction reference"},
};

void usage(std::FILE* f) {
  std::fprintf(f, "usage: nisa <command> [options]   (nisa <command> --help)\n\ncommands:\n");
  for (const auto& c : kCommands) std::fprintf(f, "  %-8s %s\n", c.name, c.help);
}
// One process of `mpirun -np P nisa run ...` (docs/machine.md "MPI processes"). Only the
// process of rank 0 prints: the others' output would repeat it. A failure the processes
// cannot agree on (an exception escaping the run) ends the whole job.
int mpi_main(std::string_view sub, int argc, char** argv, int job) {
  if (sub != "run") {
    // Rank 0 reports and fails the job; the others leave quietly with 0, since mpirun kills
    // the job's other processes as soon as one exits non-zero, often before rank 0 printed.
    if (std::getenv("OMPI_COMM_WORLD_RANK") &&
        std::string_view(std::getenv("OMPI_COMM_WORLD_RANK")) != "0")
      return 0;
    std::fprintf(stderr,
                 "nisa %s: not available under mpirun (%d processes): only `nisa run` spreads "
                 "ranks over MPI processes; run `nisa %s` without mpirun\n",
                 std::string(sub).c_str(), job, std::string(sub).c_str());
    return 1;
  }
  if (!nisa::interp::mpi_built()) {
    std::fprintf(stderr,
                 "nisa run: this nisa is built without MPI, so it cannot spread ranks over %d "
                 "processes: install openmpi-bin and libopenmpi-dev (scripts/bootstrap.sh does) "
                 "and rebuild (cmake -DNISA_MPI=ON)\n",
                 job);
    return 1;
  }
  if (!nisa::interp::mpi_start(&argc, &argv)) return 1;
  nisa::interp::Procs* procs = nisa::interp::procs();
  int saved_err = -1;
  if (procs && procs->rank() != 0) {
    saved_err = dup(2);
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) {
      dup2(null, 1);
      dup2(null, 2);
      close(null);
    }
  }
  try {
    const int rc = nisa::cli::cmd_run(argc - 1, argv + 1);
    // A process that stopped before its run (a bad option, a kernel that does not assemble)
    // tells the others, which wait for it in their first exchange.
    nisa::interp::check_job_stopped(procs, rc);
    return rc;
  } catch (const std::exception& e) {
    std::string msg = std::string("nisa run: MPI process failed: ") + e.what() + "\n";
    if (write(saved_err >= 0 ? saved_err : 2, msg.data(), msg.size()) < 0) {
    }
    if (procs) procs->abort(1);
    return 1;
  }
}

// The command line's error boundary (docs/decisions.md "Errors"): a subcommand reports what
// it expects itself; anything that still reaches here is printed with the subcommand's name
// and exits 1, never as an abort.
int run_command(std::string_view name, int (*fn)(int, char**), int argc, char** argv) {
  try {
    return fn(argc, argv);
  } catch (const nisa::Error& e) {
    std::fprintf(stderr, "nisa %.*s: %s\n", int(name.size()), name.data(), e.what());
  } catch (const std::bad_alloc&) {
    const uint64_t n = g_failed_alloc.load(std::memory_order_relaxed);
    if (n)
      std::fprintf(stderr, "nisa %.*s: out of memory: an allocation of %llu bytes failed\n",
                   int(name.size()), name.data(), static_cast<unsigned long long>(n));
    else
      std::fprintf(stderr, "nisa %.*s: out of memory\n", int(name.size()), name.data());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nisa %.*s: internal error: %s\n", int(name.size()), name.data(),
                 e.what());
  }
  return 1;
}

} // namespace

int main(int argc, char** argv) {
  // Past a file-size limit (ulimit -f) a write should fail with EFBIG, which every writer
  // reports (isa/output_file.h), instead of killing the process with a half-written file.
  std::signal(SIGXFSZ, SIG_IGN);
  if (argc < 2) {
    usage(stderr);
    return 1;
  }
  std::string_view sub = argv[1];
  if (sub == "--help" || sub == "-h" || sub == "help") {
    usage(stdout);
    return 0;
  }
  if (sub == "--version") {
    std::printf("nisa %s\n", NISA_VERSION); // project(VERSION) of the top CMakeLists.txt
    return 0;
  }
  huge_heap();
  const int job = nisa::interp::mpi_job_size();
  if (job > 1) return mpi_main(sub, argc, argv, job);
  for (const auto& c : kCommands)
    if (sub == c.name) return run_command(c.name, c.fn, argc - 1, argv + 1);
  std::fprintf(stderr, "nisa: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return 1;
}
