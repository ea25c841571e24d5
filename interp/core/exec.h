// The contract between instruction semantics (interp/engines/*.cpp) and the machine
// (interp/core/machine.*, interp/sched/scheduler.*). A semantic function sees one instruction and
// an ExecCtx; it resolves its access patterns once (bounds checked once per instruction), then runs
// tight loops over the resolved views.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "isa/error.h"
#include "isa/isa.h"

namespace nisa {
struct Module;
}

namespace nisa::interp {

struct TargetParams;
class LazyPages;

// A run-time fault: stops the machine; reported with the instruction and its source line
// (exit code 3). Semantics throw it; the scheduler catches it.
struct Fault : Error {
  using Error::Error;
};

// A resolved access pattern: element (p, i0..i3) is at
//   base + row_off(p) + i0*stride[0] + ... + i3*stride[3]   (byte strides)
// where row_off(p) = p * pstride, or rows[p] when the pattern has a vector offset.
// Unused dims have count 1 and stride 0, so loops may always run 4 deep.
struct View {
  uint8_t* base = nullptr;
  DType dtype = DType::fp32;
  uint32_t parts = 0;
  int64_t pstride = 0;
  int64_t stride[4] = {0, 0, 0, 0};
  uint32_t count[4] = {1, 1, 1, 1};
  uint64_t free_elems = 0;       // product of counts
  const int64_t* rows = nullptr; // per-row byte offsets (vector offset) or nullptr
  std::vector<int64_t> row_storage;
  std::vector<uint8_t> row_skip; // oob=skip: rows to leave out (empty = none)
  // True when each partition's free elements are one contiguous run.
  bool contiguous() const;
  uint8_t* row(uint32_t p) const { return base + (rows ? rows[p] : int64_t(p) * pstride); }
  // Byte address of the flat free element j (row-major over the dims) in row p.
  uint8_t* at(uint32_t p, uint64_t j) const;
};

enum class Access : uint8_t { read, write };

// The state of one core that instruction semantics read and write. The machine
// (interp/core/machine.h) owns one per core and adds scheduling state around it.
struct CoreState {
  // 128 partitions, partition-major: partition p's modelled bytes [0, *_part_bytes) are at
  // host address sbuf + p * sbuf_stride (stride > part bytes: the host pad of
  // interp/core/target.h kHostPartPad, never addressed). Bounds use *_part_bytes, host pointers
  // *_stride.
  uint8_t* sbuf = nullptr;
  uint64_t sbuf_part_bytes = 0;
  uint64_t sbuf_stride = 0;
  uint8_t* psum = nullptr;
  uint64_t psum_part_bytes = 0;
  uint64_t psum_stride = 0;
  // Lazy poison SBUF / PSUM (many cores): writes batch their first touch
  // (interp/core/lazy_pages.h).
  const LazyPages* sbuf_lazy = nullptr;
  const LazyPages* psum_lazy = nullptr;
  std::vector<uint8_t> psum_written;  // per 4-byte host PSUM word (p * psum_stride / 4 + w):
                                      // written by a matmul (auto acc)
  float act_acc[kNumPartitions] = {}; // ScalarE reduce registers
  float dve_acc[kNumPartitions] = {}; // VectorE accumulators
  int32_t regs[kNumEngines][kNumRegs] = {};
  std::vector<uint32_t> sems;
  // The host address of the modelled SBUF byte `off` of partition `part`. `off` may be past
  // the partition: it continues into the next ones as the modelled bytes do (part * part_bytes
  // + off), for the callers that take an unchecked operand's address (race and uninit checks
  // of a vector-offset index tile; the view faults on it afterwards).
  uint8_t* sbuf_at(uint64_t part, uint64_t off) const {
    const uint64_t a = part * sbuf_part_bytes + off, end = kNumPartitions * sbuf_part_bytes;
    if (a >= end) return sbuf + kNumPartitions * sbuf_stride + (a - end); // as far past the end
    return sbuf + a / sbuf_part_bytes * sbuf_stride + a % sbuf_part_bytes;
  }
};

// Everything one instruction may touch.
class HostPool;

struct ExecCtx {
  // What the sequencer's system registers and ring_rank read of the run (not the machine:
  // semantics see one core's state and this context only).
  const Module* mod = nullptr; // the replica groups (ring_rank, collectives)
  int lnc = 1;                 // num_programs
  int ranks = 1;               // num_ranks
  const TargetParams* tp = nullptr;
  Target target = Target::trn2;
  uint8_t* hbm = nullptr; // this rank's HBM
  uint64_t hbm_bytes = 0;
  int rank = 0;
  int core_id = 0;
  Engine engine = Engine::sp;
  CoreState* state = nullptr; // == the core's state (sbuf, psum, accumulators, semaphores)
  int32_t* regs = nullptr;    // this engine's 64 registers
  // Control flow: the index of the next instruction of this engine's stream. The scheduler
  // sets it to pc + 1 before calling the semantic function; branches overwrite it;
  // halt sets it to the stream length.
  int64_t next_pc = 0;
  int64_t stream_len = 0;
  // Host threads for the partition ranges of large instructions (interp/core/host_pool.h); null:
  // one thread.
  HostPool* pool = nullptr;
  // The instruction about to run passed every static rule (isa/legality.h legality_error) for
  // `target` when its stream was decoded (interp/sched/sched_program.cpp): its semantics skip
  // those checks (ew::require_legal, ew::operand_view). The scheduler sets it per instruction;
  // false (any other caller) checks them at each run.
  bool legal = false;

  // Resolve an access pattern: applies dynamic offsets from registers or index tiles,
  // checks bounds, memory space rules and partition limits; throws Fault with a clear
  // message. oob_skip: out-of-range vector indices mark rows skipped instead of faulting.
  View view(const AccessPattern& ap, Access how, bool oob_skip = false) const;
};

// One semantic function per opcode; kSemantics[op] is never null (a test checks it).
using SemFn = void (*)(ExecCtx&, const Inst&);
SemFn semantics(Opcode op);

} // namespace nisa::interp
