// Synchronization of the streams: an instruction's sync clauses (@wait, @signal, @after,
// @after_opt), AUTOSYNC's implied @after edges, and, at the end, the lowering of every @after
// edge to semaphores, @signal and @wait (docs/asm.md §2).
#pragma once
#include <map>
#include <tuple>
#include <vector>

#include "asm/ast.h"
#include "asm/sources.h"
#include "asm/symbols.h"

namespace nisa::nasm {

class Evaluator;
class Labels;
class Symbols;

// @after(L): the instruction carrying it waits for the one at label L.
struct AfterEdge {
  Engine consumer;
  uint32_t consumer_index;
  Engine producer;
  uint32_t producer_index;
  Loc loc;
};
// The bytes an instruction operand may touch (AUTOSYNC): partitions x a byte hull.
struct SyncExtent {
  MemSpace space;
  uint32_t p0, p1;
  uint64_t b0, b1;
  bool write;
};

class SyncLowering {
public:
  SyncLowering(Module& mod, const Sources& src, const Symbols& sym, Evaluator& ev,
               const Labels& labels, Reporter& rep)
      : mod_(mod), src_(src), sym_(sym), ev_(ev), labels_(labels), rep_(rep) {}

  // One instruction: its clauses are parsed into `in` (and its @after edges held) until it is
  // added to a stream at `index` (commit) or abandoned (the next begin).
  void begin() { pending_afters_.clear(); }
  void parse(const Sync& s, Inst& in);
  void commit(Engine e, uint32_t index);
  // With AUTOSYNC set: an @after edge to the latest earlier instruction of each other stream
  // whose bytes the instruction at `index` conflicts with.
  void autosync(Engine e, uint32_t index, Loc at);
  void lower_afters(); // @after edges -> semaphores, @signal and @wait (at the end)

private:
  std::string_view sync_kind(uint32_t tok) const;
  // Per unit and clause: its kind once read (0: not yet; 1 + index in kKinds).
  UnitTable<uint8_t> kinds_;
  // Per unit and item of a @wait or @signal: the NodeInfo of its semaphore's Name node, once
  // read (a semaphore named directly, no variable of its name visible, is read from it).
  UnitTable<const Symbols::NodeInfo*> sem_info_;
  uint8_t* kinds_cur_ = nullptr; // the rows of rows_unit_
  const Symbols::NodeInfo** sem_cur_ = nullptr;
  uint32_t rows_unit_ = 0;

  Module& mod_;
  const Sources& src_;
  const Symbols& sym_;
  Evaluator& ev_;
  const Labels& labels_;
  Reporter& rep_;
  std::vector<AfterEdge> afters_, pending_afters_;
  struct AutoRec {
    Engine engine;
    uint32_t index;
    std::vector<SyncExtent> ext;
  };
  std::map<std::tuple<int, int, int>, std::vector<AutoRec>> auto_recs_; // per signal stream
};

} // namespace nisa::nasm
