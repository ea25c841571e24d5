"""nisa.kernels_dir() and the kernels' library on the .include path (docs/python.md): in the
build tree the source tree's kernels_asm, $NISA_KERNELS_DIR overriding; a kernel outside it
that `.include`s "lib/..." assembles from there, and with neither an error naming the search.
(The installed wheel's and .deb's paths: Packaging.wheel and Packaging.deb.)"""
import os
import subprocess

import numpy as np
import pytest

import nisa
from conftest import KERNELS


def test_build_tree_kernels_dir_is_the_source_tree():
    assert nisa.kernels_dir() == KERNELS
    assert (nisa.kernels_dir() / "lib" / "fold.inc").is_file()


def test_a_kernel_elsewhere_includes_the_library(tmp_path):
    user = tmp_path / "argmax.nasm"
    user.write_text((KERNELS / "cascaded_max.nasm").read_text())
    x = np.random.default_rng(7).standard_normal((3, 500)).astype(np.float32)
    r = nisa.assemble(user, BXS=3, V=500, DT="fp32").run(lnc=1, x=x)
    assert np.array_equal(r.values.reshape(-1), x.max(axis=1))
    assert np.array_equal(r.indices.reshape(-1), x.argmax(axis=1))


def test_environment_overrides_and_an_empty_library_fails(tmp_path, monkeypatch):
    user = tmp_path / "argmax.nasm"
    user.write_text((KERNELS / "cascaded_max.nasm").read_text())
    empty = tmp_path / "nolib"
    empty.mkdir()
    monkeypatch.setenv("NISA_KERNELS_DIR", str(empty))
    assert nisa.kernels_dir() == empty
    with pytest.raises(nisa.AssemblyError) as e:
        nisa.assemble(user)
    assert "cannot find include file 'lib/" in e.value.message
    assert str(empty) in e.value.message


def test_version_is_the_commands():
    out = subprocess.run([os.environ["NISA_BINARY"], "--version"], capture_output=True,
                         text=True, check=True).stdout
    assert out == f"nisa {nisa.__version__}\n"
