// `nisa run --stats-json`: the statistics of interp/core/stats.h as JSON (nlohmann-json).
#include <nlohmann/json.hpp>

#include "interp/core/machine.h"
#include "interp/core/stats.h"
#include "interp/core/target.h"
#include "interp/observe/stats_report.h"

namespace nisa::interp {

std::string stats_json(const Machine& m, const Stats& s, std::string_view status, int exit_code) {
  using nlohmann::ordered_json;
  ordered_json doc;
  doc["schema"] = "nisa-stats/1";
  doc["target"] = m.tp->name;
  doc["ranks"] = m.opt.ranks;
  doc["lnc"] = m.opt.lnc;
  if (!is_identity(m.opt.cost_scale)) { // --cost-scale: the factors that are not 1
    ordered_json scale = ordered_json::object();
    for (int u = 0; u < kNumCostUnits; ++u)
      if (m.opt.cost_scale[u] != 1.0) scale[std::string(kCostUnitNames[u])] = m.opt.cost_scale[u];
    doc["cost_scale"] = std::move(scale);
  }
  doc["tick_mhz"] = kTickMHz;
  doc["status"] = status;
  doc["exit_code"] = exit_code;
  doc["instructions"] = s.total_insts();
  doc["makespan_ticks"] = s.makespan_ticks;
  doc["makespan_ns"] = ticks_to_ns(s.makespan_ticks);
  doc["wall_seconds"] = s.wall_seconds;
  ordered_json cores = ordered_json::array();
  for (size_t i = 0; i < s.cores.size(); ++i) {
    const CoreStats& c = s.cores[i];
    ordered_json cj;
    cj["rank"] = m.cores[i].rank;
    cj["core"] = m.cores[i].core;
    ordered_json engines = ordered_json::array();
    for (int e = 0; e < kNumEngines; ++e) {
      const EngineStats& es = c.eng[e];
      engines.push_back({{"engine", name_of(Engine(e))},
                         {"insts", es.insts},
                         {"busy_ticks", es.busy_ticks},
                         {"busy_ns", ticks_to_ns(es.busy_ticks)},
                         {"cycles", es.cycles},
                         {"wait_ticks", es.wait_ticks},
                         {"wait_ns", ticks_to_ns(es.wait_ticks)},
                         {"clock_mhz", m.tp->clock_mhz[e]}});
    }
    cj["engines"] = std::move(engines);
    ordered_json queues = ordered_json::array();
    for (int q = 0; q < kNumDmaQueues; ++q) {
      const QueueStats& qs = c.queue[q];
      if (!qs.transfers) continue;
      queues.push_back({{"queue", q},
                        {"transfers", qs.transfers},
                        {"bytes", qs.bytes},
                        {"busy_ticks", qs.busy_ticks},
                        {"busy_ns", ticks_to_ns(qs.busy_ticks)}});
    }
    cj["queues"] = std::move(queues);
    ordered_json chans = ordered_json::array();
    for (int ch = 0; ch < kNumCcChannels; ++ch) {
      const ChanStats& cs = c.chan[ch];
      if (!cs.transfers) continue;
      chans.push_back({{"channel", ch},
                       {"transfers", cs.transfers},
                       {"link_bytes", cs.bytes},
                       {"busy_ticks", cs.busy_ticks},
                       {"busy_ns", ticks_to_ns(cs.busy_ticks)}});
    }
    cj["channels"] = std::move(chans);
    cores.push_back(std::move(cj));
  }
  doc["cores"] = std::move(cores);
  return doc.dump(1) + "\n";
}

} // namespace nisa::interp
