"""The decode kernels (attention_block_tkg, transformer_tkg) against a numpy reference of the
math in their headers (fp32; RMSNorm, QKV, RoPE, attention over the masked cache and the
active tokens, o-projection; per layer the TP all-reduces, residuals and SwiGLU MLP)."""
import numpy as np
import pytest

import nisa
from conftest import kernel

EPS = 1e-6


def rmsnorm(x, w):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + EPS) * w


def rope(t, cos, sin, mode):
    # t: [B, S, n, D]; cos, sin: [B, S, D/2]
    c, s = cos[:, :, None, :], sin[:, :, None, :]
    if mode == "half":
        h = t.shape[-1] // 2
        x1, x2 = t[..., :h], t[..., h:]
        return np.concatenate([x1 * c - x2 * s, x1 * s + x2 * c], -1)
    x1, x2 = t[..., 0::2], t[..., 1::2]
    o = np.empty_like(t)
    o[..., 0::2], o[..., 1::2] = x1 * c - x2 * s, x1 * s + x2 * c
    return o


def attention(x, norm_w, w_qkv, w_o, cos, sin, kc, vc, mask, QH, D, mode):
    x, kc, vc = x.astype(np.float64), kc.astype(np.float64), vc.astype(np.float64)
    B, S, _ = x.shape
    qkv = rmsnorm(x, norm_w) @ w_qkv
    q = rope(qkv[..., :QH * D].reshape(B, S, QH, D), cos, sin, mode)
    k = rope(qkv[..., QH * D:(QH + 1) * D].reshape(B, S, 1, D), cos, sin, mode)[:, :, 0]
    v = qkv[..., (QH + 1) * D:]
    o = np.zeros((B, S, QH * D))
    for b in range(B):
        for s in range(S):
            sel = mask[b, s] == 1
            keys = np.concatenate([kc[b][sel], k[b, :s + 1]])
            vals = np.concatenate([vc[b][sel], v[b, :s + 1]])
            for h in range(QH):
                sc = keys @ q[b, s, h] / np.sqrt(D)
                p = np.exp(sc - sc.max())
                o[b, s, h * D:(h + 1) * D] = (p / p.sum()) @ vals
    return o @ w_o, k, v


def inputs(rng, B, S, H, QH, D, SC, pos):
    f = lambda *s, sc=1.0: (rng.standard_normal(s) * sc).astype(np.float32)
    ang = rng.random((B, S, D // 2)) * 3
    return dict(x=f(B, S, H), norm_w=(1 + f(H, sc=0.1)), w_qkv=f(H, (QH + 2) * D, sc=0.1),
                w_o=f(QH * D, H, sc=0.1), cos=np.cos(ang).astype(np.float32),
                sin=np.sin(ang).astype(np.float32), k_cache=f(B, SC, D), v_cache=f(B, SC, D),
                mask=(rng.random((B, S, SC)) < 0.6).astype(np.uint8),
                pos=np.array(pos, np.uint32))


@pytest.mark.parametrize("lnc,rope_mode", [(1, "half"), (2, "interleaved")])
def test_attention_block_tkg(lnc, rope_mode, rng):
    B, S, H, QH, D, SC = 2, 2, 256, 2, 16, 12
    a = inputs(rng, B, S, H, QH, D, SC, [3, 10])
    k = nisa.assemble(kernel("attention_block_tkg.nasm"), B=B, S=S, H=H, QH=QH, D=D, S_CTX=SC,
                      ROPE=rope_mode, DT="fp32")
    declared = {t["name"] for t in k.tensors if t["role"] == "input"}
    assert set(a) <= declared  # QK-norm weights and fp8 scales only when used
    r = k.run(lnc=lnc, fetch=("k_cache", "v_cache"), **a)
    want, knew, vnew = attention(a["x"], a["norm_w"], a["w_qkv"], a["w_o"], a["cos"], a["sin"],
                           a["k_cache"], a["v_cache"], a["mask"], QH, D, rope_mode)
    np.testing.assert_allclose(r.out, want, rtol=2e-4, atol=2e-4)
    # The caches: rows pos[b] .. pos[b]+S-1 hold the new (RoPE'd) k and v, the rest unchanged.
    kc, vc = a["k_cache"].astype(np.float64), a["v_cache"].astype(np.float64)
    for b, p in enumerate(a["pos"]):
        kc[b, p:p + S], vc[b, p:p + S] = knew[b], vnew[b]
    np.testing.assert_allclose(r.k_cache, kc, rtol=2e-4, atol=2e-4)
    np.testing.assert_allclose(r.v_cache, vc, rtol=2e-4, atol=2e-4)


@pytest.mark.parametrize("sbuf_residual", [0, 1])
def test_transformer_tkg(sbuf_residual, rng):
    TP, L, B, S, H, QH, D, SC, I = 2, 2, 1, 2, 128, 1, 16, 8, 32
    base = inputs(rng, B, S, H, QH, D, SC, [5])
    f = lambda *s, sc=0.1: (rng.standard_normal(s) * sc).astype(np.float32)
    w = dict(attn_norm_w=1 + f(L, H), mlp_norm_w=1 + f(L, H),
             w_qkv=f(TP, L, H, (QH + 2) * D), w_o=f(TP, L, QH * D, H),
             w_gate_up=f(TP, L, H, 2, I), w_down=f(TP, L, I, H),
             k_cache=f(TP, L, B, SC, D, sc=1), v_cache=f(TP, L, B, SC, D, sc=1))
    r = nisa.run(kernel("transformer_tkg.nasm"),
                 dict(LAYERS=L, TP=TP, SBUF_RESIDUAL=sbuf_residual, B=B, S=S, H=H, QH=QH, D=D,
                      S_CTX=SC, I=I, DT="fp32"), ranks=TP,
                 x=base["x"], cos=base["cos"], sin=base["sin"], mask=base["mask"],
                 pos=base["pos"], **w)
    x = base["x"].astype(np.float64)
    for l in range(L):
        a = sum(attention(x, w["attn_norm_w"][l], w["w_qkv"][k, l], w["w_o"][k, l], base["cos"],
                          base["sin"], w["k_cache"][k, l], w["v_cache"][k, l], base["mask"],
                          QH, D, "half")[0] for k in range(TP))
        h = x + a
        z = rmsnorm(h, w["mlp_norm_w"][l])
        fsum = 0
        for k in range(TP):
            g = z @ w["w_gate_up"][k, l, :, 0, :]
            u = z @ w["w_gate_up"][k, l, :, 1, :]
            fsum = fsum + (g / (1 + np.exp(-g)) * u) @ w["w_down"][k, l]
        x = h + fsum
    assert r.out.shape == (TP, B, S, H)
    for k in range(TP):
        np.testing.assert_allclose(r.out[k], x, rtol=3e-4, atol=3e-4)
    assert np.array_equal(r.out[0], r.out[1])
