// nisa check: affine counts (check_affine.h).
#include "interp/check/check_affine.h"

#include <cmath>
#include <fmt/format.h>

namespace nisa::interp::check_detail {

int64_t Affine::at(const std::vector<int64_t>& x) const {
  // wrapping arithmetic: a fit whose values overflow fails the exact comparison below
  uint64_t s = uint64_t(c);
  for (size_t i = 0; i < coef.size() && i < x.size(); ++i) s += uint64_t(coef[i]) * uint64_t(x[i]);
  return int64_t(s);
}

std::optional<Affine> fit_affine(const std::vector<FitPoint>& pts, size_t nvars) {
  if (pts.empty()) return std::nullopt;
  // Row echelon form of [x 1 | v] in long double (partial pivoting); the solution with the
  // free unknowns at 0 is rounded to integers and then checked exactly on every point, so
  // rounding can only make the fit fail, never make it wrong.
  const size_t cols = nvars + 1;
  std::vector<std::vector<long double>> m;
  m.reserve(pts.size());
  for (const FitPoint& p : pts) {
    std::vector<long double> row(cols + 1);
    for (size_t i = 0; i < nvars; ++i) row[i] = (long double)p.x[i];
    row[nvars] = 1;
    row[cols] = (long double)p.v;
    m.push_back(std::move(row));
  }
  std::vector<size_t> pivot_col;
  size_t r = 0;
  for (size_t c = 0; c < cols && r < m.size(); ++c) {
    size_t best = r;
    for (size_t i = r; i < m.size(); ++i)
      if (std::fabs(m[i][c]) > std::fabs(m[best][c])) best = i;
    if (std::fabs(m[best][c]) < 1e-9L) continue;
    std::swap(m[r], m[best]);
    for (size_t i = 0; i < m.size(); ++i) {
      if (i == r || m[i][c] == 0) continue;
      const long double f = m[i][c] / m[r][c];
      for (size_t k = c; k <= cols; ++k) m[i][k] -= f * m[r][k];
    }
    pivot_col.push_back(c);
    ++r;
  }
  std::vector<long double> sol(cols, 0);
  for (size_t i = 0; i < pivot_col.size(); ++i) sol[pivot_col[i]] = m[i][cols] / m[i][pivot_col[i]];
  Affine a;
  for (size_t i = 0; i <= nvars; ++i) {
    const long double v = std::round(sol[i]);
    if (!(std::fabs(v) < 9.0e18L)) return std::nullopt;
    if (i < nvars)
      a.coef.push_back(int64_t(v));
    else
      a.c = int64_t(v);
  }
  for (const FitPoint& p : pts)
    if (a.at(p.x) != p.v) return std::nullopt;
  return a;
}

std::string affine_text(const Affine& a, const std::vector<std::string>& names, bool clamp) {
  std::string s;
  auto term = [&](int64_t k, const std::string& what) {
    if (k == 0) return;
    const uint64_t mag = k < 0 ? 0 - uint64_t(k) : uint64_t(k);
    std::string t = what.empty() ? std::to_string(mag)
                    : mag == 1   ? what
                                 : fmt::format("{}*{}", mag, what);
    if (s.empty())
      s = k < 0 ? "-" + t : t;
    else
      s += (k < 0 ? " - " : " + ") + t;
  };
  for (size_t i = 0; i < a.coef.size() && i < names.size(); ++i) term(a.coef[i], names[i]);
  term(a.c, "");
  if (s.empty()) s = "0";
  return clamp ? "max(0, " + s + ")" : s;
}

} // namespace nisa::interp::check_detail
