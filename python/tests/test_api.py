"""The module's API: assembly errors, typed run errors with the command's report, input
checks, dtypes, per-rank arrays, stats, and agreement with `nisa run`."""
import json
import subprocess
import threading
import time

import numpy as np
import pytest

import nisa
from conftest import NISA, SRC, kernel

DEBUG = SRC / "tests" / "debugger"


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_assembly_error_in_macro(tmp_path):
    path = write(tmp_path, "bad.nasm", ".kernel bad\n"
                 ".sbuf x : fp32[4, 4]\n"
                 ".macro m\n"
                 "  dve.memset x, nosuch\n"
                 ".endm\n"
                 "  m\n")
    with pytest.raises(nisa.AssemblyError) as ei:
        nisa.assemble(path)
    e = ei.value
    assert e.file == path and e.line == 4 and e.column > 1
    assert "nosuch" in e.message
    assert e.expansion and e.expansion[0]["kind"] == "macro" and e.expansion[0]["what"] == "m"
    assert e.expansion[0]["line"] == 6
    # str() is what `nisa asm` prints.
    cli = subprocess.run([NISA, "asm", path, "-o", str(tmp_path / "bad.nbin")],
                         capture_output=True, text=True)
    assert cli.returncode == 1 and str(e) == cli.stderr.rstrip("\n")


def test_assemble_params_and_target():
    k = nisa.assemble(kernel("cumsum.nasm"), target="trn1", ROWS=3, COLS=5, DT="bf16")
    assert k.target == "trn1" and k.name == "cumsum"
    x = next(t for t in k.tensors if t["name"] == "x")
    assert x["shape"] == (3, 5) and x["dtype"] == "bf16" and x["role"] == "input"
    with pytest.raises(nisa.AssemblyError) as ei:
        nisa.assemble(kernel("cumsum.nasm"), DT="int8")
    assert "DT must be fp32 or bf16" in ei.value.message
    with pytest.raises(nisa.InputError):
        nisa.assemble(kernel("cumsum.nasm"), target="trn9")


def test_deadlock_error():
    k = nisa.assemble(str(DEBUG / "deadlock.nasm"))
    x = np.zeros((128, 64), np.float32)
    with pytest.raises(nisa.DeadlockError) as ei:
        k.run(x=x)
    e = ei.value
    assert e.exit_code == 2 and "deadlock" in e.report.lower()
    assert e.result.stats["status"] == "deadlock" and e.result.outputs == {}
    # The same report as `nisa run`.
    cli = subprocess.run([NISA, "run", str(DEBUG / "deadlock.nasm"), "--in", "x=/dev/null"],
                         capture_output=True, text=True)
    assert cli.returncode == 1  # /dev/null is no .npy: checked before the run
    r = k.run(x=x, raise_on_error=False)
    assert r.status == "deadlock" and r.exit_code == 2


def npy(tmp_path, name, a):
    p = tmp_path / name
    np.save(p, a)
    return str(p)


def test_fault_error_report_matches_cli(tmp_path):
    x = np.zeros((128, 64), np.float32)
    with pytest.raises(nisa.FaultError) as ei:
        nisa.run(str(DEBUG / "fault.nasm"), x=x)
    assert ei.value.exit_code == 3
    cli = subprocess.run([NISA, "run", str(DEBUG / "fault.nasm"), "--in",
                          "x=" + npy(tmp_path, "x.npy", x)], capture_output=True, text=True)
    assert cli.returncode == 3
    assert ei.value.report in cli.stderr and ei.value.report.strip()


def test_race_error_report_matches_cli(tmp_path):
    path = str(DEBUG / "cumsum_missing_wait.nasm")
    k = nisa.assemble(path, ROWS=128, COLS=4100)
    x = np.ones((128, 4100), np.float32)
    r = k.run(x=x)  # no checking: a clean run
    assert r.status == "ok"
    with pytest.raises(nisa.RaceError) as ei:
        k.run(check_races=True, x=x)
    e = ei.value
    assert e.exit_code == 4 and e.result.races > 0 and "race(s) found" in e.report
    cli = subprocess.run([NISA, "run", path, "-D", "ROWS=128", "-D", "COLS=4100", "--check-races",
                          "--in", "x=" + npy(tmp_path, "x.npy", x)],
                         capture_output=True, text=True)
    assert cli.returncode == 4
    assert e.report in cli.stderr


