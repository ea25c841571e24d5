#include <array>
#include <cstring>
#include <string>

#include "asm/token.h"

namespace nisa::nasm {
namespace {

constexpr std::string_view kSpelling[] = {"",
                                          "",
                                          "",
                                          "",
                                          "",
                                          "",
                                          "",
                                          "",
                                          "",
#define X(name, text) text,
                                          NISA_FIXED_TOKENS(X)
#undef X
};
constexpr size_t kNumTok = sizeof(kSpelling) / sizeof(kSpelling[0]);
constexpr size_t kFirstFixed = static_cast<size_t>(Tok::KwKernel);

// What a byte may start, for the lexer's dispatch.
enum Class : uint8_t {
  Other,
  Blank,
  Newline,
  Return,
  Semi,
  Slash,
  Comma,
  Backslash,
  Name,
  Digit,
  Quote,
  Dot
};
constexpr std::array<uint8_t, 256> kClass = [] {
  std::array<uint8_t, 256> c{};
  for (int i = 'a'; i <= 'z'; ++i) c[i] = Name;
  for (int i = 'A'; i <= 'Z'; ++i) c[i] = Name;
  for (int i = '0'; i <= '9'; ++i) c[i] = Digit;
  c['_'] = Name;
  c[' '] = c['\t'] = Blank;
  c['\n'] = Newline;
  c['\r'] = Return;
  c[';'] = Semi;
  c['/'] = Slash;
  c[','] = Comma;
  c['\\'] = Backslash;
  c['"'] = Quote;
  c['.'] = Dot;
  return c;
}();
uint8_t class_of(char c) { return kClass[static_cast<unsigned char>(c)]; }
bool is_name_start(char c) { return class_of(c) == Name; }
constexpr std::array<bool, 256> kNameChar = [] {
  std::array<bool, 256> n{};
  for (size_t i = 0; i < n.size(); ++i) n[i] = kClass[i] == Name || kClass[i] == Digit;
  return n;
}();
bool is_name_char(char c) { return kNameChar[static_cast<unsigned char>(c)]; }
bool is_digit(char c) { return class_of(c) == Digit; }
bool is_continuation(char c) { return (static_cast<unsigned char>(c) & 0xc0) == 0x80; }

// Whether the 8 bytes at `p` are ASCII and none is '\r' or '\n' (each one code point of a line).
bool plain_ascii8(const char* p) {
  constexpr uint64_t kOnes = 0x0101010101010101u, kHigh = 0x8080808080808080u;
  uint64_t w;
  std::memcpy(&w, p, 8);
  const uint64_t lf = w ^ (kOnes * '\n'), cr = w ^ (kOnes * '\r');
  // A byte of lf or cr is zero where w holds '\n' or '\r' (the usual has-a-zero-byte test).
  return ((w | ((lf - kOnes) & ~lf) | ((cr - kOnes) & ~cr)) & kHigh) == 0;
}

// '.word': a keyword or a Directive.
Tok directive_kind(std::string_view w) {
  for (size_t k = kFirstFixed; k < static_cast<size_t>(Tok::DotDot); ++k) // the keywords
    if (kSpelling[k].size() == w.size() && kSpelling[k][1] == w[1] && kSpelling[k] == w)
      return static_cast<Tok>(k);
  return Tok::Directive;
}

constexpr std::array<Tok, 256> kOperator1 = [] {
  std::array<Tok, 256> k{}; // Tok::Eof: no operator
  k[':'] = Tok::Colon;
  k['['] = Tok::LBrack;
  k[']'] = Tok::RBrack;
  k['('] = Tok::LParen;
  k[')'] = Tok::RParen;
  k['@'] = Tok::At;
  k['='] = Tok::Assign;
  k['+'] = Tok::Plus;
  k['-'] = Tok::Minus;
  k['!'] = Tok::Not;
  k['~'] = Tok::Tilde;
  k['*'] = Tok::Star;
  k['/'] = Tok::Slash;
  k['%'] = Tok::Percent;
  k['<'] = Tok::Lt;
  k['>'] = Tok::Gt;
  k['&'] = Tok::Amp;
  k['^'] = Tok::Caret;
  k['|'] = Tok::Pipe;
  return k;
}();

// One- and two-character operators; Eof when `c` starts none.
Tok operator_kind(char c, char next, size_t& len) {
  len = 2;
  switch (c) {
  case '+':
    if (next == '=') return Tok::PlusAssign;
    break;
  case '<':
    if (next == '<') return Tok::Shl;
    if (next == '=') return Tok::Le;
    break;
  case '>':
    if (next == '>') return Tok::Shr;
    if (next == '=') return Tok::Ge;
    break;
  case '=':
    if (next == '=') return Tok::EqEq;
    break;
  case '!':
    if (next == '=') return Tok::Ne;
    break;
  case '&':
    if (next == '&') return Tok::AndAnd;
    break;
  case '|':
    if (next == '|') return Tok::OrOr;
    break;
  default: break;
  }
  len = 1;
  return kOperator1[static_cast<unsigned char>(c)];
}

} // namespace

void Lexer::advance(size_t n) {
  for (size_t k = 0; k < n; ++k) col_ += !is_continuation(t_[pos_ + k]);
  pos_ += n;
}

void Lexer::newline() {
  ++pos_;
  ++line_;
  col_ = 1;
}

// After ',': the longest run of `[ \t]* comment? \r? \n` groups (a comma may end a line).
size_t Lexer::match_comma_tail(size_t at) const {
  size_t end = at;
  for (;;) {
    size_t p = end;
    while (p < t_.size() && (t_[p] == ' ' || t_[p] == '\t')) ++p;
    if (p < t_.size() && (t_[p] == ';' || (t_[p] == '/' && p + 1 < t_.size() && t_[p + 1] == '/')))
      while (p < t_.size() && t_[p] != '\r' && t_[p] != '\n') ++p;
    if (p < t_.size() && t_[p] == '\r') ++p;
    if (p >= t_.size() || t_[p] != '\n') return end;
    end = p + 1;
  }
}

// [0-9] [0-9a-zA-Z_]* ('.' [0-9] [0-9a-zA-Z_]*)? ([eE] [+-] [0-9]+)?, longest match.
size_t Lexer::match_number(size_t at) const {
  auto run = [&](size_t p) {
    while (p < t_.size() && is_name_char(t_[p])) ++p;
    return p;
  };
  size_t p = run(at + 1);
  if (p + 1 < t_.size() && t_[p] == '.' && is_digit(t_[p + 1])) p = run(p + 2);
  // The exponent's [eE] is the last character of the run just matched.
  if ((t_[p - 1] == 'e' || t_[p - 1] == 'E') && p + 1 < t_.size() &&
      (t_[p] == '+' || t_[p] == '-') && is_digit(t_[p + 1])) {
    p += 2;
    while (p < t_.size() && is_digit(t_[p])) ++p;
  }
  return p;
}

// '"' (~["\\\r\n] | '\\' ~[\r\n])* '"'; returns `at` when unterminated.
size_t Lexer::match_string(size_t at) const {
  for (size_t p = at + 1; p < t_.size(); ++p) {
    const char c = t_[p];
    if (c == '"') return p + 1;
    if (c == '\r' || c == '\n') return at;
    if (c == '\\') {
      if (p + 1 >= t_.size() || t_[p + 1] == '\r' || t_[p + 1] == '\n') return at;
      ++p;
    }
  }
  return at;
}

Token Lexer::next() { return scan(); }

size_t Lexer::read_line(Token* out, size_t max) {
  for (size_t n = 0;;) {
    const Tok k = (out[n++] = scan()).kind;
    if (k == Tok::NL || k == Tok::Eof || n >= max) return n;
  }
}

// next(), inlined into the loops above.
[[gnu::always_inline]] inline Token Lexer::scan() {
  const std::string_view t = t_;
  const size_t size = t.size();
  for (;;) {
    const size_t at = pos_;
    const uint32_t line = line_, col = col_;
    // Ends the token at pos_; `ascii` tokens advance the column by their length.
    auto done = [&](Tok k) {
      return Token{static_cast<uint32_t>(at), static_cast<uint32_t>(pos_), line, col, k};
    };
    auto done_ascii = [&](Tok k, size_t end) {
      col_ += static_cast<uint32_t>(end - at);
      pos_ = end;
      return done(k);
    };
    if (at >= size) return done(Tok::Eof);
    const char c = t[at];
    // The byte after c (read only where it matters: most tokens do not look at it).
    auto after = [&] { return at + 1 < size ? t[at + 1] : '\0'; };
    switch (class_of(c)) {
    case Blank: { // WS -> skip
      size_t p = at + 1;
      while (p < size && class_of(t[p]) == Blank) ++p;
      col_ += static_cast<uint32_t>(p - at);
      pos_ = p;
      continue;
    }
    case Return:
      if (after() != '\n') break;
      advance(1);
      [[fallthrough]];
    case Newline: newline(); return done(Tok::NL);
    case Slash:
      if (after() != '/') break;
      [[fallthrough]];
    case Semi: { // COMMENT -> skip: to the line end, counting code points on the way
      size_t p = at;
      uint32_t col = col_;
      for (;;) {
        while (p + 8 <= size && plain_ascii8(t.data() + p)) {
          p += 8;
          col += 8;
        }
        if (p >= size || t[p] == '\r' || t[p] == '\n') break;
        col += !is_continuation(t[p]);
        ++p;
      }
      col_ = col;
      pos_ = p;
      continue;
    }
    case Comma: {
      const size_t end = match_comma_tail(at + 1);
      ++col_; // ','
      ++pos_;
      while (pos_ < end) {
        if (t[pos_] == '\n')
          newline();
        else
          advance(1);
      }
      return done(Tok::Comma);
    }
    case Backslash: { // CONT -> skip: '\\' [ \t]* '\r'? '\n'
      size_t p = at + 1;
      while (p < size && class_of(t[p]) == Blank) ++p;
      if (p < size && t[p] == '\r') ++p;
      if (p < size && t[p] == '\n') {
        advance(p - at);
        newline();
        continue;
      }
      return done_ascii(Tok::ErrChar, at + 1);
    }
    case Name: { // Id or Dotted
      size_t p = at + 1;
      while (p < size && is_name_char(t[p])) ++p;
      if (p + 1 < size && t[p] == '.' && is_name_start(t[p + 1])) {
        p += 2;
        while (p < size && is_name_char(t[p])) ++p;
        return done_ascii(Tok::Dotted, p);
      }
      return done_ascii(Tok::Id, p);
    }
    case Digit: return done_ascii(Tok::Number, match_number(at));
    case Quote: {
      const size_t end = match_string(at);
      advance(end != at ? end - at : 1);
      return done(end != at ? Tok::String : Tok::ErrChar);
    }
    case Dot:
      if (is_name_start(after())) { // a keyword or a Directive
        size_t p = at + 2;
        while (p < size && is_name_char(t[p])) ++p;
        return done_ascii(directive_kind(t.substr(at, p - at)), p);
      }
      if (after() == '.') return done_ascii(Tok::DotDot, at + 2);
      break;
    default: break;
    }
    size_t len = 0;
    const Tok op = operator_kind(c, after(), len);
    if (op != Tok::Eof) return done_ascii(op, at + len);
    // ErrChar: one code point.
    size_t n = 1;
    while (at + n < size && is_continuation(t[at + n])) ++n;
    advance(n);
    return done(Tok::ErrChar);
  }
}

std::vector<Token> lex(std::string_view src) {
  std::vector<Token> out;
  out.reserve(src.size() / 2 + 16); // a token and its blank are rarely under 2 bytes
  Lexer lx(src);
  do out.push_back(lx.next());
  while (out.back().kind != Tok::Eof);
  return out;
}

Token lex_at(std::string_view src, uint32_t offset) {
  Token t = Lexer(src, offset).next();
  t.line = t.col = 0;
  return t;
}

std::string_view tok_spelling(Tok k) {
  const auto i = static_cast<size_t>(k);
  return i < kNumTok ? kSpelling[i] : std::string_view{};
}

std::string_view tok_description(Tok k) {
  switch (k) {
  case Tok::Eof: return "end of file";
  case Tok::NL: return "end of line";
  case Tok::Comma: return "','";
  case Tok::Dotted: return "an instruction";
  case Tok::Directive: return "a directive";
  case Tok::Number: return "a number";
  case Tok::Id: return "a name";
  case Tok::String: return "a string";
  case Tok::ErrChar: return "a stray character";
  default: break;
  }
  static const auto quoted = [] {
    std::array<std::string, kNumTok> q;
    for (size_t i = kFirstFixed; i < kNumTok; ++i) q[i] = "'" + std::string(kSpelling[i]) + "'";
    return q;
  }();
  const auto i = static_cast<size_t>(k);
  return i < kNumTok ? std::string_view(quoted[i]) : std::string_view("a token");
}

} // namespace nisa::nasm
