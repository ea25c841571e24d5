// The graph of the static synchronisation proof (interp/check/check.h, docs/check.md): every
// engine's stream unrolled into nodes (check_unroll.h builds it), the data that the other
// parts share and read: happens-before (check_order.h), the conflicts (check_conflicts.h), the
// deadlocks (check_deadlock.h) and the report (check_report.h). Names (check_names.h) gives the
// text of its nodes.
#pragma once
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "interp/check/check.h"
#include "interp/core/region.h"
#include "isa/error.h"

namespace nisa::interp::check_detail {

constexpr uint32_t kNoStream = UINT32_MAX;

// Why a kernel is outside what is proved (caught at the top: exit code 6, not an error).
struct Outside : Error {
  using Error::Error;
};
// ... because one of its limits (docs/check.md "Limits") was reached: CheckResult::limit.
struct OutsideLimit : Outside {
  using Outside::Outside;
};

// A place in a stream: the node at 1-based position `pos` of stream `stream`.
struct Anchor {
  uint32_t stream, pos;
};

enum class NK : uint8_t { inst, xfer, join, ccdone };

struct Node {
  uint32_t stream = kNoStream, pos = 0; // pos: 1-based place in the stream
  int32_t core = 0;
  Engine eng = Engine::sp;
  int32_t pc = -1;    // the instruction (the trigger for transfers); -1 for joins
  int16_t queue = -1; // DMA queue of a transfer, 16 + channel of a collective completion
  NK kind = NK::inst;
  const Inst* in = nullptr;
  bool sigs = false; // the instruction's signals apply here
  bool set = false;  // sem_set applies here
  uint32_t acc0 = 0, nacc = 0;
  uint32_t anc0 = 0, nanc = 0; // joins: the participants (anchors)
  bool incomplete = false;     // a join some participant never reaches
  std::string missing;         // ... which one
};

struct Acc {
  Region r;
  uint32_t who; // the instruction node reported for this access (trigger / participant)
};

struct WaitRec {
  uint32_t site; // node whose issue the wait gates (a join for rendezvous)
  uint32_t inst; // node of the instruction carrying it (reports)
  int32_t core;
  Wait w;
};

struct SigList { // the signals of one (core, sem) from one stream, in stream order
  uint32_t stream;
  std::vector<uint32_t> nodes;
  std::vector<uint32_t> pos;
  std::vector<uint64_t> prefix; // prefix[i] = sum of the first i deltas
};

struct SetRec {
  uint32_t node;
  uint32_t value;
};

struct SemInfo {
  std::vector<SigList> lists;
  std::map<uint32_t, size_t> by_stream;
  std::vector<SetRec> sets;
  uint32_t init = 0;
};

class Budget;

struct Graph {
  Budget* budget = nullptr; // the bounds every part polls (check_budget.h)
  int ncores = 1;
  size_t nsems = 0; // declared semaphores (of each core)
  std::vector<Node> nodes;
  std::vector<std::vector<uint32_t>> preds; // static predecessors
  std::vector<Acc> accs;                    // the accesses of node i: [acc0, acc0 + nacc)
  std::vector<Anchor> anchors;              // the participants of join i: [anc0, anc0 + nanc)
  std::vector<WaitRec> waits;
  std::vector<uint32_t> stream_len;
  std::vector<std::string> stream_name;
  std::vector<SemInfo> sems; // [core * nsems + sem]
  uint64_t insts = 0;        // unrolled instructions

  uint32_t streams() const { return uint32_t(stream_len.size()); }
  const SemInfo& sem_of(const WaitRec& w) const { return sems[size_t(w.core) * nsems + w.w.sem]; }
  // Where `site` issues: its own place, or for a join every participant's.
  void site_anchors(uint32_t site, std::vector<Anchor>& a) const {
    a.clear();
    const Node& n = nodes[site];
    if (n.stream != kNoStream) a.push_back({n.stream, n.pos});
    for (uint32_t i = 0; i < n.nanc; ++i) a.push_back(anchors[n.anc0 + i]);
  }
};

} // namespace nisa::interp::check_detail
