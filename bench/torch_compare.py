#!/usr/bin/python3
"""Whole kernels against PyTorch CPU (issue 16, "Speed II").

For every kernel of kernels_asm/ this makes seeded inputs with numpy, writes them as .npy files
to a temporary directory, runs `nisa run` on them as a whole process (wall time of the
subprocess; user / sys time and peak RSS from os.wait4), runs the same math in PyTorch at one
thread (best of several repetitions, inputs already in memory), checks that nisa's outputs
match torch's within the tolerance stated per row, and prints a table (and, with --json, the
same figures as JSON).

bf16 kernels: torch computes in fp32 on the same (bf16-representable) values, as the native
baselines of bench/ do; nisa's bf16 outputs are compared after widening to fp32.

Run with Debian's python3 (/usr/bin/python3: python3-numpy, python3-torch); without torch it
prints one line and exits 0:  bash scripts/bootstrap.sh --bench  installs it.
"""

import argparse
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

SKIP = "torch_compare: skipped: python3-torch is not installed (bash scripts/bootstrap.sh --bench)"
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
KDIR = os.path.join(ROOT, "kernels_asm")
TARGET = 3.0  # the bound: nisa wall <= 3 x torch

np = None
torch = None
F = None
nisa_py = None  # the Python module `nisa` of the same build (--in-process), or None


# ---- bf16 as raw bits (nisa's .npy form: <u2) ---------------------------------------------------


