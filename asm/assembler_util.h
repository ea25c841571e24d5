// Helpers of the assembler's own files: not part of its API.
#pragma once
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "asm/asm.h"
#include "isa/dtype.h"
#include "isa/enums.h"

namespace nisa::nasm::detail {
namespace fs = std::filesystem;

// Adds the time of its scope to *to, when set (the phases of AsmTimes).
class Stopwatch {
public:
  explicit Stopwatch(double* to) : to_(to) {
    if (to_) t0_ = std::chrono::steady_clock::now();
  }
  ~Stopwatch() {
    if (to_) *to_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }
  Stopwatch(const Stopwatch&) = delete;
  Stopwatch& operator=(const Stopwatch&) = delete;

private:
  double* to_;
  std::chrono::steady_clock::time_point t0_;
};

// Reads a source file into `out`: nullopt when read, else why not, as the end of a sentence
// about the file ("is a directory"). Regular files only (never a device or a FIFO), of at most
// kMaxSourceBytes.
inline std::optional<std::string> read_text(const std::string& path, std::string& out) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) return std::string("does not exist");
  if (fs::is_directory(st)) return std::string("is a directory, not a file");
  if (!fs::is_regular_file(st))
    return std::string("is not a regular file (a device, a FIFO or a socket)");
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) return "cannot be read: " + ec.message();
  if (size > kMaxSourceBytes)
    return fmt::format("is {} bytes, more than the limit of {} bytes ({} MiB) for a source file",
                       size, kMaxSourceBytes, kMaxSourceBytes >> 20);
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::string("cannot be opened (permission denied?)");
  // One read into a string of the right size (the file may still change under us: read what
  // is there, up to the limit).
  out.assign(size, '\0');
  f.read(out.data(), static_cast<std::streamsize>(out.size()));
  out.resize(static_cast<size_t>(f.gcount()));
  if (f.bad()) return std::string("cannot be read (an I/O error)");
  return std::nullopt;
}

inline std::string unquote(std::string_view s) {
  std::string out;
  for (size_t k = 1; k + 1 < s.size(); ++k) {
    if (s[k] == '\\' && k + 2 < s.size()) {
      char c = s[++k];
      out.push_back(c == 'n' ? '\n' : c == 't' ? '\t' : c);
    } else {
      out.push_back(s[k]);
    }
  }
  return out;
}

inline std::string did_you_mean(std::string_view w, const std::vector<std::string>& cands) {
  std::string s = suggest(w, cands);
  return s.empty() ? "" : fmt::format("; did you mean '{}'?", s);
}

inline std::vector<std::string> enum_names(EnumType t) {
  std::vector<std::string> v;
  for (const auto& m : enum_members(t)) v.emplace_back(m.name);
  return v;
}
// The did-you-mean of every enumerated name the assembler reads (operand values, targets,
// roles, memory spaces, engines) and of dtypes: one rule for all of them (suggest()).
inline std::string enum_did_you_mean(EnumType t, std::string_view w) {
  return did_you_mean(w, enum_names(t));
}
inline std::string dtype_did_you_mean(std::string_view w) {
  std::vector<std::string> v;
  for (const auto& i : kDTypeInfo) v.emplace_back(i.name);
  return did_you_mean(w, v);
}

// Read-only names the assembler defines from the target (docs/asm.md §3).
inline bool is_predefined(std::string_view name) { return name == "TARGET" || name == "GEN"; }

// A local label (`.Lname`) is keyed by the expansion frame that defines it.
inline bool is_local_label(std::string_view name) {
  return name.starts_with(".L") && name.size() > 2;
}
inline std::string local_key(std::string_view name, int32_t frame) {
  return fmt::format("{}@{}", name, frame);
}
// The name the module (and the disassembler) shows: a plain identifier, unique per frame.
inline std::string local_module_name(std::string_view name, int32_t frame) {
  return frame < 0 ? fmt::format("L{}", name.substr(2))
                   : fmt::format("L{}_{}", name.substr(2), frame);
}

inline std::string join(const std::vector<std::string>& v, std::string_view sep = ", ") {
  std::string out;
  for (size_t k = 0; k < v.size(); ++k) out += (k ? std::string(sep) : "") + v[k];
  return out;
}

} // namespace nisa::nasm::detail