def test_budget_error(tmp_path):
    path = write(tmp_path, "loop.nasm", ".kernel loop\ntop: dve.br top\n")
    with pytest.raises(nisa.BudgetError) as ei:
        nisa.assemble(path).run(max_steps=1000)
    assert ei.value.exit_code == 5


def test_input_errors():
    k = nisa.assemble(kernel("cumsum.nasm"), ROWS=4, COLS=8)
    good = np.zeros((4, 8), np.float32)
    with pytest.raises(nisa.InputError, match="not bound"):
        k.run()
    with pytest.raises(nisa.InputError, match="no tensor 'z'"):
        k.run(x=good, z=good)
    with pytest.raises(nisa.InputError, match="not an input"):
        k.run(x=good, y=good)
    with pytest.raises(nisa.InputError, match=r"shape \(8, 4\) given"):
        k.run(x=good.T.copy())
    with pytest.raises(nisa.InputError, match="dtype float64 given"):
        k.run(x=good.astype(np.float64))
    with pytest.raises(nisa.InputError, match="unknown schedule"):
        k.run(x=good, schedule="lifo")
    with pytest.raises(nisa.InputError, match="lnc=3"):
        k.run(x=good, lnc=3)
    with pytest.raises(nisa.InputError, match="fetch: the kernel has no tensor 'q'"):
        k.run(x=good, fetch=["q"])
    with pytest.raises(nisa.InputError, match="fetch: tensor 'carry' is in sbuf"):
        k.run(x=good, fetch=["carry"])
    assert np.array_equal(k.run(x=good, fetch=["x"]).x, good)


def test_non_contiguous_input(rng):
    big = rng.standard_normal((8, 8)).astype(np.float32)
    x = big[::2, :]  # a strided view
    r = nisa.run(kernel("cumsum.nasm"), dict(ROWS=4, COLS=8), x=x)
    np.testing.assert_allclose(r.y, np.cumsum(x, axis=1), rtol=1e-5, atol=1e-5)


def test_threads_same_results(rng):
    # Two cores (--lnc 2) and large rows: the cores and the row ranges go to host threads.
    x = rng.standard_normal((6, 5000)).astype(np.float32)
    k = nisa.assemble(kernel("cascaded_max.nasm"), BXS=6, V=5000)
    one = k.run(lnc=2, threads=1, x=x)
    four = k.run(lnc=2, threads=4, x=x)
    np.testing.assert_array_equal(one.values[:, 0], x.max(axis=1))
    np.testing.assert_array_equal(one.indices[:, 0], x.argmax(axis=1))
    for name in ("values", "indices"):
        np.testing.assert_array_equal(getattr(one, name), getattr(four, name))
    assert one.stats["makespan_ns"] == four.stats["makespan_ns"]
    with pytest.raises(nisa.InputError, match="threads=-1"):
        k.run(lnc=2, threads=-1, x=x)


