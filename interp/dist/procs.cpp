#include "interp/dist/procs.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#ifdef NISA_HAVE_MPI
#include <dlfcn.h>

#include <cstdio>
#endif

namespace nisa::interp {

std::string exe_dir() {
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return {};
  const std::string path(exe, size_t(n));
  return path.substr(0, path.find_last_of('/') + 1);
}

int mpi_job_size() {
  // Open MPI's mpirun sets these for every process it starts (MPICH's Hydra: PMI_SIZE).
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char* s = std::getenv(v)) return std::max(1, std::atoi(s));
  return 1;
}

int mpi_local_size() {
  if (const char* s = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE")) return std::max(1, std::atoi(s));
  return 1;
}

namespace {

bool g_job_checked = false;

// The record of check_job: whether the process reached its run (else its exit code), then its
// two hashes.
std::vector<std::vector<uint8_t>> exchange_job(Procs& procs, int stopped, uint64_t module_hash,
                                               uint64_t options_hash) {
  g_job_checked = true;
  Bytes b;
  b.put(int32_t(stopped));
  b.put(module_hash);
  b.put(options_hash);
  return procs.allgather(b.b);
}

} // namespace

bool job_checked() { return g_job_checked; }

std::string check_job(Procs* procs, uint64_t module_hash, uint64_t options_hash) {
  if (!procs) return {};
  const auto all = exchange_job(*procs, -1, module_hash, options_hash);
  uint64_t module0 = 0, options0 = 0;
  for (size_t p = 0; p < all.size(); ++p) {
    Bytes in{all[p]};
    const int32_t stopped = in.get<int32_t>();
    const uint64_t mh = in.get<uint64_t>(), oh = in.get<uint64_t>();
    const int np = procs->size();
    if (stopped >= 0)
      return fmt::format("MPI process {} of {} stopped before the run (exit code {}: its command "
                         "line or kernel did not load; run that command without mpirun to see "
                         "why)",
                         p, np, stopped);
    if (p == 0) {
      module0 = mh, options0 = oh;
      continue;
    }
    if (mh != module0)
      return fmt::format("MPI process {} of {} assembled another kernel than process 0 (module "
                         "hash {:016x}, not {:016x}: another file or -D value); start every "
                         "process with the same command line",
                         p, np, mh, module0);
    if (oh != options0)
      return fmt::format("MPI process {} of {} was started with other options than process 0 "
                         "(--ranks, --lnc, --target, --schedule, --seed, --max-steps, --in, "
                         "--out, ...: hash {:016x}, not {:016x}); start every process with the "
                         "same command line",
                         p, np, oh, options0);
  }
  return {};
}

void check_job_stopped(Procs* procs, int exit_code) {
  if (procs && !g_job_checked) exchange_job(*procs, exit_code < 0 ? 1 : exit_code, 0, 0);
}

#ifdef NISA_HAVE_MPI
namespace {

Procs* g_procs = nullptr;
void (*g_stop)() = nullptr;
bool g_started = false;

// Where the MPI module is: NISA_MPI_MODULE if set, else beside this nisa binary: installed
// (<prefix>/bin/nisa -> <prefix>/lib/nisa/: the .deb, a wheel in a venv) or in its build tree
// (build/cli/nisa -> build/interp/). Never a path compiled in: an installed nisa must not load
// a build tree's module of another version.
std::vector<std::string> module_paths() {
  if (const char* e = std::getenv("NISA_MPI_MODULE")) return {e};
  const std::string dir = exe_dir();
  if (dir.empty()) return {};
  return {dir + "../lib/nisa/libnisa_mpi.so", dir + "../interp/libnisa_mpi.so"};
}

} // namespace

bool mpi_built() { return true; }
Procs* procs() { return g_procs; }

bool mpi_start(int* argc, char*** argv) {
  if (g_started || mpi_job_size() <= 1) return true;
  g_started = true;
  // RTLD_GLOBAL: Open MPI's own plugins resolve libmpi's symbols from the global scope.
  void* h = nullptr;
  std::string why;
  for (const std::string& p : module_paths()) {
    if ((h = dlopen(p.c_str(), RTLD_NOW | RTLD_GLOBAL))) break;
    why += std::string("\n  ") + dlerror();
  }
  using Start = Procs* (*)(int*, char***);
  auto start = h ? reinterpret_cast<Start>(dlsym(h, "nisa_mpi_start")) : nullptr;
  g_stop = h ? reinterpret_cast<void (*)()>(dlsym(h, "nisa_mpi_stop")) : nullptr;
  if (!start || !g_stop) {
    std::fprintf(stderr, "nisa: cannot load the MPI module (set NISA_MPI_MODULE to its path):%s\n",
                 why.empty() ? " it has no nisa_mpi_start / nisa_mpi_stop" : why.c_str());
    return false;
  }
  g_procs = start(argc, argv);
  std::atexit(mpi_stop);
  return true;
}

void mpi_stop() {
  if (g_stop) g_stop();
}

#else

bool mpi_built() { return false; }
Procs* procs() { return nullptr; }
bool mpi_start(int*, char***) { return mpi_job_size() <= 1; }
void mpi_stop() {}

#endif

} // namespace nisa::interp
