"""Kernel.check (`nisa check` from Python, docs/python.md) and the bounded static check that
Kernel.run makes first (a CheckWarning naming both lines and the fix; the run goes on)."""
import pathlib
import warnings

import numpy as np
import pytest

import nisa
from conftest import SRC, kernel

PLANTED = SRC / "tests" / "check"


def planted(name):
    return str(PLANTED / name)


def test_check_reports_the_pair_the_witness_and_the_fix():
    src = planted("reuse_across_iterations.nasm")
    r = nisa.assemble(src).check()
    assert not r.proved and not r
    assert (r.status, r.exit_code, r.deadlock, r.outside) == ("races", 4, False, "")
    assert len(r.pairs) == 1
    p = r.pairs[0]
    # the compute of iteration 0 reads the slot the load of iteration 2 overwrites
    assert (p.a_loc, p.a_iter, p.a_write) == (src + ":19", "i=0", False)
    assert (p.b_loc, p.b_iter, p.b_write) == (src + ":17", "i=2", True)
    assert p.instances == 4
    assert p.fixes == [(src + ":17", "s_cmp >= max(0, i - 1)", "", "")]
    assert p.fixes[0].loc == src + ":17" and p.fixes[0].new_sem == ""
    assert "add @wait(s_cmp >= max(0, i - 1)) to " + src + ":17" in p.suggestion
    assert r.pairs[0].a_loc in r.report and r.report.startswith("unordered: ")
    assert r.instructions == 18 and r.nodes > r.instructions


def test_applying_the_fixes_proves_the_kernel(tmp_path):
    for name in ("reuse_across_iterations.nasm", "matmul_slot_reuse.nasm", "tiles_reuse.nasm",
                 "wrong_count.nasm", "no_signal.nasm"):
        src = planted(name)
        r = nisa.assemble(src).check()
        assert r.status == "races", name
        lines = pathlib.Path(src).read_text().split("\n")
        for p in r.pairs:
            for loc, wait, signal_loc, new_sem in p.fixes:
                path, line = loc.rsplit(":", 1)
                assert path == src
                lines[int(line) - 1] += f"  @wait({wait})"
                if new_sem:
                    lines[int(signal_loc.rsplit(":", 1)[1]) - 1] += f"  @signal({new_sem})"
                    lines.insert(next(i for i, l in enumerate(lines)
                                      if l.startswith(".kernel")) + 1, f".sem {new_sem}")
        fixed = tmp_path / name
        fixed.write_text("\n".join(lines))
        again = nisa.assemble(str(fixed)).check()
        assert again.proved, again.report


def test_proved_deadlock_and_outside():
    ok = nisa.assemble(planted("reuse_across_iterations.nasm"), FIXED=1).check()
    assert ok.proved and ok and ok.status == "proved" and ok.exit_code == 0 and ok.pairs == []
    assert ok.report.startswith("proved:")
    dl = nisa.assemble(planted("barrier_one_core.nasm")).check(lnc=2)
    assert dl.status == "deadlock" and dl.deadlock and dl.exit_code == 2
    assert "barrier_one_core.nasm:13" in dl.deadlocks[0]
    out = nisa.assemble(planted("data_branch.nasm")).check()
    assert out.status == "outside" and out.exit_code == 6 and not out.limit
    assert "data_branch.nasm:5" in out.outside
    # a limit reached is outside too, and says which
    lim = nisa.assemble(kernel("cumsum.nasm"), ROWS=4096, COLS=65536).check(max_seconds=0.001)
    assert lim.status == "outside" and lim.limit and "time limit" in lim.outside


@pytest.mark.parametrize("bad", [dict(lnc=3), dict(ranks=0), dict(max_seconds=-1),
                                 dict(max_rounds=0), dict(target="trn9")])
def test_bad_options_are_input_errors(bad):
    with pytest.raises(nisa.InputError):
        nisa.assemble(kernel("cumsum.nasm")).check(**bad)


def test_run_warns_first_and_goes_on(rng):
    src = planted("reuse_across_iterations.nasm")
    k = nisa.assemble(src)
    x = rng.standard_normal((6, 128, 64)).astype(np.float32)
    with pytest.warns(nisa.CheckWarning) as w:
        r = k.run(x=x)
    assert r.status == "ok" and r.exit_code == 0  # the run's own result
    text = str(w[0].message)
    assert "did not prove the kernel: 1 unordered pair" in text
    assert src + ":19 reads" in text and src + ":17 writes" in text
    assert "add @wait(s_cmp >= max(0, i - 1))" in text
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        k.run(x=x, check=False)  # no check, no warning
        fixed = nisa.assemble(src, FIXED=1).run(x=x)  # proved: no warning
        np.testing.assert_array_equal(fixed.y, 2 * x)  # exact: one fp32 multiply by 2


def test_kernels_of_kernels_asm_run_without_a_warning(rng):
    x = rng.standard_normal((4, 8)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = nisa.run(kernel("cumsum.nasm"), dict(ROWS=4, COLS=8), x=x)
    np.testing.assert_allclose(r.y, np.cumsum(x, axis=1), rtol=1e-6, atol=1e-6)
