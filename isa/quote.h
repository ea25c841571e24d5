// Quoting untrusted input in diagnostics: at most about a line's worth of it, so that a 1 MB
// token or a binary header cannot flood a terminal or a log.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace nisa {

inline constexpr size_t kMaxQuoted = 200;

// `s` cut to `max` bytes (on a UTF-8 boundary) with "..." appended when cut; control bytes
// but tabs are shown as \xNN so that a binary input cannot move the cursor or clear the screen.
inline std::string elide(std::string_view s, size_t max = kMaxQuoted) {
  std::string out;
  const size_t n = s.size() > max ? max : s.size();
  size_t cut = n;
  if (n < s.size())
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  out.reserve(cut + 16);
  for (size_t i = 0; i < cut; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if ((c < 0x20 && c != '\t') || c == 0x7F) {
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (cut < s.size()) out += "...";
  return out;
}

} // namespace nisa
