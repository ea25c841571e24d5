#!/usr/bin/env python3
"""Packaging.deb: deb.py BUILD_DIR VERSION. Builds the .deb with CPack into a temporary
directory, extracts it (dpkg-deb -x) into a temporary root and checks the installed files work
there: usr/bin/nisa runs the packaged cumsum kernel (the output checked against a prefix sum
computed here), the Python module imports from usr/lib/python3/dist-packages, man renders the
page, the completion completes. The standard library only (the .npy files by hand)."""
import os
import re
import struct
import subprocess
import sys
import tempfile


def fail(msg):
    sys.exit(f"deb: {msg}")


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        fail(f"`{' '.join(map(str, cmd))}` failed (exit {p.returncode}):\n{p.stdout}{p.stderr}")
    return p.stdout


def write_npy(path, rows, cols, values):
    header = f"{{'descr': '<f4', 'fortran_order': False, 'shape': ({rows}, {cols}), }}"
    header += " " * (63 - (10 + len(header)) % 64) + "\n"  # the data 64-byte aligned
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack(f"<{len(values)}f", *values))


def read_npy(path):
    b = open(path, "rb").read()
    if b[:6] != b"\x93NUMPY":
        fail(f"{path}: not a .npy file")
    n = struct.unpack("<H", b[8:10])[0]
    header = b[10:10 + n].decode()
    if "'<f4'" not in header:
        fail(f"{path}: dtype is not <f4: {header}")
    shape = tuple(int(x) for x in re.search(r"'shape': \(([^)]*)\)", header).group(1).split(",")
                  if x.strip())
    data = b[10 + n:]
    return shape, list(struct.unpack(f"<{len(data) // 4}f", data))


def main(build, version):
    deb_name = f"nisa_{version}_amd64.deb"
    with tempfile.TemporaryDirectory(prefix="nisa-deb-") as tmp:
        out = os.path.join(tmp, "out")
        run(["cpack", "-G", "DEB", "--config", os.path.join(build, "CPackConfig.cmake"), "-B",
             out])
        deb = os.path.join(out, deb_name)
        if not os.path.exists(deb):
            fail(f"cpack made no {deb_name}: {os.listdir(out)}")

        # The control fields: the version, and Depends from dpkg-shlibdeps plus the Python ones.
        fields = run(["dpkg-deb", "-f", deb, "Package", "Version", "Architecture", "Depends"])
        for want in ("Package: nisa", f"Version: {version}", "Architecture: amd64"):
            if want not in fields.splitlines():
                fail(f"control has no '{want}':\n{fields}")
        depends = re.search(r"^Depends: (.*)$", fields, re.M).group(1)
        for dep in ("libc6", "libstdc++6", "libboost-program-options", "python3", "python3-numpy"):
            if not re.search(rf"(^|, ){re.escape(dep)}[\w.-]*( \(|,|$)", depends):
                fail(f"Depends lacks {dep}: {depends}")

        root = os.path.join(tmp, "root")
        run(["dpkg-deb", "-x", deb, root])
        files = run(["dpkg-deb", "-c", deb])
        for path in ("./usr/bin/nisa", "./usr/share/man/man1/nisa.1.gz",
                     "./usr/share/bash-completion/completions/nisa",
                     "./usr/lib/python3/dist-packages/nisa/__init__.py",
                     "./usr/share/nisa/kernels_asm/cumsum.nasm",
                     "./usr/share/nisa/kernels_asm/lib/dma.inc",
                     "./usr/share/doc/nisa/README.md", "./usr/share/doc/nisa/copyright",
                     "./usr/share/doc/nisa/changelog.gz", "./usr/share/doc/nisa/docs/machine.md"):
            if not re.search(rf" {re.escape(path)}$", files, re.M):
                fail(f"the package has no {path}")
        if not re.search(r" \./usr/lib/python3/dist-packages/nisa/_nisa\.[\w.-]*so$", files, re.M):
            fail("the package has no Python extension _nisa*.so")

        # The packaged binary runs the packaged kernel (which .includes nothing outside it).
        nisa = os.path.join(root, "usr/bin/nisa")
        v = run([nisa, "--version"])
        if v != f"nisa {version}\n":
            fail(f"packaged nisa --version printed {v!r}")
        rows, cols = 3, 5
        x = [float((3 * i) % 7 - 2) for i in range(rows * cols)]
        write_npy(os.path.join(tmp, "x.npy"), rows, cols, x)
        kernel = os.path.join(root, "usr/share/nisa/kernels_asm/cumsum.nasm")
        run([nisa, "run", kernel, "-D", f"ROWS={rows}", "-D", f"COLS={cols}", "--in",
             f"x={tmp}/x.npy", "--out", f"y={tmp}/y.npy"], cwd=tmp)
        shape, y = read_npy(os.path.join(tmp, "y.npy"))
        want = []
        for r in range(rows):
            acc = 0.0
            for c in range(cols):
                acc += x[r * cols + c]
                want.append(acc)
        if shape != (rows, cols) or y != want:
            fail(f"cumsum of the packaged kernel: shape {shape} values {y}, want {want}")

        # A kernel outside the package that .includes "lib/lnc.inc": found beside usr/bin/nisa.
        user = os.path.join(tmp, "argmax.nasm")
        with open(kernel.replace("cumsum.nasm", "cascaded_max.nasm")) as f, open(user, "w") as g:
            g.write(f.read())
        run([nisa, "asm", user, "-o", os.path.join(tmp, "argmax.nbin")], cwd=tmp)

        # The packaged Python module, with the packaged kernel.
        site = os.path.join(root, "usr/lib/python3/dist-packages")
        code = ("import nisa, numpy as np; r = nisa.run(%r, dict(ROWS=2, COLS=3), "
                "x=np.ones((2, 3), np.float32)); print(nisa.__file__); print(r.y.tolist()); "
                "print(nisa.__version__); print(nisa.kernels_dir())" % kernel)
        py = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
        got = run([py, "-c", code], env=dict(os.environ, PYTHONPATH=site), cwd=tmp)
        if got.splitlines() != [os.path.join(site, "nisa/__init__.py"),
                                "[[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]", version,
                                os.path.join(root, "usr/share/nisa/kernels_asm")]:
            fail(f"the packaged Python module printed {got!r}")

        # The packaged man page renders and the packaged completion completes.
        page = run(["man", "-l", os.path.join(root, "usr/share/man/man1/nisa.1.gz")],
                   env=dict(os.environ, MANWIDTH="80"))
        for cmd in ("asm", "disasm", "run", "debug", "check", "dap", "isa"):
            if not re.search(rf"^   nisa {cmd}$", page, re.M):
                fail(f"the packaged man page has no section 'nisa {cmd}'")
        comp = os.path.join(root, "usr/share/bash-completion/completions/nisa")
        got = run(["bash", "-c", f'source {comp}; COMP_WORDS=(nisa run --prof); COMP_CWORD=2; '
                   '_nisa; echo "${COMPREPLY[*]}"'])
        if got.split() != ["--profile", "--profile-json", "--profile-no-what-if"]:
            fail(f"the packaged completion gave {got!r}")
        print(f"deb: {deb_name} ({os.path.getsize(deb) // 1024} KiB), Depends: {depends}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: deb.py BUILD_DIR VERSION")
    main(sys.argv[1], sys.argv[2])