def bf16_round(a):
    """fp32 array -> fp32 array of the nearest bf16 values (round to nearest even)."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    r = (u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) & np.uint32(0xFFFF0000)
    return r.view(np.float32)


def bf16_bits(a):
    """fp32 array of bf16 values -> uint16 raw bits."""
    return (np.ascontiguousarray(a, dtype=np.float32).view(np.uint32) >> np.uint32(16)).astype(
        np.uint16)


def from_bits(b):
    return (b.astype(np.uint32) << np.uint32(16)).view(np.float32)


def rand(rng, shape, scale=1.0, dt="fp32"):
    a = (rng.standard_normal(shape, dtype=np.float32) * np.float32(scale)).astype(np.float32)
    return bf16_round(a) if dt == "bf16" else a


def uniform(rng, shape, a, dt="bf16"):
    v = rng.random(shape, dtype=np.float32)
    v *= np.float32(2 * a)
    v -= np.float32(a)
    if dt == "bf16":  # truncated to bf16 in place (cheap for the 0.4 G values of transformer_tkg)
        v.view(np.uint32)[...] &= np.uint32(0xFFFF0000)
    return v


def T(a):
    return torch.from_numpy(np.ascontiguousarray(a))


# ---- checks -------------------------------------------------------------------------------------


def check_norm(tol):
    """max |got - ref| <= tol * max |ref| per output (a normwise bound: catches wrong math, not
    last-bit differences of a rounding order)."""

    def chk(got, ref):
        worst = 0.0
        for name, r in ref.items():
            r = np.asarray(r, dtype=np.float64)
            g = np.asarray(got[name], dtype=np.float64)
            if g.shape != r.shape:
                return False, "%s: shape %s, torch %s" % (name, g.shape, r.shape)
            if not np.all(np.isfinite(g) == np.isfinite(r)):
                return False, "%s: non-finite where torch is finite (or the reverse)" % name
            fin = np.isfinite(r)
            scale = max(float(np.max(np.abs(r[fin]))) if fin.any() else 0.0, 1e-30)
            err = float(np.max(np.abs(g[fin] - r[fin]))) / scale if fin.any() else 0.0
            worst = max(worst, err)
            if err > tol:
                return False, "%s: max err %.3g of max abs(ref) > %.3g" % (name, err, tol)
        return True, "max err %.2g of max abs(ref) (tol %.2g)" % (worst, tol)

    return chk


def check_exact(got, ref):
    for name, r in ref.items():
        if not np.array_equal(np.asarray(got[name]), np.asarray(r)):
            return False, "%s differs" % name
    return True, "exact"


# ---- rows ---------------------------------------------------------------------------------------


class Row:
    def __init__(self, name, kernel, shape, defines, flags, ins, outs, tfn, check, tol, note=""):
        self.name, self.kernel, self.shape = name, kernel, shape
        self.defines, self.flags = defines, flags
        self.ins = ins  # name -> numpy array as written (bf16 as uint16 bits)
        self.outs = outs  # name -> "bf16" (read back as bits) or None
        self.tfn = tfn  # () -> dict name -> torch tensor (the math, timed)
        self.check = check  # (nisa outs as float/int numpy, torch outs as numpy) -> (ok, msg)
        self.tol, self.note = tol, note


def row_cumsum(rng, kernel="cumsum"):
    R, C = 2048, 8192
    x = rand(rng, (R, C))
    tx = T(x)
    return Row(kernel, kernel + ".nasm", "2048x8192 fp32", dict(ROWS=R, COLS=C, DT="fp32"),
               ["--lnc", "1"], {"x": x}, {"y": None},
               lambda: {"y": torch.cumsum(tx, dim=1)}, check_norm(1e-5), "normwise 1e-5")


def row_cascaded_max(rng):
    B, V = 64, 151936
    x = rand(rng, (B, V))
    tx = T(x)

    def tfn():
        v, i = torch.max(tx, dim=1, keepdim=True)
        return {"values": v, "indices": i}

    def chk(got, ref):
        if not np.array_equal(got["values"], ref["values"]):
            return False, "values differ"
        idx = got["indices"].astype(np.int64)
        if not np.array_equal(np.take_along_axis(x, idx, 1), ref["values"]):
            return False, "an index does not hold the maximum"
        return True, "exact (values; indices hold the max)"

    return Row("cascaded_max", "cascaded_max.nasm", "BXS=64 V=151936 fp32",
               dict(BXS=B, V=V, DT="fp32"), ["--lnc", "2"], {"x": x},
               {"values": None, "indices": None}, tfn, chk, "exact")


def topk_check(x):
    def chk(got, ref):
        if not np.array_equal(got["values"], ref["values"]):
            return False, "values differ from torch.topk"
        idx = got["indices"].astype(np.int64)
        if not np.array_equal(np.take_along_axis(x, idx, 1), got["values"]):
            return False, "an index does not hold its value"
        s = np.sort(idx, axis=1)
        if (s[:, 1:] == s[:, :-1]).any():
            return False, "repeated index"
        return True, "exact (values; indices distinct and hold them)"

    return chk


def row_topk(rng, method):
    B, V, K = 1024, 8192, 2048
    x = rand(rng, (B, V))
    tx = T(x)

    def tfn():
        v, i = torch.topk(tx, K, dim=1)
        return {"values": v, "indices": i}

    d = dict(BXS=B, V=V, K=K, DT="fp32")
    if method:
        d["METHOD"] = method
    return Row("topk" + ("_" + method if method else ""), "topk.nasm",
               "1024x8192 K=2048 fp32", d, ["--lnc", "2"], {"x": x},
               {"values": None, "indices": None}, tfn, topk_check(x), "exact",
               "" if method else "METHOD=auto: scanning at V <= 16384")


def row_conv1d(rng):
    B, CIN, L, COUT, K = 4, 128, 4096, 256, 3
    x = rand(rng, (B, CIN, L))
    w = rand(rng, (K, CIN, COUT), 1.0 / math.sqrt(CIN * K))
    tx, tw = T(x), T(w).permute(2, 1, 0).contiguous()  # [COUT, CIN, K]
    return Row("conv1d", "conv1d.nasm", "B4 CIN128 L4096 COUT256 K3 pad 1/1 fp32",
               dict(B=B, CIN=CIN, COUT=COUT, L=L, K=K, PAD_L=1, PAD_R=1, LNC_SHARD=1, DT="fp32"),
               ["--lnc", "2"], {"x": x, "filters": w}, {"y": None},
               lambda: {"y": F.conv1d(tx, tw, padding=1)}, check_norm(1e-5), "normwise 1e-5")


def ce_inputs(rng, NPOS, V):
    x = rand(rng, (NPOS, V), 2.0)
    t = rng.integers(0, V, NPOS).astype(np.int32)
    t[::37] = -100  # some ignored positions
    return x, t


def row_ce_fwd(rng):
    NPOS, V = 512, 128256
    x, t = ce_inputs(rng, NPOS, V)
    tx, tt = T(x), T(t.astype(np.int64))

    def tfn():
        return {"loss": F.cross_entropy(tx, tt, reduction="none", ignore_index=-100),
                "lse": torch.logsumexp(tx, dim=1)}

    return Row("cross_entropy_fwd", "cross_entropy_fwd.nasm", "NPOS=512 V=128256 fp32 CS=32768",
               dict(NPOS=NPOS, V=V, CS=32768, DT="fp32"), ["--lnc", "2"],
               {"logits": x, "targets": t}, {"loss": None, "lse": None}, tfn, check_norm(1e-5),
               "normwise 1e-5")


def row_ce_bwd(rng):
    NPOS, V = 512, 128256
    x, t = ce_inputs(rng, NPOS, V)
    lse = torch.logsumexp(T(x), dim=1).numpy()
    tx, tl = T(x), T(lse)
    valid = t != -100
    tv = T(np.nonzero(valid)[0])
    ttv = T(t[valid].astype(np.int64))
    n = max(1, int(valid.sum()))
    tscale = T((valid / np.float32(n)).astype(np.float32))[:, None]

    def tfn():  # scale_i * (exp(x - lse) - onehot), the kernel's formula from the saved lse
        g = torch.exp(tx - tl[:, None])
        g[tv, ttv] -= 1.0
        g.mul_(tscale)
        return {"grad": g}

    return Row("cross_entropy_bwd", "cross_entropy_bwd.nasm", "NPOS=512 V=128256 fp32 CS=32768",
               dict(NPOS=NPOS, V=V, CS=32768, DT="fp32"), ["--lnc", "2"],
               {"logits": x, "targets": t, "lse": lse}, {"grad": None}, tfn, check_norm(1e-5),
               "normwise 1e-5")


def row_depthwise(rng):
    N, C, W, S, PL, PR = 1, 1024, 1024, 128, 64, 63
    img = rand(rng, (N, C, 1, W))
    flt = rand(rng, (C, 1, 1, S), 1.0 / math.sqrt(S))
    ti = T(img).reshape(N, C, W)
    tf = T(flt).reshape(C, 1, S)

    def tfn():
        o = F.conv1d(F.pad(ti, (PL, PR)), tf, groups=C)
        return {"out": o.reshape(N, C, 1, -1)}

    return Row("depthwise_conv1d", "depthwise_conv1d.nasm", "N1 C1024 W1024 S128 pad 64/63 fp32",
               dict(N=N, C=C, W=W, S=S, PAD_L=PL, PAD_R=PR, DT="fp32"), ["--lnc", "2"],
               {"img": img, "filter": flt}, {"out": None}, tfn, check_norm(1e-5), "normwise 1e-5")


def row_topk_reduce(rng):
    ROWS, TT, K, H = 1024, 128, 8, 4096
    vals = rand(rng, (ROWS, H), 1.0, "bf16")
    ids = np.full(ROWS, -1, dtype=np.int32)
    slots = rng.permutation(ROWS)
    nxt = 0
    for t in range(TT):  # 0 .. K rows per token, scattered
        for _ in range(int(rng.integers(0, K + 1))):
            if nxt < ROWS:
                ids[slots[nxt]] = t
                nxt += 1
    inp = np.zeros((ROWS, H + 2), dtype=np.uint16)
    inp[:, :H] = bf16_bits(vals)
    inp[:, H:] = ids.view(np.uint16).reshape(ROWS, 2)
    tv = T(vals)
    sel = ids >= 0
    tsel, tid = T(np.nonzero(sel)[0]), T(ids[sel].astype(np.int64))

    def tfn():
        o = torch.zeros(TT, H)
        o.index_add_(0, tid, tv[tsel])
        return {"out": o}

    return Row("topk_reduce", "topk_reduce.nasm", "ROWS=1024 T=128 K=8 H=4096 bf16",
               dict(ROWS=ROWS, T=TT, K=K, H=H, DT="bf16"), ["--lnc", "2"], {"inp": inp},
               {"out": "bf16"}, tfn, check_norm(2 ** -6), "normwise 2^-6 (bf16 adds)")


def row_sb2sb(rng):
    R, ROWS, COLS = 8, 128, 2048
    x = bf16_bits(rand(rng, (R, ROWS, COLS), 1.0, "bf16"))
    tx = T(x.view(np.int16))  # a copy: moved as 2-byte elements

    def tfn():  # every rank's result: the ranks' blocks side by side
        return {"out": torch.stack([torch.cat(list(tx), dim=1) for _ in range(R)])}

    return Row("sb2sb_allgather", "sb2sb_allgather.nasm", "ROWS=128 COLS=2048 TP=8 bf16",
               dict(ROWS=ROWS, COLS=COLS, TP=R, TILED=0, DT="bf16"), ["--ranks", str(R)],
               {"inp": x}, {"out": "int16"}, tfn, check_exact, "exact (bits)")


def row_fg_allgather(rng):
    R, M, K = 64, 16, 4096
    x = bf16_bits(rand(rng, (R, M, K), 1.0, "bf16"))
    tx = T(x.view(np.int16))  # a copy: moved as 2-byte elements

    def tfn():  # every rank gathers the group's lhs (one group): R concatenations
        return {"out": torch.stack([torch.cat(list(tx), dim=0) for _ in range(R)])}

    return Row("fg_allgather", "fg_allgather.nasm", "TP=64 M=16 K=4096 bf16 (SBUF path)",
               dict(M=M, K=K, TP=R, NUM_GROUPS=1, FORCE_HBM=0, DT="bf16"),
               ["--ranks", str(R), "--lnc", "2"], {"lhs": x}, {"out": "int16"}, tfn,
               check_exact, "exact (bits)")


def row_fgcc(rng):
    R, M, K, N = 4, 1024, 4096, 1024
    lhs = rand(rng, (R, M, K), 1.0, "bf16")
    rhs = rand(rng, (R, K, N), 1.0 / 64, "bf16")
    tl, tr = T(lhs).reshape(R * M, K), T(rhs)

    def tfn():  # every rank: the gathered lhs times its own rhs
        return {"out": torch.stack([tl @ tr[r] for r in range(R)])}

    return Row("fgcc", "fgcc.nasm", "TP=4 M=1024 K=4096 N=1024 bf16 (HBM path)",
               dict(M=M, K=K, N=N, TP=R, NUM_GROUPS=1, FORCE_HBM=0, DT="bf16"),
               ["--ranks", str(R), "--lnc", "2"], {"lhs": bf16_bits(lhs), "rhs": bf16_bits(rhs)},
               {"out": "bf16"}, tfn, check_norm(2 ** -7), "normwise 2^-7 (bf16 out)")


# MoE: the routing of bench/moe (TOPK distinct random experts per token, blocks per expert,
# padding token T, extra blocks to the last expert), T 4096, H 4096, E 4, B 512, I 384, bf16.
def moe_problem(rng, Tn=4096, H=4096, E=4, B=512, TOPK=2, I=384):
    tok = [[] for _ in range(E)]
    aff = np.zeros(((Tn + 1) * E, 1), dtype=np.float32)
    for t in range(Tn):
        for e in rng.permutation(E)[:TOPK]:
            tok[e].append(t)
            aff[t * E + e, 0] = 0.5
    N = (Tn * TOPK - (E - 1) + B - 1) // B + E - 1
    b2e, tp = [], []
    for e in range(E):
        for s0 in range(0, len(tok[e]), B):
            b2e.append(e)
            tp += [tok[e][s0 + j] if s0 + j < len(tok[e]) else Tn for j in range(B)]
    while len(b2e) < N:
        b2e.append(E - 1)
        tp += [Tn] * B
    hidden = rand(rng, (Tn + 1, H), 1.0, "bf16")
    hidden[Tn] = 0
    p = dict(T=Tn, H=H, E=E, B=B, N=N, I=I, hidden=hidden, aff=aff,
             wgu=rand(rng, (E, H, 2, I), 1.0 / 64, "bf16"), wd=rand(rng, (E, I, H), 0.05, "bf16"),
             tp=np.array(tp, dtype=np.int32), b2e=np.array(b2e, dtype=np.int32).reshape(N, 1))
    return p


def moe_defines(p):
    return dict(T=p["T"], H=p["H"], E=p["E"], B=p["B"], N=p["N"], I=p["I"], DT="bf16")


def moe_fwd_inputs(p):
    return {"hidden": bf16_bits(p["hidden"]), "affinities": bf16_bits(p["aff"]),
            "w_gate_up": bf16_bits(p["wgu"]), "w_down": bf16_bits(p["wd"]),
            "token_position_to_id": p["tp"], "block_to_expert": p["b2e"]}


def row_moe_fwd(rng):
    p = moe_problem(rng)
    Tn, H, E, B, N, I = p["T"], p["H"], p["E"], p["B"], p["N"], p["I"]
    th, ta, twgu, twd = T(p["hidden"]), T(p["aff"][:, 0]), T(p["wgu"]), T(p["wd"])
    tp = [T(p["tp"][n * B:(n + 1) * B].astype(np.int64)) for n in range(N)]
    b2e = [int(e) for e in p["b2e"][:, 0]]

    def tfn():
        out = torch.zeros(Tn + 1, H)
        gus, ys = [], []
        for n in range(N):
            e = b2e[n]
            x = th[tp[n]]
            gu = x @ twgu[e].reshape(H, 2 * I)
            g, u = gu[:, :I], gu[:, I:]
            y = (F.silu(g) * u) @ twd[e]
            out.index_add_(0, tp[n], ta[tp[n] * E + e][:, None] * y)
            gus.append(torch.stack([g.t(), u.t()]))
            ys.append(y)
        return {"out": out[:Tn], "gate_up_ckpt": torch.stack(gus), "down_ckpt": torch.stack(ys)}

    def chk(got, ref):
        got = dict(got, out=got["out"][:Tn])  # row T is scratch
        return check_norm(2 ** -6)(got, ref)

    return Row("moe_fwd_shard_h", "moe_fwd_shard_h.nasm",
               "T4096 H4096 E4 B512 TOPK2 (N%d) I384 bf16" % N, moe_defines(p), ["--lnc", "2"],
               moe_fwd_inputs(p), {"out": "bf16", "gate_up_ckpt": "bf16", "down_ckpt": "bf16"},
               tfn, chk, "normwise 2^-6")


def row_moe_bwd(rng):
    p = moe_problem(rng)
    Tn, H, E, B, N, I = p["T"], p["H"], p["E"], p["B"], p["N"], p["I"]
    go = rand(rng, (Tn + 1, H), 1.0, "bf16")
    gu = rand(rng, (N, 2, I, B), 1.0, "bf16")
    yck = rand(rng, (N, B, H), 1.0, "bf16")
    ins = moe_fwd_inputs(p)
    ins.update(gate_up_ckpt=bf16_bits(gu), down_ckpt=bf16_bits(yck), grad_out=bf16_bits(go))
    th, ta, twgu, twd = T(p["hidden"]), T(p["aff"][:, 0]), T(p["wgu"]), T(p["wd"])
    tgo, tgu, ty = T(go), T(gu), T(yck)
    tp = [T(p["tp"][n * B:(n + 1) * B].astype(np.int64)) for n in range(N)]
    b2e = [int(e) for e in p["b2e"][:, 0]]

    def tfn():  # bench/moe's backward: from the checkpoints, per block
        gh = torch.zeros(Tn + 1, H)
        gaff = torch.zeros((Tn + 1) * E)
        gwgu = torch.zeros(E, H, 2 * I)
        gwd = torch.zeros(E, I, H)
        for n in range(N):
            e, t = b2e[n], tp[n]
            a = ta[t * E + e][:, None]
            gr = tgo[t]
            gaff.index_put_((t * E + e,), (gr * ty[n]).sum(1), accumulate=False)
            dy = a * gr
            g, u = tgu[n, 0].t(), tgu[n, 1].t()  # [B, I]
            sg = torch.sigmoid(g)
            m = g * sg * u
            gwd[e] += m.t() @ dy
            dm = dy @ twd[e].t()
            dgu = torch.cat([dm * u * sg * (1 + g * (1 - sg)), dm * g * sg], dim=1)
            x = th[t]
            gwgu[e] += x.t() @ dgu
            gh.index_add_(0, t, dgu @ twgu[e].reshape(H, 2 * I).t())
        return {"grad_hidden": gh[:Tn], "grad_affinities": gaff.reshape(-1, 1)[:Tn * E],
                "grad_w_gate_up": gwgu.reshape(E, H, 2, I), "grad_w_down": gwd}

    def chk(got, ref):
        got = dict(got, grad_hidden=got["grad_hidden"][:Tn],
                   grad_affinities=got["grad_affinities"][:Tn * E])
        return check_norm(2 ** -6)(got, ref)

    return Row("moe_bwd", "moe_bwd.nasm", "T4096 H4096 E4 B512 TOPK2 (N%d) I384 bf16" % N,
               moe_defines(p), ["--lnc", "2"], ins,
               {"grad_hidden": "bf16", "grad_affinities": "bf16", "grad_w_gate_up": "bf16",
                "grad_w_down": "bf16"}, tfn, chk, "normwise 2^-6")


# Decode attention (lib/attn.inc's math, as bench/attn's native baseline) on torch tensors.
def attn_torch(x, nw, wqkv, wo, cos, sin, kc, vc, vis, pos, QH, D, eps=1e-6):
    B, S, H = x.shape
    xf = x.reshape(B * S, H)
    xn = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * nw
    qkv = (xn @ wqkv).reshape(B, S, QH + 2, D)
    c, s = cos[:, :, None, :], sin[:, :, None, :]
    x1, x2 = qkv[:, :, :QH + 1, :D // 2], qkv[:, :, :QH + 1, D // 2:]
    rot = torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)
    q, k, v = rot[:, :, :QH], rot[:, :, QH], qkv[:, :, QH + 1]
    keys, vals = torch.cat([kc, k], dim=1), torch.cat([vc, v], dim=1)
    sc = torch.einsum("bshd,bjd->bshj", q, keys) / math.sqrt(D)
    sc = sc.masked_fill(~vis[:, :, None, :], float("-inf"))
    att = torch.einsum("bshj,bjd->bshd", torch.softmax(sc, dim=-1), vals)
    out = att.reshape(B * S, QH * D) @ wo
    kc2, vc2 = kc.clone(), vc.clone()
    for b in range(B):
        kc2[b, pos[b]:pos[b] + S] = k[b]
        vc2[b, pos[b]:pos[b] + S] = v[b]
    return out.reshape(B, S, H), kc2, vc2


def attn_vis(mask):
    B, S, _ = mask.shape
    act = torch.tril(torch.ones(S, S, dtype=torch.bool))[None].expand(B, S, S)
    return torch.cat([T(mask.astype(bool)), act], dim=2)


def row_attn(rng, lnc):
    B, S, H, QH, D, CTX = 4, 1, 4096, 8, 128, 8192
    x = rand(rng, (B, S, H), 1.0, "bf16")
    nw = bf16_round(rng.uniform(0.2, 1.0, H).astype(np.float32))
    wqkv = rand(rng, (H, (QH + 2) * D), 1.0 / 64, "bf16")
    wo = rand(rng, (QH * D, H), 1.0 / 32, "bf16")
    ang = rng.uniform(0, 2 * math.pi, (B, S, D // 2))
    cos, sin = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    kc = rand(rng, (B, CTX, D), 1.0, "bf16")
    vc = rand(rng, (B, CTX, D), 1.0, "bf16")
    pos = np.array([1000 * (b + 1) for b in range(B)], dtype=np.uint32)
    mask = np.zeros((B, S, CTX), dtype=np.uint8)
    for b in range(B):
        mask[b, :, :pos[b]] = 1
    a = [T(v) for v in (x, nw, wqkv, wo, cos, sin, kc, vc)]
    vis = attn_vis(mask)
    pl = [int(v) for v in pos]

    def tfn():
        o, k2, v2 = attn_torch(*a, vis, pl, QH, D)
        return {"out": o, "k_cache": k2, "v_cache": v2}

    ins = {"x": bf16_bits(x), "norm_w": bf16_bits(nw), "w_qkv": bf16_bits(wqkv),
           "w_o": bf16_bits(wo), "cos": cos, "sin": sin, "k_cache": bf16_bits(kc),
           "v_cache": bf16_bits(vc), "mask": mask, "pos": pos}
    return Row("attention_block_tkg" + ("" if lnc == 2 else "_lnc1"), "attention_block_tkg.nasm",
               "B4 S1 H4096 QH8 D128 S_CTX8192 bf16",
               dict(B=B, S=S, H=H, QH=QH, D=D, S_CTX=CTX, ROPE="half", QK_NORM="none", FP8_KV=0,
                    DT="bf16"), ["--lnc", str(lnc)], ins,
               {"out": "bf16", "k_cache": "bf16", "v_cache": "bf16"}, tfn, check_norm(2 ** -6),
               "normwise 2^-6")


def row_tkg(rng):
    # bench/tkg's per-rank shard (Llama-70B-like) at TP 2 and 2 layers instead of TP 8 and 4
    # layers: 0.85 GB of weights as .npy files instead of 6.8 GB.
    R, L, B, S, H, QH, D, CTX, I = 2, 2, 8, 1, 8192, 8, 128, 2048, 3584
    W = (QH + 2) * D
    x = uniform(rng, (B, S, H), 1.7)
    anw = np.ones((R, L, H), dtype=np.float32)
    mnw = np.ones((R, L, H), dtype=np.float32)
    wqkv = uniform(rng, (R, L, H, W), 0.02)
    wo = uniform(rng, (R, L, QH * D, H), 0.02)
    wgu = uniform(rng, (R, L, H, 2, I), 0.02)
    wd = uniform(rng, (R, L, I, H), 0.02)
    k = np.arange(B * S * D // 2, dtype=np.float32).reshape(B, S, D // 2)
    cos, sin = np.cos(0.01 * k).astype(np.float32), np.sin(0.01 * k).astype(np.float32)
    kc = uniform(rng, (R, L, B, CTX, D), 1.7)
    vc = uniform(rng, (R, L, B, CTX, D), 1.7)
    mask = np.zeros((B, S, CTX), dtype=np.uint8)
    mask[:, :, :1500] = 1
    pos = np.array([1500 + 8 * b for b in range(B)], dtype=np.uint32)
    t = {n: T(v) for n, v in dict(x=x, anw=anw, mnw=mnw, wqkv=wqkv, wo=wo, wgu=wgu, wd=wd,
                                  cos=cos, sin=sin, kc=kc, vc=vc).items()}
    vis = attn_vis(mask)
    pl = [int(v) for v in pos]
    eps = 1e-6

    def tfn():
        xx = t["x"]
        kcs, vcs = [[None] * L for _ in range(R)], [[None] * L for _ in range(R)]
        for l in range(L):
            a = 0
            for r in range(R):
                o, kcs[r][l], vcs[r][l] = attn_torch(xx, t["anw"][r, l], t["wqkv"][r, l],
                                                     t["wo"][r, l], t["cos"], t["sin"],
                                                     t["kc"][r, l], t["vc"][r, l], vis, pl, QH, D)
                a = a + o
            h = xx + a
            hf = h.reshape(B * S, H)
            f = 0
            for r in range(R):
                z = hf * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + eps) * t["mnw"][r, l]
                gu = z @ t["wgu"][r, l].reshape(H, 2 * I)
                f = f + (F.silu(gu[:, :I]) * gu[:, I:]) @ t["wd"][r, l]
            xx = h + f.reshape(B, S, H)
        return {"out": torch.stack([xx] * R),
                "k_cache": torch.stack([torch.stack(kcs[r]) for r in range(R)]),
                "v_cache": torch.stack([torch.stack(vcs[r]) for r in range(R)])}

    ins = {"x": bf16_bits(x), "attn_norm_w": bf16_bits(anw), "mlp_norm_w": bf16_bits(mnw),
           "w_qkv": bf16_bits(wqkv), "w_o": bf16_bits(wo), "w_gate_up": bf16_bits(wgu),
           "w_down": bf16_bits(wd), "cos": cos, "sin": sin, "k_cache": bf16_bits(kc),
           "v_cache": bf16_bits(vc), "mask": mask, "pos": pos}
    return Row("transformer_tkg", "transformer_tkg.nasm",
               "TP2 LAYERS2 B8 S1 H8192 QH8 D128 S_CTX2048 I3584 bf16 SBUF_RESIDUAL=1",
               dict(LAYERS=L, TP=R, SBUF_RESIDUAL=1, B=B, S=S, H=H, QH=QH, D=D, S_CTX=CTX, I=I,
                    ROPE="half", DT="bf16"), ["--ranks", str(R), "--lnc", "2"], ins,
               {"out": "bf16", "k_cache": "bf16", "v_cache": "bf16"}, tfn, check_norm(2 ** -6),
               "normwise 2^-6",
               "bench/tkg's shard at TP 2, 2 layers (bench/tkg: TP 8, 4 layers, 6.8 GB)")


def row_tiny_cumsum(rng):  # --self-test: two row tiles and two free tiles, a second
    x = rand(rng, (130, 2100))
    tx = T(x)
    return Row("self_test_cumsum", "cumsum.nasm", "130x2100 fp32", dict(ROWS=130, COLS=2100,
               DT="fp32"), ["--lnc", "1"], {"x": x}, {"y": None},
               lambda: {"y": torch.cumsum(tx, dim=1)}, check_norm(1e-5), "normwise 1e-5")


def row_tiny_topk(rng):  # --self-test: the rotational path on a small row
    B, V, K = 4, 1000, 16
    x = rand(rng, (B, V))
    tx = T(x)

    def tfn():
        v, i = torch.topk(tx, K, dim=1)
        return {"values": v, "indices": i}

    return Row("self_test_topk", "topk.nasm", "4x1000 K=16 fp32",
               dict(BXS=B, V=V, K=K, METHOD="rotational", DT="fp32"), ["--lnc", "2"], {"x": x},
               {"values": None, "indices": None}, tfn, topk_check(x), "exact")


SELF_TEST = [("self_test_cumsum", row_tiny_cumsum), ("self_test_topk", row_tiny_topk)]

ROWS = [
    ("cumsum", lambda r: row_cumsum(r)),
    ("cumsum_after", lambda r: row_cumsum(r, "cumsum_after")),
    ("cumsum_auto", lambda r: row_cumsum(r, "cumsum_auto")),
    ("cumsum_double_buffered", lambda r: row_cumsum(r, "cumsum_double_buffered")),
    ("cascaded_max", row_cascaded_max),
    ("topk", lambda r: row_topk(r, None)),
    ("topk_scanning", lambda r: row_topk(r, "scanning")),
    ("topk_rotational", lambda r: row_topk(r, "rotational")),
    ("topk_cascaded", lambda r: row_topk(r, "cascaded")),
    ("conv1d", row_conv1d),
    ("cross_entropy_fwd", row_ce_fwd),
    ("cross_entropy_bwd", row_ce_bwd),
    ("depthwise_conv1d", row_depthwise),
    ("topk_reduce", row_topk_reduce),
    ("sb2sb_allgather", row_sb2sb),
    ("fg_allgather", row_fg_allgather),
    ("fgcc", row_fgcc),
    ("moe_fwd_shard_h", row_moe_fwd),
    ("moe_bwd", row_moe_bwd),
    ("attention_block_tkg", lambda r: row_attn(r, 2)),
    ("attention_block_tkg_lnc1", lambda r: row_attn(r, 1)),
    ("transformer_tkg", row_tkg),
]

# ---- running ------------------------------------------------------------------------------------


def nisa_has_threads(nisa):
    try:
        h = subprocess.run([nisa, "run", "--help"], capture_output=True, text=True, timeout=30)
        return "--threads" in h.stdout + h.stderr
    except (OSError, subprocess.SubprocessError):
        return False


# The child is started by a small python of its own, not forked from this (large) process: Linux
# keeps a process's peak RSS across exec, so a child forked from here would report ours.
WRAP = r"""
import os, sys, time
out, log, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.execv(cmd[0], cmd)
_, st, ru = os.wait4(pid, 0)
wall = time.perf_counter() - t0
with open(out, "w") as f:
    f.write("%r %r %r %r %d" % (wall, ru.ru_utime, ru.ru_stime, ru.ru_maxrss, os.waitstatus_to_exitcode(st)))
