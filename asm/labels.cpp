// Labels and branch fixups.
#include "asm/labels.h"

#include <fmt/format.h>

#include <algorithm>

#include "asm/assembler_util.h"
#include "asm/reporter.h"

namespace nisa::nasm {
using namespace detail;

void Labels::define(uint32_t t) {
  const std::string_view written = src_.text(t);
  std::string n(written);
  if (n[0] == '.') {
    if (!is_local_label(n))
      fail(src_.loc(t), fmt::format("'{}' is not a label: a local label starts with '.L'", n));
    n = local_key(n, src_.frame());
  }
  auto it = labels_.find(n);
  if (it != labels_.end())
    fail(src_.loc(t), fmt::format("duplicate label '{}' (first defined at line {})", written,
                                  it->second.def.line));
  LabelDef d;
  for (int e = 0; e < kNumEngines; ++e) d.at[e] = static_cast<uint32_t>(mod_.streams[e].size());
  d.def = src_.loc(t);
  if (const size_t dot = n.find('.'); dot != std::string::npos && dot != 0) {
    // Engine-qualified: a label of that engine's stream only (what the disassembler prints).
    auto e = enum_parse(EnumType::Engine, n.substr(0, dot));
    if (!e)
      fail(src_.loc(t), fmt::format("unknown engine '{}' in label '{}'{}", n.substr(0, dot), n,
                                    enum_did_you_mean(EnumType::Engine, n.substr(0, dot))));
    mod_.labels[*e].push_back({n.substr(dot + 1), d.at[*e]});
  }
  labels_[n] = d;
  labels_wanting_inst_.push_back(n);
  if (written[0] == '.') latest_local_[std::string(written)] = n;
}

void Labels::attach(Engine e, uint32_t index) {
  for (const std::string& l : labels_wanting_inst_) {
    auto it = labels_.find(l);
    if (it != labels_.end()) it->second.first_engine = int(e), it->second.first_index = index;
  }
  labels_wanting_inst_.clear();
}

const LabelDef* Labels::latest(std::string_view name) const {
  std::string key(name);
  if (name[0] == '.') {
    auto it = latest_local_.find(name);
    key = it == latest_local_.end() ? std::string() : it->second;
  }
  auto it = key.empty() ? labels_.end() : labels_.find(key);
  return it == labels_.end() ? nullptr : &it->second;
}

std::vector<std::string> Labels::keys() const {
  std::vector<std::string> names;
  for (const auto& [n, l] : labels_) names.push_back(n);
  return names;
}

void Labels::resolve() {
  for (const auto& fx : fixups_) {
    std::string shown = fx.label;
    const LabelDef* def = find(fx, shown);
    if (!def) {
      std::vector<std::string> names;
      for (const auto& [n, l] : labels_)
        names.push_back(n.find('@') == std::string::npos ? n : n.substr(0, n.find('@')));
      rep_.report(fx.loc,
                  fmt::format("undefined label '{}'{}", fx.label, did_you_mean(fx.label, names)));
      continue;
    }
    const int e = static_cast<int>(fx.engine);
    uint32_t target = def->at[e];
    mod_.streams[e][fx.inst].ops[fx.op].i = target;
    auto& labels = mod_.labels[e];
    if (!shown.empty() &&
        std::none_of(labels.begin(), labels.end(), [&](const Label& l) { return l.name == shown; }))
      labels.push_back({shown, target});
  }
}

// The label a branch refers to: `engine.name` before `name`; a local `.Lname` from the
// innermost enclosing expansion (of the reference) that defines it. Sets the name to add to
// the module's labels (empty for an engine-qualified label, which is there already).
const LabelDef* Labels::find(const Fixup& fx, std::string& module_name) const {
  if (is_local_label(fx.label)) {
    for (int32_t f = fx.loc.frame;; f = mod_.frames[static_cast<size_t>(f)].parent) {
      auto it = labels_.find(local_key(fx.label, f));
      if (it != labels_.end()) {
        module_name = local_module_name(fx.label, f);
        return &it->second;
      }
      if (f < 0) return nullptr;
    }
  }
  const std::string qualified = fmt::format("{}.{}", name_of(fx.engine), fx.label);
  if (auto it = labels_.find(qualified); it != labels_.end()) {
    module_name.clear();
    return &it->second;
  }
  auto it = labels_.find(fx.label);
  return it == labels_.end() ? nullptr : &it->second;
}

} // namespace nisa::nasm
