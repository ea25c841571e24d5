// Labels and branch fixups: where each label is in every engine's stream, the first
// instruction after it (@after), and the label operands resolved once the streams are complete.
#pragma once
#include <array>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "asm/sources.h"

namespace nisa::nasm {

struct LabelDef {
  std::array<uint32_t, kNumEngines> at{}; // stream sizes where the label was defined
  Loc def;
  int first_engine = -1; // the first instruction assembled after the label (@after)
  uint32_t first_index = 0;
};

// A label operand: instruction `inst` of `engine`, operand `op`, to be set to the label's index.
struct Fixup {
  Engine engine;
  uint32_t inst, op;
  std::string label;
  Loc loc;
};

class Labels {
public:
  Labels(Module& mod, const Sources& src, Reporter& rep) : mod_(mod), src_(src), rep_(rep) {}

  void define(uint32_t tok); // `name:` at the current place of every stream
  // The instruction just added to `e`'s stream at `index` is the first after the labels
  // defined since the previous one.
  void attach(Engine e, uint32_t index);
  // The label @after(name) refers to (for `.Lname`, the latest expansion that defined it), or
  // null.
  const LabelDef* latest(std::string_view name) const;
  std::vector<std::string> keys() const;

  void add_fixup(Fixup f) { fixups_.push_back(std::move(f)); }
  size_t fixup_count() const { return fixups_.size(); }
  void drop_fixups(size_t to) { fixups_.resize(to); } // an instruction that failed
  void resolve();                                     // every fixup: the label's index, or an error

private:
  const LabelDef* find(const Fixup& fx, std::string& module_name) const;

  Module& mod_;
  const Sources& src_;
  Reporter& rep_;
  NameMap<LabelDef> labels_;
  std::vector<Fixup> fixups_;
  std::vector<std::string> labels_wanting_inst_;                 // defined, no instruction yet
  std::map<std::string, std::string, std::less<>> latest_local_; // .Lname -> latest key
};

} // namespace nisa::nasm
