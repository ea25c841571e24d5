// The assembler's symbol table: variables (globals and the local scopes of .for iterations and
// macro expansions), every declared name (for duplicates), tensors and views, semaphores,
// replica groups, and the -D values.
#pragma once
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "asm/sources.h"
#include "asm/value.h"

namespace nisa::nasm {

struct Var {
  Value v;
  enum Kind { Param, Equ, Set, Loop, Arg, Predefined } kind = Set;
  Loc def;
};

// A local scope (a .for iteration's variable, a macro's arguments): a few names. A Name node
// finds them through Symbols' flat array of the live locals' interned ids; a name given as text
// (rarer) through find().
struct Scope {
  // The names outlive the scope (a macro's parameter names, held by the macro; a .for's
  // variable, in the source text): not copied.
  std::vector<std::pair<std::string_view, Var>> vars;
  Var* find(std::string_view n) {
    // The first byte before memcmp: most names that miss differ there.
    for (auto& [k, v] : vars)
      if (k.size() == n.size() && (n.empty() || k[0] == n[0]) &&
          std::char_traits<char>::compare(k.data(), n.data(), n.size()) == 0)
        return &v;
    return nullptr;
  }
  const Var* find(std::string_view n) const { return const_cast<Scope*>(this)->find(n); }
};

class Symbols {
public:
  Symbols(const Module& mod, const Sources& src) : mod_(mod), src_(src) {}

  // ---- variables
  const Var* lookup(std::string_view name) const;
  // lookup() for a Name node of the current unit (the global it names is remembered). The
  // usual case inline: the innermost local of that name, else the global.
  const Var* lookup_node(uint32_t e, std::string_view name) const {
    const NodeInfo& in = info(e);
    if (in.id != UINT32_MAX) {
      if (const uint32_t k = top_[in.id]; k != kNoLocal && k >= visible_from_) return local_at(k);
      if (in.global) return in.global;
      if (in.absent_at == globals_added_) return nullptr;
    }
    return lookup_node_slow(e, name);
  }
  // What is remembered per (unit, node), of a Name node: the interned id of its text; the
  // global it resolved to (once found, a global stays), or, for a name with no global, the
  // count of globals then (absent while no global has been added); the tensor or view it names
  // (a declaration is never removed nor replaced); its semaphore (-1: not looked up yet).
  struct NodeInfo {
    uint32_t id = UINT32_MAX;
    const Var* global = nullptr;
    uint64_t absent_at = UINT64_MAX;
    const TensorDecl* tensor = nullptr;
    int32_t sem = -1;
  };
  // A Name node's NodeInfo (of the current unit; its address stays valid: compiled
  // expressions keep it) with its id interned.
  NodeInfo* node_info(uint32_t e, std::string_view name) const {
    NodeInfo& in = info(e);
    if (in.id == UINT32_MAX) in.id = intern(name);
    return &in;
  }
  // Whether a local the current macro sees has the NodeInfo's name.
  bool shadowed(const NodeInfo& in) const {
    const uint32_t k = top_[in.id];
    return k != kNoLocal && k >= visible_from_;
  }
  // lookup_node() through a NodeInfo of the current unit whose id is interned.
  const Var* lookup_info(const NodeInfo& in, uint32_t e) const {
    const uint32_t k = top_[in.id];
    if (k != kNoLocal && k >= visible_from_) return local_at(k);
    if (in.global) return in.global;
    if (in.absent_at == globals_added_) return nullptr;
    return lookup_node_slow(e, src_.file().text(src_.node(e)));
  }
  // The id of a name (the same for every spelling alike; new names get the next id).
  uint32_t intern(std::string_view name) const;
  // The id of a Name node's text, of the current unit (remembered per node).
  uint32_t node_id(uint32_t e, std::string_view name) const {
    uint32_t& id = info(e).id;
    if (id == UINT32_MAX) id = intern(name);
    return id;
  }
  // The tensor or view a Name node names, remembered per node once found (a declaration is
  // never removed nor replaced).
  const TensorDecl* find_tensor_node(uint32_t e, std::string_view name) const;
  // The semaphore a Name node of the current unit names, remembered per node (a global
  // variable never has a semaphore's name: both are declared names).
  uint16_t sem_index_node(uint32_t e, std::string_view name) const;
  Var* find_local(std::string_view name); // in the scopes the current macro sees
  Var* find_local_id(uint32_t id) {       // find_local() of an interned name, without a search
    const uint32_t k = top_[id];
    return k != kNoLocal && k >= visible_from_ ? flat_vars_[k] : nullptr;
  }
  Var* find_global(std::string_view name) {
    auto it = globals_.find(name);
    return it == globals_.end() ? nullptr : &it->second;
  }
  void set_global(std::string_view name, Var v) {
    auto [it, added] = globals_.try_emplace(std::string(name));
    it->second = std::move(v);
    if (added) ++globals_added_;
  }
  void set_target(Target t);                      // the predefined TARGET and GEN
  std::vector<std::string> visible_names() const; // for did-you-mean
  std::vector<std::string> param_names() const;   // sorted
  bool autosync() const; // AUTOSYNC is set to a non-zero integer where the expansion is

