"""The rows of bench/torch_compare.py (and bench/fixed_cost.py, bench/inproc_floor.py): per
kernel its seeded inputs, `nisa run` defines and flags, the same math in PyTorch, and the check
of nisa's outputs against torch's with the tolerance stated per row.

numpy, torch and torch.nn.functional are imported by the driver (torch_compare.py must run
without them: --help and the skip path) and handed over with bind().
"""

import math

np = None
torch = None
F = None


def bind(numpy, torch_mod, functional):
    """Hands the rows the modules the driver imported (numpy, torch, torch.nn.functional)."""
    global np, torch, F
    np, torch, F = numpy, torch_mod, functional


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


def scattered_token_ids(rng, rows, tokens, k):
    """topk_reduce's row -> token map (int32): 0 .. k rows per token at random rows, -1 for the
    rows no token has (also bench/compare_builds.py's input)."""
    ids = np.full(rows, -1, dtype=np.int32)
    slots = rng.permutation(rows)
    n = 0
    for t in range(tokens):
        for _ in range(int(rng.integers(0, k + 1))):
            if n < rows:
                ids[slots[n]] = t
                n += 1
    return ids


def torch_topk(tx, k):
    """torch's top-k along rows, as the topk rows' outputs."""
    def tfn():
        v, i = torch.topk(tx, k, dim=1)
        return {"values": v, "indices": i}
    return tfn


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
    tfn = torch_topk(T(x), K)

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
    ids = scattered_token_ids(rng, ROWS, TT, K)
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
    tfn = torch_topk(T(x), K)

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
