// The modelled machine: ranks x cores, each core with its SBUF, PSUM, accumulators, registers
// and semaphores (CoreState), each rank with its HBM (shared by the cores of a logical core).
// Memory is allocated once per Machine and reused across runs (reset() re-poisons it).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "interp/core/cost_scale.h"
#include "interp/core/exec.h"
#include "interp/core/host_pool.h"
#include "interp/core/lazy_pages.h"
#include "interp/core/target.h"
#include "isa/launch.h"
#include "isa/module.h"

namespace nisa::interp {

// An anonymous mapping; sizes >= 2 MiB ask for transparent huge pages (first touch of a 4 KiB
// page costs ~11 us on the reference machines, a 2 MiB page far less per byte).
class HostBuffer {
public:
  HostBuffer() = default;
  // `shift` (a multiple of 64 below 4096): data() lies that many bytes past a page boundary,
  // so that an input file's data can be mapped in place (map_npy_pages in interp/run/npy.h).
  explicit HostBuffer(size_t bytes, size_t shift = 0);
  // A private copy-on-write mapping of a shared file of poison bytes: reads as kPoisonByte,
  // and only the pages written (or read) cost memory. repoison() poisons written pages in place.
  // For machines of many cores (--ranks 64 --lnc 2), whose SBUFs are mostly unused.
  static HostBuffer lazy_poison(size_t bytes);
  // A shared mapping of an unnamed temporary file in `dir`: the page cache writes it back and
  // drops it under memory pressure, so the buffer may exceed the host's RAM (the HBM of many
  // ranks; --hbm-spill). Throws std::runtime_error naming the directory on failure.
  static HostBuffer file_backed(size_t bytes, const std::string& dir);
  // Zero bytes, anonymous and without huge pages: only the pages written cost memory (the
  // --check-uninit shadows). zero() gives them back.
  static HostBuffer zeros(size_t bytes);
  // All bytes 0 again: a zeros() buffer drops its pages (MADV_DONTNEED), any other is cleared.
  void zero();
  bool lazy() const { return pages_ != nullptr; }
  // A lazy buffer's record of its private pages (writes ask for them in batches), else null.
  const LazyPages* lazy_pages() const { return pages_.get(); }
  void repoison();
  HostBuffer(HostBuffer&& o) noexcept;
  HostBuffer& operator=(HostBuffer&& o) noexcept;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  ~HostBuffer();
  uint8_t* data() const { return p_; }
  size_t size() const { return n_; }

private:
  uint8_t* p_ = nullptr;
  size_t n_ = 0;
  size_t shift_ = 0;                 // the mapping starts at p_ - shift_
  bool anon_zeros_ = false;          // zeros(): private anonymous pages
  std::unique_ptr<LazyPages> pages_; // lazy only (the pages written so far)
};

// Beyond this many cores (of this process), SBUF and PSUM are lazy copy-on-write poison
// mappings (HostBuffer::lazy_poison); up to it, eager huge-page buffers poisoned by memset
// (fastest for one logical core) unless the module's declarations of that memory span at most
// 1/8 of its pages (then lazy too: machine.cpp onchip_buffer).
inline constexpr size_t kEagerCores = 4;
// Default limit on a rank's HBM: far more than any kernel here needs, less than a small host
// has (docs/machine-io.md "Memory limits").
inline constexpr uint64_t kDefaultMaxHbm = uint64_t(4) << 30;

// The largest --ranks (and `.ranks`): isa/launch.h.
inline constexpr int kMaxRanks = ::nisa::kMaxRanks;

// Where the HBM of the ranks lives (--hbm-spill): anonymous memory, or file-backed mappings in
// MachineOptions::spill_dir. `automatic` spills when the HBM of all ranks exceeds half of the
// host's physical memory (docs/machine-io.md "Memory limits").
enum class HbmSpill { automatic, off, on };

class Procs; // interp/dist/procs.h

struct MachineOptions {
  Target target = Target::trn2;
  int lnc = 1;                       // cores per logical core (rank): 1 or 2
  int ranks = 1;                     // SPMD ranks, each with its own HBM
  bool check_uninit = false;         // track written bytes; reads of never-written bytes fault
  uint64_t max_hbm = kDefaultMaxHbm; // bytes of HBM per rank (--max-hbm), checked before
                                     // anything is allocated
  HbmSpill hbm_spill = HbmSpill::automatic;
  std::string spill_dir; // directory of the spill files; empty: $TMPDIR, else /tmp
  int threads = 1;       // host threads for set-up and reset (the run's --threads)
  // The MPI processes of the job (interp/dist/procs.h): this process allocates and simulates only
  // its block of ranks. nullptr: one process, every rank.
  Procs* procs = nullptr;
  // Per rank: how far past a page boundary its host HBM starts (HostBuffer's shift), chosen so
  // that its largest input file can be mapped in place (run.cpp); missing entries are 0.
  std::vector<uint16_t> hbm_shift;
  // What-if (--cost-scale UNIT=F): each unit's modelled durations divided by its factor
  // (interp/core/cost_scale.h, docs/machine.md "Cost scale (what-if)"); all 1: the model.
  CostScale cost_scale = kNoCostScale;
};

// Poison pattern of fresh memory: all-ones bytes are NaN in every float dtype (fp32, bf16,
// fp16, fp8 e4m3 and e5m2) and -1 / max in the integer ones.
inline constexpr uint8_t kPoisonByte = 0xFF;

// What Machine::reset() does with the HBM bytes of the input tensors: poison them like the
// rest, or leave them because the caller writes every input of every rank next (bind_inputs,
// the python binding): poisoning them first would only touch every page of the inputs twice.
enum class InputFill { poison, caller_writes };

struct CoreSlot {
  int rank = 0;
  int core = 0; // program_id within the logical core
  CoreState st;
  HostBuffer sbuf, psum;
  HostBuffer sbuf_written, psum_written_bytes; // --check-uninit shadows (1 = written)
};

struct RankSlot {
  HostBuffer hbm; // file-backed when spilled (Machine::spill_hbm)
  uint64_t hbm_bytes = 0;
  // --check-uninit shadow: a byte per HBM byte, in a spill file when the HBM is (the spill rule
  // counts it), else anonymous pages that cost memory only where written.
  HostBuffer hbm_written;
};

struct Program; // the scheduler's pre-decoded streams (interp/sched/scheduler.cpp)

struct Machine {
  const Module* mod = nullptr;
  const TargetParams* tp = nullptr;
  MachineOptions opt;
  std::vector<RankSlot> ranks;
  std::vector<CoreSlot> cores;            // index rank * lnc + core
  std::shared_ptr<const Program> program; // built by the first run, reused by later ones

