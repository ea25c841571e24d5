#!/usr/bin/env python3
"""Seeded inputs for bench/mpi/run.sh: every input tensor of a kernel as a .npy file.

usage: inputs.py BUILD KERNEL RANKS OUTDIR [NAME=VALUE ...] [--shared NAME,NAME]
Tensors named in --shared are written once in their declared shape (every rank reads the same
array); the others as [RANKS, ...shape] (rank r reads slice r). Values follow the transformer's
needs where its tensors are named (mask, pos, cos / sin, norm weights), else uniform bf16 /
fp32 in [-a, a] from a seeded generator, written in chunks (never a whole array in memory).
Prints one `--in NAME=PATH` per tensor.
"""
import os
import sys

import numpy as np


def main():
    args = sys.argv[1:]
    shared = set()
    if "--shared" in args:
        i = args.index("--shared")
        shared = set(args[i + 1].split(","))
        del args[i:i + 2]
    build, kernel, ranks, outdir = args[0], args[1], int(args[2]), args[3]
    defines = dict(a.split("=", 1) for a in args[4:])
    sys.path.insert(0, os.path.join(build, "python"))
    import nisa  # noqa: E402  (the build's module)

    k = nisa.assemble(kernel, target="trn2", **defines)
    os.makedirs(outdir, exist_ok=True)
    ctx = int(defines.get("S_CTX", "2048"))
    for n, t in enumerate(t for t in k.tensors if t["role"] == "input"):
        name, shape, dt = t["name"], tuple(t["shape"]), t["dtype"]
        full = shape if name in shared or ranks == 1 else (ranks,) + shape
        npdt = {"bf16": np.uint16, "fp32": np.float32, "uint8": np.uint8, "uint32": np.uint32,
                "int32": np.int32}[dt]
        path = os.path.join(outdir, name + ".npy")
        a = np.lib.format.open_memmap(path, mode="w+", dtype=npdt, shape=full)
        flat = a.reshape(-1)
        rng = np.random.default_rng(1000 + n)
        chunk = 1 << 24
        for at in range(0, flat.size, chunk):
            m = min(chunk, flat.size - at)
            idx = np.arange(at, at + m)
            if name == "mask":
                v = (idx % ctx < ctx * 3 // 4).astype(np.uint8)
            elif name == "pos":
                v = (ctx * 3 // 4 + 8 * (idx % shape[0])).astype(np.uint32)
            elif name in ("cos", "sin"):
                v = (np.cos if name == "cos" else np.sin)(0.01 * idx).astype(np.float32)
            elif dt in ("bf16", "fp32"):
                scale = 0.0 if name.endswith("norm_w") else (1.7 if name in ("x", "k_cache", "v_cache", "lhs") else 0.02)
                f = (rng.uniform(-1, 1, m).astype(np.float32) * scale + (1.0 if name.endswith("norm_w") else 0.0)).astype(np.float32)
                v = (f.view(np.uint32) >> 16).astype(np.uint16) if dt == "bf16" else f
            else:
                v = rng.integers(0, 2, m).astype(npdt)
            flat[at:at + m] = v
        a.flush()
        del a
        print("--in %s=%s" % (name, path))


if __name__ == "__main__":
    main()
