"""Every kernel of kernels_asm through the Python module, against numpy references written
from the math in each kernel's header (small shapes; fp32 where the kernel offers it)."""
import numpy as np
import pytest

import nisa
from conftest import kernel, f32_to_bf16, bf16_to_f32


def close(got, want, rtol=1e-5, atol=1e-5):
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                               rtol=rtol, atol=atol)


@pytest.mark.parametrize(
    "name", ["cumsum.nasm", "cumsum_double_buffered.nasm", "cumsum_after.nasm", "cumsum_auto.nasm"])
def test_cumsum(name, rng):
    x = rng.standard_normal((130, 37)).astype(np.float32)  # two partition tiles
    r = nisa.run(kernel(name), dict(ROWS=130, COLS=37, DT="fp32"), x=x)
    assert r.y.dtype == np.float32 and r.y.shape == (130, 37)
    close(r.y, np.cumsum(x.astype(np.float64), axis=1), rtol=1e-5, atol=1e-4)
    assert r.stats["status"] == "ok" and r.stats["instructions"] > 0


def test_cumsum_bf16_bits(rng):
    x = rng.standard_normal((4, 16)).astype(np.float32)
    xb = f32_to_bf16(x)
    r = nisa.run(kernel("cumsum.nasm"), dict(ROWS=4, COLS=16, DT="bf16"), x=xb)
    y = r.y if r.y.dtype == np.uint16 else r.y.view(np.uint16)
    assert y.shape == (4, 16)
    # The scan accumulates in fp32 and rounds each element to bf16 once.
    want = f32_to_bf16(np.cumsum(bf16_to_f32(xb), axis=1, dtype=np.float32))
    assert np.array_equal(y, want)


def test_cascaded_max(rng):
    x = rng.permutation(3 * 500).reshape(3, 500).astype(np.float32) / 7.0
    r = nisa.run(kernel("cascaded_max.nasm"), dict(BXS=3, V=500, DT="fp32"), x=x)
    assert np.array_equal(r.values[:, 0], x.max(axis=1))
    assert np.array_equal(r.indices[:, 0], x.argmax(axis=1).astype(np.uint32))
    assert r.indices.dtype == np.uint32


@pytest.mark.parametrize("method", ["scanning", "rotational"])
def test_topk(method, rng):
    x = rng.permutation(4 * 300).reshape(4, 300).astype(np.float32) - 600.0
    r = nisa.run(kernel("topk.nasm"),
                 dict(BXS=4, V=300, K=8, SORTED=1, METHOD=method, DT="fp32"), x=x)
    idx = np.argsort(-x, axis=1, kind="stable")[:, :8]
    assert np.array_equal(r.indices, idx.astype(np.uint32))
    assert np.array_equal(r.values, np.take_along_axis(x, idx, axis=1))


def act_ref(v, act):
    return {"none": v, "relu": np.maximum(v, 0), "sigmoid": 1 / (1 + np.exp(-v)),
            "tanh": np.tanh(v), "silu": v / (1 + np.exp(-v))}[act]


@pytest.mark.parametrize("act,stride,pad", [("none", 1, 0), ("relu", 2, 1), ("sigmoid", 1, 2)])
def test_conv1d(act, stride, pad, rng):
    B, CIN, COUT, L, K = 2, 5, 7, 20, 3
    x = rng.standard_normal((B, CIN, L)).astype(np.float32)
    f = rng.standard_normal((K, CIN, COUT)).astype(np.float32)
    b = rng.standard_normal(COUT).astype(np.float32)
    r = nisa.run(kernel("conv1d.nasm"),
                 dict(B=B, CIN=CIN, COUT=COUT, L=L, K=K, STRIDE=stride, PAD_L=pad, PAD_R=pad,
                      BIAS=1, ACT=act, DT="fp32"), x=x, filters=f, bias=b)
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad)))
    lout = (L + 2 * pad - (K - 1) - 1) // stride + 1
    want = np.zeros((B, COUT, lout))
    for l in range(lout):
        for k in range(K):
            want[:, :, l] += np.einsum("bc,co->bo", xp[:, :, l * stride + k], f[k])
    want = act_ref(want + b[None, :, None], act)
    close(r.y, want, rtol=1e-4, atol=1e-4)


def test_depthwise_conv1d(rng):
    N, C, W, S, STRIDE, PL, PR = 2, 6, 30, 4, 2, 1, 2
    img = rng.standard_normal((N, C, 1, W)).astype(np.float32)
    flt = rng.standard_normal((C, 1, 1, S)).astype(np.float32)
    r = nisa.run(kernel("depthwise_conv1d.nasm"),
                 dict(N=N, C=C, W=W, S=S, STRIDE=STRIDE, PAD_L=PL, PAD_R=PR, DT="fp32"),
                 img=img, filter=flt)
    xp = np.pad(img[:, :, 0, :].astype(np.float64), ((0, 0), (0, 0), (PL, PR)))
    Q = (W + PL + PR - S) // STRIDE + 1
    want = np.zeros((N, C, 1, Q))
    for q in range(Q):
        want[:, :, 0, q] = (xp[:, :, q * STRIDE:q * STRIDE + S] * flt[None, :, 0, 0, :]).sum(-1)
    close(r.out, want, rtol=1e-4, atol=1e-4)


