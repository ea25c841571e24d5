// The processes of an MPI job (`mpirun -np P nisa run ... --ranks R`, docs/machine.md "MPI
// processes"): the R ranks are split over the P processes in contiguous blocks, each process
// simulates only its own ranks, and the scheduler and the run exchange what crosses processes
// through a Procs. Without MPI, or with one process, there is no Procs (nullptr) and nothing
// is exchanged. Every exchange is collective: every process calls it at the same point.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "isa/error.h"

namespace nisa::interp {

class Procs {
public:
  virtual ~Procs() = default;
  virtual int size() const = 0; // P
  virtual int rank() const = 0; // this process, 0..P-1

  virtual int64_t min(int64_t x) = 0;
  virtual int64_t max(int64_t x) = 0;
  virtual uint64_t sum(uint64_t x) = 0;
  bool any(bool b) { return max(b ? 1 : 0) != 0; }
  // Every process's bytes, in process order.
  virtual std::vector<std::vector<uint8_t>> allgather(const std::vector<uint8_t>& mine) = 0;
  // Point to point, any size (sent in pieces); `tag` < 2^15 tells streams apart.
  virtual void send(int to, const uint8_t* p, uint64_t n, int tag) = 0;
  virtual void recv(int from, uint8_t* p, uint64_t n, int tag) = 0;
  // Ends the whole job now (a failure that the other processes cannot learn of otherwise).
  [[noreturn]] virtual void abort(int code) = 0;

  // The ranks [lo, hi) of process p when R ranks are split over the processes: contiguous
  // blocks, the first R % P processes one rank more.
  static int lo(int p, int procs, int ranks) {
    return p * (ranks / procs) + std::min(p, ranks % procs);
  }
  int owner(int rank, int ranks) const { // the process simulating `rank`
    for (int p = 0; p < size(); ++p)
      if (rank < lo(p + 1, size(), ranks)) return p;
    return size() - 1;
  }
};

// Before anything else of a run (it is the first exchange), the processes check that they run
// one job: the same kernel (a hash of the assembled module) and the same options (a hash of
// what changes the results). Returns "" when they do, else the one-line error every process
// reports (and exits with): the first process whose hashes differ from process 0's, or one
// that stopped before the run (check_job_stopped). Without a Procs: "".
std::string check_job(Procs* procs, uint64_t module_hash, uint64_t options_hash);
// A process that ends before its run (a bad option, a kernel that does not assemble) takes
// part in the check all the same, so that the others do not wait for it: cli/main.cpp calls
// this when check_job was not called.
void check_job_stopped(Procs* procs, int exit_code);
bool job_checked();

// The job's processes: started by mpi_start() when this process runs under mpirun with more
// than one process, else nullptr.
Procs* procs();
// Whether this build has MPI (-DNISA_MPI=ON; Debian's libopenmpi-dev).
bool mpi_built();
// Under mpirun (Open MPI's environment) and built with MPI: initialises MPI. Call once, first
// thing in main(). Returns false when the job has MPI processes but this build has none (the
// caller says how to enable it).
bool mpi_start(int* argc, char*** argv);
// MPI_Finalize after a normal end (atexit does it too).
void mpi_stop();
// The processes of the mpirun job as its environment says (1: not under mpirun), and how many
// of them share this host.
int mpi_job_size();
int mpi_local_size();
// The directory of this process's executable, with its trailing '/' ("" when /proc cannot say):
// what an installed nisa finds its MPI module and its kernels' library beside.
std::string exe_dir();

// A little-endian byte stream for the records the processes exchange.
struct Bytes {
  std::vector<uint8_t> b;
  size_t at = 0; // read position
  // resize + memcpy, not b.insert(b.end(), p, p + n): GCC 12 at -O2 inlines that insert and
  // warns (-Warray-bounds, a false positive) that it copies past the source.
  template <class T> void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const size_t n = b.size();
    b.resize(n + sizeof v);
    std::memcpy(b.data() + n, &v, sizeof v);
  }
  void put_str(const std::string& s) {
    put(uint64_t(s.size()));
    const size_t n = b.size();
    b.resize(n + s.size());
    if (!s.empty()) std::memcpy(b.data() + n, s.data(), s.size());
  }
  template <class T> T get() {
    T v{};
    if (at + sizeof v > b.size()) throw Error("MPI: a short record");
    std::copy(b.begin() + long(at), b.begin() + long(at + sizeof v),
              reinterpret_cast<uint8_t*>(&v));
    at += sizeof v;
    return v;
  }
  std::string get_str() {
    uint64_t n = get<uint64_t>();
    if (n > b.size() - at) throw Error("MPI: a short record");
    std::string s(b.begin() + long(at), b.begin() + long(at + n));
    at += n;
    return s;
  }
  bool done() const { return at >= b.size(); }
};

} // namespace nisa::interp
