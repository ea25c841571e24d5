"""Kernel.run(profile=True) (docs/profile.md): the same profile as `nisa run --profile-json`,
a path that tiles the makespan, what-if makespans equal to runs with cost_scale, and the run's
outputs unchanged by the profile's re-runs."""
import json
import subprocess

import numpy as np

import nisa
from conftest import NISA, kernel


def test_profile_matches_the_command(tmp_path, rng):
    x = rng.standard_normal((300, 5000)).astype(np.float32)
    k = nisa.assemble(kernel("cumsum_double_buffered.nasm"), ROWS=300, COLS=5000)
    plain = k.run(x=x)
    assert plain.profile is None
    r = k.run(x=x, profile=True)
    assert np.array_equal(r.y, plain.y)
    p = r.profile
    assert p["schema"] == "nisa-profile/1" and p["status"] == "ok"
    assert p["makespan_ticks"] == plain.stats["makespan_ticks"] == r.stats["makespan_ticks"]
    t = 0
    for s in p["critical_path"]:
        assert s["start_ticks"] == t and s["end_ticks"] > t
        t = s["end_ticks"]
    assert t == p["makespan_ticks"]
    assert sum(l["critical_ticks"] for l in p["lines"]) == p["makespan_ticks"]
    assert "critical path:" in r.profile_report
    # Each what-if entry is a run with that unit twice as fast.
    assert [w["unit"] for w in p["what_if"]] == ["pe", "act", "dve", "pool", "sp", "dma", "cc"]
    for w in p["what_if"]:
        again = k.run(x=x, cost_scale={w["unit"]: 2})
        assert w["makespan_ticks"] == again.stats["makespan_ticks"], w
    # The command writes the same document.
    xp = tmp_path / "x.npy"
    np.save(xp, x)
    pj = tmp_path / "p.json"
    cli = subprocess.run([NISA, "run", kernel("cumsum_double_buffered.nasm"), "-D", "ROWS=300",
                          "-D", "COLS=5000", "--in", f"x={xp}", "--profile-json", str(pj)],
                         capture_output=True, text=True)
    assert cli.returncode == 0, cli.stderr
    assert json.loads(pj.read_text()) == p


def test_profile_of_a_deadlock(tmp_path):
    path = tmp_path / "dl.nasm"
    path.write_text(".kernel dl\n.sbuf a : fp32[4, 4]\n.sem s\n"
                    "  dve.memset a, 1.0\n  act.copy a, a @wait(s >= 1)\n")
    r = nisa.assemble(str(path)).run(profile=True, raise_on_error=False)
    assert r.status == "deadlock"
    p = r.profile
    assert p["status"] == "deadlock" and p["critical_path"]
    assert p["critical_path"][-1]["end_ticks"] == p["makespan_ticks"]


def test_profile_of_a_fault(rng):
    from conftest import SRC
    x = rng.standard_normal((128, 64)).astype(np.float32)
    k = nisa.assemble(str(SRC / "tests" / "debugger" / "fault.nasm"))
    r = k.run(x=x, profile=True, raise_on_error=False)
    assert r.status == "fault"
    p = r.profile
    assert p["status"] == "fault" and p["makespan_ticks"] == r.stats["makespan_ticks"] > 0
    assert p["critical_path"][0]["start_ticks"] == 0
    assert p["critical_path"][-1]["end_ticks"] == p["makespan_ticks"]
