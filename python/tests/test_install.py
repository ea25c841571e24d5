"""`cmake --install` puts the module (and the command) where the documented PYTHONPATH finds
them, and the installed module works outside the build tree."""
import os
import subprocess
import sys

import pytest

BUILD = os.environ.get("NISA_BUILD_DIR")
CMAKE = os.environ.get("NISA_CMAKE", "cmake")


def test_install(tmp_path):
    assert BUILD, "run through ctest (NISA_BUILD_DIR)"
    subprocess.run([CMAKE, "--install", BUILD, "--prefix", str(tmp_path)], check=True,
                   capture_output=True)
    site = tmp_path / "lib" / "python3" / "dist-packages"
    assert (site / "nisa" / "__init__.py").exists() and (tmp_path / "bin" / "nisa").exists()
    env = dict(os.environ, PYTHONPATH=str(site))
    code = ("import nisa, numpy as np, os, sys; src = os.environ['NISA_SOURCE_DIR'];"
            "r = nisa.run(src + '/kernels_asm/cumsum.nasm', dict(ROWS=2, COLS=3),"
            " x=np.ones((2, 3), np.float32)); print(nisa.__file__); print(r.y.tolist())")
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == [str(site / "nisa" / "__init__.py"),
                                     "[[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]"]
    v = subprocess.run([str(tmp_path / "bin" / "nisa"), "--version"], capture_output=True,
                       text=True)
    assert v.returncode == 0 and v.stdout.startswith("nisa ")
