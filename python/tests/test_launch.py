"""A kernel's `.ranks` / `.lnc` (docs/asm.md "Launch settings"): Kernel.run and nisa.run take
them as the defaults of ranks= / lnc=; the same value is fine, another an InputError (a
ValueError) naming both; Kernel.check and `nisa dap`'s launch do the same."""
import warnings

import numpy as np
import pytest

import nisa
from conftest import KERNELS, SRC, kernel
from test_dap import Client

# One kernel for this test and tests/launch/launch_cli_test.cpp: core 0 of every rank copies x to
# y, core 1 does nothing (race-free at lnc 2); it declares .ranks 3 and .lnc 2 (lines 2 and 3).
COPY = (SRC / "tests" / "launch" / "copy_ranks.nasm").read_text()

def ranks_line():
    """The line of `.ranks TP` in sb2sb_allgather.nasm, as the errors name it."""
    lines = (KERNELS / "sb2sb_allgather.nasm").read_text().splitlines()
    return next(i + 1 for i, l in enumerate(lines) if l.startswith(".ranks TP"))


@pytest.fixture
def copy_kernel(tmp_path):
    p = tmp_path / "copy.nasm"
    p.write_text(COPY)
    return str(p)


def test_declared_values_are_the_defaults(copy_kernel):
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    k = nisa.assemble(copy_kernel)
    assert (k.ranks, k.lnc) == (3, 2)
    with warnings.catch_warnings():  # the check before the run proves it on 3 x 2 cores
        warnings.simplefilter("error", nisa.CheckWarning)
        r = k.run(threads=1, x=x)
    assert r.stats["ranks"] == 3 and r.stats["lnc"] == 2 and len(r.stats["cores"]) == 6
    assert r.y.shape == (3, 4, 8)
    assert all(np.array_equal(r.y[rank], x) for rank in range(3))
    r = k.run(ranks=3, lnc=2, threads=1, x=x)  # the same values: fine
    assert r.stats["ranks"] == 3 and r.stats["lnc"] == 2


def test_conflict_is_an_input_error(copy_kernel):
    x = np.zeros((4, 8), np.float32)
    k = nisa.assemble(copy_kernel)
    with pytest.raises(nisa.InputError) as ei:
        k.run(ranks=2, x=x)
    assert str(ei.value) == f"ranks=2 conflicts with `.ranks 3` at {copy_kernel}:2"
    assert isinstance(ei.value, ValueError)
    with pytest.raises(ValueError, match=r"^lnc=1 conflicts with `\.lnc 2` at .*copy\.nasm:3$"):
        nisa.run(copy_kernel, lnc=1, x=x)


def test_multi_rank_kernel_without_ranks(rng):
    """sb2sb_allgather declares `.ranks TP`: TP=2 runs on two ranks without ranks=2."""
    ROWS, COLS, TP = 4, 8, 2
    x = rng.standard_normal((TP, ROWS, COLS)).astype(np.float32)
    k = nisa.assemble(kernel("sb2sb_allgather.nasm"), ROWS=ROWS, COLS=COLS, TP=TP, DT="fp32")
    assert (k.ranks, k.lnc) == (TP, None)
    r = k.run(inp=x)
    assert r.stats["ranks"] == TP and r.stats["lnc"] == 1
    assert r.out.shape == (TP, ROWS, COLS * TP)
    for rank in range(TP):
        assert np.array_equal(r.out[rank], np.concatenate(list(x), axis=1))
    with pytest.raises(nisa.InputError) as ei:
        k.run(ranks=4, inp=x[0])
    path = kernel("sb2sb_allgather.nasm")
    assert str(ei.value) == f"ranks=4 conflicts with `.ranks 2` at {path}:{ranks_line()}"


def test_undeclared_kernel_keeps_the_old_defaults(rng):
    x = rng.standard_normal((6, 1000)).astype(np.float32)
    k = nisa.assemble(kernel("cascaded_max.nasm"), BXS=6, V=1000)
    assert (k.ranks, k.lnc) == (None, None)
    r = k.run(x=x)
    assert r.stats["ranks"] == 1 and r.stats["lnc"] == 1
    r = k.run(ranks=2, x=x)
    assert r.stats["ranks"] == 2 and r.values.shape == (2, 6, 1)
    # cumsum is not sharded: it declares .lnc 1, and lnc=2 conflicts
    c = nisa.assemble(kernel("cumsum.nasm"), ROWS=6, COLS=40)
    assert c.lnc == 1
    with pytest.raises(nisa.InputError, match=r"lnc=2 conflicts with `\.lnc 1`"):
        c.run(lnc=2, x=x[:, :40])
    with pytest.raises(nisa.InputError, match=r"^ranks=0: expected 1..128$"):
        k.run(ranks=0, x=x)


def test_check_defaults_to_the_declaration(copy_kernel):
    k = nisa.assemble(copy_kernel)
    r = k.check()
    assert r.proved and "unrolled on 6 cores" in r.report  # 3 ranks of 2 cores
    assert k.check(ranks=3, lnc=2).proved
    with pytest.raises(nisa.InputError) as ei:
        k.check(lnc=1)
    assert str(ei.value) == f"lnc=1 conflicts with `.lnc 2` at {copy_kernel}:3"
    fgcc = nisa.assemble(kernel("fgcc.nasm"))
    r = fgcc.check()
    assert r.proved and "unrolled on 4 cores" in r.report, r.report


def test_dap_launch(tmp_path, copy_kernel):
    np.save(tmp_path / "x.npy", np.ones((4, 8), np.float32))
    c = Client()
    c.request("initialize", adapterID="nisa")
    c.event("initialized")
    r = c.request("launch", ok=False, program=copy_kernel,
                  args=["--ranks", "2", "--in", f"x={tmp_path / 'x.npy'}"])
    assert r["message"] == f"--ranks 2 conflicts with `.ranks 3` at {copy_kernel}:2"
    c.request("launch", program=copy_kernel, args=["--in", f"x={tmp_path / 'x.npy'}"])
    c.request("configurationDone")
    c.event("stopped")
    names = {t["name"] for t in c.request("threads")["threads"]}
    assert "rank 2 core 1 sp" in names and not any(n.startswith("rank 3 ") for n in names)
    c.close()
