#!/usr/bin/env python3
"""Packaging.wheel: wheel.py SOURCE_DIR BUILD_DIR VERSION [MPIEXEC].

Builds the wheel (`python3 -m build --no-isolation --wheel`, setup.py packing BUILD_DIR's
targets), installs it into a fresh `python3 -m venv --system-site-packages` in a temporary
folder, and from a folder outside the source tree, with no PYTHONPATH and no NISA_* variable:
  * the installed module imports from the venv, states the version, and its kernels_dir() is
    the venv's share/nisa/kernels_asm;
  * a kernel copied out of kernels_asm (without its lib/) assembles there, its `.include
    "lib/..."` found in the installed library, by the module and by the installed command;
  * both give the build tree's bits (its module, its nisa) and the argmax computed here;
  * under mpirun (when there is one), the installed nisa loads the installed MPI module and
    gives the one-process bits.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np


def fail(msg):
    sys.exit(f"wheel: {msg}")


def run(cmd, **kw):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if p.returncode != 0:
        fail(f"`{' '.join(map(str, cmd))}` failed (exit {p.returncode}):\n{p.stdout}{p.stderr}")
    return p.stdout


def clean_env(**extra):
    """The environment of a user's shell: nothing pointing into the source or build tree."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NISA_") and k != "PYTHONPATH"}
    env.update(extra)
    return env


# Runs in the venv's python, or with PYTHONPATH=BUILD/python: assembles KERNEL, runs it on x.npy
# and writes values.npy / indices.npy into OUT; prints where nisa and its kernels are.
MODULE_RUN = """
import sys, numpy as np, nisa
kernel, out = sys.argv[1], sys.argv[2]
x = np.load(out + "/../x.npy")
r = nisa.assemble(kernel, BXS=x.shape[0], V=x.shape[1], DT="fp32").run(lnc=2, x=x)
np.save(out + "/values.npy", r.values)
np.save(out + "/indices.npy", r.indices)
print(nisa.__file__)
print(nisa.__version__)
print(nisa.kernels_dir())
"""


