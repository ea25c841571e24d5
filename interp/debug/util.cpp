// Helpers of the debugger: numbers in commands, names, values.
#include <cmath>
#include <sstream>

#include <fmt/format.h>

#include "interp/debug/internal.h"

namespace nisa::interp::debug {

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r\n"), b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

std::vector<std::string> words(const std::string& s) {
  std::istringstream is(s);
  std::vector<std::string> out;
  for (std::string w; is >> w;) out.push_back(w);
  return out;
}

bool is_number(const std::string& s) {
  if (s.empty()) return false;
  size_t i = s[0] == '-' ? 1 : 0;
  if (s.size() > i + 2 && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X'))
    return s.find_first_not_of("0123456789abcdefABCDEF", i + 2) == std::string::npos;
  return i < s.size() && s.find_first_not_of("0123456789", i) == std::string::npos;
}

int64_t to_int(const std::string& s, const char* what, int64_t lo, int64_t hi) {
  // At most a line's worth of the text in a message.
  std::string shown = s.size() > 40 ? s.substr(0, 40) + "..." : s;
  if (!is_number(s)) throw Error(fmt::format("{}: '{}' is not a number", what, shown));
  bool neg = s[0] == '-';
  size_t i = neg ? 1 : 0;
  int base = 10;
  if (s.size() > i + 2 && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')) base = 16, i += 2;
  // Accumulate the magnitude in 128 bits: any value out of int64 range is reported, not
  // wrapped or truncated.
  unsigned __int128 mag = 0;
  for (; i < s.size(); ++i) {
    char c = s[i];
    int d = c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
    mag = mag * unsigned(base) + unsigned(d);
    if (mag > (unsigned __int128)(1) << 64) break;
  }
  __int128 v = neg ? -__int128(mag) : __int128(mag);
  if (v < lo || v > hi)
    throw RangeError(fmt::format("{}: {} is outside [{}, {}]", what, shown, lo, hi));
  return int64_t(v);
}

int reg_index(const std::string& reg, const char* what) {
  if (reg.size() < 2 || reg[0] != 'r' || !is_number(reg.substr(1))) return -1;
  return int(to_int(reg.substr(1), what, 0, kNumRegs - 1));
}

std::string ns(int64_t ticks) { return fmt::format("{:.3f} ns", ticks_to_ns(ticks)); }

std::string basename_of(const std::string& p) {
  size_t k = p.find_last_of('/');
  return k == std::string::npos ? p : p.substr(k + 1);
}

// "rank R core C " of a core index, or "" on a single core.
std::string who_of(const Machine& m, int core) {
  std::string who;
  if (m.opt.ranks > 1) who += fmt::format("rank {} ", m.cores[size_t(core)].rank);
  if (m.opt.lnc > 1) who += fmt::format("core {} ", m.cores[size_t(core)].core);
  return who;
}

std::string format_value(DType t, const uint8_t* p, char f) {
  if (f == 'x') {
    uint64_t bits = 0;
    for (int b = dtype_bytes(t) - 1; b >= 0; --b) bits = bits << 8 | p[b];
    return fmt::format("0x{:0{}x}", bits, dtype_bytes(t) * 2);
  }
  if (f == 'd' && info(t).is_float) {
    float v = load_as_f32(t, p);
    return std::isfinite(v) ? fmt::format("{}", int64_t(v)) : fmt::format("{}", v);
  }
  if (f == 'd') return fmt::format("{}", load_as_int(t, p));
  return fmt::format("{:.6g}", load_as_f32(t, p));
}

bool loc_matches(const Module& m, const DebugLoc* d, int file, int64_t line) {
  if (!d) return false;
  if ((file < 0 || int(d->file) == file) && d->line == line) return true;
  for (int32_t f = d->frame; f >= 0 && size_t(f) < m.frames.size(); f = m.frames[f].parent)
    if ((file < 0 || int(m.frames[f].file) == file) && m.frames[f].line == line) return true;
  return false;
}

const DebugLoc* debug_loc(const Module& m, Engine e, int64_t pc) {
  const auto& d = m.debug[int(e)];
  return pc >= 0 && size_t(pc) < d.size() ? &d[size_t(pc)] : nullptr;
}

} // namespace nisa::interp::debug
