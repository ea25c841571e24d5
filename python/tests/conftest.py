"""Shared helpers of the nisa pytest suite (run by CTest: `make test`)."""
import os
import pathlib

import numpy as np
import pytest

SRC = pathlib.Path(os.environ.get("NISA_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
KERNELS = SRC / "kernels_asm"
NISA = os.environ.get("NISA_BINARY", str(SRC / "build" / "cli" / "nisa"))


def kernel(name):
    return str(KERNELS / name)


def f32_to_bf16(a):
    """float32 -> bf16 bits (uint16), round to nearest even (as the machine rounds)."""
    b = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
    return b.astype(np.uint16)


def bf16_to_f32(u):
    return (np.asarray(u, np.uint16).astype(np.uint32) << 16).view(np.float32)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