def main(src, build, version, mpiexec):
    src, build = Path(src).resolve(), Path(build).resolve()
    with tempfile.TemporaryDirectory(prefix="nisa-wheel-") as tmp:
        tmp = Path(tmp)
        dist = tmp / "dist"
        run([sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir", dist, src],
            env=dict(clean_env(), NISA_BUILD_DIR=str(build)), cwd=tmp)
        wheels = list(dist.glob("*.whl"))
        if len(wheels) != 1 or not re.fullmatch(
                rf"nisa-{re.escape(version)}-cp3\d+-cp3\d+-linux_x86_64\.whl", wheels[0].name):
            fail(f"expected one nisa-{version}-cp3X-cp3X-linux_x86_64.whl, got "
                 f"{[w.name for w in wheels]}")
        with zipfile.ZipFile(wheels[0]) as z:
            names = set(z.namelist())
            meta = z.read(f"nisa-{version}.dist-info/METADATA").decode()
        if f"\nVersion: {version}\n" not in meta:
            fail(f"the wheel's METADATA does not state Version: {version}")
        data = f"nisa-{version}.data/"
        for want in ("nisa/__init__.py", data + "scripts/nisa",
                     data + "data/share/nisa/kernels_asm/lib/fold.inc",
                     data + "data/share/nisa/kernels_asm/topk.nasm"):
            if want not in names:
                fail(f"the wheel has no {want}")
        if not any(re.fullmatch(r"nisa/_nisa\.cpython-[\w-]+\.so", n) for n in names):
            fail("the wheel has no extension nisa/_nisa*.so")
        for n in names:  # nothing of the tests or benchmarks
            if re.search(r"(^|/)(tests?|bench)(/|_)", n):
                fail(f"the wheel holds {n}")

        venv = tmp / "venv"
        run([sys.executable, "-m", "venv", "--system-site-packages", venv])
        py, nisa = venv / "bin/python", venv / "bin/nisa"
        run([py, "-m", "pip", "install", "--no-index", "--no-cache-dir", "--quiet", wheels[0]],
            env=clean_env(), cwd=tmp)
        if run([nisa, "--version"], env=clean_env(), cwd=tmp) != f"nisa {version}\n":
            fail("the installed nisa --version does not state " + version)

        # A user's folder: a kernel that .includes "lib/lnc.inc" and "lib/fold.inc", no lib/.
        work = tmp / "work"
        work.mkdir()
        kernel = work / "argmax.nasm"
        shutil.copyfile(src / "kernels_asm/cascaded_max.nasm", kernel)
        rng = np.random.default_rng(20261204)
        x = rng.standard_normal((6, 3000), dtype=np.float32)
        np.save(work / "x.npy", x)

        # The installed module, then the build tree's, on the same kernel and input.
        outs = {}
        for name, env in (("venv", clean_env()),
                          ("tree", clean_env(PYTHONPATH=str(build / "python")))):
            out = work / name
            out.mkdir()
            exe = py if name == "venv" else sys.executable
            got = run([exe, "-c", MODULE_RUN, kernel, out], env=env, cwd=work).splitlines()
            outs[name] = (out, got)
        _, got = outs["venv"]
        site = next(venv.glob("lib/python3*/site-packages"))
        want = [str(site / "nisa/__init__.py"), version, str(venv / "share/nisa/kernels_asm")]
        if got != want:
            fail(f"the installed module printed {got}, want {want}")
        values = np.load(outs["venv"][0] / "values.npy").reshape(-1)
        indices = np.load(outs["venv"][0] / "indices.npy").reshape(-1)
        if not (np.array_equal(values, x.max(axis=1)) and
                np.array_equal(indices, x.argmax(axis=1).astype(np.uint32))):
            fail(f"argmax of the installed module: {values} {indices}, want {x.max(axis=1)} "
                 f"{x.argmax(axis=1)}")
        for f in ("values.npy", "indices.npy"):
            if (outs["venv"][0] / f).read_bytes() != (outs["tree"][0] / f).read_bytes():
                fail(f"{f}: the installed module's bits differ from the build tree's")

        # The installed command against the build tree's, on the same user kernel.
        def cli(binary, out, includes=()):
            out.mkdir()
            run([binary, "run", kernel, *includes, "-D", "BXS=6", "-D", "V=3000", "--lnc", "2",
                 "--in", f"x={work / 'x.npy'}", "--out", f"values={out / 'values.npy'}",
                 "--out", f"indices={out / 'indices.npy'}"], env=clean_env(), cwd=work)
            return [(out / f).read_bytes() for f in ("values.npy", "indices.npy")]

        installed = cli(nisa, work / "cli_venv")
        # (A build tree's nisa has no library beside it: -I names the source tree's.)
        if installed != cli(build / "cli/nisa", work / "cli_tree", ["-I", src / "kernels_asm"]):
            fail("the installed nisa's outputs differ from the build tree's nisa's")
        if installed != [(outs["venv"][0] / f).read_bytes() for f in ("values.npy", "indices.npy")]:
            fail("the installed nisa's outputs differ from the installed module's")

        # Under mpirun the installed nisa finds the installed MPI module (never the build
        # tree's: it looks beside itself), and two processes give the bits of one.
        if mpiexec and (venv / "lib/nisa/libnisa_mpi.so").exists():
            os.environ.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
            ag = src / "kernels_asm/sb2sb_allgather.nasm"
            inp = rng.standard_normal((2, 16, 64), dtype=np.float32)  # one slice per rank
            np.save(work / "inp.npy", inp)
            got = {}
            for name, launcher in (("one", ()), ("mpi", (mpiexec, "--oversubscribe", "-np", "2"))):
                out = work / f"ag_{name}"
                out.mkdir()
                run([*launcher, nisa, "run", ag, "-D", "ROWS=16", "-D", "COLS=64", "-D", "TP=2",
                     "-D", "DT=fp32", "--in", f"inp={work / 'inp.npy'}", "--out",
                     f"out={out / 'out.npy'}"], env=clean_env(), cwd=work)
                got[name] = (out / "out.npy").read_bytes()
            if got["one"] != got["mpi"]:
                fail("mpirun -np 2 with the installed nisa differs from one process")
            block = np.concatenate([inp[0], inp[1]], axis=1)  # every rank gets every block
            if not np.array_equal(np.load(work / "ag_mpi/out.npy"), np.stack([block, block])):
                fail("the allgather under mpirun did not give every rank's block")
        print(f"wheel: {wheels[0].name} installed and checked")


if __name__ == "__main__":
    if len(sys.argv) not in (4, 5):
        sys.exit("usage: wheel.py SOURCE_DIR BUILD_DIR VERSION [MPIEXEC]")
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) == 5 else "")
