#!/usr/bin/python3
"""The whole `nisa asm` process per emitted instruction (issue 36, "Speed III").

For depthwise_conv1d and attention_block_tkg at bench/torch_compare.py's shapes this runs, in
one interleaved loop, `nisa --version` (the process start: loading the binary, its libraries
and static initialisers) and `nisa asm` of each kernel, and reports per kernel

  whole     the median wall of `nisa asm KERNEL -D ... -o OUT.nbin`
  beyond    whole minus the median wall of `nisa --version`
  us/inst   beyond / instructions emitted (the issue's bound: <= 0.5 us)

then one `nisa asm --time-report` run per kernel for the split by phase (read, parse, expand,
resolve, encode, write; in process) and the native baseline measured in that same process: one
pass of the assembler's tokenizer over the expanded listing (`nisa disasm --no-source`, one line
per emitted instruction), i.e. what merely reading the program as text costs.

  /usr/bin/python3 bench/asm_process.py [--nisa build/cli/nisa] [--repeat 21] [--json FILE]

With --callgrind (valgrind installed), also the machine instructions each process executes
(callgrind's Ir, deterministic: the figure that compares two builds on a loaded host, where
walls move by 10-30%): Ir of `nisa asm` less Ir of `nisa --version`, per emitted instruction.

Exit 0 whatever the figures (a measurement, not a test; docs/performance-assembler.md
records them).
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
KDIR = os.path.join(ROOT, "kernels_asm")
BOUND_US = 0.5

# The shapes of bench/torch_compare.py's rows (row_depthwise, row_attn).
KERNELS = [
    ("depthwise_conv1d", "depthwise_conv1d.nasm",
     dict(N=1, C=1024, W=1024, S=128, PAD_L=64, PAD_R=63, DT="fp32")),
    ("attention_block_tkg", "attention_block_tkg.nasm",
     dict(B=4, S=1, H=4096, QH=8, D=128, S_CTX=8192, ROPE="half", QK_NORM="none", FP8_KV=0,
          DT="bf16")),
]


def wall(cmd):
    """Wall seconds of one process (spawned without a shell), which must succeed."""
    t0 = time.perf_counter()
    pid = os.posix_spawn(cmd[0], cmd, os.environ)
    _, st = os.waitpid(pid, 0)
    t = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(st) != 0:
        raise SystemExit("asm_process: failed: " + " ".join(cmd))
    return t


def asm_cmd(nisa, kernel, defines, out):
    cmd = [nisa, "asm", os.path.join(KDIR, kernel), "-o", out]
    for k, v in defines.items():
        cmd += ["-D", "%s=%s" % (k, v)]
    return cmd


def time_report(cmd):
    """{phase: ms}, instructions, baseline ms, listing bytes from `nisa asm --time-report`."""
    r = subprocess.run(cmd + ["--time-report"], capture_output=True, text=True)
    phases, insts, base, nbytes = {}, 0, None, 0
    if r.returncode != 0:  # a nisa from before --time-report: the instructions from disasm
        out = cmd[cmd.index("-o") + 1]
        d = subprocess.run([cmd[0], "disasm", "--no-source", out], capture_output=True,
                           text=True, check=True).stdout
        insts = sum(1 for l in d.splitlines() if l.startswith("    ") and "." in l.split()[0])
        return phases, insts, None, 0
    for line in r.stderr.splitlines():
        m = re.match(r"nisa asm: time report: (\d+) instructions", line)
        if m:
            insts = int(m.group(1))
        m = re.match(r"\s+(\w+)\s+([\d.]+) ms\s+(.*)", line)
        if m:
            if m.group(1) == "baseline":
                base = float(m.group(2))
                nbytes = int(re.search(r"\((\d+) bytes", m.group(3)).group(1))
            else:
                phases[m.group(1)] = float(m.group(2))
    if not insts:
        raise SystemExit("asm_process: no time report from " + " ".join(cmd) + "\n" + r.stderr)
    return phases, insts, base, nbytes


def callgrind_ir(cmd):
    """Machine instructions executed by `cmd` (callgrind's "Collected" Ir)."""
    fd, out = tempfile.mkstemp(prefix="nisa_asm_cg_")
    os.close(fd)
    try:
        r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out] + cmd,
                           capture_output=True, text=True)
    finally:
        os.remove(out)
    m = re.search(r"Collected : (\d+)", r.stderr)
    if r.returncode != 0 or not m:
        raise SystemExit("asm_process: callgrind failed: " + " ".join(cmd) + "\n" + r.stderr)
    return int(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nisa", default=os.path.join(ROOT, "build", "cli", "nisa"),
                    help="the nisa binary (default: build/cli/nisa of this checkout)")
    ap.add_argument("--repeat", type=int, default=21, help="processes of each kind (median)")
    ap.add_argument("--json", metavar="FILE", help="write the figures to this file")
    ap.add_argument("--callgrind", action="store_true",
                    help="also the instructions executed (valgrind's callgrind; deterministic)")
    args = ap.parse_args()
    nisa = os.path.abspath(args.nisa)
    work = tempfile.mkdtemp(prefix="nisa_asm_process_")
    cmds = {name: asm_cmd(nisa, k, d, os.path.join(work, name + ".nbin")) for name, k, d in KERNELS}
    version = [nisa, "--version"]
    with open(os.devnull, "w") as null:  # --version prints one line: keep it off the table
        saved = os.dup(1)
        os.dup2(null.fileno(), 1)
        try:
            for c in [version] + list(cmds.values()):  # warm the page cache and the binary
                wall(c)
            walls = {n: [] for n in ["--version"] + list(cmds)}
            for _ in range(max(1, args.repeat)):  # interleaved: drift hits every kind alike
                walls["--version"].append(wall(version))
                for n, c in cmds.items():
                    walls[n].append(wall(c))
        finally:
            os.dup2(saved, 1)
            os.close(saved)
    v = statistics.median(walls["--version"])
    print("nisa --version: %.2f ms (median of %d; min %.2f ms)" %
          (v * 1e3, len(walls["--version"]), min(walls["--version"]) * 1e3))
    print()
    hdr = ("| kernel | insts | whole | beyond --version | us/inst (bound %.1f) | in process: read "
           "/ parse / expand / resolve / other / encode / write = total | tokenizer baseline "
           "(us/inst) | in process / baseline |" % BOUND_US)
    print(hdr)
    print("| --- " * 8 + "|")
    rows = []
    for name, c in cmds.items():
        phases, insts, base, nbytes = time_report(c)
        w = statistics.median(walls[name])
        beyond = w - v
        per = beyond * 1e6 / insts
        order = ["read", "parse", "expand", "resolve", "other", "encode", "write"]
        split = " / ".join("%.2f" % phases.get(p, 0.0) for p in order)
        total = phases.get("total", 0.0)
        if base is None:
            print("| %s | %d | %.2f ms | %.2f ms | %.3f %s | (no --time-report) | | |" %
                  (name, insts, w * 1e3, beyond * 1e3, per, "ok" if per <= BOUND_US else "OVER"))
        else:
            print("| %s | %d | %.2f ms | %.2f ms | %.3f %s | %s = %.2f ms | %.3f ms (%.3f) | "
                  "%.1fx |" % (name, insts, w * 1e3, beyond * 1e3, per,
                               "ok" if per <= BOUND_US else "OVER", split, total, base,
                               base * 1e3 / insts, total / base))
        rows.append(dict(kernel=name, insts=insts, whole_ms=w * 1e3, version_ms=v * 1e3,
                         beyond_ms=beyond * 1e3, us_per_inst=per, bound_us=BOUND_US,
                         phases_ms=phases, baseline_ms=base, listing_bytes=nbytes,
                         walls_ms=[x * 1e3 for x in walls[name]]))
    if args.callgrind:
        iv = callgrind_ir(version)
        print()
        print("callgrind: `nisa --version` %.2f M Ir" % (iv / 1e6))
        print()
        print("| kernel | Ir | beyond --version | Ir per instruction |")
        print("| --- | --- | --- | --- |")
        for row, (name, c) in zip(rows, cmds.items()):
            ir = callgrind_ir(c)
            row.update(ir=ir, ir_version=iv, ir_per_inst=(ir - iv) / row["insts"])
            print("| %s | %.2f M | %.2f M | %.0f |" % (name, ir / 1e6, (ir - iv) / 1e6,
                                                      (ir - iv) / row["insts"]))
    print()
    print("whole and beyond: medians of %d processes each, interleaved with --version; phases: "
          "one --time-report run (in-process ms); baseline: the tokenizer over the expanded "
          "listing in that process (best of 5)." % args.repeat)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(nisa=nisa, version_ms=v * 1e3, rows=rows), f, indent=1)
    for n in cmds:
        try:
            os.remove(os.path.join(work, n + ".nbin"))
        except OSError:
            pass
    os.rmdir(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
