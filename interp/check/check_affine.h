// The count of a suggested wait as the kernel would write it (docs/check.md "Reports"): an
// affine expression of the enclosing .for variables, fitted exactly to the counts each
// iteration needs.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nisa::interp::check_detail {

struct FitPoint {
  std::vector<int64_t> x; // the variables' values
  int64_t v = 0;          // the value the expression must have there
};

struct Affine {
  std::vector<int64_t> coef; // per variable
  int64_t c = 0;
  int64_t at(const std::vector<int64_t>& x) const;
};

// Integer coefficients with at(p.x) == p.v for every point, if there are some (a variable that
// does not vary over the points gets 0); nullopt otherwise.
std::optional<Affine> fit_affine(const std::vector<FitPoint>& pts, size_t nvars);

// "i - 1", "2*p + f + 3", "4"; `clamp`: "max(0, i - 1)".
std::string affine_text(const Affine& a, const std::vector<std::string>& names, bool clamp);

} // namespace nisa::interp::check_detail