"""


def run_command(nisa, row, d, extra=()):
    """The `nisa run` command line of a row; writes its inputs as .npy files into d (the
    outputs go to d/out_NAME.npy)."""
    cmd = [nisa, "run", os.path.join(KDIR, row.kernel)]
    for k, v in row.defines.items():
        cmd += ["-D", "%s=%s" % (k, v)]
    cmd += row.flags + list(extra)
    for k, a in row.ins.items():
        p = os.path.join(d, k + ".npy")
        np.save(p, a)
        cmd += ["--in", "%s=%s" % (k, p)]
    for k in row.outs:
        cmd += ["--out", "%s=%s" % (k, os.path.join(d, "out_" + k + ".npy"))]
    return cmd


def run_nisa(cmd, log):
    """One whole `nisa run` process: wall (s), user (s), sys (s), peak RSS (MB), rc."""
    res = log + ".rusage"
    subprocess.run([sys.executable, "-S", "-c", WRAP, res, log] + cmd, check=True)
    with open(res) as f:
        w, u, s, rss, rc = f.read().split()
    return float(w), float(u), float(s), float(rss) / 1024.0, int(rc)


def first_touch_ms_per_mib(mib=64):
    """ms per MiB to first-touch fresh anonymous huge-page memory, in a child process (as a
    nisa run gets its memory). On a VM that returns freed memory to its host (free page
    reporting) this is 10-20x its value for memory the host has backed, and it decides the
    rows of a few ms (docs/performance.md "Per-run fixed costs and memory")."""
    code = ("import mmap, time\n"
            "n = %d << 20\n"
            "m = mmap.mmap(-1, n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)\n"
            "getattr(m, 'madvise', lambda *a: None)(getattr(mmap, 'MADV_HUGEPAGE', 14))\n"
            "t = time.perf_counter()\n"
            "for i in range(0, n, 4096): m[i] = 1\n"
            "print((time.perf_counter() - t) * 1e3 / %d)\n" % (mib, mib))
    try:
        r = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                           timeout=60)
        return float(r.stdout.strip())
    except (OSError, ValueError, subprocess.SubprocessError):
        return float("nan")


def time_torch(fn, reps):
    """(best wall, best CPU time) of reps calls."""
    best, cpu = math.inf, math.inf
    for _ in range(reps):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
        cpu = min(cpu, time.process_time() - c0)
    return best, cpu


def load_nisa_module(nisa):
    """The Python module `nisa` of the build that made the nisa binary (<build>/python), or
    None with the reason."""
    global nisa_py
    d = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(nisa))), "python")
    if not os.path.isdir(os.path.join(d, "nisa")):
        return "no Python module at %s" % d
    sys.path.insert(0, d)
    try:
        import nisa as _nisa
    except ImportError as e:
        return "cannot import %s/nisa: %s" % (d, e)
    nisa_py = _nisa
    return None


def run_kwargs(flags):
    """`nisa run` flags -> Kernel.run keyword arguments."""
    kw, names = {}, {"--lnc": "lnc", "--ranks": "ranks", "--threads": "threads"}
    for i in range(0, len(flags), 2):
        kw[names[flags[i]]] = int(flags[i + 1])
    return kw


def time_in_process(row, d, threads, reps):
    """nisa in this process through its Python module, timed as torch is: the kernel assembled
    once, the inputs already in memory, the best of `reps` calls (each makes its machine, copies
    the inputs in and the outputs out). What it leaves out of the whole process: the process's
    start, the .npy files and, mostly, memory the host has not backed yet. The outputs must
    equal the process's bit for bit. -> (best wall s, "" or what differed)."""
    k = nisa_py.assemble(os.path.join(KDIR, row.kernel),
                         **{n: str(v) for n, v in row.defines.items()})
    kw = run_kwargs(row.flags + threads)
    best, bad = math.inf, ""
    for i in range(max(1, reps)):
        t0 = time.perf_counter()
        r = k.run(**kw, fetch=tuple(row.outs), **row.ins)  # (an --out may be an input tensor)
        best = min(best, time.perf_counter() - t0)
        if i == 0:
            for n in row.outs:
                want = np.load(os.path.join(d, "out_" + n + ".npy"))
                got = np.asarray(r[n])
                if got.tobytes() != want.tobytes():
                    bad = "in-process output %s differs from the process's" % n
        del r
    return best, bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="rows: " + ", ".join(n for n, _ in ROWS))
    ap.add_argument("--nisa", metavar="PATH", default=os.path.join(ROOT, "build", "cli", "nisa"),
                    help="the nisa binary (default: build/cli/nisa of this checkout)")
    ap.add_argument("--threads", metavar="N", type=int, default=0,
                    help="pass --threads N to nisa run (when it has the option)")
    ap.add_argument("--only", metavar="NAME", action="append", default=[],
                    help="run only this row (repeatable; a prefix matches, e.g. topk)")
    ap.add_argument("--skip", metavar="NAME", action="append", default=[], help="leave this row out (repeatable)")
    ap.add_argument("--repeat", metavar="K", type=int, default=3, help="nisa runs per row (the median is reported)")
    ap.add_argument("--torch-repeat", metavar="K", type=int, default=5, help="torch runs per row (best)")
    ap.add_argument("--json", metavar="FILE", help="write the results to this file")
    ap.add_argument("--no-in-process", action="store_true",
                    help="skip the in-process timing (nisa's Python module, timed as torch is)")
    ap.add_argument("--workdir", metavar="DIR", help="directory for the .npy files (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the .npy files")
    ap.add_argument("--no-floor", action="store_true",
                    help="skip the extra traced runs of the floors (the rotational top-K's, and the "
                         "traffic floor of every row above the target)")
    ap.add_argument("--self-test", action="store_true",
                    help="two tiny rows (cumsum, rotational top-K), one run each: checks the "
                    "script and nisa against torch, no timing target; exit 1 on a mismatch")
    args = ap.parse_args()

    global np, torch, F
    try:
        import numpy
        import torch as _torch
        import torch.nn.functional as _F
    except ImportError:
        print(SKIP)
        return 0
    np, torch, F = numpy, _torch, _F
    torch.set_num_threads(1)
    # SIGTERM as an exception, so that the temp dir is removed (finally below)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if not os.access(args.nisa, os.X_OK):
        print("torch_compare: %s is not an executable (build it: cmake --build build --target nisa)"
              % args.nisa, file=sys.stderr)
        return 1
    threads = []
    if args.threads:
        if nisa_has_threads(args.nisa):
            threads = ["--threads", str(args.threads)]
        else:
            print("torch_compare: %s has no --threads; running without it" % args.nisa)
    if args.self_test:
        args.repeat, args.torch_repeat, args.no_floor, args.only = 1, 1, True, []
    if not args.no_in_process:
        why = load_nisa_module(args.nisa)
        if why:
            print("torch_compare: no in-process timing: %s" % why)
    sel = [(n, f) for n, f in (SELF_TEST if args.self_test else ROWS)
           if (not args.only or any(n == o or n.startswith(o) for o in args.only))
           and n not in args.skip]
    if not sel:
        print("torch_compare: no row matches %s" % args.only, file=sys.stderr)
        return 1
    work = args.workdir or tempfile.mkdtemp(prefix="torch_compare.")
    os.makedirs(work, exist_ok=True)
    print("torch %s, 1 thread; nisa %s%s; %d nisa runs (median), best of %d torch runs; %s; "
          "load average %.1f on %d CPUs" %
          (torch.__version__, args.nisa, " " + " ".join(threads) if threads else "", args.repeat,
           args.torch_repeat, time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           os.getloadavg()[0], os.cpu_count()))
    touch = first_touch_ms_per_mib()
    print("first touch of fresh memory here: %.2f ms per MiB (huge pages; ~0.15 where the host "
          "has backed it before, ~2.5 on a VM that has not: the short rows' system time)" % touch)
    print("ratio = nisa wall / torch wall (the target); CPU ratio = nisa (user + sys) / torch CPU "
          "time (steadier on a shared host); in-process = nisa's Python module in this process, "
          "timed as torch is (best of %d; no process start, no .npy files, memory reused), and "
          "its ratio to torch" % max(1, args.repeat))
    results = []
    try:
        for name, make in sel:
            res = run_row(name, make, args, work, threads)
            results.append(res)
            print_row(res, len(results) == 1)
            sys.stdout.flush()
        floor(results, args, work, threads)
        print_traffic_floors(results)
    finally:
        if not args.keep and not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"torch": torch.__version__, "nisa": args.nisa, "threads": args.threads,
                       "first_touch_ms_per_mib": touch, "rows": results}, f, indent=1)
    bad = [r["name"] for r in results if r["status"] == "error"]
    if bad:
        print("torch_compare: nisa failed or disagreed with torch: " + ", ".join(bad))
        return 1
    return 0


