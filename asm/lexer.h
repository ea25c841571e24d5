// A hand-written lexer for grammar/NeuronAsm.g4: the same tokens (types from the generated
// NeuronAsmLexer, start/stop code-point indices, line and column) as the ANTLR lexer, about 10x
// faster (the ANTLR 4.9 lexer simulator costs ~3k instructions per token). The generated
// lexer stays the reference: tests/asm/lexer_test.cpp compares both on every test listing.
#pragma once
#include <memory>
#include <string>
#include <string_view>

#include "antlr4-runtime.h"

namespace nisa::nasm {

class FastLexer : public antlr4::TokenSource {
public:
  // `text` is the UTF-8 source (valid UTF-8, checked by the caller) that `input` decodes.
  FastLexer(std::string_view text, antlr4::CharStream* input) : text_(text), input_(input) {}

  std::unique_ptr<antlr4::Token> nextToken() override;
  size_t getLine() const override { return line_; }
  size_t getCharPositionInLine() override { return col_; }
  antlr4::CharStream* getInputStream() override { return input_; }
  std::string getSourceName() override { return input_->getSourceName(); }
  antlr4::TokenFactory<antlr4::CommonToken>* getTokenFactory() override {
    return antlr4::CommonTokenFactory::DEFAULT.get();
  }

private:
  // Consumes n bytes of one line (no '\n'), counting code points.
  void advance(size_t n);
  void newline(); // consumes the '\n' at pos_
  size_t match_comma_tail(size_t at) const;
  size_t match_number(size_t at) const;
  size_t match_string(size_t at) const;

  std::string_view text_;
  antlr4::CharStream* input_;
  size_t pos_ = 0;  // byte offset
  size_t cp_ = 0;   // code-point index (what ANTLR's token start/stop count)
  size_t line_ = 1; // 1-based
  size_t col_ = 0;  // code points since the line start
};

} // namespace nisa::nasm
