#!/usr/bin/python3
"""Check that two builds of nisa behave identically on every kernel of kernels_asm/.

  /usr/bin/python3 bench/compare_builds.py --a OLD/build/cli/nisa --b NEW/build/cli/nisa
      [--only NAME]... [--keep DIR] [--list]

For every run of runs() below (each kernel of kernels_asm/*.nasm at least once, at small
shapes, with --lnc 2 / --ranks N where the kernel is multi-core / multi-rank, one run under
`--schedule random`, and one expected fault, exit 3) this writes seeded random inputs (numpy
default_rng, a fixed seed per run; every input holds varied values of the kernel's dtype and
shape: bf16 as <u2 bits, fp8e4m3 as finite u1 bits, routing / target / position tensors valid),
then runs, with binary A in DIR/a/RUN/ and binary B in DIR/b/RUN/ (same relative paths, same
command line but for the binary):

  nisa run KERNEL -D ... [--lnc L] [--ranks R] --in NAME=in/NAME.npy ... --out NAME=NAME.npy ...
      --stats --stats-json stats.json --timeline timeline.json --trace trace.txt

and once more in RUN/fast/ without --timeline / --trace (the interpreter's fast path: cores and
large instructions spread over host threads, which the observed run never takes). It compares
byte for byte, observed run first: the exit code, stderr, stdout (the --stats text),
stats.json, timeline.json, trace.txt, every output .npy, and the set of files each run left.
It prints one line per run, `same` or the first differing item and the byte offset of its
first difference (`fast/...` for the fast run), and exits 1 if any run differs or any run of
A or B failed unexpectedly (an exit code other than the run's expected one, a missing output
or statistics file, a timeout of 600 s). Runs go one at a time (A then B); nisa uses its
default --threads.

Masked before comparing (host wall-clock time, the only fields that differ between two runs
of the same binary; checked by running one binary twice and diffing every file): the number
in the `host wall time N ms` of the --stats text (its last line) and the value of
`"wall_seconds"` in the --stats-json object. Nothing else is masked (the timeline and trace
carry modelled time only); offsets of stdout and stats.json are in the masked text.

--keep DIR keeps every input and output in DIR (default: a temporary directory, removed);
--only NAME (repeatable) runs the runs whose name starts with NAME or whose kernel is NAME;
--list prints the runs (kernel, -D parameters, --lnc / --ranks). The whole script takes about
15 s of nisa time per binary on 2 cores (the summary line prints it). Needs numpy only
(Debian's /usr/bin/python3). A check of the script itself: `--a X --b X` and `--a X --b COPY`
must say `same` everywhere; the hidden `--b-seed N` gives B inputs from another seed, and then
every run but the fault (which stops before any data dependence) must differ.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import torch_rows  # noqa: E402 (bench/, beside this script; only its numpy helpers are used)

torch_rows.bind(np, None, None)
ROOT = os.path.dirname(HERE)
KDIR = os.path.join(ROOT, "kernels_asm")
SEED = 20240611  # base seed; each run's rng is default_rng([SEED, crc32(run name)])
TIMEOUT = 600    # seconds per nisa run

# ---- input values in nisa's .npy forms (bf16 as raw <u2 bits, fp8e4m3 as |u1 bits) -----------


def bf16_bits(a):
    """fp32 values -> nearest bf16 (round to nearest even) as uint16 bits."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    r = (u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    return r.astype(np.uint16)


def from_bf16(b):
    return (b.astype(np.uint32) << np.uint32(16)).view(np.float32)


def in_dt(a, dt):
    """fp32 values -> the array nisa reads for dtype dt."""
    a = np.asarray(a, dtype=np.float32)
    if dt == "bf16":
        return bf16_bits(a)
    if dt == "fp16":
        return a.astype(np.float16)
    if dt == "fp32":
        return a
    raise ValueError(dt)


def rnd(rng, shape, dt, scale=1.0):
    return in_dt(rng.standard_normal(shape, dtype=np.float32) * np.float32(scale), dt)


def uni(rng, shape, lo, hi, dt):
    return in_dt(rng.uniform(lo, hi, shape).astype(np.float32), dt)


def fp8e4m3_bits(rng, shape):
    """Random fp8e4m3 bit patterns (nisa's IEEE-style e4m3: exponent 15 is inf / NaN), finite:
    exponent 15 becomes 14 (|x| <= 240)."""
    b = rng.integers(0, 256, shape, dtype=np.uint16).astype(np.uint8)
    b[(b & 0x78) == 0x78] &= np.uint8(0xF7)
    return b


