#include "asm/diagnostics_json.h"

#include <charconv>

#include <nlohmann/json.hpp>

namespace nisa::nasm {
namespace {

bool parse_u32(std::string_view s, uint32_t& v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

// "FILE:LINE:COL" (FILE may itself hold ':').
bool parse_where(std::string_view w, NoteInfo& n) {
  const auto c2 = w.rfind(':');
  if (c2 == std::string_view::npos || c2 == 0) return false;
  const auto c1 = w.rfind(':', c2 - 1);
  if (c1 == std::string_view::npos) return false;
  if (!parse_u32(w.substr(c1 + 1, c2 - c1 - 1), n.line) || !parse_u32(w.substr(c2 + 1), n.col))
    return false;
  n.file = std::string(w.substr(0, c1));
  return true;
}

} // namespace

NoteInfo parse_note(const std::string& note) {
  NoteInfo n;
  n.message = note;
  std::string_view s = note;
  const auto at = s.rfind(" at ");
  constexpr std::string_view kMacro = "in expansion of macro '", kFor = "in iteration ",
                             kInc = "included from ";
  if (s.starts_with(kInc)) {
    NoteInfo t = n;
    if (parse_where(s.substr(kInc.size()), t)) {
      t.kind = "include";
      return t;
    }
    return n;
  }
  if (at == std::string_view::npos) return n;
  NoteInfo t = n;
  if (!parse_where(s.substr(at + 4), t)) return n;
  std::string_view head = s.substr(0, at);
  if (head.starts_with(kMacro) && head.ends_with("'")) {
    t.kind = "macro";
    t.what = std::string(head.substr(kMacro.size(), head.size() - kMacro.size() - 1));
    return t;
  }
  if (head.starts_with(kFor) && head.ends_with(" of .for")) {
    t.kind = "for";
    t.what = std::string(head.substr(kFor.size(), head.size() - kFor.size() - 8));
    return t;
  }
  return n;
}

std::string diagnostics_json(const std::vector<Diagnostic>& diags) {
  using nlohmann::ordered_json;
  ordered_json arr = ordered_json::array();
  for (const Diagnostic& d : diags) {
    ordered_json j;
    j["severity"] = d.severity == Diagnostic::Error ? "error" : "note";
    j["file"] = d.file;
    j["line"] = d.line;
    j["column"] = d.col;
    j["message"] = d.message;
    j["source_line"] = d.source_line;
    ordered_json notes = ordered_json::array();
    for (const std::string& s : d.notes) {
      const NoteInfo n = parse_note(s);
      ordered_json nj;
      nj["message"] = n.message;
      nj["kind"] = n.kind;
      nj["what"] = n.what;
      nj["file"] = n.file;
      nj["line"] = n.line;
      nj["column"] = n.col;
      notes.push_back(std::move(nj));
    }
    j["expansion"] = std::move(notes);
    arr.push_back(std::move(j));
  }
  ordered_json doc;
  doc["schema"] = "nisa-diagnostics/1";
  doc["diagnostics"] = std::move(arr);
  return doc.dump(1, ' ', false, ordered_json::error_handler_t::replace) + "\n";
}

} // namespace nisa::nasm
