// Diagnostics: reporting with expansion notes and limits; formatting; did-you-mean.
#include "asm/reporter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <utility>

#include "isa/quote.h"

namespace nisa::nasm {

// Nested loops multiply: bound the whole expansion, not only each loop and the instructions.
void Reporter::count_step(const Loc& at) {
  report(at, fmt::format("the expansion exceeds the limit of {} steps (statements executed and "
                         "loop iterations; nested loops multiply)",
                         opts_.max_steps));
  throw Abort{};
}

// A file is lexed once when read; a statement is looked at again every time it is expanded.
void Reporter::count_lexed(const Loc& at) {
  const std::string msg = fmt::format(
      "the assembly lexes more than {} bytes ({} MiB) of source in all (every file once, and "
      "each statement every time it is expanded: loops, macros and includes multiply); an "
      ".include in a loop counts its file's statements at every iteration: include it once, or "
      "make its body a .macro",
      opts_.max_lexed_bytes, opts_.max_lexed_bytes >> 20);
  if (at.line == 0)
    report_global(msg);
  else
    report(at, msg);
  throw Abort{};
}

void Reporter::report(const Loc& l, const std::string& msg) {
  Diagnostic d;
  d.file = l.file < mod_.files.size() ? mod_.files[l.file] : "<input>";
  d.line = l.line;
  d.col = l.col;
  d.message = msg;
  if (l.file < src_.units())
    d.source_line = std::string(src_.unit(l.file).parsed.line_text(l.line));
  // The same error from every iteration of a loop is reported once; past a bound, repeating
  // errors stop the assembly (each one may cost a did-you-mean search).
  for (const auto& o : diags_)
    if (o.file == d.file && o.line == d.line && o.col == d.col && o.message == d.message) {
      if (++repeats_ < kMaxRepeatedErrors) return;
      Diagnostic stop;
      stop.message = fmt::format("{} repeated errors (in a loop?); stopping", repeats_);
      diags_.push_back(stop);
      ++errors_;
      throw Abort{};
    }
  for (int32_t f = l.frame; f >= 0 && f < static_cast<int32_t>(mod_.frames.size());
       f = mod_.frames[f].parent) {
    const auto& fr = mod_.frames[f];
    const std::string where = fmt::format("{}:{}:{}", mod_.files[fr.file], fr.line, fr.col);
    switch (fr.kind) {
    case ExpansionFrame::Macro:
      d.notes.push_back(fmt::format("in expansion of macro '{}' at {}", fr.what, where));
      break;
    case ExpansionFrame::ForIter:
      d.notes.push_back(fmt::format("in iteration {} of .for at {}", fr.what, where));
      break;
    case ExpansionFrame::Include: d.notes.push_back(fmt::format("included from {}", where)); break;
    }
  }
  diags_.push_back(std::move(d));
  if (++errors_ >= opts_.max_errors) {
    Diagnostic stop;
    stop.message = fmt::format("too many errors ({}); stopping", errors_);
    diags_.push_back(stop);
    throw Abort{};
  }
}

void Reporter::report_global(const std::string& msg) {
  Diagnostic d;
  d.file = "<command line>";
  d.message = msg;
  diags_.push_back(d);
  ++errors_;
}

// ---- formatting ---------------------------------------------------------------------------

std::string Diagnostic::str() const {
  std::string out;
  if (line)
    out = fmt::format("{}:{}:{}: ", file, line, col);
  else if (!file.empty())
    out = file + ": ";
  // A hostile input (a 1 MB token or line) is quoted at most a line's worth at a time.
  out += (severity == Error ? "error: " : "note: ") + elide(message, 2 * kMaxQuoted) + "\n";
  if (line && !source_line.empty()) {
    // The source line, or a window of kMaxQuoted bytes around the column.
    std::string_view src = source_line;
    size_t first = 0;
    if (src.size() > kMaxQuoted) {
      first = col > kMaxQuoted / 2 ? std::min<size_t>(col - kMaxQuoted / 2, src.size()) : 0;
      while (first > 0 && (static_cast<unsigned char>(src[first]) & 0xC0) == 0x80) --first;
    }
    const std::string shown = (first ? "..." : "") + elide(src.substr(first), kMaxQuoted);
    out += shown + "\n";
    std::string caret(first ? 3 : 0, ' ');
    for (size_t k = first + 1; k < col && k <= src.size() && k - first <= kMaxQuoted; ++k)
      caret.push_back(src[k - 1] == '\t' ? '\t' : ' ');
    out += caret + "^\n";
  }
  for (const auto& n : notes) out += "note: " + n + "\n";
  return out;
}

std::string AsmResult::diagnostics_text() const {
  std::string out;
  for (const auto& d : diags) out += d.str();
  return out;
}

namespace {

std::vector<std::string_view> words_of(std::string_view s) {
  std::vector<std::string_view> w;
  for (size_t b = 0; b <= s.size();) {
    const size_t e = std::min(s.find('_', b), s.size());
    if (e > b) w.push_back(s.substr(b, e - b));
    b = e + 1;
  }
  return w;
}

// The second chance of suggest() for names of '_'-separated words, which a typo rarely
// explains (gelu_tanh for gelu_apprx_tanh, rank for rank_id, recip for reciprocal): the
// candidate that has each of the word's words (of 2 or more letters) as a word or a word's
// start, with the fewest other words, then the fewest words matched only by their start; ""
// when none has, or when two tie.
std::string by_words(std::string_view word, const std::vector<std::string>& candidates) {
  const auto ws = words_of(word);
  if (ws.empty() || word.size() < 3) return "";
  for (auto w : ws)
    if (w.size() < 2) return "";
  std::string best;
  std::pair<size_t, size_t> best_cost{SIZE_MAX, SIZE_MAX}; // (other words, prefix matches)
  bool tie = false;
  for (const auto& c : candidates) {
    const auto cs = words_of(c);
    if (cs.size() < ws.size() || c == word) continue;
    std::vector<bool> used(cs.size(), false);
    size_t prefixes = 0;
    bool all = true;
    for (auto w : ws) {
      size_t at = cs.size();
      for (size_t k = 0; k < cs.size() && at == cs.size(); ++k)
        if (!used[k] && cs[k] == w) at = k;
      for (size_t k = 0; k < cs.size() && at == cs.size(); ++k)
        if (!used[k] && cs[k].starts_with(w)) at = k, ++prefixes;
      if (at == cs.size()) {
        all = false;
        break;
      }
      used[at] = true;
    }
    if (!all) continue;
    const std::pair<size_t, size_t> cost{cs.size() - ws.size(), prefixes};
    if (cost < best_cost) {
      best_cost = cost;
      best = c;
      tie = false;
    } else if (cost == best_cost && c != best) {
      tie = true;
    }
  }
  return tie ? "" : best;
}

bool same_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

} // namespace

std::string suggest(std::string_view word, const std::vector<std::string>& candidates) {
  for (const auto& c : candidates)
    if (c != word && same_ignoring_case(c, word)) return c; // GELU for gelu
  const size_t limit = std::clamp<size_t>(word.size() / 3 + 1, 1, 3);
  std::string best;
  size_t best_d = limit + 1;
  std::vector<size_t> prev, cur;
  for (const auto& c : candidates) {
    if (c == word) continue;
    prev.resize(c.size() + 1);
    cur.resize(c.size() + 1);
    for (size_t j = 0; j <= c.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= word.size(); ++i) {
      cur[0] = i;
      for (size_t j = 1; j <= c.size(); ++j)
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (word[i - 1] != c[j - 1])});
      std::swap(prev, cur);
    }
    const size_t d = prev[c.size()];
    // Ties: prefer the candidate of the same length (a typo rather than a missing letter).
    const bool better_tie =
        d == best_d && ((c.size() == word.size()) > (best.size() == word.size()) ||
                        ((c.size() == word.size()) == (best.size() == word.size()) && c < best));
    if (d < best_d || better_tie) {
      best_d = d;
      best = c;
    }
  }
  return best.empty() ? by_words(word, candidates) : best;
}

} // namespace nisa::nasm
