// The symbol table: variables and scopes, declared names, tensors, semaphores, groups, -D.
#include "asm/symbols.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "asm/assembler_util.h"

namespace nisa::nasm {
namespace fs = std::filesystem;
using namespace detail;

const Var* Symbols::lookup(std::string_view name) const {
  for (size_t k = nlocals_; k-- > macro_base_.back();)
    if (const Var* v = locals_[k].find(name)) return v;
  auto it = globals_.find(name);
  return it == globals_.end() ? nullptr : &it->second;
}

// lookup() for a Name node of the current unit: the local scopes by the name's interned id,
// then the global it names, remembered per node (an expansion evaluates the same nodes over
// and over).
const Var* Symbols::lookup_node_slow(uint32_t e, std::string_view name) const {
  NodeInfo& in = info(e);
  if (in.id == UINT32_MAX) in.id = intern(name);
  if (const uint32_t k = top_[in.id]; k != kNoLocal && k >= visible_from_) return local_at(k);
  if (in.global) return in.global;
  if (in.absent_at == globals_added_) return nullptr;
  auto it = globals_.find(name);
  if (it == globals_.end()) {
    in.absent_at = globals_added_;
    return nullptr;
  }
  return in.global = &it->second;
}

void Symbols::set_info_unit() const {
  const uint32_t unit = src_.cur_unit();
  info_ = node_info_.row(unit, src_.file().nodes.size());
  info_unit_ = unit;
}

uint32_t Symbols::intern(std::string_view name) const {
  auto it = ids_.find(name);
  if (it != ids_.end()) return it->second;
  const auto id = static_cast<uint32_t>(ids_.size());
  ids_.emplace(std::string(name), id);
  top_.push_back(kNoLocal);
  return id;
}

const TensorDecl* Symbols::find_tensor_node(uint32_t e, std::string_view name) const {
  NodeInfo& in = info(e);
  if (!in.tensor) in.tensor = find_tensor(name);
  return in.tensor;
}

uint16_t Symbols::sem_index_node(uint32_t e, std::string_view name) const {
  NodeInfo& in = info(e);
  if (in.sem < 0) in.sem = sem_index(name, e);
  return static_cast<uint16_t>(in.sem);
}

std::vector<std::string> Symbols::visible_names() const {
  std::vector<std::string> v;
  for (size_t k = macro_base_.back(); k < nlocals_; ++k)
    for (const auto& [n, x] : locals_[k].vars) v.emplace_back(n);
  for (const auto& [n, x] : globals_) v.push_back(n);
  for (const auto& [n, x] : tensors_) v.push_back(n);
  return v;
}

void Symbols::declare(std::string_view name, Loc l, const char* what) {
  if (is_predefined(name))
    fail(l, fmt::format("'{}' is predefined from the target (TARGET = {}, GEN = {}); it cannot be "
                        "redefined",
                        name, name_of(mod_.target), static_cast<int>(mod_.target)));
  auto it = symbols_.find(name);
  if (it != symbols_.end())
    fail(l, fmt::format("duplicate symbol '{}' ({}); first defined at {}:{}:{}", name, what,
                        fs::path(mod_.files[it->second.file]).filename().string(), it->second.line,
                        it->second.col));
  symbols_[std::string(name)] = l;
}

Var* Symbols::find_local(std::string_view name) {
  for (size_t k = nlocals_; k-- > macro_base_.back();)
    if (Var* v = locals_[k].find(name)) return v;
  return nullptr;
}

void Symbols::set_target(Target t) {
  set_global("TARGET", Var{Value::of_name(std::string(name_of(t))), Var::Predefined, {}});
  set_global("GEN", Var{Value::of_int(static_cast<int>(t)), Var::Predefined, {}});
}

std::vector<std::string> Symbols::param_names() const {
  std::vector<std::string> params;
  for (const auto& [n, v] : globals_)
    if (v.kind == Var::Param) params.push_back(n);
  std::sort(params.begin(), params.end());
  return params;
}

// AUTOSYNC is a global (.set) unless a scope binds the name: the global is looked up until it
// exists, then kept.
bool Symbols::autosync() const {
  const Var* as = nullptr;
  if (autosync_id_ == UINT32_MAX) autosync_id_ = intern("AUTOSYNC");
  if (const uint32_t k = top_[autosync_id_]; k != kNoLocal && k >= visible_from_) as = local_at(k);
  if (!as && !autosync_ && autosync_absent_at_ != globals_added_) { // (no search per instruction)
    if (auto it = globals_.find(std::string_view("AUTOSYNC")); it != globals_.end())
      autosync_ = &it->second;
    else
      autosync_absent_at_ = globals_added_;
  }
  if (!as) as = autosync_;
  return as && as->v.kind == Value::Int && as->v.i != 0;
}

std::vector<std::string> Symbols::tensor_names() const {
  std::vector<std::string> names;
  for (const auto& [n, d] : tensors_) names.push_back(n);
  return names;
}

uint16_t Symbols::sem_index(std::string_view name, uint32_t at) const {
  auto it = sems_.find(name);
  if (it == sems_.end()) {
    std::vector<std::string> names;
    for (const auto& [n, i] : sems_) names.push_back(n);
    src_.fail_at(at, fmt::format("unknown semaphore '{}'{}", name, did_you_mean(name, names)));
  }
  return it->second;
}

uint16_t Symbols::group_index(const std::string& n, uint32_t at) const {
  auto it = groups_.find(n);
  if (it == groups_.end()) {
    std::vector<std::string> names;
    for (const auto& [g, i] : groups_) names.push_back(g);
    src_.fail_at(at, fmt::format("unknown replica group '{}'{}", n, did_you_mean(n, names)));
  }
  return it->second;
}

const Value* Symbols::take_define(std::string_view name) {
  auto d = defines_.find(std::string(name));
  if (d == defines_.end()) return nullptr;
  d->second.second = true;
  return &d->second.first;
}

std::vector<std::string> Symbols::unused_defines() const {
  std::vector<std::string> names;
  for (const auto& [name, dv] : defines_)
    if (!dv.second) names.push_back(name);
  return names;
}

} // namespace nisa::nasm
