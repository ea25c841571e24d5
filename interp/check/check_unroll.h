// The walk of `nisa check` (docs/check.md): every engine's stream of every core unrolled into
// the nodes of the graph (check_graph.h), with the registers evaluated (check_registers.h),
// the bytes each node may access (check_extents.h), the static orders (program order, DMA
// queues, the joins of barriers, send_recv and collectives), the waits and the semaphore
// histories.
#pragma once
#include <map>
#include <tuple>
#include <vector>

#include "interp/check/check_graph.h"
#include "interp/check/check_names.h"

namespace nisa::interp::check_detail {

class Registers;

class Unroller {
public:
  Unroller(const Module& m, const CheckOptions& o, const Names& names, Graph& g)
      : m_(m), o_(o), names_(names), g_(g) {}

  // Builds the graph; throws Outside for a kernel outside what is proved.
  void run();

private:
  // The participants of one rendezvous or collective, met at its join.
  struct Party {
    uint32_t join = UINT32_MAX;
    std::vector<std::pair<int, uint32_t>> who; // (core, participant node)
    std::vector<int> members;
  };
  // Where the walk of one engine's stream is.
  struct Walk {
    int core, rank, cid;
    int e;
    Engine eng;
    uint32_t st;                // its stream
    uint32_t prev = UINT32_MAX; // its previous node
  };

  const Module& m_;
  const CheckOptions& o_;
  const Names& names_;
  Graph& g_;
  std::map<std::tuple<int, int, int>, uint32_t> stream_ids_; // (core, kind, index)
  // Rendezvous keys -> the participants' join, per rank.
  std::map<std::tuple<int, int, int64_t, int>, Party> rdv_; // (rank, kind, key, k-th)
  std::map<std::tuple<int, int64_t>, int> rdv_count_;       // (core, kind*big + key) -> count
  std::map<std::tuple<int, int, int64_t>, int> sr_engine_;  // (core, pipe) -> engine
  // Collectives: (chan, group, members, k-th) -> party.
  std::map<std::tuple<int, int64_t, std::vector<int>, int>, Party> ccp_;
  std::map<std::tuple<int, int, int64_t, std::vector<int>>, int> cc_count_;
  // of the core being walked
  std::map<std::pair<int, int>, uint32_t> last_xfer_; // (engine, queue) -> node
  std::map<int, uint32_t> last_cc_;                   // channel -> completion node
  std::vector<Region> tmp_;                           // the accesses of one instruction

  uint32_t stream(int core, int kind, int idx, const std::string& name);
  uint32_t add_node(Node n, uint32_t st);
  uint32_t join_node(Party& p, const Node& n, const Inst& in);
  void walk(int core, int e);
  // The node(s) of one instruction (`n`: its place), by the kind of instruction.
  void rendezvous(Walk& w, const Node& n, const Inst& in, bool is_barrier);
  void dma(Walk& w, const Node& n, const Inst& in, const Registers& regs);
  void collective(Walk& w, const Node& n, const Inst& in, const Registers& regs);
  void plain(Walk& w, const Node& n, const Inst& in);
  // After the walk.
  void finish_joins();
  void gather_accesses();
  void sem_histories();
};

} // namespace nisa::interp::check_detail