def lse_ref(logits):
    l = logits.astype(np.float64)
    m = l.max(axis=1)
    return m + np.log(np.exp(l - m[:, None]).sum(axis=1))


def test_cross_entropy_fwd(rng):
    NPOS, V = 12, 70
    logits = (rng.standard_normal((NPOS, V)) * 3).astype(np.float32)
    targets = rng.integers(0, V, NPOS).astype(np.int32)
    targets[3] = -100
    r = nisa.run(kernel("cross_entropy_fwd.nasm"), dict(NPOS=NPOS, V=V, PB=8, DT="fp32"),
                 logits=logits, targets=targets)
    lse = lse_ref(logits)
    loss = lse - logits[np.arange(NPOS), np.clip(targets, 0, V - 1)]
    loss[targets == -100] = 0
    close(r.lse, lse, rtol=1e-5, atol=1e-5)
    close(r.loss, loss, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_cross_entropy_bwd(reduction, rng):
    NPOS, V = 10, 50
    logits = rng.standard_normal((NPOS, V)).astype(np.float32)
    targets = rng.integers(0, V, NPOS).astype(np.int32)
    targets[[2, 7]] = -100
    lse = lse_ref(logits).astype(np.float32)
    r = nisa.run(kernel("cross_entropy_bwd.nasm"),
                 dict(NPOS=NPOS, V=V, PB=4, DT="fp32", REDUCTION=reduction),
                 logits=logits, targets=targets, lse=lse)
    valid = targets != -100
    scale = valid / max(1, valid.sum()) if reduction == "mean" else valid.astype(np.float64)
    onehot = np.zeros((NPOS, V))
    onehot[np.arange(NPOS)[valid], targets[valid]] = 1
    want = scale[:, None] * (np.exp(logits - lse[:, None].astype(np.float64)) - onehot)
    close(r.grad, want, rtol=1e-4, atol=1e-6)


def test_topk_reduce(rng):
    ROWS, T, K, H = 24, 6, 3, 8
    inp = np.zeros((ROWS, H + 2), np.float16)
    vals = rng.standard_normal((ROWS, H)).astype(np.float16)
    inp[:, :H] = vals
    ids = np.full(ROWS, -1, np.int32)
    ids[:15] = np.repeat(np.arange(5), 3)[rng.permutation(15)]  # token 5: no rows
    inp[:, H:] = ids.view(np.int16).reshape(ROWS, 2).view(np.float16)
    r = nisa.run(kernel("topk_reduce.nasm"), dict(ROWS=ROWS, T=T, K=K, H=H, DT="fp16"), inp=inp)
    want = np.zeros((T, H))
    for t in range(T):
        want[t] = vals[ids == t].astype(np.float64).sum(axis=0)
    assert r.out.dtype == np.float16
    close(r.out, want, rtol=2e-3, atol=2e-3)


def test_sb2sb_allgather(rng):
    TP, ROWS, COLS = 4, 8, 16
    inp = rng.standard_normal((TP, ROWS, COLS)).astype(np.float32)
    r = nisa.run(kernel("sb2sb_allgather.nasm"), dict(ROWS=ROWS, COLS=COLS, TP=TP, DT="fp32"),
                 ranks=TP, inp=inp)
    want = np.concatenate(list(inp), axis=1)
    assert r.out.shape == (TP, ROWS, COLS * TP)
    for k in range(TP):
        assert np.array_equal(r.out[k], want)


@pytest.mark.parametrize("groups", [1, 2])
def test_fg_allgather(groups, rng):
    TP, M, K = 4, 8, 16
    lhs = rng.standard_normal((TP, M, K)).astype(np.float32)
    r = nisa.run(kernel("fg_allgather.nasm"),
                 dict(M=M, K=K, TP=TP, NUM_GROUPS=groups, DT="fp32"), ranks=TP, lhs=lhs)
    G = TP // groups
    for k in range(TP):
        g0 = k // G * G
        assert np.array_equal(r.out[k], np.concatenate(list(lhs[g0:g0 + G]), axis=0))


def test_fgcc(rng):
    TP, M, K, N = 2, 8, 16, 24
    lhs = rng.standard_normal((TP, M, K)).astype(np.float32)
    rhs = rng.standard_normal((TP, K, N)).astype(np.float32)
    r = nisa.run(kernel("fgcc.nasm"), dict(M=M, K=K, N=N, TP=TP, DT="fp32"),
                 ranks=TP, lhs=lhs, rhs=rhs)
    full = np.concatenate(list(lhs), axis=0).astype(np.float64)
    for k in range(TP):
        close(r.out[k], full @ rhs[k], rtol=1e-4, atol=1e-4)


def test_every_kernel_is_tested():
    """Each kernels_asm/*.nasm is run by one of these test files."""
    import pathlib
    here = pathlib.Path(__file__).parent
    text = "".join(p.read_text() for p in here.glob("test_*.py"))
    kernels = sorted(p.name for p in pathlib.Path(kernel("")).glob("*.nasm"))
    assert len(kernels) >= 16
    missing = [k for k in kernels if f'kernel("{k}")' not in text and f'"{k}"' not in text]
    assert not missing, missing
