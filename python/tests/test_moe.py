"""The MoE kernels (moe_fwd_shard_h, moe_bwd) against numpy references written from the
formulas of their headers, under --lnc 1 and 2."""
import numpy as np
import pytest

import nisa
from conftest import kernel

T, H, E, B, N, I = 10, 32, 2, 128, 2, 16
CL = dict(GATE_LO=-0.5, GATE_HI=0.6, UP_LO=-0.4, UP_HI=0.3)


def sig(v):
    return 1 / (1 + np.exp(-v))


def problem(rng):
    hidden = rng.standard_normal((T + 1, H)).astype(np.float32) * 0.5
    hidden[T] = 0
    aff = rng.random(((T + 1) * E, 1)).astype(np.float32)
    wgu = (rng.standard_normal((E, H, 2, I)) * 0.2).astype(np.float32)
    wd = (rng.standard_normal((E, I, H)) * 0.2).astype(np.float32)
    tp = np.full(N * B, -1, np.int32)
    tp[:7] = rng.permutation(T)[:7]            # block 0: 7 tokens, a padding slot, the rest empty
    tp[7] = T
    tp[B:B + 6] = rng.permutation(T)[:6]       # block 1: 6 tokens
    b2e = np.array([[1], [0]], np.int32)
    return hidden, aff, wgu, wd, tp, b2e


def slots(tp, b2e):
    for n in range(N):
        for j in range(B):
            t = int(tp[n * B + j])
            if t >= 0:
                yield n, j, t, int(b2e[n, 0])


def forward_ref(hidden, aff, wgu, wd, tp, b2e, clamp, scale):
    h64 = hidden.astype(np.float64)
    out = np.zeros((T + 1, H))
    gu_ck = np.zeros((N, 2, I, B))
    d_ck = np.zeros((N, B, H))
    for n, j, t, e in slots(tp, b2e):
        a = float(aff[t * E + e, 0])
        x = a * h64[t] if scale == "pre" else h64[t]
        g = x @ wgu[e, :, 0, :].astype(np.float64)
        u = x @ wgu[e, :, 1, :].astype(np.float64)
        gu_ck[n, 0, :, j], gu_ck[n, 1, :, j] = g, u
        gc = np.clip(g, CL["GATE_LO"], CL["GATE_HI"]) if clamp else g
        uc = np.clip(u, CL["UP_LO"], CL["UP_HI"]) if clamp else u
        m = gc * sig(gc) * uc
        y = m @ wd[e].astype(np.float64)
        d_ck[n, j] = y
        out[t] += a * y if scale == "post" else y
    return out, gu_ck, d_ck


@pytest.mark.parametrize("lnc,clamp,scale", [(1, 0, "post"), (2, 1, "post"), (2, 0, "pre")])
def test_moe_fwd(lnc, clamp, scale, rng):
    hidden, aff, wgu, wd, tp, b2e = problem(rng)
    r = nisa.run(kernel("moe_fwd_shard_h.nasm"),
                 dict(T=T, H=H, E=E, B=B, N=N, I=I, SCALE=scale, CLAMP=clamp, DT="fp32", **CL),
                 lnc=lnc, hidden=hidden, affinities=aff, w_gate_up=wgu, w_down=wd,
                 token_position_to_id=tp, block_to_expert=b2e)
    out, gu_ck, d_ck = forward_ref(hidden, aff, wgu, wd, tp, b2e, clamp, scale)
    tol = dict(rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(r.out[:T], out[:T], **tol)
    np.testing.assert_allclose(r.gate_up_ckpt, gu_ck, **tol)
    np.testing.assert_allclose(r.down_ckpt, d_ck, **tol)


@pytest.mark.parametrize("lnc,clamp", [(1, 0), (2, 1)])
def test_moe_bwd(lnc, clamp, rng):
    hidden, aff, wgu, wd, tp, b2e = problem(rng)
    _, gu_ck, d_ck = forward_ref(hidden, aff, wgu, wd, tp, b2e, clamp, "post")
    gout = rng.standard_normal((T + 1, H)).astype(np.float32)
    r = nisa.run(kernel("moe_bwd.nasm"),
                 dict(T=T, H=H, E=E, B=B, N=N, I=I, CLAMP=clamp, DT="fp32", **CL), lnc=lnc,
                 hidden=hidden, affinities=aff, w_gate_up=wgu, w_down=wd,
                 token_position_to_id=tp, block_to_expert=b2e,
                 gate_up_ckpt=gu_ck.astype(np.float32), down_ckpt=d_ck.astype(np.float32),
                 grad_out=gout)
    gh = np.zeros((T + 1, H))
    ga = np.zeros(((T + 1) * E, 1))
    gwgu = np.zeros((E, H, 2, I))
    gwd = np.zeros((E, I, H))
    g64 = gout.astype(np.float64)
    for n, j, t, e in slots(tp, b2e):
        a = float(aff[t * E + e, 0])
        g, u = gu_ck[n, 0, :, j].astype(np.float32), gu_ck[n, 1, :, j].astype(np.float32)
        g, u = g.astype(np.float64), u.astype(np.float64)
        y = d_ck[n, j].astype(np.float32).astype(np.float64)
        ga[t * E + e, 0] += g64[t] @ y
        dy = a * g64[t]
        gc = np.clip(g, CL["GATE_LO"], CL["GATE_HI"]) if clamp else g
        uc = np.clip(u, CL["UP_LO"], CL["UP_HI"]) if clamp else u
        s = sig(gc)
        m = gc * s * uc
        gwd[e] += np.outer(m, dy)
        dm = dy @ wd[e].astype(np.float64).T
        in_g = (CL["GATE_LO"] < g) & (g < CL["GATE_HI"]) if clamp else 1
        in_u = (CL["UP_LO"] < u) & (u < CL["UP_HI"]) if clamp else 1
        dg = dm * uc * s * (1 + gc * (1 - s)) * in_g
        du = dm * gc * s * in_u
        gwgu[e, :, 0, :] += np.outer(hidden[t], dg)
        gwgu[e, :, 1, :] += np.outer(hidden[t], du)
        gh[t] += wgu[e, :, 0, :].astype(np.float64) @ dg + wgu[e, :, 1, :].astype(np.float64) @ du
    tol = dict(rtol=2e-4, atol=2e-5)
    np.testing.assert_allclose(r.grad_hidden[:T], gh[:T], **tol)
    np.testing.assert_allclose(r.grad_affinities[:T * E], ga[:T * E], **tol)
    np.testing.assert_allclose(r.grad_w_gate_up, gwgu, **tol)
    np.testing.assert_allclose(r.grad_w_down, gwd, **tol)
