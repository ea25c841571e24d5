#include "asm/parse.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "NeuronAsmLexer.h"
#include "antlr4-runtime.h"
#include "asm/lexer.h"

namespace nisa::nasm {
namespace {

class Collector : public antlr4::BaseErrorListener {
public:
  explicit Collector(std::vector<SyntaxError>& out) : out_(out) {}
  void syntaxError(antlr4::Recognizer*, antlr4::Token* tok, size_t line, size_t col,
                   const std::string& msg, std::exception_ptr) override {
    if (out_.size() >= 100) return;
    std::string m = msg;
    if (tok && tok->getType() == nisa_grammar::NeuronAsmLexer::ERRCHAR)
      m = fmt::format("unexpected character '{}'", tok->getText());
    else if (tok && tok->getType() == nisa_grammar::NeuronAsmLexer::NL)
      m = "unexpected end of line" + (msg.find("expecting") != std::string::npos
                                          ? "; " + msg.substr(msg.find("expecting"))
                                          : std::string());
    out_.push_back({static_cast<uint32_t>(line), static_cast<uint32_t>(col + 1), m});
  }

private:
  std::vector<SyntaxError>& out_;
};

void split_lines(ParsedFile& f) {
  std::string_view t = f.text;
  size_t b = 0;
  while (b <= t.size()) {
    size_t e = t.find('\n', b);
    if (e == std::string_view::npos) e = t.size();
    std::string_view l = t.substr(b, e - b);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    f.lines.push_back(l);
    b = e + 1;
  }
}

// The parser is recursive descent: bound statement length and bracket nesting before parsing,
// so that no input can exhaust the stack.
constexpr size_t kMaxStatementTokens = 4000;
constexpr int kMaxNesting = 64;

bool check_shape(ParsedFile& f) {
  size_t count = 0;
  int depth = 0;
  for (auto* t : f.tokens->getTokens()) {
    const size_t type = t->getType();
    if (type == nisa_grammar::NeuronAsmLexer::NL || type == antlr4::Token::EOF) {
      count = 0;
      depth = 0;
      continue;
    }
    const size_t at = t->getStartIndex();
    const char c = at < f.text.size() && t->getStopIndex() == at ? f.text[at] : ' ';
    if (c == '(' || c == '[') ++depth;
    if (c == ')' || c == ']') --depth;
    const bool too_deep = depth > kMaxNesting;
    if (++count > kMaxStatementTokens || too_deep) {
      f.errors.push_back(
          {static_cast<uint32_t>(t->getLine()),
           static_cast<uint32_t>(t->getCharPositionInLine() + 1),
           too_deep ? fmt::format("brackets nested deeper than {}", kMaxNesting)
                    : fmt::format("statement longer than {} tokens", kMaxStatementTokens)});
      return false;
    }
  }
  return true;
}

// The ANTLR input stream decodes UTF-8 and throws on malformed bytes: find them first.
std::optional<size_t> invalid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return i;
    for (int k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return i;
    if ((n == 2 && c < 0xc2) || (n == 4 && c > 0xf4)) return i;
    i += static_cast<size_t>(n);
  }
  return std::nullopt;
}

} // namespace

std::unique_ptr<ParsedFile> parse_source(std::string name, std::string text) {
  auto f = std::make_unique<ParsedFile>();
  f->name = std::move(name);
  f->text = std::move(text);
  split_lines(*f);
  // Every statement ends with NL: make sure the last one does.
  f->src = f->text;
  std::string& src = f->src;
  if (src.empty() || src.back() != '\n') src.push_back('\n');
  if (auto bad = invalid_utf8(src)) {
    const size_t line_start = src.rfind('\n', *bad == 0 ? 0 : *bad - 1);
    const auto line = static_cast<uint32_t>(
        std::count(src.begin(), src.begin() + static_cast<long>(*bad), '\n') + 1);
    const auto col = static_cast<uint32_t>(
        line_start == std::string::npos || *bad == 0 ? *bad + 1 : *bad - line_start);
    f->errors.push_back({line, col, "invalid UTF-8 byte in the source"});
    return f;
  }
  try {
    f->input = std::make_unique<antlr4::ANTLRInputStream>(src);
  } catch (const std::exception& e) {
    f->errors.push_back({1, 1, std::string("cannot read the source: ") + e.what()});
    return f;
  }
  f->lexer = std::make_unique<FastLexer>(src, f->input.get());
  f->tokens = std::make_unique<antlr4::CommonTokenStream>(f->lexer.get());
  f->tokens->fill();
  if (!check_shape(*f)) return f;
  f->parser = std::make_unique<nisa_grammar::NeuronAsmParser>(f->tokens.get());
  auto& p = *f->parser;
  p.removeErrorListeners();
  p.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(
      antlr4::atn::PredictionMode::SLL);
  p.setErrorHandler(std::make_shared<antlr4::BailErrorStrategy>());
  try {
    f->tree = p.program();
    return f;
  } catch (const antlr4::ParseCancellationException&) {
  } catch (const antlr4::RecognitionException&) {
  }
  // SLL failed: reparse with full LL and error recovery, collecting every error.
  f->tokens->seek(0);
  p.reset();
  p.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(
      antlr4::atn::PredictionMode::LL);
  p.setErrorHandler(std::make_shared<antlr4::DefaultErrorStrategy>());
  Collector collector(f->errors);
  p.addErrorListener(&collector);
  f->tree = p.program();
  p.removeErrorListeners();
  return f;
}

} // namespace nisa::nasm
