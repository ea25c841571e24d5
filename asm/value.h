// Compile-time values of the assembler's expressions.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "isa/isa.h"

namespace nisa::nasm {

struct Value {
  enum Kind { Int, Float, Name, Str, List, Ap } kind = Int;
  int64_t i = 0;
  double f = 0;
  std::string s;           // Name (an identifier not bound to a value) or Str
  std::vector<Value> list; // List
  AccessPattern ap{};      // Ap
  bool raw = false;        // Ap written as ap(...): exempt from shape checks

  static Value of_int(int64_t v) {
    Value x;
    x.i = v;
    return x;
  }
  static Value of_float(double v) {
    Value x;
    x.kind = Float;
    x.f = v;
    return x;
  }
  static Value of_name(std::string n, Kind k = Name) {
    Value x;
    x.kind = k;
    x.s = std::move(n);
    return x;
  }
  bool is_num() const { return kind == Int || kind == Float; }
  double num() const { return kind == Int ? static_cast<double>(i) : f; }
  std::string str() const; // for messages and Module::params
};

// Parses a number as written in source: decimal, 0x hex, 0b binary integers, decimal floats.
std::optional<Value> parse_number_text(std::string_view t);

} // namespace nisa::nasm
