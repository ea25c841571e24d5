// The formulas docs/isa.md gives for the activation functions (isa/formulas.def, the single
// source) describe what the interpreter computes: each formula's text is parsed and evaluated
// here in long double and compared with ew::act_fn, and the edges the notes state are checked.
// A formula that is reworded must still evaluate to the interpreter's values.
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <numbers>
#include <stdexcept>
#include <string>

#include "harness.h"
#include "isa/formulas.h"

namespace nisa::interp::test {
namespace {

using L = long double;

// The notation of isa/formulas.def: numbers, x, pi, e, + - * / ^, a product by juxtaposition,
// NAME(args) (a call only when '(' follows the name directly), the primitives sqrt log tanh
// erf sin arctan abs max sign, the other activation functions by name, and trailing local
// definitions ", s = expr".
class Formula {
public:
  Formula(std::string_view text, L x) : x_(x) {
    // Split at the top-level commas: the formula, then its definitions.
    std::vector<std::string> parts(1);
    int depth = 0;
    for (char c : text) {
      depth += c == '(' ? 1 : c == ')' ? -1 : 0;
      if (c == ',' && depth == 0)
        parts.emplace_back();
      else
        parts.back() += c;
    }
    for (size_t k = 1; k < parts.size(); ++k) {
      const size_t eq = parts[k].find('=');
      if (eq == std::string::npos) throw std::runtime_error("a definition without '='");
      std::string name = trim(parts[k].substr(0, eq));
      vars_[name] = eval(parts[k].substr(eq + 1));
    }
    value = eval(parts[0]);
  }
  L value = 0;

private:
  L x_;
  std::map<std::string, L> vars_;
  std::string s_;
  size_t p_ = 0;

  static std::string trim(std::string s) {
    while (!s.empty() && s.front() == ' ') s.erase(s.begin());
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s;
  }
  L eval(const std::string& text) {
    const std::string saved = s_;
    const size_t at = p_;
    s_ = text, p_ = 0;
    const L v = expr();
    skip();
    if (p_ != s_.size()) throw std::runtime_error("junk after the formula: " + s_.substr(p_));
    s_ = saved, p_ = at;
    return v;
  }
  void skip() {
    while (p_ < s_.size() && s_[p_] == ' ') ++p_;
  }
  char peek() {
    skip();
    return p_ < s_.size() ? s_[p_] : '\0';
  }
  bool starts_primary() {
    const char c = peek();
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '(';
  }
  L expr() {
    L v = term();
    for (char c; (c = peek()) == '+' || c == '-';) {
      ++p_;
      v = c == '+' ? v + term() : v - term();
    }
    return v;
  }
  L term() {
    L v = unary();
    for (;;) {
      const char c = peek();
      if (c == '*' || c == '/') {
        ++p_;
        v = c == '*' ? v * unary() : v / unary();
      } else if (starts_primary()) {
        v *= unary(); // juxtaposition
      } else {
        return v;
      }
    }
  }
  L unary() {
    if (peek() == '-') {
      ++p_;
      return -unary();
    }
    const L b = primary();
    if (peek() == '^') {
      ++p_;
      return std::pow(b, unary());
    }
    return b;
  }
  L primary() {
    const char c = peek();
    if (c == '(') {
      ++p_;
      const L v = expr();
      if (peek() != ')') throw std::runtime_error("expected ')'");
      ++p_;
      return v;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      size_t n = 0;
      const L v = std::stold(s_.substr(p_), &n);
      p_ += n;
      return v;
    }
    std::string name;
    while (p_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[p_])) || s_[p_] == '_'))
      name += s_[p_++];
    if (name.empty()) throw std::runtime_error("expected a term at: " + s_.substr(p_));
    if (p_ < s_.size() && s_[p_] == '(') { // a call
      ++p_;
      std::vector<L> args{expr()};
      while (peek() == ',') ++p_, args.push_back(expr());
      if (peek() != ')') throw std::runtime_error("expected ')' after the arguments");
      ++p_;
      return call(name, args);
    }
    if (name == "x") return x_;
    if (name == "pi") return std::numbers::pi_v<L>;
    if (name == "e") return std::numbers::e_v<L>;
    if (auto it = vars_.find(name); it != vars_.end()) return it->second;
    throw std::runtime_error("unknown name " + name);
  }
  static L call(const std::string& f, const std::vector<L>& a) {
    const L x = a[0];
    if (f == "max" && a.size() == 2) return std::fmax(a[0], a[1]);
    if (a.size() != 1) throw std::runtime_error(f + ": wrong number of arguments");
    if (f == "sqrt") return std::sqrt(x);
    if (f == "log") return std::log(x);
    if (f == "tanh") return std::tanh(x);
    if (f == "erf") return std::erf(x);
    if (f == "sin") return std::sin(x);
    if (f == "arctan") return std::atan(x);
    if (f == "abs") return std::fabs(x);
    if (f == "sign") return x > 0 ? 1 : x < 0 ? -1 : x;
    // Another activation function of the table, by its own formula.
    if (auto v = enum_parse(EnumType::ActFunc, f))
      return Formula(act_formula(static_cast<ActFunc>(*v)).formula, x).value;
    throw std::runtime_error("unknown function " + f);
  }
};