def run_row(name, make, args, work, threads):
    rng = np.random.default_rng(seed_of(name))
    row = make(rng)
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    cmd = run_command(args.nisa, row, d, threads)
    # The inputs just written are dirty page cache: write them back first, or the first
    # nisa run pays for it (writeback throttling of its own output showed as 0.2-0.4 s of
    # system time on the first row).
    os.sync()
    res = dict(name=name, kernel=row.kernel, shape=row.shape, note=row.note,
               flags=" ".join(row.flags + threads), defines=row.defines, tol=row.tol,
               cmd=" ".join(cmd))
    runs = []
    for _ in range(max(1, args.repeat)):
        w, u, s, rss, rc = run_nisa(cmd, os.path.join(d, "nisa.log"))
        if rc != 0:
            with open(os.path.join(d, "nisa.log"), errors="replace") as f:
                msg = " ".join(f.read().split())[:300]
            res.update(status="error", check="nisa exit %d: %s" % (rc, msg))
            return res
        runs.append((w, u, s, rss))
    got = {}
    for k, kind in row.outs.items():
        a = np.load(os.path.join(d, "out_" + k + ".npy"))
        got[k] = from_bits(a) if kind == "bf16" else a.view(np.int16) if kind == "int16" else a
    inproc, inproc_bad = None, ""
    if nisa_py is not None and not args.no_in_process:
        inproc, inproc_bad = time_in_process(row, d, threads, args.repeat)
    row.ins = None  # free the inputs' copies (torch keeps its tensors)
    ref = {k: v.numpy() for k, v in row.tfn().items()}  # warm-up, and the values checked
    ok, msg = row.check(got, ref)
    if inproc_bad:
        ok, msg = False, inproc_bad
    del got, ref
    tt, tc = time_torch(row.tfn, max(1, args.torch_repeat))
    if not args.no_floor and statistics.median(r[0] for r in runs) / tt > TARGET:
        traffic_floor(res, cmd, d, threads)
    if not args.keep and name not in ("topk_scanning", "topk_rotational"):  # (the floor reruns)
        shutil.rmtree(d, ignore_errors=True)  # transformer_tkg alone writes 1.7 GB
    med = lambda i: statistics.median(r[i] for r in runs)
    cpu = statistics.median(r[1] + r[2] for r in runs)
    res.update(nisa_wall=med(0), nisa_user=med(1), nisa_sys=med(2), nisa_cpu=cpu,
               nisa_rss_mb=max(r[3] for r in runs), nisa_walls=[r[0] for r in runs], torch_s=tt,
               torch_cpu=tc, ratio=med(0) / tt, cpu_ratio=cpu / tc, in_process_s=inproc,
               in_process_ratio=inproc / tt if inproc else None,
               status="pass" if ok and med(0) / tt <= TARGET else ("fail" if ok else "error"),
               check=msg, cmdline=cmd)
    return res