def test_cost_scale(tmp_path, rng):
    """cost_scale={unit: factor} is `nisa run --cost-scale UNIT=F`: the same outputs, the same
    statistics as the command, a shorter makespan; the machine of another scale is not reused."""
    x = rng.standard_normal((6, 3000)).astype(np.float32)
    k = nisa.assemble(kernel("cumsum.nasm"), ROWS=6, COLS=3000)
    base = k.run(x=x)
    assert "cost_scale" not in base.stats
    fast = k.run(x=x, cost_scale={"dve": 2, "dma": 2.0})
    assert np.array_equal(fast.y, base.y)
    assert fast.stats["cost_scale"] == {"dve": 2.0, "dma": 2.0}
    assert fast.stats["makespan_ticks"] < base.stats["makespan_ticks"]
    dve = [e for e in fast.stats["cores"][0]["engines"] if e["engine"] == "dve"][0]
    dve0 = [e for e in base.stats["cores"][0]["engines"] if e["engine"] == "dve"][0]
    assert dve0["busy_ticks"] / 2 <= dve["busy_ticks"] <= dve0["busy_ticks"] / 2 + dve0["insts"]
    assert k.run(x=x).stats["makespan_ticks"] == base.stats["makespan_ticks"]
    assert nisa.cost_units == ("pe", "act", "dve", "pool", "sp", "cc", "dma")
    ones = k.run(x=x, cost_scale={u: 1 for u in nisa.cost_units})
    assert ones.stats["makespan_ticks"] == base.stats["makespan_ticks"]
    sj = tmp_path / "s.json"
    cli = subprocess.run([NISA, "run", kernel("cumsum.nasm"), "-D", "ROWS=6", "-D", "COLS=3000",
                          "--in", "x=" + npy(tmp_path, "x.npy", x), "--cost-scale", "dve=2",
                          "--cost-scale", "dma=2", "--stats-json", str(sj)],
                         capture_output=True, text=True)
    assert cli.returncode == 0, cli.stderr
    s = json.loads(sj.read_text())
    for key in ("makespan_ticks", "cost_scale", "cores"):
        assert s[key] == fast.stats[key]
    with pytest.raises(nisa.InputError, match="unknown unit 'pol'; did you mean 'pool'"):
        k.run(x=x, cost_scale={"pol": 2})
    for bad in (0, -1, float("nan"), float("inf"), 1e-9, 10**400):
        with pytest.raises(nisa.InputError, match="expected a finite factor from 0.001"):
            k.run(x=x, cost_scale={"pe": bad})
    with pytest.raises(nisa.InputError, match=r"cost_scale\['pe'\]: expected a number, not str"):
        k.run(x=x, cost_scale={"pe": "2"})
    with pytest.raises(nisa.InputError, match="cost_scale: expected a dict"):
        k.run(x=x, cost_scale=[("pe", 2)])
    assert np.array_equal(nisa.run(kernel("cumsum.nasm"), dict(ROWS=6, COLS=3000),
                                   cost_scale={"dve": 0.5}, x=x).y, base.y)


def test_bf16_dtypes(rng):
    k = nisa.assemble(kernel("cumsum.nasm"), ROWS=2, COLS=4, DT="bf16")
    x = np.array([[1, 2, 3, 4], [0.5, 0.25, -1, 8]], np.float32)
    bits = (x.view(np.uint32) >> 16).astype(np.uint16)  # exact in bf16
    r = k.run(x=bits)
    want = (np.cumsum(x, axis=1).view(np.uint32) >> 16).astype(np.uint16)
    if nisa.bf16_dtype is None:
        assert r.y.dtype == np.uint16
        y = r.y
    else:
        assert r.y.dtype == nisa.bf16_dtype
        y = r.y.view(np.uint16)
        assert np.array_equal(k.run(x=bits.view(nisa.bf16_dtype)).y.view(np.uint16), want)
    assert np.array_equal(y, want)
    with pytest.raises(nisa.InputError, match="uint16 \\(raw bits\\) or ml_dtypes.bfloat16"):
        k.run(x=x)  # fp32 where bf16 is declared
    with pytest.raises(nisa.InputError):
        k.run(x=bits.view(np.int16))


def test_fp8_as_uint8(tmp_path):
    path = write(tmp_path, "f8.nasm", ".kernel f8\n"
                 ".hbm x : fp8e4m3[4, 8] input\n"
                 ".hbm y : fp8e4m3[4, 8] output\n"
                 ".sbuf t : fp8e4m3[4, 8]\n"
                 ".sem s\n"
                 "  sp.dma q0, t, x @signal(s)\n"
                 "  sp.dma q1, y, t @wait(s >= 1)\n")
    x = np.arange(32, dtype=np.uint8).reshape(4, 8)
    r = nisa.run(path, x=x)
    assert r.y.dtype == np.uint8 and np.array_equal(r.y, x)
    with pytest.raises(nisa.InputError, match="uint8 \\(raw bits\\)"):
        nisa.run(path, x=x.astype(np.int8))


