#include "asm/lexer.h"

#include <array>
#include <unordered_map>

#include "NeuronAsmLexer.h"

namespace nisa::nasm {
namespace {

using L = nisa_grammar::NeuronAsmLexer;

// The grammar's literal tokens ('.kernel', '+=', ...) from the generated vocabulary, so the
// types stay in step with the grammar.
struct Literals {
  std::vector<std::string> storage; // the literals' text, which the maps' keys view
  std::unordered_map<std::string_view, size_t> words; // '.kernel', '..'
  std::array<size_t, 128> one{};                      // ':' '[' ...
  std::unordered_map<std::string_view, size_t> two;   // '+=' '<<' ...
  Literals() {
    antlr4::ANTLRInputStream empty("");
    L lexer(&empty);
    const auto& vocab = lexer.getVocabulary();
    storage.reserve(L::NL);
    for (size_t t = 1; t < L::NL; ++t) {
      std::string lit = vocab.getLiteralName(t);
      if (lit.size() < 3) continue;
      storage.push_back(lit.substr(1, lit.size() - 2));
    }
    size_t k = 0;
    for (size_t t = 1; t < L::NL; ++t) {
      if (vocab.getLiteralName(t).size() < 3) continue;
      std::string_view s = storage[k++];
      if (s[0] == '.')
        words[s] = t;
      else if (s.size() == 1)
        one[static_cast<unsigned char>(s[0])] = t;
      else
        two[s] = t;
    }
  }
};

const Literals& literals() {
  static const Literals l;
  return l;
}

bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || (c >= '0' && c <= '9'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

} // namespace

void FastLexer::advance(size_t n) {
  for (size_t k = 0; k < n; ++k) {
    // Continuation bytes do not start a code point.
    if ((static_cast<unsigned char>(text_[pos_ + k]) & 0xc0) != 0x80) {
      ++cp_;
      ++col_;
    }
  }
  pos_ += n;
}

void FastLexer::newline() {
  ++pos_;
  ++cp_;
  ++line_;
  col_ = 0;
}

// After ',': the longest run of `[ \t]* comment? \r? \n` groups (a comma may end a line).
size_t FastLexer::match_comma_tail(size_t at) const {
  size_t end = at;
  for (;;) {
    size_t p = end;
    while (p < text_.size() && (text_[p] == ' ' || text_[p] == '\t')) ++p;
    if (p < text_.size() &&
        (text_[p] == ';' || (text_[p] == '/' && p + 1 < text_.size() && text_[p + 1] == '/')))
      while (p < text_.size() && text_[p] != '\r' && text_[p] != '\n') ++p;
    if (p < text_.size() && text_[p] == '\r') ++p;
    if (p >= text_.size() || text_[p] != '\n') return end;
    end = p + 1;
  }
}

// [0-9] [0-9a-zA-Z_]* ('.' [0-9] [0-9a-zA-Z_]*)? ([eE] [+-] [0-9]+)?, longest match.
size_t FastLexer::match_number(size_t at) const {
  auto run = [&](size_t p) {
    while (p < text_.size() && is_name_char(text_[p])) ++p;
    return p;
  };
  size_t p = run(at + 1);
  if (p + 1 < text_.size() && text_[p] == '.' && is_digit(text_[p + 1])) p = run(p + 2);
  // The exponent's [eE] is the last character of the run just matched.
  if ((text_[p - 1] == 'e' || text_[p - 1] == 'E') && p + 1 < text_.size() &&
      (text_[p] == '+' || text_[p] == '-') && is_digit(text_[p + 1])) {
    p += 2;
    while (p < text_.size() && is_digit(text_[p])) ++p;
  }
  return p;
}

// '"' (~["\\\r\n] | '\\' ~[\r\n])* '"'; returns `at` when unterminated.
size_t FastLexer::match_string(size_t at) const {
  for (size_t p = at + 1; p < text_.size(); ++p) {
    const char c = text_[p];
    if (c == '"') return p + 1;
    if (c == '\r' || c == '\n') return at;
    if (c == '\\') {
      if (p + 1 >= text_.size() || text_[p + 1] == '\r' || text_[p + 1] == '\n') return at;
      ++p;
    }
  }
  return at;
}

std::unique_ptr<antlr4::Token> FastLexer::nextToken() {
  const std::string_view t = text_;
  for (;;) {
    const size_t start_cp = cp_, line = line_, col = col_, at = pos_;
    auto make = [&](size_t type) {
      auto tok = std::make_unique<antlr4::CommonToken>(
          std::make_pair(this, input_), type, antlr4::Token::DEFAULT_CHANNEL, start_cp, cp_ - 1);
      tok->setLine(line);
      tok->setCharPositionInLine(col);
      return tok;
    };
    if (at >= t.size()) {
      return make(antlr4::Token::EOF); // [index, index - 1], as ANTLR's
    }
    const char c = t[at];
    if (c == ' ' || c == '\t') { // WS -> skip
      size_t p = at;
      while (p < t.size() && (t[p] == ' ' || t[p] == '\t')) ++p;
      advance(p - at);
      continue;
    }
    if (c == '\n' || (c == '\r' && at + 1 < t.size() && t[at + 1] == '\n')) {
      if (c == '\r') advance(1);
      newline();
      return make(L::NL);
    }
    if (c == ';' || (c == '/' && at + 1 < t.size() && t[at + 1] == '/')) { // COMMENT -> skip
      size_t p = at;
      while (p < t.size() && t[p] != '\r' && t[p] != '\n') ++p;
      advance(p - at);
      continue;
    }
    if (c == ',') {
      const size_t end = match_comma_tail(at + 1);
      advance(1);
      while (pos_ < end) {
        if (t[pos_] == '\n')
          newline();
        else
          advance(1);
      }
      return make(L::COMMA);
    }
    if (c == '\\') { // CONT -> skip: '\\' [ \t]* '\r'? '\n'
      size_t p = at + 1;
      while (p < t.size() && (t[p] == ' ' || t[p] == '\t')) ++p;
      if (p < t.size() && t[p] == '\r') ++p;
      if (p < t.size() && t[p] == '\n') {
        advance(p - at);
        newline();
        continue;
      }
      advance(1);
      return make(L::ERRCHAR);
    }
    if (is_name_start(c)) { // ID or DOTTED
      size_t p = at + 1;
      while (p < t.size() && is_name_char(t[p])) ++p;
      size_t type = L::ID;
      if (p + 1 < t.size() && t[p] == '.' && is_name_start(t[p + 1])) {
        p += 2;
        while (p < t.size() && is_name_char(t[p])) ++p;
        type = L::DOTTED;
      }
      advance(p - at);
      return make(type);
    }
    if (is_digit(c)) {
      advance(match_number(at) - at);
      return make(L::NUMBER);
    }
    if (c == '"') {
      const size_t end = match_string(at);
      if (end != at) {
        advance(end - at);
        return make(L::STRING);
      }
      advance(1);
      return make(L::ERRCHAR);
    }
    const Literals& lit = literals();
    if (c == '.') {
      if (at + 1 < t.size() && is_name_start(t[at + 1])) { // a keyword or DIRECTIVE
        size_t p = at + 2;
        while (p < t.size() && is_name_char(t[p])) ++p;
        auto it = lit.words.find(t.substr(at, p - at));
        advance(p - at);
        return make(it != lit.words.end() ? it->second : size_t{L::DIRECTIVE});
      }
      if (at + 1 < t.size() && t[at + 1] == '.') {
        advance(2);
        return make(lit.words.at(".."));
      }
    }
    if (at + 1 < t.size()) {
      auto it = lit.two.find(t.substr(at, 2));
      if (it != lit.two.end()) {
        advance(2);
        return make(it->second);
      }
    }
    const auto uc = static_cast<unsigned char>(c);
    if (uc < 128 && lit.one[uc]) {
      advance(1);
      return make(lit.one[uc]);
    }
    // ERRCHAR: one code point.
    size_t n = 1;
    while (at + n < t.size() && (static_cast<unsigned char>(t[at + n]) & 0xc0) == 0x80) ++n;
    advance(n);
    return make(L::ERRCHAR);
  }
}

} // namespace nisa::nasm
