#!/usr/bin/python3
"""Do two `nisa` binaries assemble alike? (issue 36: a faster assembler must not change output.)

Runs `nisa asm` of both binaries over

  * every kernel of kernels_asm/ at its defaults, at --target trn1 / trn2 / trn3,
  * every kernel at its bench shape (the -D values of bench/torch_compare.py's rows; needs
    numpy and torch to build the rows, else this part is skipped with a note),
  * every tests/**/*.nasm (including the ones that must fail), with text and with JSON
    diagnostics,

and compares the object's bytes, stderr and the exit code of each case.

  /usr/bin/python3 bench/asm_identical.py --a /work/main/build/cli/nisa --b build/cli/nisa
      [--skip-bytes OFFSET:LEN ...]   # bytes of the object not compared (a changed checksum;
                                      # a negative OFFSET counts from the end)

Against a nisa that writes object version 2 (main before issue 36's version 3, whose checksum is
XXH64 instead of FNV-1a): --skip-bytes 4:1 --skip-bytes=-8:8 (the version and the checksum).

Exit 0 when every case is identical, 1 otherwise (the differing cases are listed).
"""

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
KDIR = os.path.join(ROOT, "kernels_asm")


def bench_shapes():
    """[(row name, kernel file, {define: value})] of bench/torch_compare.py, or None."""
    sys.path.insert(0, HERE)
    try:
        import numpy
        import torch
        import torch.nn.functional as F
        import torch_compare as tc
    except ImportError:
        return None
    tc.bind_modules(numpy, torch, F)
    out = []
    for name, make in tc.ROWS:
        row = make(numpy.random.default_rng(0))
        out.append((name, row.kernel, dict(row.defines)))
    return out


def cases():
    """[(label, args after `nisa asm`)]: the source path first."""
    cs = []
    for k in sorted(glob.glob(os.path.join(KDIR, "*.nasm"))):
        rel = os.path.relpath(k, ROOT)
        cs.append((rel, [rel]))
        for t in ("trn1", "trn2", "trn3"):
            cs.append((rel + " --target " + t, [rel, "--target", t]))
    shapes = bench_shapes()
    if shapes is None:
        print("asm_identical: numpy/torch missing: the bench shapes are not compared")
    else:
        for name, kernel, defs in shapes:
            args = [os.path.join("kernels_asm", kernel)]
            for d, v in defs.items():
                args += ["-D", "%s=%s" % (d, v)]
            cs.append(("bench " + name, args))
    for t in sorted(glob.glob(os.path.join(ROOT, "tests", "**", "*.nasm"), recursive=True)):
        rel = os.path.relpath(t, ROOT)
        cs.append((rel, [rel]))
        cs.append((rel + " (json)", [rel, "--diagnostics-format", "json"]))
    return cs


def run(nisa, args, out):
    r = subprocess.run([nisa, "asm"] + args + ["-o", out], cwd=ROOT, capture_output=True)
    data = None
    if os.path.exists(out):
        with open(out, "rb") as f:
            data = f.read()
        os.remove(out)
    # The output path differs between the two runs: spell it alike in the messages.
    err = r.stderr.replace(os.fsencode(out), b"OUT.nbin")
    return r.returncode, err, data


def masked(data, skips):
    if data is None:
        return None
    b = bytearray(data)
    for off, n in skips:
        if off < 0:
            off += len(b)
        off = max(0, off)
        b[off:off + n] = bytes(min(n, max(0, len(b) - off)))
    return bytes(b)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", default="/work/main/build/cli/nisa", help="reference nisa")
    ap.add_argument("--b", default=os.path.join(ROOT, "build", "cli", "nisa"), help="nisa tested")
    ap.add_argument("--skip-bytes", action="append", default=[], metavar="OFFSET:LEN",
                    help="object bytes not compared (e.g. a checksum whose algorithm changed)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every case")
    args = ap.parse_args()
    skips = [tuple(int(x, 0) for x in s.split(":")) for s in args.skip_bytes]
    a, b = os.path.abspath(args.a), os.path.abspath(args.b)
    work = tempfile.mkdtemp(prefix="nisa_asm_identical_")
    bad, n, fails = [], 0, 0
    try:
        for label, cargs in cases():
            n += 1
            ra = run(a, cargs, os.path.join(work, "a.nbin"))
            rb = run(b, cargs, os.path.join(work, "b.nbin"))
            fails += ra[0] != 0
            why = []
            if ra[0] != rb[0]:
                why.append("exit %d vs %d" % (ra[0], rb[0]))
            if ra[1] != rb[1]:
                why.append("stderr differs")
            if (ra[2] is None) != (rb[2] is None):
                why.append("object written by one only")
            elif masked(ra[2], skips) != masked(rb[2], skips):
                why.append("object bytes differ (%d vs %d bytes)" % (len(ra[2]), len(rb[2])))
            if why:
                bad.append((label, why, ra, rb))
            if args.verbose:
                print("%-70s %s" % (label, "; ".join(why) if why else "same"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for label, why, ra, rb in bad:
        print("DIFF %s: %s" % (label, "; ".join(why)))
        if ra[1] != rb[1]:
            print("  a stderr: %r\n  b stderr: %r" % (ra[1][:600], rb[1][:600]))
    print("asm_identical: %d cases (%d failing alike as expected or not), %d differ" %
          (n, fails, len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