def test_per_rank_inputs_and_broadcast(rng):
    TP, ROWS, COLS = 2, 4, 8
    x = rng.standard_normal((ROWS, COLS)).astype(np.float32)
    # One array for every rank, or [ranks, ...] per rank; outputs always carry the rank axis.
    r1 = nisa.run(kernel("sb2sb_allgather.nasm"), dict(ROWS=ROWS, COLS=COLS, TP=TP, DT="fp32"),
                  ranks=TP, inp=x)
    assert r1.out.shape == (TP, ROWS, COLS * TP)
    assert np.array_equal(r1.out[1], np.concatenate([x, x], axis=1))
    assert len(r1.stats["cores"]) == TP and r1.stats["ranks"] == TP


def test_stats_match_cli(tmp_path, rng):
    x = rng.standard_normal((6, 40)).astype(np.float32)
    r = nisa.run(kernel("cumsum.nasm"), dict(ROWS=6, COLS=40), lnc=1, x=x)
    sj = tmp_path / "s.json"
    yp = tmp_path / "y.npy"
    cli = subprocess.run([NISA, "run", kernel("cumsum.nasm"), "-D", "ROWS=6", "-D", "COLS=40",
                          "--in", "x=" + npy(tmp_path, "x.npy", x), "--out", f"y={yp}",
                          "--stats-json", str(sj)], capture_output=True, text=True)
    assert cli.returncode == 0, cli.stderr
    s = json.loads(sj.read_text())
    for key in ("instructions", "makespan_ticks", "target", "ranks", "lnc"):
        assert s[key] == r.stats[key]
    assert [c["engines"] for c in s["cores"]][0][0]["insts"] == r.stats["cores"][0]["engines"][0]["insts"]
    assert np.array_equal(np.load(yp), r.y)


def test_random_schedule_same_result(rng):
    x = rng.standard_normal((5, 3000)).astype(np.float32)
    k = nisa.assemble(kernel("cumsum_double_buffered.nasm"), ROWS=5, COLS=3000)
    a = k.run(x=x)
    b = k.run(schedule="random", seed=7, check_races=True, x=x)
    assert np.array_equal(a.y, b.y)


def test_gil_released(rng):
    """Another Python thread runs while the machine does."""
    # Long enough (~0.1 s) that 10 ticks inside it mean the GIL was free: the 1024-row run
    # of before fell under the 30 ms this needs once the scan got faster.
    x = rng.standard_normal((4096, 8192)).astype(np.float32)
    k = nisa.assemble(kernel("cumsum.nasm"), ROWS=4096, COLS=8192)
    ticks = []
    done = threading.Event()

    def ticker():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    t = threading.Thread(target=ticker)
    t.start()
    t0 = time.perf_counter()
    try:
        # One host thread: the other core is left to the ticker (threads=0 would use both).
        k.run(check_races=True, threads=1, x=x)
    finally:
        t1 = time.perf_counter()
        done.set()
        t.join()
    inside = [v for v in ticks if t0 < v < t1]
    assert t1 - t0 > 0.03 and len(inside) >= 10, (t1 - t0, len(inside))


def test_a_kernel_reuses_its_machine_and_gives_the_same_bits(rng):
    """Kernel.run resets and reuses the machine of the kernel's last run (same options): a run
    after others gives what a fresh kernel gives, bit for bit, outputs and statistics alike,
    whatever ran on the machine in between (other inputs, other options)."""
    path = kernel("cumsum.nasm")
    a = rng.standard_normal((130, 2100)).astype(np.float32)
    b = rng.standard_normal((130, 2100)).astype(np.float32) * 100
    k = nisa.assemble(path, ROWS=130, COLS=2100)

    def stats(r):  # the host's wall time is the one field that may differ
        return {n: v for n, v in r.stats.items() if "wall" not in n}

    first = k.run(x=a)
    second = k.run(x=b)
    k.run(ranks=2, x=b)  # other options: a machine of their own
    again = k.run(x=a)
    fresh_b = nisa.assemble(path, ROWS=130, COLS=2100).run(x=b)
    assert first.y.tobytes() == again.y.tobytes()
    assert stats(first) == stats(again)
    assert second.y.tobytes() == fresh_b.y.tobytes()
    assert stats(second) == stats(fresh_b)
    np.testing.assert_allclose(again.y, np.cumsum(a, axis=1, dtype=np.float64), rtol=1e-4,
                               atol=1e-3)