def seed_of(name):
    return sum((i + 1) * ord(c) for i, c in enumerate(name)) + 16


def fmt_t(s):
    return "%.3g s" % s if s >= 1 else "%.3g ms" % (s * 1e3)


def print_row(r, header):
    if header:
        print("| kernel | shape | flags | nisa wall | torch | ratio | target | result | nisa user / sys | CPU ratio | in-process (ratio) | nisa peak RSS | check |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    if r["status"] == "error" and "nisa_wall" not in r:
        print("| %s | %s | %s | - | - | - | %gx | error | | | | | %s |" %
              (r["name"], r["shape"], r["flags"], TARGET, r["check"]))
        return
    inproc = ("%s (%.1fx)" % (fmt_t(r["in_process_s"]), r["in_process_ratio"])
              if r.get("in_process_s") else "-")
    print("| %s | %s | %s | %s | %s | %.1fx | %gx | %s | %s / %s | %.1fx | %s | %.0f MB | %s |" %
          (r["name"], r["shape"] + (" (" + r["note"] + ")" if r["note"] else ""), r["flags"],
           fmt_t(r["nisa_wall"]), fmt_t(r["torch_s"]), r["ratio"], TARGET, r["status"],
           fmt_t(r["nisa_user"]), fmt_t(r["nisa_sys"]), r["cpu_ratio"], inproc, r["nisa_rss_mb"],
           r["check"]))


def print_traffic_floors(results):
    rows = [r for r in results if "traffic_floor_s" in r]
    if not rows:
        return
    print()
    print("traffic floors (issue 16) of the rows above %gx: the bytes the executed instructions "
          "cover at a native copy's %.3g GB/s (read + write), per host thread used; target: "
          "nisa wall <= 1.5x the floor" % (TARGET, rows[0]["stream_bw"] / 1e9))
    print("| kernel | instructions | bytes covered | threads | floor | nisa wall | nisa / floor | "
          "torch | floor / torch |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        r["traffic_floor_ratio"] = r["nisa_wall"] / r["traffic_floor_s"]
        print("| %s | %d | %.3g GB | %d | %s | %s | %.2fx | %s | %.1fx |" %
              (r["name"], r["traffic_insts"], r["traffic_bytes"] / 1e9, r["floor_threads"],
               fmt_t(r["traffic_floor_s"]), fmt_t(r["nisa_wall"]), r["traffic_floor_ratio"],
               fmt_t(r["torch_s"]), r["traffic_floor_s"] / r["torch_s"]))


def floor(results, args, work, threads):
    """The rotational top-K's floor (issue 16): the elements its search instructions read
    (instructions x elements, from a DVE --trace of the same run) at the speed of a streaming
    pass, measured as the scanning method's nisa wall per search element (scanning is nothing
    but full-row max8 / match_replace8 passes)."""
    if args.no_floor:
        return
    by = {r["name"]: r for r in results if "nisa_wall" in r}
    if "topk_rotational" not in by or "topk_scanning" not in by:
        return
    el = {}
    for n in ("topk_scanning", "topk_rotational"):
        tr = os.path.join(work, n + ".trace")
        cmd = [c for c in by[n]["cmdline"]] + ["--trace", tr, "--trace-engines", "dve"]
        _, _, _, _, rc = run_nisa(cmd, os.path.join(work, n + ".trace.log"))
        if rc != 0:
            print("torch_compare: floor: %s --trace failed (exit %d)" % (n, rc))
            return
        el[n] = search_elements(tr)
        os.unlink(tr)
        by[n]["search_elements"], by[n]["search_insts"] = el[n]
    if not el["topk_scanning"][0]:
        print("torch_compare: floor: no search instructions in the trace")
        return
    per = by["topk_scanning"]["nisa_wall"] / el["topk_scanning"][0]
    per_cpu = by["topk_scanning"]["nisa_cpu"] / el["topk_scanning"][0]
    rot = by["topk_rotational"]
    rot["floor_s"] = el["topk_rotational"][0] * per
    rot["floor_ratio"] = rot["nisa_wall"] / rot["floor_s"]
    rot["floor_cpu_s"] = el["topk_rotational"][0] * per_cpu
    rot["floor_cpu_ratio"] = rot["nisa_cpu"] / rot["floor_cpu_s"]
    print()
    print("topk floor (issue 16): search instructions (%s) x elements read:" % "/".join(SEARCH_OPS))
    for n in ("topk_scanning", "topk_rotational"):
        print("  %s: %.4g elements (%s)" % (n, el[n][0], el[n][1]))
    print("  streaming speed = scanning wall / its elements = %.3g ns per element" % (per * 1e9))
    print("  rotational floor = %s; nisa rotational %s = %.2fx the floor (target 1.5x)" %
          (fmt_t(rot["floor_s"]), fmt_t(rot["nisa_wall"]), rot["floor_ratio"]))
    print("  in CPU time (user + sys): %.3g ns per element, floor %s, rotational %s = %.2fx" %
          (per_cpu * 1e9, fmt_t(rot["floor_cpu_s"]), fmt_t(rot["nisa_cpu"]),
           rot["floor_cpu_ratio"]))


SEARCH_OPS = ("max8", "match_replace8", "find_index8")

DT_BYTES = dict(fp32=4, bf16=2, fp16=2, fp8e4m3=1, fp8e5m2=1, int8=1, uint8=1, int16=2, uint16=2,
                int32=4, uint32=4)
_stream_bw = []


def stream_bandwidth():
    """Bytes per second of a native copy (read + write counted), measured once per run: numpy
    copying 64 MiB into a buffer already touched, best of 7."""
    if not _stream_bw:
        src = np.arange(16 << 20, dtype=np.float32)
        dst = np.empty_like(src)
        np.copyto(dst, src)
        best = math.inf
        for _ in range(7):
            t0 = time.perf_counter()
            np.copyto(dst, src)
            best = min(best, time.perf_counter() - t0)
        _stream_bw.append(2 * src.nbytes / best)
    return _stream_bw[0]


def traffic_bytes(path):
    """(bytes, instructions): the bytes every executed instruction's access patterns cover (each
    operand's partitions x the counts of its non-broadcast dims x the dtype's size), from a
    --trace file."""
    import re
    ap = re.compile(r"ap\((\w+), (\w+), \d+, (\d+), 0x[0-9a-f]+, \[([^()]*)\]")
    dim = re.compile(r"\[(-?\d+), (\d+)\]")
    tot = n = 0
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                continue
            n += 1
            for _, dt, parts, dims in ap.findall(line.split("\t")[7]):
                e = int(parts)
                for step, count in dim.findall(dims):
                    e *= int(count) if int(step) != 0 else 1
                tot += e * DT_BYTES.get(dt, 4)
    return tot, n


def traffic_floor(res, cmd, d, threads):
    """The floor of a row above the target (issue 16: where a kernel's algorithm does more work
    than torch's): the bytes its instructions read and write (a --trace of the same command) at
    the speed of a native copy, measured in the same run, spread over the host threads the run
    may use (nisa's --threads, at most its modelled cores): traffic / (bandwidth x threads)."""
    tr = os.path.join(d, "floor.trace")
    _, _, _, _, rc = run_nisa(cmd + ["--trace", tr, "--trace-limit", "0"],
                              os.path.join(d, "floor.log"))
    if rc != 0:
        print("torch_compare: traffic floor of %s: --trace failed (exit %d)" % (res["name"], rc))
        return
    tb, n = traffic_bytes(tr)
    os.unlink(tr)
    cores = 1
    for i, f in enumerate(cmd):
        if f in ("--ranks", "--lnc"):
            cores *= int(cmd[i + 1])
    t = int(threads[1]) if threads else (os.cpu_count() or 1)
    par = max(1, min(t, cores))
    bw = stream_bandwidth()
    res.update(traffic_bytes=tb, traffic_insts=n, stream_bw=bw, floor_threads=par,
               traffic_floor_s=tb / (bw * par))


def search_elements(path):
    """(elements, description): per search instruction of a --trace file, the elements of its
    largest access pattern (the data searched: partitions x the product of the counts)."""
    import re
    ap = re.compile(r"ap\(\w+, \w+, \d+, (\d+), 0x[0-9a-f]+, \[([^()]*)\]\)")
    tot, per = 0, {}
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                continue
            dis = line.split("\t")[7]
            op = dis.split(" ", 1)[0].split(".")[-1]
            if op not in SEARCH_OPS:
                continue
            big = 0
            for parts, dims in ap.findall(dis):
                n = int(parts)
                for c in re.findall(r"\[-?\d+, (\d+)\]", dims):
                    n *= int(c)
                big = max(big, n)
            tot += big
            c = per.setdefault(op, [0, 0])
            c[0] += 1
            c[1] += big
    desc = ", ".join("%d %s, %.3g elements" % (c[0], op, c[1]) for op, c in sorted(per.items()))
    return tot, desc


if __name__ == "__main__":
    sys.exit(main())
