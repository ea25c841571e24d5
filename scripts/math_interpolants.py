#!/usr/bin/env python3
"""Recomputes the interpolant coefficients of interp/simd/simd_math_fns.inc (issue 16,
session 8) and prints each set with its measured relative error (double Horner on a grid).

Chebyshev interpolation at double precision (pure Python: math and fractions), converted
exactly to monomial coefficients, highest degree first, as the .inc lists them. The sweep
tests of tests/semantics/simd_test.cpp are the real check of the fp32 results."""
import math
from fractions import Fraction as F


def cheb_fit(g, a, b, n):
    N = n + 1
    c, h = (a + b) / 2, (b - a) / 2
    xs = [math.cos(math.pi * (k + 0.5) / N) for k in range(N)]
    ys = [g(c + h * x) for x in xs]
    co = [2 * sum(ys[k] * math.cos(math.pi * j * (k + 0.5) / N) for k in range(N)) / N *
          (0.5 if j == 0 else 1) for j in range(N)]
    T = [[F(1)], [F(0), F(1)]]
    for j in range(2, N):
        a1 = [F(0)] + [2 * v for v in T[j - 1]]
        b1 = T[j - 2] + [F(0)] * (len(a1) - len(T[j - 2]))
        T.append([x - y for x, y in zip(a1, b1)])
    pt = [F(0)] * N
    for j in range(N):
        for i, v in enumerate(T[j]):
            pt[i] += F(co[j]) * v
    C, H = F(c), F(h)
    res = [F(0)] * N
    for i in range(N):
        for k in range(i + 1):
            res[k] += pt[i] * math.comb(i, k) * (-C)**(i - k) / H**i
    return [float(v) for v in res]


def horner(p, x):
    r = p[-1]
    for v in reversed(p[:-1]):
        r = r * x + v
    return r


def report(name, g, a, b, n, check=None):
    p = cheb_fit(g, a, b, n)
    lo, hi = check or (a, b)
    M = 20001
    err = max(abs(horner(p, lo + (hi - lo) * k / (M - 1)) / g(lo + (hi - lo) * k / (M - 1)) - 1)
              for k in range(M))
    print(f"{name} (degree {n}, 2^{math.log2(err):.1f}):")
    print("  {" + ", ".join(repr(v) for v in reversed(p)) + "}")


def safe(f, at0):
    return lambda x: f(x) if x != 0 else at0


l2 = math.log(2) / 2 * 1.01
report("exp: (e^r - 1) / r", safe(lambda r: math.expm1(r) / r, 1.0), -l2, l2, 6)
log1p_f = safe(lambda f: math.log1p(f) / f, 1.0)
report("kLogP: log(1 + f) / f", log1p_f, -0.25 - 1e-3, 0.5 + 1e-3, 10, (-0.25, 0.5))
report("kLog1pP", log1p_f, 0.0, 1.0, 10)
report("kAtanA: atan(t) / t in t^2", safe(lambda u: math.atan(math.sqrt(u)) / math.sqrt(u), 1.0),
       0.0, math.tan(math.pi / 8)**2 * 1.01, 6)
report("kErfE: erf(z) / z in z^2",
       safe(lambda u: math.erf(math.sqrt(u)) / math.sqrt(u), 2 / math.sqrt(math.pi)), 0.0, 0.76**2,
       6, (0.0, 0.75**2))
R = lambda t: math.erfc(1 / t - 3) * math.exp((1 / t - 3)**2)
report("kErfcR: erfc(z) e^(z^2) in t = 1 / (z + 3)", R, 1 / 13.6, 1 / 3.74, 10)
b = (math.pi / 4 * 1.01)**2
report("kSinS: sin(r) / r in r^2", safe(lambda u: math.sin(math.sqrt(u)) / math.sqrt(u), 1.0), 0.0,
       b, 4)
report("kSinC: cos(r) in r^2", lambda u: math.cos(math.sqrt(u)), 0.0, b, 4)
# gelu_dx's Taylor series: 0.5 + phi(0) x sum (-1)^n (2n + 2) / ((2n + 1) 2^n n!) x^2n
print("kGeluDxT (exact series, n = 16 .. 0):")
print("  {" + ", ".join(
    repr(float(F((-1)**n * (2 * n + 2), (2 * n + 1) * 2**n * math.factorial(n))))
    for n in reversed(range(17))) + "}")
