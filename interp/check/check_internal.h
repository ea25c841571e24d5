// The static synchronisation proof's internals (interp/check/check.h, docs/check.md), shared by
// its three parts: check_unroll.cpp (unrolling the streams into nodes, with the access extents
// of check_extents.h), check_order.cpp (happens-before: vector clocks and the edges derived from
// semaphore counts) and check.cpp (deadlock simulation, sem_set / == checks, the race pass, the
// report).
#pragma once
#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "interp/check/check.h"
#include "interp/core/machine.h"
#include "interp/core/region.h"

namespace nisa::interp::check_detail {

constexpr uint32_t kNoStream = UINT32_MAX;

// Why a kernel is outside what is proved (caught at the top).
struct Outside : std::runtime_error {
  using std::runtime_error::runtime_error;
};

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

class Checker {
public:
  Checker(const Module& m, const CheckOptions& o) : m_(m), o_(o) {}
  CheckResult run();

private:
  const Module& m_;
  const CheckOptions& o_;
  int ncores_ = 1;
  std::vector<Node> nodes_;
  std::vector<std::vector<uint32_t>> preds_; // static predecessors
  std::vector<Acc> accs_;
  std::vector<Anchor> anchors_;
  std::vector<WaitRec> waits_;
  std::map<std::tuple<int, int, int>, uint32_t> stream_ids_; // (core, kind, index)
  std::vector<uint32_t> stream_len_;
  std::vector<std::string> stream_name_;
  std::vector<SemInfo> sems_; // [core * nsems + sem]
  uint64_t insts_ = 0;
  // per wait, per signalling stream (index into its SemInfo lists): the latest signal proved
  // to precede the wait (+1; 0 = none)
  std::vector<std::vector<uint32_t>> best_;
  std::vector<uint32_t> vc_;
  std::vector<uint32_t> topo_;
  uint32_t S_ = 0;
  bool cycle_ = false;

  // ---- building ------------------------------------------------------------------------------
  uint32_t stream(int core, int kind, int idx, const std::string& name) {
    auto key = std::make_tuple(core, kind, idx);
    auto it = stream_ids_.find(key);
    if (it != stream_ids_.end()) return it->second;
    uint32_t id = uint32_t(stream_len_.size());
    stream_ids_[key] = id;
    stream_len_.push_back(0);
    stream_name_.push_back(name);
    return id;
  }
  std::string core_name(int c) const {
    if (o_.ranks > 1) return fmt::format("rank {} core {}", c / o_.lnc, c % o_.lnc);
    return fmt::format("core {}", c);
  }
  uint32_t add_node(Node n, uint32_t st) {
    if (nodes_.size() >= o_.max_nodes)
      throw Outside(fmt::format("more than {} unrolled instructions and transfers", o_.max_nodes));
    if (st != kNoStream) {
      n.stream = st;
      n.pos = ++stream_len_[st];
    }
    nodes_.push_back(std::move(n));
    preds_.emplace_back();
    return uint32_t(nodes_.size() - 1);
  }
  std::string loc(Engine e, int64_t pc) const {
    const auto& d = m_.debug[size_t(e)];
    if (pc < 0 || size_t(pc) >= d.size()) return fmt::format("{}[{}]", name_of(e), pc);
    const DebugLoc& l = d[size_t(pc)];
    std::string f = l.file < m_.files.size() ? m_.files[l.file] : "?";
    return fmt::format("{}:{}", f, l.line);
  }
  std::string loc_of(uint32_t n) const { return loc(nodes_[n].eng, nodes_[n].pc); }
  std::tuple<uint32_t, uint32_t, uint32_t, uint32_t> src_key(uint32_t n) const {
    const auto& d = m_.debug[size_t(nodes_[n].eng)];
    const int32_t pc = nodes_[n].pc;
    if (pc < 0 || size_t(pc) >= d.size()) return {UINT32_MAX, 0, 0, uint32_t(n)};
    return {d[size_t(pc)].file, d[size_t(pc)].line, d[size_t(pc)].col, uint32_t(n)};
  }
  std::string who_of(uint32_t n) const {
    const Node& x = nodes_[n];
    std::string s = fmt::format("{} {}", core_name(x.core), name_of(x.eng));
    if (x.queue >= 0 && x.queue < kNumDmaQueues) s += fmt::format(" -> q{}", x.queue);
    if (x.queue >= kNumDmaQueues) s += fmt::format(" -> cc ch{}", x.queue - kNumDmaQueues);
    return s;
  }

  void build();
  // ---- happens-before ------------------------------------------------------------------------
  bool topo_and_clocks();
  bool after(uint32_t node, const Anchor* a, uint32_t na) const {
    const uint32_t* v = &vc_[size_t(node) * S_];
    for (uint32_t i = 0; i < na; ++i)
      if (v[a[i].stream] >= a[i].pos) return true;
    return false;
  }
  void site_anchors(uint32_t site, std::vector<Anchor>& a) const {
    a.clear();
    const Node& n = nodes_[site];
    if (n.stream != kNoStream) a.push_back({n.stream, n.pos});
    for (uint32_t i = 0; i < n.nanc; ++i) a.push_back(anchors_[n.anc0 + i]);
  }
  // The largest value (core, sem) can hold when `site` issues, in a schedule where the node
  // `x` (if any) has not completed.
  uint64_t max_count(const SemInfo& si, uint32_t site, const std::vector<Anchor>& sa,
                     const Anchor* x) const;
  bool derive_edges();
  // ---- checks --------------------------------------------------------------------------------
  void simulate(CheckResult& r);
  void check_sets(CheckResult& r);
  void check_eq_waits(CheckResult& r);
  void races(CheckResult& r);
  std::string region_text(const Region& g) const;
  std::string suggest(uint32_t a, uint32_t b) const;
};

} // namespace nisa::interp::check_detail
