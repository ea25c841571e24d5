// The text of the check graph's places (check_graph.h): cores, source locations and the
// engine / queue / channel of a node, as every message of `nisa check` names them.
#pragma once
#include <string>

#include <fmt/format.h>

#include "interp/check/check_graph.h"

namespace nisa::interp::check_detail {

class Names {
public:
  Names(const Module& m, const CheckOptions& o, const Graph& g) : m_(m), o_(o), g_(g) {}

  std::string core_name(int c) const {
    if (o_.ranks > 1) return fmt::format("rank {} core {}", c / o_.lnc, c % o_.lnc);
    return fmt::format("core {}", c);
  }
  // "file:line" of instruction `pc` of engine `e`.
  std::string loc(Engine e, int64_t pc) const {
    const auto& d = m_.debug[size_t(e)];
    if (pc < 0 || size_t(pc) >= d.size()) return fmt::format("{}[{}]", name_of(e), pc);
    const DebugLoc& l = d[size_t(pc)];
    std::string f = l.file < m_.files.size() ? m_.files[l.file] : "?";
    return fmt::format("{}:{}", f, l.line);
  }
  std::string loc_of(uint32_t n) const { return loc(g_.nodes[n].eng, g_.nodes[n].pc); }
  // "core 0 sp", "core 0 sp -> q3", "rank 1 core 0 pool -> cc ch0"
  std::string who_of(uint32_t n) const {
    const Node& x = g_.nodes[n];
    std::string s = fmt::format("{} {}", core_name(x.core), name_of(x.eng));
    if (x.queue >= 0 && x.queue < kNumDmaQueues) s += fmt::format(" -> q{}", x.queue);
    if (x.queue >= kNumDmaQueues) s += fmt::format(" -> cc ch{}", x.queue - kNumDmaQueues);
    return s;
  }

private:
  const Module& m_;
  const CheckOptions& o_;
  const Graph& g_;
};

} // namespace nisa::interp::check_detail
