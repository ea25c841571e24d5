// The semantics of the cross-core operations (engines/dma.cpp send_recv, engines/cc.cpp
// collectives), which the scheduler calls once every participant has arrived.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "interp/core/exec.h"
#include "interp/core/host_pool.h"
#include "isa/module.h"

namespace nisa::interp {

// Cross-core operations the scheduler calls when every participant has arrived
// (engines/dma.cpp, engines/cc.cpp). Both throw Fault.
void exchange_send_recv(ExecCtx& a, const Inst& ia, ExecCtx& b, const Inst& ib);
// cx[i] / in[i]: the participants in replica-group order.
void run_collective(const std::vector<ExecCtx*>& cx, const std::vector<const Inst*>& in);

// run_collective in steps, for participants in other MPI processes (docs/machine.md "MPI
// processes"): each process prepares its own participants' sides, the sides' sizes and faults
// go to every process, which all run the same checks (the same Fault as one process); then
// the sources a process's destinations need are sent to it and it writes its destinations.
struct CcSide {
  int rank = 0;
  std::string fault; // resolving the operands faulted (the first fault, as one process has it)
  DType src_dtype = DType::fp32;
  uint64_t src_elems = 0, dst_elems = 0;
  uint32_t src_rows = 0;
  uint64_t src_cols = 0;
  std::vector<uint8_t> src; // the flat source bytes (read here, or received)
  View dst;                 // a participant of this process: where its result goes
};
struct CcParty {
  const Module* mod = nullptr;
  std::vector<const Inst*> in; // in replica-group order
  std::vector<CcSide> side;
  std::vector<bool> local; // this process writes the destination of participant i
};
void cc_prepare(ExecCtx& cx, const Inst& in, CcSide& s); // reads the source too
void cc_check(const CcParty& p);                         // throws the Fault one process would
std::vector<bool>
cc_sources_needed(const CcParty& p,
                  const std::vector<bool>& writes); // the sources the destinations `writes` need
// pool: the participants' destinations on host threads (null: in order on this one).
void cc_apply(CcParty& p, HostPool* pool = nullptr);

} // namespace nisa::interp