  // ---- local scopes: locals_[0, nlocals_) are live; the rest are kept (their vectors'
  // storage is reused). A macro sees only the scopes it opened.
  size_t depth() const { return nlocals_; }
  void push_scope() {
    if (nlocals_ == locals_.size()) {
      locals_.emplace_back();
      scope_start_.push_back(0);
    }
    locals_[nlocals_].vars.clear();
    scope_start_[nlocals_++] = flat_ids_.size();
  }
  // A variable of the innermost scope (`name` must outlive it: see Scope::vars).
  void add_local(uint32_t id, std::string_view name, Var v) {
    add_local_slot(id, name) = std::move(v);
  }
  // An integer one (a loop counter, a macro's integer argument), made in place: a Var is ~200
  // bytes, and most locals are integers.
  void add_local_int(uint32_t id, std::string_view name, int64_t i, Var::Kind kind, Loc def) {
    Var& v = add_local_slot(id, name);
    v.v.i = i; // a Value is an Int by default
    v.kind = kind;
    v.def = def;
  }
  void pop_scopes(size_t to) {
    if (to < nlocals_) {
      for (size_t k = flat_ids_.size(); k-- > scope_start_[to];) top_[flat_ids_[k]] = flat_prev_[k];
      flat_ids_.resize(scope_start_[to]);
      flat_vars_.resize(scope_start_[to]);
      flat_prev_.resize(scope_start_[to]);
    }
    nlocals_ = to;
  }
  // A macro sees the locals added after it is entered only.
  void enter_macro() {
    macro_base_.push_back(nlocals_);
    visible_stack_.push_back(visible_from_);
    visible_from_ = static_cast<uint32_t>(flat_ids_.size());
  }
  void leave_macro() {
    pop_scopes(macro_base_.back());
    macro_base_.pop_back();
    visible_from_ = visible_stack_.back();
    visible_stack_.pop_back();
  }

  // ---- declared names: StmtError on a duplicate or a predefined name
  void declare(std::string_view name, Loc l, const char* what);

  // ---- tensors and views
  const TensorDecl* find_tensor(std::string_view name) const {
    auto it = tensors_.find(name);
    return it == tensors_.end() ? nullptr : &it->second;
  }
  void add_tensor(const TensorDecl& t) { tensors_[t.name] = t; }
  std::vector<std::string> tensor_names() const;
  // A tensor, view or .equ/.set name whose declaration failed (and was reported): a use of
  // one abandons its statement silently instead of reporting "unknown tensor" or "undefined
  // symbol" at every use (one error per failing declaration; a .view of it, addr(), size(),
  // dim() and part() of it, and the .equ computed from those are uses).
  void mark_failed(std::string name) { failed_decls_.insert(std::move(name)); }
  bool failed(std::string_view name) const { return failed_decls_.count(name) != 0; }
  [[noreturn]] void fail_unknown_tensor(uint32_t e, std::string_view name,
                                        const std::string& msg) const {
    if (failed(name)) fail(src_.loc_of(e), "");
    src_.fail_at(e, msg);
  }