def ranked(rng, R, make):
    """A per-rank input: R independent draws stacked on a leading rank axis."""
    return np.stack([make(rng) for _ in range(R)])


# ---- the runs -----------------------------------------------------------------------------------


class Run:
    def __init__(self, name, kernel, defines, inputs, outs, lnc=1, ranks=1, extra=(),
                 rc=0, note=""):
        self.name, self.kernel, self.defines = name, kernel, defines
        self.inputs = inputs  # rng -> {name: array}
        self.outs = outs      # output tensor names (--out), in-place ones included
        self.lnc, self.ranks, self.extra = lnc, ranks, list(extra)
        self.rc = rc          # expected exit code
        self.note = note

    def flags(self):
        f = []
        if self.lnc != 1:
            f += ["--lnc", str(self.lnc)]
        if self.ranks != 1:
            f += ["--ranks", str(self.ranks)]
        return f + self.extra

    def describe(self):
        return "%s %s %s%s" % (
            self.kernel, " ".join("%s=%s" % kv for kv in self.defines.items()),
            " ".join(self.flags()) or "(lnc 1)", " [expect exit %d]" % self.rc if self.rc else "")


def cumsum_in(R, C, dt):
    return lambda rng: {"x": rnd(rng, (R, C), dt)}


def cmax_in(B, V, dt):
    return lambda rng: {"x": rnd(rng, (B, V), dt, 4.0)}