TEST(ActFormula, EveryFunctionHasOne) {
  for (const auto& m : enum_members(EnumType::ActFunc)) {
    const ActFormula f = act_formula(static_cast<ActFunc>(m.value));
    EXPECT_FALSE(f.formula.empty()) << m.name;
  }
}

// The notation itself: precedence, juxtaposition, calls and definitions.
TEST(ActFormula, TheNotationEvaluatesAsWritten) {
  EXPECT_EQ(Formula("0.5 x (1 + x)", 3).value, 0.5L * 3 * 4);
  EXPECT_EQ(Formula("2 / 4 x", 3).value, 1.5L); // left to right, as * and /
  EXPECT_EQ(Formula("-x^2 / 2", 3).value, -4.5L);
  EXPECT_EQ(Formula("e^(-x)", 0).value, 1.0L);
  EXPECT_EQ(Formula("s (1 - s), s = x + 1", 2).value, -6.0L);
  EXPECT_EQ(Formula("max(x, 0)", -2).value, 0.0L);
  EXPECT_EQ(Formula("x sigmoid(x)", 0).value, 0.0L);
  EXPECT_THROW(Formula("x +", 1), std::runtime_error);
  EXPECT_THROW(Formula("y", 1), std::runtime_error);
  EXPECT_THROW(Formula("cosh(x)", 1), std::runtime_error);
}

// The formula, evaluated in long double, is what the interpreter computes: within 2 fp32 ulps
// (the interpreter claims 1; act_test.cpp allows 2 against its own long-double references).
TEST(ActFormula, EveryFormulaIsWhatTheInterpreterComputes) {
  for (const auto& m : enum_members(EnumType::ActFunc)) {
    const auto f = static_cast<ActFunc>(m.value);
    const std::string_view text = act_formula(f).formula;
    SCOPED_TRACE(std::string(m.name) + " = " + std::string(text));
    const auto [lo, hi] = act_range(f);
    for (float x : randoms(2000, 500 + m.value, lo, hi)) {
      const L want = Formula(text, x).value;
      const float got = ew::act_fn(f, x);
      const L tol = 2 * std::fabs(want) * std::numeric_limits<float>::epsilon() + 1e-12L;
      ASSERT_LE(std::fabs(L(got) - want), tol) << "x = " << x << " got " << got;
    }
  }
}

// What the notes say about the edges.
TEST(ActFormula, TheNotesEdgesHold) {
  const float inf = std::numeric_limits<float>::infinity();
  auto act = [](ActFunc f, float x) { return ew::act_fn(f, x); };
  EXPECT_EQ(act(ActFunc::log, 0.0f), -inf);
  EXPECT_TRUE(std::isnan(act(ActFunc::log, -1.0f)));
  EXPECT_TRUE(std::isnan(act(ActFunc::sqrt, -1.0f)));
  EXPECT_TRUE(std::isnan(act(ActFunc::relu, NAN)));
  const float g = act(ActFunc::gelu, -inf);
  EXPECT_TRUE(g == 0.0f && std::signbit(g)) << g;
  EXPECT_EQ(act(ActFunc::gelu_dx, inf), 1.0f);
  EXPECT_EQ(act(ActFunc::gelu_dx, -inf), 0.0f);
  EXPECT_EQ(act(ActFunc::softplus, 100.0f), 100.0f); // no overflow
  EXPECT_EQ(act(ActFunc::sign, 5.0f), 1.0f);
  EXPECT_EQ(act(ActFunc::sign, -5.0f), -1.0f);
  EXPECT_TRUE(std::signbit(act(ActFunc::sign, -0.0f)) && act(ActFunc::sign, -0.0f) == 0.0f);
  EXPECT_TRUE(std::isnan(act(ActFunc::sign, NAN)));
  // sin reduces every argument: sin(9) is sin 9, not a polynomial's value outside [-pi, pi]
  EXPECT_NEAR(act(ActFunc::sin, 9.0f), std::sin(9.0), 1e-7);
  // a NaN argument gives NaN, whatever the function
  for (const auto& m : enum_members(EnumType::ActFunc))
    EXPECT_TRUE(std::isnan(act(static_cast<ActFunc>(m.value), NAN))) << m.name;
}

} // namespace
} // namespace nisa::interp::test