  // ---- semaphores and replica groups (their indices in the module)
  void add_sem(const std::string& name, uint16_t index) { sems_[name] = index; }
  bool has_sem(std::string_view name) const { return sems_.count(name) != 0; }
  uint16_t sem_index(std::string_view name, uint32_t at) const; // `at`: the node, for messages
  void add_group(const std::string& name, uint16_t index) { groups_[name] = index; }
  uint16_t group_index(const std::string& name, uint32_t at) const;

  // ---- -D values: a .param of the name takes it
  void add_define(const std::string& name, Value v) { defines_[name] = {std::move(v), false}; }
  const Value* take_define(std::string_view name);
  std::vector<std::string> unused_defines() const;

private:
  const Module& mod_;
  const Sources& src_;
  NameMap<Var> globals_; // never erased: a Var* into it stays valid (node_info_)
  std::vector<Scope> locals_;
  size_t nlocals_ = 0;
  std::vector<size_t> macro_base_{0};
  // The live locals (of scopes [0, nlocals_)) in one array, innermost last, by interned id;
  // flat_vars_: the variables (in their scope's vars). scope_start_[k]: scope k's first entry.
  // top_: per interned id, the innermost live local of that name (its index in flat_ids_), or
  // kNoLocal; flat_prev_[k]: the one that entry k hides (restored when k is popped). So a name
  // finds its local without a search: the innermost, when the current macro sees it
  // (index >= visible_from_, the first local added in the current macro), else none.
  static constexpr uint32_t kNoLocal = UINT32_MAX;
  std::vector<uint32_t> flat_ids_;
  std::vector<Var*> flat_vars_;
  std::vector<uint32_t> flat_prev_;
  std::vector<size_t> scope_start_;
  mutable std::vector<uint32_t> top_;
  uint32_t visible_from_ = 0;
  std::vector<uint32_t> visible_stack_;
  const Var* local_at(uint32_t k) const { return flat_vars_[k]; }
  const Var* lookup_node_slow(uint32_t e, std::string_view name) const;
  // A default Var appended to the innermost scope, for add_local and add_local_int to set.
  Var& add_local_slot(uint32_t id, std::string_view name) {
    Scope& sc = locals_[nlocals_ - 1];
    flat_prev_.push_back(top_[id]);
    top_[id] = static_cast<uint32_t>(flat_ids_.size());
    flat_ids_.push_back(id);
    const auto* before = sc.vars.data();
    sc.vars.emplace_back(std::piecewise_construct, std::forward_as_tuple(name),
                         std::forward_as_tuple());
    if (sc.vars.data() != before) // moved: the scope's earlier entries too
      for (size_t k = scope_start_[nlocals_ - 1], j = 0; k < flat_vars_.size(); ++k, ++j)
        flat_vars_[k] = &sc.vars[j].second;
    flat_vars_.push_back(&sc.vars.back().second);
    return sc.vars.back().second;
  }
  // The caches below are filled by const lookups.
  NodeInfo& info(uint32_t e) const {
    if (src_.cur_unit() != info_unit_ || !info_) set_info_unit();
    return info_[e];
  }
  void set_info_unit() const;
  mutable UnitTable<NodeInfo> node_info_;
  mutable NodeInfo* info_ = nullptr; // node_info_ of info_unit_
  mutable uint32_t info_unit_ = 0;
  uint64_t globals_added_ = 0;                       // globals ever added
  mutable NameMap<uint32_t> ids_;                    // interned names
  mutable const Var* autosync_ = nullptr;            // the global AUTOSYNC, once defined
  mutable uint32_t autosync_id_ = UINT32_MAX;        // "AUTOSYNC" interned
  mutable uint64_t autosync_absent_at_ = UINT64_MAX; // globals_added_ when it was not one
  NameMap<Loc> symbols_;                             // every declared name, for duplicates
  NameMap<TensorDecl> tensors_;                      // includes views
  std::set<std::string, std::less<>> failed_decls_;
  NameMap<uint16_t> sems_, groups_;
  std::map<std::string, std::pair<Value, bool>> defines_; // -D values, used?
};

} // namespace nisa::nasm