def topk_in(B, V, dt, nonfinite=False):
    def make(rng):
        x = rng.standard_normal((B, V), dtype=np.float32)
        if nonfinite:  # NaN, +inf and -inf scattered (NONFINITE=all)
            for v in (np.nan, np.inf, -np.inf):
                idx = rng.integers(0, B * V, max(1, B * V // 2000))
                x.reshape(-1)[idx] = v
        return {"x": in_dt(x, dt)}
    return make


def ce_targets(rng, NPOS, V, bad=None):
    t = rng.integers(0, V, NPOS).astype(np.int32)
    t[rng.permutation(NPOS)[:max(1, NPOS // 9)]] = -100  # some ignored positions
    if bad is not None:
        t[bad] = V + 7  # out of range: a run-time fault naming the row
    return t


def ce_fwd_in(NPOS, V, dt, bad=None):
    return lambda rng: {"logits": rnd(rng, (NPOS, V), dt, 3.0),
                        "targets": ce_targets(rng, NPOS, V, bad)}


def ce_bwd_in(NPOS, V, dt):
    def make(rng):
        lg = rnd(rng, (NPOS, V), dt, 3.0)
        x = from_bf16(lg) if dt == "bf16" else lg
        m = x.max(axis=1, keepdims=True)
        lse = (m[:, 0] + np.log(np.exp(x - m).sum(axis=1))).astype(np.float32)
        return {"logits": lg, "targets": ce_targets(rng, NPOS, V), "lse": lse}
    return make


def conv1d_in(B, CIN, COUT, L, K, bias, dt):
    def make(rng):
        d = {"x": rnd(rng, (B, CIN, L), dt),
             "filters": rnd(rng, (K, CIN, COUT), dt, 1.0 / np.sqrt(CIN * K))}
        if bias:
            d["bias"] = rnd(rng, (COUT,), dt, 0.5)
        return d
    return make


def dw_in(N, C, W, S, dt):
    return lambda rng: {"img": rnd(rng, (N, C, 1, W), dt),
                        "filter": rnd(rng, (C, 1, 1, S), dt, 1.0 / np.sqrt(S))}


def fgcc_in(R, M, K, N, dt):
    return lambda rng: {"lhs": rnd(rng, (R, M, K), dt),
                        "rhs": rnd(rng, (R, K, N), dt, 1.0 / np.sqrt(K))}


def allgather_in(R, M, K, dt, name):
    return lambda rng: {name: rnd(rng, (R, M, K), dt)}


def topk_reduce_in(ROWS, T, K, H, dt):
    def make(rng):
        ids = torch_rows.scattered_token_ids(rng, ROWS, T, K)
        inp = np.zeros((ROWS, H + 2), dtype=np.uint16 if dt == "bf16" else np.float16)
        inp[:, :H] = rnd(rng, (ROWS, H), dt)
        inp.view(np.uint16)[:, H:] = ids.view(np.uint16).reshape(ROWS, 2)
        return {"inp": inp}
    return make


def moe_routing(rng, T, E, TOPK, B, empty=False):
    """bench/moe's routing (tests/moe make_routing): TOPK distinct experts per token, blocks of
    B slots per expert, padding token T (EMPTY: every other padding slot -1), extra blocks to
    the last expert. -> (aff fp32[(T+1)*E, 1], token_position_to_id, block_to_expert, N)."""
    tok = [[] for _ in range(E)]
    aff = np.zeros(((T + 1) * E, 1), dtype=np.float32)
    for t in range(T):
        for e in rng.permutation(E)[:TOPK]:
            tok[e].append(t)
            aff[t * E + e, 0] = rng.uniform(0.1, 1.0)
    used = sum((len(v) + B - 1) // B for v in tok)
    N = max(used, (T * TOPK - (E - 1) + B - 1) // B + E - 1)
    pad = [0]

    def padding():
        pad[0] += 1
        return -1 if empty and pad[0] % 2 == 0 else T

    b2e, tp = [], []
    for e in range(E):
        for s0 in range(0, len(tok[e]), B):
            b2e.append(e)
            tp += [tok[e][s0 + j] if s0 + j < len(tok[e]) else padding() for j in range(B)]
    while len(b2e) < N:
        b2e.append(E - 1)
        tp += [padding() for _ in range(B)]
    return aff, np.array(tp, dtype=np.int32), np.array(b2e, dtype=np.int32).reshape(N, 1), N


def moe_n(T, E, TOPK, B):
    """The N of moe_routing when no expert gets more than B slots (moe_in checks that the
    draw needs exactly this N)."""
    return (T * TOPK - (E - 1) + B - 1) // B + E - 1


def moe_in(T, H, E, TOPK, B, N, I, dt, bwd=False, bias=False, empty=False):
    def make(rng):
        aff, tp, b2e, n = moe_routing(rng, T, E, TOPK, B, empty)
        if n != N:
            raise SystemExit("compare_builds: moe routing needs N=%d, the run says %d" % (n, N))
        hidden = rng.standard_normal((T + 1, H), dtype=np.float32)
        hidden[T] = 0  # the padding token
        d = {"hidden": in_dt(hidden, dt), "affinities": in_dt(aff, dt),
             "w_gate_up": rnd(rng, (E, H, 2, I), dt, 1.0 / np.sqrt(H)),
             "w_down": rnd(rng, (E, I, H), dt, 1.0 / np.sqrt(I)),
             "token_position_to_id": tp, "block_to_expert": b2e}
        if bwd:
            d.update(gate_up_ckpt=rnd(rng, (N, 2, I, B), dt), down_ckpt=rnd(rng, (N, B, H), dt),
                     grad_out=rnd(rng, (T + 1, H), dt))
        return d
    return make


def rope(rng, B, S, D):
    ang = rng.uniform(0, 2 * np.pi, (B, S, D // 2))
    return np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)


def attn_pos(rng, B, S, CTX):
    pos = np.array([rng.integers(0, CTX - S + 1) for _ in range(B)], dtype=np.uint32)
    if B > 1:
        pos[-1] = 0xFFFFFFFF  # no update for the last sequence
    return pos


def attn_in(B, S, H, QH, D, CTX, dt, qk_norm="none", fp8=False):
    def make(rng):
        cos, sin = rope(rng, B, S, D)
        d = {"x": rnd(rng, (B, S, H), dt), "norm_w": uni(rng, (H,), 0.5, 1.5, dt),
             "w_qkv": rnd(rng, (H, (QH + 2) * D), dt, 1.0 / np.sqrt(H)),
             "w_o": rnd(rng, (QH * D, H), dt, 1.0 / np.sqrt(QH * D)), "cos": cos, "sin": sin,
             "mask": (rng.random((B, S, CTX)) < 0.7).astype(np.uint8),
             "pos": attn_pos(rng, B, S, CTX)}
        if qk_norm != "none":
            d.update(q_norm_w=uni(rng, (D,), 0.5, 1.5, dt), k_norm_w=uni(rng, (D,), 0.5, 1.5, dt))
        if fp8:
            d.update(k_cache=fp8e4m3_bits(rng, (B, CTX, D)), v_cache=fp8e4m3_bits(rng, (B, CTX, D)),
                     k_scale=np.array([0.05], dtype=np.float32),
                     v_scale=np.array([0.03], dtype=np.float32))
        else:
            d.update(k_cache=rnd(rng, (B, CTX, D), dt), v_cache=rnd(rng, (B, CTX, D), dt))
        return d
    return make


def tkg_in(R, L, B, S, H, QH, D, CTX, I, dt):
    def make(rng):
        cos, sin = rope(rng, B, S, D)
        W = (QH + 2) * D
        return {
            "x": rnd(rng, (B, S, H), dt),  # one file for every rank
            "attn_norm_w": ranked(rng, R, lambda g: uni(g, (L, H), 0.5, 1.5, dt)),
            "mlp_norm_w": ranked(rng, R, lambda g: uni(g, (L, H), 0.5, 1.5, dt)),
            "w_qkv": ranked(rng, R, lambda g: rnd(g, (L, H, W), dt, 1.0 / np.sqrt(H))),
            "w_o": ranked(rng, R, lambda g: rnd(g, (L, QH * D, H), dt, 1.0 / np.sqrt(QH * D))),
            "w_gate_up": ranked(rng, R, lambda g: rnd(g, (L, H, 2, I), dt, 1.0 / np.sqrt(H))),
            "w_down": ranked(rng, R, lambda g: rnd(g, (L, I, H), dt, 1.0 / np.sqrt(I))),
            "cos": cos, "sin": sin,
            "k_cache": ranked(rng, R, lambda g: rnd(g, (L, B, CTX, D), dt)),
            "v_cache": ranked(rng, R, lambda g: rnd(g, (L, B, CTX, D), dt)),
            "mask": (rng.random((B, S, CTX)) < 0.7).astype(np.uint8),
            "pos": attn_pos(rng, B, S, CTX)}
    return make


def d(**kw):
    return {k: str(v) for k, v in kw.items()}


def runs():
    r = []
    cs = d(ROWS=200, COLS=3000, DT="fp32")
    for k in ("cumsum", "cumsum_after", "cumsum_auto", "cumsum_double_buffered"):
        r.append(Run(k, k, cs, cumsum_in(200, 3000, "fp32"), ["y"]))
    r.append(Run("cumsum_bf16", "cumsum", d(ROWS=130, COLS=2100, DT="bf16"),
                 cumsum_in(130, 2100, "bf16"), ["y"]))
    r.append(Run("cascaded_max", "cascaded_max", d(BXS=6, V=5000, DT="fp32"),
                 cmax_in(6, 5000, "fp32"), ["values", "indices"], lnc=2))
    r.append(Run("cascaded_max_wide", "cascaded_max", d(BXS=2, V=151936, DT="fp32"),
                 cmax_in(2, 151936, "fp32"), ["values", "indices"], lnc=2,
                 note="chunks wider than 16384: find_index8 in pieces"))
    r.append(Run("cascaded_max_bf16_lnc1", "cascaded_max", d(BXS=5, V=3000, DT="bf16"),
                 cmax_in(5, 3000, "bf16"), ["values", "indices"]))
    for m in ("scanning", "rotational", "cascaded"):
        r.append(Run("topk_" + m, "topk",
                     d(BXS=4, V=1000, K=16, SORTED=1, METHOD=m, DT="fp32", NONFINITE="none"),
                     topk_in(4, 1000, "fp32"), ["values", "indices"], lnc=2))
    r.append(Run("topk_rotational_wide", "topk",
                 d(BXS=2, V=40000, K=64, SORTED=1, METHOD="rotational", DT="bf16",
                   NONFINITE="ninf"),
                 topk_in(2, 40000, "bf16"), ["values", "indices"], lnc=2))
    r.append(Run("topk_rotational_random_schedule", "topk",
                 d(BXS=4, V=1000, K=16, SORTED=1, METHOD="rotational", DT="fp32",
                   NONFINITE="none"),
                 topk_in(4, 1000, "fp32"), ["values", "indices"], lnc=2,
                 extra=["--schedule", "random", "--seed", "5"]))
    r.append(Run("topk_auto_bf16_nonfinite_lnc1", "topk",
                 d(BXS=3, V=3000, K=20, SORTED=0, METHOD="auto", DT="bf16", NONFINITE="all"),
                 topk_in(3, 3000, "bf16", nonfinite=True), ["values", "indices"]))
    r.append(Run("topk_router_k8", "topk",
                 d(BXS=6, V=2000, K=8, SORTED=1, METHOD="auto", DT="fp32", NONFINITE="ninf"),
                 topk_in(6, 2000, "fp32"), ["values", "indices"], lnc=2))
    r.append(Run("cross_entropy_fwd", "cross_entropy_fwd",
                 d(NPOS=64, V=1000, PB=32, CS=0, DT="bf16", IGNORE_INDEX=-100),
                 ce_fwd_in(64, 1000, "bf16"), ["loss", "lse"], lnc=2))
    r.append(Run("cross_entropy_fwd_fp32_lnc1", "cross_entropy_fwd",
                 d(NPOS=40, V=1500, PB=16, CS=300, DT="fp32", IGNORE_INDEX=-100),
                 ce_fwd_in(40, 1500, "fp32"), ["loss", "lse"]))
    r.append(Run("cross_entropy_fwd_multichunk", "cross_entropy_fwd",
                 d(NPOS=8, V=70000, PB=8, CS=0, DT="fp32", IGNORE_INDEX=-100),
                 ce_fwd_in(8, 70000, "fp32"), ["loss", "lse"], lnc=2))
    r.append(Run("cross_entropy_fwd_bad_target", "cross_entropy_fwd",
                 d(NPOS=64, V=1000, PB=32, CS=0, DT="bf16", IGNORE_INDEX=-100),
                 ce_fwd_in(64, 1000, "bf16", bad=37), ["loss", "lse"], lnc=2, rc=3,
                 note="a target outside [0, V): the fault report is compared"))
    r.append(Run("cross_entropy_bwd", "cross_entropy_bwd",
                 d(NPOS=64, V=1000, PB=32, CS=0, DT="bf16", REDUCTION="mean",
                   IGNORE_INDEX=-100, INPLACE=0),
                 ce_bwd_in(64, 1000, "bf16"), ["grad"], lnc=2))
    r.append(Run("cross_entropy_bwd_fp32_sum_inplace", "cross_entropy_bwd",
                 d(NPOS=48, V=1200, PB=16, CS=500, DT="fp32", REDUCTION="sum",
                   IGNORE_INDEX=-100, INPLACE=1),
                 ce_bwd_in(48, 1200, "fp32"), ["grad"], lnc=2))
    r.append(Run("conv1d", "conv1d",
                 d(B=2, CIN=16, COUT=32, L=64, K=3, STRIDE=1, PAD_L=1, PAD_R=1, DIL=1, BIAS=1,
                   ACT="silu", LNC_SHARD=1, DT="bf16"),
                 conv1d_in(2, 16, 32, 64, 3, True, "bf16"), ["y"], lnc=2))
    r.append(Run("conv1d_fp32_lnc1", "conv1d",
                 d(B=1, CIN=48, COUT=40, L=100, K=4, STRIDE=2, PAD_L=0, PAD_R=2, DIL=2, BIAS=0,
                   ACT="gelu", LNC_SHARD=0, DT="fp32"),
                 conv1d_in(1, 48, 40, 100, 4, False, "fp32"), ["y"]))
    r.append(Run("depthwise_conv1d", "depthwise_conv1d",
                 d(N=2, C=8, W=64, S=3, STRIDE=1, PAD_L=1, PAD_R=1, DT="bf16"),
                 dw_in(2, 8, 64, 3, "bf16"), ["out"], lnc=2))
    r.append(Run("depthwise_conv1d_fp32_stride2", "depthwise_conv1d",
                 d(N=1, C=130, W=200, S=5, STRIDE=2, PAD_L=2, PAD_R=0, DT="fp32"),
                 dw_in(1, 130, 200, 5, "fp32"), ["out"], lnc=2))
    r.append(Run("fgcc", "fgcc",
                 d(M=256, K=128, N=256, TP=4, NUM_GROUPS=1, FORCE_HBM=0, DT="bf16"),
                 fgcc_in(4, 256, 128, 256, "bf16"), ["out"], lnc=2, ranks=4))
    r.append(Run("fgcc_hbm_groups2", "fgcc",
                 d(M=128, K=256, N=128, TP=4, NUM_GROUPS=2, FORCE_HBM=1, DT="bf16"),
                 fgcc_in(4, 128, 256, 128, "bf16"), ["out"], lnc=2, ranks=4))
    r.append(Run("fgcc_rhs_stream_lnc1", "fgcc",
                 d(M=128, K=128, N=1024, TP=2, NUM_GROUPS=1, FORCE_HBM=0, DT="bf16",
                   FORCE_RHS_STREAM=1),
                 fgcc_in(2, 128, 128, 1024, "bf16"), ["out"], ranks=2))
    r.append(Run("fg_allgather", "fg_allgather",
                 d(M=256, K=128, TP=4, NUM_GROUPS=1, FORCE_HBM=0, DT="bf16"),
                 allgather_in(4, 256, 128, "bf16", "lhs"), ["out"], lnc=2, ranks=4))
    r.append(Run("fg_allgather_hbm_lnc1", "fg_allgather",
                 d(M=96, K=128, TP=6, NUM_GROUPS=1, FORCE_HBM=1, DT="bf16"),
                 allgather_in(6, 96, 128, "bf16", "lhs"), ["out"], ranks=6))
    r.append(Run("sb2sb_allgather", "sb2sb_allgather",
                 d(ROWS=128, COLS=512, TP=4, TILED=0, DT="bf16"),
                 allgather_in(4, 128, 512, "bf16", "inp"), ["out"], lnc=2, ranks=4))
    r.append(Run("sb2sb_allgather_tiled", "sb2sb_allgather",
                 d(ROWS=384, COLS=128, TP=4, TILED=1, DT="fp32"),
                 allgather_in(4, 384, 128, "fp32", "inp"), ["out"], lnc=2, ranks=4))
    r.append(Run("topk_reduce", "topk_reduce", d(ROWS=64, T=16, K=4, H=256, DT="bf16"),
                 topk_reduce_in(64, 16, 4, 256, "bf16"), ["out"], lnc=2))
    moe = dict(T=64, H=256, E=4, B=128, I=96)
    N = moe_n(64, 4, 2, 128)
    r.append(Run("moe_fwd_shard_h", "moe_fwd_shard_h",
                 d(N=N, ACT="silu", SCALE="post", CLAMP=0, DT="bf16", **moe),
                 moe_in(64, 256, 4, 2, 128, N, 96, "bf16"),
                 ["out", "gate_up_ckpt", "down_ckpt"], lnc=2))
    r.append(Run("moe_fwd_shard_h_lnc1_clamp", "moe_fwd_shard_h",
                 d(N=N, ACT="swish", SCALE="pre", CLAMP=1, GATE_LO=-1.5, GATE_HI=2.0,
                   UP_LO=-1.25, UP_HI=1.75, DT="bf16", **moe),
                 moe_in(64, 256, 4, 2, 128, N, 96, "bf16", empty=True),
                 ["out", "gate_up_ckpt", "down_ckpt"]))
    r.append(Run("moe_bwd", "moe_bwd",
                 d(N=N, ACT="silu", SCALE="post", CLAMP=0, BIAS=0, DT="bf16", **moe),
                 moe_in(64, 256, 4, 2, 128, N, 96, "bf16", bwd=True),
                 ["grad_hidden", "grad_affinities", "grad_w_gate_up", "grad_w_down"], lnc=2))
    r.append(Run("moe_bwd_bias_clamp", "moe_bwd",
                 d(N=N, ACT="silu", SCALE="post", CLAMP=1, GATE_LO=-1.5, GATE_HI=2.0,
                   UP_LO=-1.25, UP_HI=1.75, BIAS=1, DT="bf16", **moe),
                 moe_in(64, 256, 4, 2, 128, N, 96, "bf16", bwd=True),
                 ["grad_hidden", "grad_affinities", "grad_w_gate_up", "grad_w_down",
                  "grad_b_gate_up", "grad_b_down"], lnc=2))
    att = dict(B=2, S=2, H=256, QH=2, D=64, S_CTX=256, EPS="1e-6")
    r.append(Run("attention_block_tkg", "attention_block_tkg",
                 d(ROPE="half", QK_NORM="none", FP8_KV=0, DT="bf16", **att),
                 attn_in(2, 2, 256, 2, 64, 256, "bf16"), ["out", "k_cache", "v_cache"], lnc=2))
    r.append(Run("attention_block_tkg_lnc1_fp8_qknorm", "attention_block_tkg",
                 d(ROPE="interleaved", QK_NORM="pre", FP8_KV=1, DT="bf16", **att),
                 attn_in(2, 2, 256, 2, 64, 256, "bf16", qk_norm="pre", fp8=True),
                 ["out", "k_cache", "v_cache"]))
    r.append(Run("attention_block_tkg_2chunks_fp32", "attention_block_tkg",
                 d(B=2, S=1, H=256, QH=2, D=64, S_CTX=9000, EPS="1e-6", ROPE="half",
                   QK_NORM="post", FP8_KV=0, DT="fp32"),
                 attn_in(2, 1, 256, 2, 64, 9000, "fp32", qk_norm="post"),
                 ["out", "k_cache", "v_cache"], lnc=2,
                 note="S_CTX above the 8192-row chunk: the cascaded softmax"))
    tkg = dict(LAYERS=2, TP=2, B=2, S=1, H=256, QH=2, D=64, S_CTX=128, I=192, ROPE="half",
               EPS="1e-6", DT="bf16")
    for sr in (1, 0):
        r.append(Run("transformer_tkg_sbuf_residual%d" % sr, "transformer_tkg",
                     d(SBUF_RESIDUAL=sr, **tkg),
                     tkg_in(2, 2, 2, 1, 256, 2, 64, 128, 192, "bf16"),
                     ["out", "k_cache", "v_cache"], lnc=2, ranks=2))
    return r


# ---- running and comparing ----------------------------------------------------------------------

# Host wall-clock fields: they differ between two runs of the same binary (and nothing else does).
MASKS = {
    "stdout": [(re.compile(rb"host wall time [0-9.]+ ms"), b"host wall time _ ms")],
    "stats.json": [(re.compile(rb'"wall_seconds": *[-0-9.eE+]+'), b'"wall_seconds":_')],
}
FIXED = ["exit_code", "stderr", "stdout", "stats.json", "timeline.json", "trace.txt"]


def write_inputs(run, dirpath, seed):
    rng = np.random.default_rng([seed, zlib.crc32(run.name.encode())])
    arrays = run.inputs(rng)
    os.makedirs(dirpath, exist_ok=True)
    for k, a in arrays.items():
        if a.size > 1 and a.dtype.kind in "fiu" and np.all(a == a.reshape(-1)[0]):
            raise SystemExit("compare_builds: %s: input %s is constant" % (run.name, k))
        np.save(os.path.join(dirpath, k + ".npy"), a)
    return sorted(arrays)


def link_inputs(src, dst, names):
    os.makedirs(dst, exist_ok=True)
    for k in names:
        os.link(os.path.join(src, k + ".npy"), os.path.join(dst, k + ".npy"))


def command(nisa, run, names, observe):
    """observe: with --timeline and --trace (the interpreter's slow path, one host thread);
    without: the fast path (cores and large instructions spread over the host threads)."""
    cmd = [nisa, "run", os.path.join(KDIR, run.kernel + ".nasm")]
    for k, v in run.defines.items():
        cmd += ["-D", "%s=%s" % (k, v)]
    cmd += run.flags()
    for k in names:
        cmd += ["--in", "%s=%sin/%s.npy" % (k, "" if observe else "../", k)]
    for k in run.outs:
        cmd += ["--out", "%s=%s.npy" % (k, k)]
    cmd += ["--stats", "--stats-json", "stats.json"]
    return cmd + (["--timeline", "timeline.json", "--trace", "trace.txt"] if observe else [])


def execute(cmd, cwd):
    """Runs in cwd; stdout / stderr to files there. -> (exit code or None on timeout, seconds)."""
    t0 = time.perf_counter()
    with open(os.path.join(cwd, "stdout"), "wb") as so, open(os.path.join(cwd, "stderr"), "wb") as se:
        try:
            rc = subprocess.run(cmd, cwd=cwd, stdout=so, stderr=se, timeout=TIMEOUT).returncode
        except subprocess.TimeoutExpired:
            rc = None
    dt = time.perf_counter() - t0
    with open(os.path.join(cwd, "exit_code"), "w") as f:
        f.write("timeout" if rc is None else str(rc))
    return rc, dt


def items(dirpath):
    """The files a run left (inputs excluded), FIXED first, then the rest sorted."""
    names = set(os.listdir(dirpath)) - {"in", "fast"}
    return [n for n in FIXED if n in names] + sorted(names - set(FIXED))


def content(path, name):
    with open(path, "rb") as f:
        b = f.read()
    for rx, rep in MASKS.get(name, []):
        b = rx.sub(rep, b)
    return b


def first_difference(da, db, prefix=""):
    """None when the two run folders hold the same things, else the first difference."""
    ia, ib = items(da), items(db)
    for n in ia + [n for n in ib if n not in ia]:
        if n not in ib:
            return "%s%s: only A wrote it" % (prefix, n)
        if n not in ia:
            return "%s%s: only B wrote it" % (prefix, n)
        a, b = content(os.path.join(da, n), n), content(os.path.join(db, n), n)
        if a != b and n == "exit_code":
            return "%sexit code %s / %s" % (prefix, a.decode(), b.decode())
        if a != b:
            m = min(len(a), len(b))
            off = next((i for i in range(m) if a[i] != b[i]), m) if m < 1 << 16 else None
            if off is None:  # large files: find the offset by chunks
                step = 1 << 16
                off = m
                for s in range(0, m, step):
                    if a[s:s + step] != b[s:s + step]:
                        off = s + next(i for i in range(min(step, m - s)) if a[s + i] != b[s + i])
                        break
            sizes = "" if len(a) == len(b) else " (sizes %d / %d)" % (len(a), len(b))
            masked = " (masked text)" if n in MASKS else ""
            return "%s%s differs at byte %d%s%s" % (prefix, n, off, masked, sizes)
    return None


def failure(run, d, rc, observe):
    """Why a run of one binary failed unexpectedly, or None."""
    if rc is None:
        return "timeout after %d s" % TIMEOUT
    if rc != run.rc:
        with open(os.path.join(d, "stderr"), "rb") as f:
            msg = " ".join(f.read().decode(errors="replace").split())[:200]
        return "exit %d (expected %d): %s" % (rc, run.rc, msg)
    if rc == 0:
        for k in run.outs:
            p = os.path.join(d, k + ".npy")
            if not os.path.isfile(p) or os.path.getsize(p) == 0:
                return "no output %s.npy" % k
    for k in ("stats.json", "timeline.json", "trace.txt") if observe else ("stats.json",):
        if not os.path.isfile(os.path.join(d, k)):
            return "no %s" % k
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--a", metavar="NISA", help="binary A (e.g. the base build's build/cli/nisa)")
    ap.add_argument("--b", metavar="NISA", help="binary B")
    ap.add_argument("--only", metavar="NAME", action="append", default=[],
                    help="only the runs of this name or kernel (a prefix matches; repeatable)")
    ap.add_argument("--keep", metavar="DIR", help="keep inputs and outputs in DIR")
    ap.add_argument("--list", action="store_true", help="list the runs and exit")
    # Testing the script itself: B gets inputs from another seed, so every run must differ.
    ap.add_argument("--b-seed", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()

    sel = [r for r in runs() if not args.only or any(
        r.name.startswith(o) or r.kernel == o for o in args.only)]
    if args.list:
        for r in sel:
            print("%-40s %s" % (r.name, r.describe()))
        return 0
    if not args.a or not args.b:
        ap.error("--a and --b are required")
    if not sel:
        ap.error("no run matches %s" % args.only)
    covered = {r.kernel for r in runs()}
    missing = sorted(f[:-5] for f in os.listdir(KDIR) if f.endswith(".nasm")
                     and f[:-5] not in covered)
    if missing:
        print("compare_builds: kernels without a run: %s" % ", ".join(missing), file=sys.stderr)
        return 1
    nisa = {}
    for side in ("a", "b"):
        p = os.path.abspath(getattr(args, side))
        if not os.access(p, os.X_OK):
            ap.error("%s is not an executable" % p)
        nisa[side] = p

    work = os.path.abspath(args.keep) if args.keep else tempfile.mkdtemp(prefix="compare_builds.")
    os.makedirs(work, exist_ok=True)
    print("A = %s\nB = %s\n%d runs in %s" % (nisa["a"], nisa["b"], len(sel), work), flush=True)
    bad = failed = 0
    total = {"a": 0.0, "b": 0.0}
    try:
        for run in sel:
            dirs = {s: os.path.join(work, s, run.name) for s in ("a", "b")}
            for dd in dirs.values():
                shutil.rmtree(dd, ignore_errors=True)
                os.makedirs(dd)
            names = write_inputs(run, os.path.join(dirs["a"], "in"), SEED)
            if args.b_seed is None:
                link_inputs(os.path.join(dirs["a"], "in"), os.path.join(dirs["b"], "in"), names)
            else:
                write_inputs(run, os.path.join(dirs["b"], "in"), args.b_seed)
            why, secs = [], []
            for s in ("a", "b"):
                t = 0.0
                for observe, dd in ((True, dirs[s]), (False, os.path.join(dirs[s], "fast"))):
                    os.makedirs(dd, exist_ok=True)
                    rc, dt = execute(command(nisa[s], run, names, observe), dd)
                    t += dt
                    w = failure(run, dd, rc, observe)
                    if w:
                        why.append("%s%s %s" % (s.upper(), "" if observe else " fast", w))
                total[s] += t
                secs.append(t)
            diff = (first_difference(dirs["a"], dirs["b"]) or
                    first_difference(os.path.join(dirs["a"], "fast"),
                                     os.path.join(dirs["b"], "fast"), "fast/"))
            status = "same" if diff is None else "DIFFERS: " + diff
            if why:
                status = "FAILED (%s); %s" % ("; ".join(why), status)
                failed += 1
            if diff is not None:
                bad += 1
            print("%-40s %-8s %s  [A %.1f s, B %.1f s]" %
                  (run.name, "lnc%d" % run.lnc + (" r%d" % run.ranks if run.ranks > 1 else ""),
                   status, secs[0], secs[1]), flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("compare_builds: %d runs, %d differ, %d failed; nisa time A %.1f s, B %.1f s" %
          (len(sel), bad, failed, total["a"], total["b"]))
    return 1 if bad or failed else 0


if __name__ == "__main__":
    sys.exit(main())
