// The MPI half of interp/dist/procs.h, built as a module (libnisa_mpi.so) that nisa loads only
// under mpirun with more than one process: linking Open MPI into nisa itself added 12 shared
// libraries and 1.3-1.7 ms to the start of every process (docs/performance.md "Per-run fixed costs
// and memory").
#include "interp/dist/procs.h"

#include <cstdlib>
#include <limits>

// The C API only: Open MPI's deprecated C++ bindings do not build warning-free.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

namespace nisa::interp {
namespace {

class MpiProcs final : public Procs {
public:
  MpiProcs() {
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  }
  int size() const override { return size_; }
  int rank() const override { return rank_; }
  int64_t min(int64_t x) override { return reduce(x, MPI_MIN); }
  int64_t max(int64_t x) override { return reduce(x, MPI_MAX); }
  uint64_t sum(uint64_t x) override {
    unsigned long long in = x, out = 0;
    MPI_Allreduce(&in, &out, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    return out;
  }
  std::vector<std::vector<uint8_t>> allgather(const std::vector<uint8_t>& mine) override {
    // Sizes first (records are small: arrivals, reports; a limit of 2 GiB per process).
    if (mine.size() > size_t(std::numeric_limits<int>::max()))
      throw Error("MPI: a record of more than 2 GiB");
    int n = int(mine.size());
    std::vector<int> counts(static_cast<size_t>(size_)), displs(static_cast<size_t>(size_));
    MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
    int64_t total = 0;
    for (int p = 0; p < size_; ++p) {
      displs[size_t(p)] = int(total);
      total += counts[size_t(p)];
      if (total > std::numeric_limits<int>::max())
        throw Error("MPI: records of more than 2 GiB in all");
    }
    std::vector<uint8_t> all(static_cast<size_t>(total));
    MPI_Allgatherv(mine.data(), n, MPI_BYTE, all.data(), counts.data(), displs.data(), MPI_BYTE,
                   MPI_COMM_WORLD);
    std::vector<std::vector<uint8_t>> out(static_cast<size_t>(size_));
    for (int p = 0; p < size_; ++p)
      out[size_t(p)].assign(all.begin() + displs[size_t(p)],
                            all.begin() + displs[size_t(p)] + counts[size_t(p)]);
    return out;
  }
  void send(int to, const uint8_t* p, uint64_t n, int tag) override {
    for (uint64_t at = 0; at < n || (n == 0 && at == 0); at += kPiece) {
      int k = int(std::min<uint64_t>(kPiece, n - at));
      MPI_Send(p + at, k, MPI_BYTE, to, tag, MPI_COMM_WORLD);
      if (n == 0) break;
    }
  }
  void recv(int from, uint8_t* p, uint64_t n, int tag) override {
    for (uint64_t at = 0; at < n || (n == 0 && at == 0); at += kPiece) {
      int k = int(std::min<uint64_t>(kPiece, n - at));
      MPI_Recv(p + at, k, MPI_BYTE, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (n == 0) break;
    }
  }
  [[noreturn]] void abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
  }

private:
  static constexpr uint64_t kPiece = uint64_t(1) << 28; // 256 MiB per message
  int64_t reduce(int64_t x, MPI_Op op) {
    long long in = x, out = 0;
    MPI_Allreduce(&in, &out, 1, MPI_LONG_LONG, op, MPI_COMM_WORLD);
    return out;
  }
  int size_ = 1, rank_ = 0;
};

bool g_started = false;

void stop() {
  int fin = 0;
  if (g_started && (MPI_Finalized(&fin), !fin)) MPI_Finalize();
}

} // namespace
} // namespace nisa::interp

// The module's entry points (dlsym'd by interp/dist/procs.cpp): initialise MPI and return the
// job's processes; finalise after a normal end.
extern "C" nisa::interp::Procs* nisa_mpi_start(int* argc, char*** argv) {
  using namespace nisa::interp;
  g_started = true;
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
  // Errors end the job (the default for MPI_COMM_WORLD, said explicitly): never a hang.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  return new MpiProcs();
}

extern "C" void nisa_mpi_stop() { nisa::interp::stop(); }
