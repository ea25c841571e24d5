// The run statistics and timeline as text, Chrome trace JSON and JSON (observe/stats.cpp,
// timeline.cpp, stats_json.cpp).
#pragma once
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "interp/core/machine.h"
#include "interp/core/stats.h"

namespace nisa::interp {

// The --stats table.
void print_stats(std::ostream& os, const Machine& m, const Stats& s);
// Chrome trace events JSON (Perfetto-loadable): one process per core (and rank), one thread
// per engine and per DMA queue that was used; slices carry the instruction and source line.
void write_timeline(std::ostream& os, const Machine& m, const std::vector<TimelineEvent>& ev);
// `nisa run --stats-json`: the --stats figures as one JSON object (schema nisa-stats/1 in
// docs/machine-io.md "Statistics as JSON"); `status` is ok, deadlock, fault, budget or races.
std::string stats_json(const Machine& m, const Stats& s, std::string_view status, int exit_code);

} // namespace nisa::interp