  // Validates the options against the module and target (std::runtime_error with a clear
  // message), allocates every memory once and resets the state.
  Machine(const Module& m, const MachineOptions& o, InputFill fill = InputFill::poison);

  // Bytes of HBM per rank the module needs (4 KiB multiple); std::runtime_error naming the
  // tensor when a declaration does not fit the target or the total exceeds opt.max_hbm.
  static uint64_t hbm_size(const Module& m, const MachineOptions& o);
  // Whether R ranks of `hbm` bytes each (twice that with --check-uninit: the shadow) go to
  // spill files under the options.
  static bool spill_hbm(uint64_t hbm, const MachineOptions& o);

  int num_cores() const { return static_cast<int>(cores.size()); }
  // The ranks [rank_lo, rank_hi) this process simulates (all of them without MPI). The slots
  // of the other ranks and their cores hold no memory (null HBM, SBUF and PSUM).
  int rank_lo = 0, rank_hi = 0;
  bool hbm_spilled = false; // the ranks' HBM is file-backed (--hbm-spill)
  bool local_rank(int r) const { return r >= rank_lo && r < rank_hi; }
  bool local_core(int c) const { return local_rank(c / opt.lnc); }
  CoreSlot& core(int rank, int c) { return cores[size_t(rank) * opt.lnc + c]; }

  // Poisons SBUF, PSUM and the HBM (but for the bytes of the input tensors with
  // InputFill::caller_writes), resets semaphores to their declared initial values, registers
  // and accumulators to zero, and the written-byte shadows. With every input then written, the
  // state is that of a fresh machine with the same inputs written.
  void reset(InputFill fill = InputFill::poison);
  // The HBM bytes [begin, end) that input tensors cover, sorted and merged.
  std::vector<std::pair<uint64_t, uint64_t>> input_ranges() const;

  const TensorDecl* find_tensor(std::string_view name) const;
  static uint64_t tensor_bytes(const TensorDecl& t);
  // Start of an HBM tensor in a rank's HBM (nullptr for a rank of another process).
  uint8_t* hbm_tensor(int rank, const TensorDecl& t) const;
  // Copies raw little-endian element bytes into an HBM tensor of every rank (or of one rank)
  // and marks them written.
  void write_tensor(const TensorDecl& t, const uint8_t* bytes, int rank = -1);
  // --check-uninit: marks an HBM tensor of one rank written (its bytes were put in place by
  // the caller, e.g. read from a file straight into hbm_tensor()).
  void mark_written(const TensorDecl& t, int rank);

  // --check-uninit: the shadow byte of a machine address (nullptr if the address is not in a
  // memory of this machine).
  uint8_t* shadow_of(const uint8_t* p);

  // The host threads of this machine's set-up, resets and runs (null for threads <= 1): made
  // on first use and kept, so that the reset and the run share their threads (each new pool
  // costs its threads' creation and their malloc arenas).
  HostPool* host_pool(int threads);

private:
  std::unique_ptr<HostPool> pool_;
  bool fresh_ = true; // not reset yet: the shadows are zero already
};

} // namespace nisa::interp
