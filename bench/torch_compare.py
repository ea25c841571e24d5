#!/usr/bin/python3
"""Whole kernels against PyTorch CPU (issue 16, "Speed II").

For every kernel of kernels_asm/ this makes seeded inputs with numpy, writes them as .npy files
to a temporary directory, runs `nisa run` on them as a whole process (wall time of the
subprocess; user / sys time and peak RSS from os.wait4), runs the same math in PyTorch at one
thread (best of several repetitions, inputs already in memory), checks that nisa's outputs
match torch's within the tolerance stated per row, and prints a table (and, with --json, the
same figures as JSON).

bf16 kernels: torch computes in fp32 on the same (bf16-representable) values, as the native
baselines of bench/ do; nisa's bf16 outputs are compared after widening to fp32.

Run with Debian's python3 (/usr/bin/python3: python3-numpy, python3-torch); without torch it
prints one line and exits 0:  bash scripts/bootstrap.sh --bench  installs it.
"""

import argparse
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import torch_rows  # the rows (bench/, beside this script)
from torch_rows import ROWS, SELF_TEST, from_bits

SKIP = "torch_compare: skipped: python3-torch is not installed (bash scripts/bootstrap.sh --bench)"
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
KDIR = os.path.join(ROOT, "kernels_asm")
TARGET = 3.0  # the bound: nisa wall <= 3 x torch

np = None
torch = None
F = None
nisa_py = None  # the Python module `nisa` of the same build (--in-process), or None


def bind_modules(numpy, torch_mod, functional):
    """numpy, torch and torch.nn.functional for this script and its rows (imported by the
    caller: this script must run without them)."""
    global np, torch, F
    np, torch, F = numpy, torch_mod, functional
    torch_rows.bind(numpy, torch_mod, functional)


def nisa_has_threads(nisa):
    try:
        h = subprocess.run([nisa, "run", "--help"], capture_output=True, text=True, timeout=30)
        return "--threads" in h.stdout + h.stderr
    except (OSError, subprocess.SubprocessError):
        return False


# The child is started by a small python of its own, not forked from this (large) process: Linux
# keeps a process's peak RSS across exec, so a child forked from here would report ours.
WRAP = r"""
import os, sys, time
out, log, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.execv(cmd[0], cmd)
_, st, ru = os.wait4(pid, 0)
wall = time.perf_counter() - t0
with open(out, "w") as f:
    f.write("%r %r %r %r %d" % (wall, ru.ru_utime, ru.ru_stime, ru.ru_maxrss, os.waitstatus_to_exitcode(st)))
"""


def run_command(nisa, row, d, extra=()):
    """The `nisa run` command line of a row; writes its inputs as .npy files into d (the
    outputs go to d/out_NAME.npy)."""
    cmd = [nisa, "run", os.path.join(KDIR, row.kernel)]
    for k, v in row.defines.items():
        cmd += ["-D", "%s=%s" % (k, v)]
    cmd += row.flags + list(extra)
    for k, a in row.ins.items():
        p = os.path.join(d, k + ".npy")
        np.save(p, a)
        cmd += ["--in", "%s=%s" % (k, p)]
    for k in row.outs:
        cmd += ["--out", "%s=%s" % (k, os.path.join(d, "out_" + k + ".npy"))]
    return cmd


def run_nisa(cmd, log):
    """One whole `nisa run` process: wall (s), user (s), sys (s), peak RSS (MB), rc."""
    res = log + ".rusage"
    subprocess.run([sys.executable, "-S", "-c", WRAP, res, log] + cmd, check=True)
    with open(res) as f:
        w, u, s, rss, rc = f.read().split()
    return float(w), float(u), float(s), float(rss) / 1024.0, int(rc)


def first_touch_ms_per_mib(mib=64):
    """ms per MiB to first-touch fresh anonymous huge-page memory, in a child process (as a
    nisa run gets its memory). On a VM that returns freed memory to its host (free page
    reporting) this is 10-20x its value for memory the host has backed, and it decides the
    rows of a few ms (docs/performance.md "Per-run fixed costs and memory")."""
    code = ("import mmap, time\n"
            "n = %d << 20\n"
            "m = mmap.mmap(-1, n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)\n"
            "getattr(m, 'madvise', lambda *a: None)(getattr(mmap, 'MADV_HUGEPAGE', 14))\n"
            "t = time.perf_counter()\n"
            "for i in range(0, n, 4096): m[i] = 1\n"
            "print((time.perf_counter() - t) * 1e3 / %d)\n" % (mib, mib))
    try:
        r = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                           timeout=60)
        return float(r.stdout.strip())
    except (OSError, ValueError, subprocess.SubprocessError):
        return float("nan")


def time_torch(fn, reps):
    """(best wall, best CPU time) of reps calls."""
    best, cpu = math.inf, math.inf
    for _ in range(reps):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
        cpu = min(cpu, time.process_time() - c0)
    return best, cpu


def load_nisa_module(nisa):
    """The Python module `nisa` of the build that made the nisa binary (<build>/python), or
    None with the reason."""
    global nisa_py
    d = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(nisa))), "python")
    if not os.path.isdir(os.path.join(d, "nisa")):
        return "no Python module at %s" % d
    sys.path.insert(0, d)
    try:
        import nisa as _nisa
    except ImportError as e:
        return "cannot import %s/nisa: %s" % (d, e)
    nisa_py = _nisa
    return None


def run_kwargs(flags):
    """`nisa run` flags -> Kernel.run keyword arguments."""
    kw, names = {}, {"--lnc": "lnc", "--ranks": "ranks", "--threads": "threads"}
    for i in range(0, len(flags), 2):
        kw[names[flags[i]]] = int(flags[i + 1])
    return kw


def time_in_process(row, d, threads, reps):
    """nisa in this process through its Python module, timed as torch is: the kernel assembled
    once, the inputs already in memory, the best of `reps` calls (each makes its machine, copies
    the inputs in and the outputs out). What it leaves out of the whole process: the process's
    start, the .npy files and, mostly, memory the host has not backed yet. The outputs must
    equal the process's bit for bit. -> (best wall s, "" or what differed)."""
    k = nisa_py.assemble(os.path.join(KDIR, row.kernel),
                         **{n: str(v) for n, v in row.defines.items()})
    kw = run_kwargs(row.flags + threads)
    best, bad = math.inf, ""
    for i in range(max(1, reps)):
        t0 = time.perf_counter()
        r = k.run(**kw, fetch=tuple(row.outs), **row.ins)  # (an --out may be an input tensor)
        best = min(best, time.perf_counter() - t0)
        if i == 0:
            for n in row.outs:
                want = np.load(os.path.join(d, "out_" + n + ".npy"))
                got = np.asarray(r[n])
                if got.tobytes() != want.tobytes():
                    bad = "in-process output %s differs from the process's" % n
        del r
    return best, bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="rows: " + ", ".join(n for n, _ in ROWS))
    ap.add_argument("--nisa", metavar="PATH", default=os.path.join(ROOT, "build", "cli", "nisa"),
                    help="the nisa binary (default: build/cli/nisa of this checkout)")
    ap.add_argument("--threads", metavar="N", type=int, default=0,
                    help="pass --threads N to nisa run (when it has the option)")
    ap.add_argument("--only", metavar="NAME", action="append", default=[],
                    help="run only this row (repeatable; a prefix matches, e.g. topk)")
    ap.add_argument("--skip", metavar="NAME", action="append", default=[], help="leave this row out (repeatable)")
    ap.add_argument("--repeat", metavar="K", type=int, default=3, help="nisa runs per row (the median is reported)")
    ap.add_argument("--torch-repeat", metavar="K", type=int, default=5, help="torch runs per row (best)")
    ap.add_argument("--json", metavar="FILE", help="write the results to this file")
    ap.add_argument("--no-in-process", action="store_true",
                    help="skip the in-process timing (nisa's Python module, timed as torch is)")
    ap.add_argument("--workdir", metavar="DIR", help="directory for the .npy files (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the .npy files")
    ap.add_argument("--no-floor", action="store_true",
                    help="skip the extra traced runs of the floors (the rotational top-K's, and the "
                         "traffic floor of every row above the target)")
    ap.add_argument("--self-test", action="store_true",
                    help="two tiny rows (cumsum, rotational top-K), one run each: checks the "
                    "script and nisa against torch, no timing target; exit 1 on a mismatch")
    args = ap.parse_args()

    try:
        import numpy
        import torch as _torch
        import torch.nn.functional as _F
    except ImportError:
        print(SKIP)
        return 0
    bind_modules(numpy, _torch, _F)
    torch.set_num_threads(1)
    # SIGTERM as an exception, so that the temp dir is removed (finally below)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if not os.access(args.nisa, os.X_OK):
        print("torch_compare: %s is not an executable (build it: cmake --build build --target nisa)"
              % args.nisa, file=sys.stderr)
        return 1
    threads = []
    if args.threads:
        if nisa_has_threads(args.nisa):
            threads = ["--threads", str(args.threads)]
        else:
            print("torch_compare: %s has no --threads; running without it" % args.nisa)
    if args.self_test:
        args.repeat, args.torch_repeat, args.no_floor, args.only = 1, 1, True, []
    if not args.no_in_process:
        why = load_nisa_module(args.nisa)
        if why:
            print("torch_compare: no in-process timing: %s" % why)
    sel = [(n, f) for n, f in (SELF_TEST if args.self_test else ROWS)
           if (not args.only or any(n == o or n.startswith(o) for o in args.only))
           and n not in args.skip]
    if not sel:
        print("torch_compare: no row matches %s" % args.only, file=sys.stderr)
        return 1
    work = args.workdir or tempfile.mkdtemp(prefix="torch_compare.")
    os.makedirs(work, exist_ok=True)
    print("torch %s, 1 thread; nisa %s%s; %d nisa runs (median), best of %d torch runs; %s; "
          "load average %.1f on %d CPUs" %
          (torch.__version__, args.nisa, " " + " ".join(threads) if threads else "", args.repeat,
           args.torch_repeat, time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           os.getloadavg()[0], os.cpu_count()))
    touch = first_touch_ms_per_mib()
    print("first touch of fresh memory here: %.2f ms per MiB (huge pages; ~0.15 where the host "
          "has backed it before, ~2.5 on a VM that has not: the short rows' system time)" % touch)
    print("ratio = nisa wall / torch wall (the target); CPU ratio = nisa (user + sys) / torch CPU "
          "time (steadier on a shared host); in-process = nisa's Python module in this process, "
          "timed as torch is (best of %d; no process start, no .npy files, memory reused), and "
          "its ratio to torch" % max(1, args.repeat))
    results = []
    try:
        for name, make in sel:
            res = run_row(name, make, args, work, threads)
            results.append(res)
            print_row(res, len(results) == 1)
            sys.stdout.flush()
        floor(results, args, work, threads)
        print_traffic_floors(results)
    finally:
        if not args.keep and not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"torch": torch.__version__, "nisa": args.nisa, "threads": args.threads,
                       "first_touch_ms_per_mib": touch, "rows": results}, f, indent=1)
    bad = [r["name"] for r in results if r["status"] == "error"]
    if bad:
        print("torch_compare: nisa failed or disagreed with torch: " + ", ".join(bad))
        return 1
    return 0


def run_row(name, make, args, work, threads):
    rng = np.random.default_rng(seed_of(name))
    row = make(rng)
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    cmd = run_command(args.nisa, row, d, threads)
    # The inputs just written are dirty page cache: write them back first, or the first
    # nisa run pays for it (writeback throttling of its own output showed as 0.2-0.4 s of
    # system time on the first row).
    os.sync()
    res = dict(name=name, kernel=row.kernel, shape=row.shape, note=row.note,
               flags=" ".join(row.flags + threads), defines=row.defines, tol=row.tol,
               cmd=" ".join(cmd))
    runs = []
    for _ in range(max(1, args.repeat)):
        w, u, s, rss, rc = run_nisa(cmd, os.path.join(d, "nisa.log"))
        if rc != 0:
            with open(os.path.join(d, "nisa.log"), errors="replace") as f:
                msg = " ".join(f.read().split())[:300]
            res.update(status="error", check="nisa exit %d: %s" % (rc, msg))
            return res
        runs.append((w, u, s, rss))
    got = {}
    for k, kind in row.outs.items():
        a = np.load(os.path.join(d, "out_" + k + ".npy"))
        got[k] = from_bits(a) if kind == "bf16" else a.view(np.int16) if kind == "int16" else a
    inproc, inproc_bad = None, ""
    if nisa_py is not None and not args.no_in_process:
        inproc, inproc_bad = time_in_process(row, d, threads, args.repeat)
    row.ins = None  # free the inputs' copies (torch keeps its tensors)
    ref = {k: v.numpy() for k, v in row.tfn().items()}  # warm-up, and the values checked
    ok, msg = row.check(got, ref)
    if inproc_bad:
        ok, msg = False, inproc_bad
    del got, ref
    tt, tc = time_torch(row.tfn, max(1, args.torch_repeat))
    if not args.no_floor and statistics.median(r[0] for r in runs) / tt > TARGET:
        traffic_floor(res, cmd, d, threads)
    if not args.keep and name not in ("topk_scanning", "topk_rotational"):  # (the floor reruns)
        shutil.rmtree(d, ignore_errors=True)  # transformer_tkg alone writes 1.7 GB
    med = lambda i: statistics.median(r[i] for r in runs)
    cpu = statistics.median(r[1] + r[2] for r in runs)
    res.update(nisa_wall=med(0), nisa_user=med(1), nisa_sys=med(2), nisa_cpu=cpu,
               nisa_rss_mb=max(r[3] for r in runs), nisa_walls=[r[0] for r in runs], torch_s=tt,
               torch_cpu=tc, ratio=med(0) / tt, cpu_ratio=cpu / tc, in_process_s=inproc,
               in_process_ratio=inproc / tt if inproc else None,
               status="pass" if ok and med(0) / tt <= TARGET else ("fail" if ok else "error"),
               check=msg, cmdline=cmd)
    return res


def seed_of(name):
    return sum((i + 1) * ord(c) for i, c in enumerate(name)) + 16


def fmt_t(s):
    return "%.3g s" % s if s >= 1 else "%.3g ms" % (s * 1e3)


def print_row(r, header):
    if header:
        print("| kernel | shape | flags | nisa wall | torch | ratio | target | result | nisa user / sys | CPU ratio | in-process (ratio) | nisa peak RSS | check |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    if r["status"] == "error" and "nisa_wall" not in r:
        print("| %s | %s | %s | - | - | - | %gx | error | | | | | %s |" %
              (r["name"], r["shape"], r["flags"], TARGET, r["check"]))
        return
    inproc = ("%s (%.1fx)" % (fmt_t(r["in_process_s"]), r["in_process_ratio"])
              if r.get("in_process_s") else "-")
    print("| %s | %s | %s | %s | %s | %.1fx | %gx | %s | %s / %s | %.1fx | %s | %.0f MB | %s |" %
          (r["name"], r["shape"] + (" (" + r["note"] + ")" if r["note"] else ""), r["flags"],
           fmt_t(r["nisa_wall"]), fmt_t(r["torch_s"]), r["ratio"], TARGET, r["status"],
           fmt_t(r["nisa_user"]), fmt_t(r["nisa_sys"]), r["cpu_ratio"], inproc, r["nisa_rss_mb"],
           r["check"]))


def print_traffic_floors(results):
    rows = [r for r in results if "traffic_floor_s" in r]
    if not rows:
        return
    print()
    print("traffic floors (issue 16) of the rows above %gx: the bytes the executed instructions "
          "cover at a native copy's %.3g GB/s (read + write), per host thread used; target: "
          "nisa wall <= 1.5x the floor" % (TARGET, rows[0]["stream_bw"] / 1e9))
    print("| kernel | instructions | bytes covered | threads | floor | nisa wall | nisa / floor | "
          "torch | floor / torch |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        r["traffic_floor_ratio"] = r["nisa_wall"] / r["traffic_floor_s"]
        print("| %s | %d | %.3g GB | %d | %s | %s | %.2fx | %s | %.1fx |" %
              (r["name"], r["traffic_insts"], r["traffic_bytes"] / 1e9, r["floor_threads"],
               fmt_t(r["traffic_floor_s"]), fmt_t(r["nisa_wall"]), r["traffic_floor_ratio"],
               fmt_t(r["torch_s"]), r["traffic_floor_s"] / r["torch_s"]))


def floor(results, args, work, threads):
    """The rotational top-K's floor (issue 16): the elements its search instructions read
    (instructions x elements, from a DVE --trace of the same run) at the speed of a streaming
    pass, measured as the scanning method's nisa wall per search element (scanning is nothing
    but full-row max8 / match_replace8 passes)."""
    if args.no_floor:
        return
    by = {r["name"]: r for r in results if "nisa_wall" in r}
    if "topk_rotational" not in by or "topk_scanning" not in by:
        return
    el = {}
    for n in ("topk_scanning", "topk_rotational"):
        tr = os.path.join(work, n + ".trace")
        cmd = [c for c in by[n]["cmdline"]] + ["--trace", tr, "--trace-engines", "dve"]
        _, _, _, _, rc = run_nisa(cmd, os.path.join(work, n + ".trace.log"))
        if rc != 0:
            print("torch_compare: floor: %s --trace failed (exit %d)" % (n, rc))
            return
        el[n] = search_elements(tr)
        os.unlink(tr)
        by[n]["search_elements"], by[n]["search_insts"] = el[n]
    if not el["topk_scanning"][0]:
        print("torch_compare: floor: no search instructions in the trace")
        return
    per = by["topk_scanning"]["nisa_wall"] / el["topk_scanning"][0]
    per_cpu = by["topk_scanning"]["nisa_cpu"] / el["topk_scanning"][0]
    rot = by["topk_rotational"]
    rot["floor_s"] = el["topk_rotational"][0] * per
    rot["floor_ratio"] = rot["nisa_wall"] / rot["floor_s"]
    rot["floor_cpu_s"] = el["topk_rotational"][0] * per_cpu
    rot["floor_cpu_ratio"] = rot["nisa_cpu"] / rot["floor_cpu_s"]
    print()
    print("topk floor (issue 16): search instructions (%s) x elements read:" % "/".join(SEARCH_OPS))
    for n in ("topk_scanning", "topk_rotational"):
        print("  %s: %.4g elements (%s)" % (n, el[n][0], el[n][1]))
    print("  streaming speed = scanning wall / its elements = %.3g ns per element" % (per * 1e9))
    print("  rotational floor = %s; nisa rotational %s = %.2fx the floor (target 1.5x)" %
          (fmt_t(rot["floor_s"]), fmt_t(rot["nisa_wall"]), rot["floor_ratio"]))
    print("  in CPU time (user + sys): %.3g ns per element, floor %s, rotational %s = %.2fx" %
          (per_cpu * 1e9, fmt_t(rot["floor_cpu_s"]), fmt_t(rot["nisa_cpu"]),
           rot["floor_cpu_ratio"]))


SEARCH_OPS = ("max8", "match_replace8", "find_index8")

DT_BYTES = dict(fp32=4, bf16=2, fp16=2, fp8e4m3=1, fp8e5m2=1, int8=1, uint8=1, int16=2, uint16=2,
                int32=4, uint32=4)
_stream_bw = []


def stream_bandwidth():
    """Bytes per second of a native copy (read + write counted), measured once per run: numpy
    copying 64 MiB into a buffer already touched, best of 7."""
    if not _stream_bw:
        src = np.arange(16 << 20, dtype=np.float32)
        dst = np.empty_like(src)
        np.copyto(dst, src)
        best = math.inf
        for _ in range(7):
            t0 = time.perf_counter()
            np.copyto(dst, src)
            best = min(best, time.perf_counter() - t0)
        _stream_bw.append(2 * src.nbytes / best)
    return _stream_bw[0]


def traffic_bytes(path):
    """(bytes, instructions): the bytes every executed instruction's access patterns cover (each
    operand's partitions x the counts of its non-broadcast dims x the dtype's size), from a
    --trace file."""
    import re
    ap = re.compile(r"ap\((\w+), (\w+), \d+, (\d+), 0x[0-9a-f]+, \[([^()]*)\]")
    dim = re.compile(r"\[(-?\d+), (\d+)\]")
    tot = n = 0
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                continue
            n += 1
            for _, dt, parts, dims in ap.findall(line.split("\t")[7]):
                e = int(parts)
                for step, count in dim.findall(dims):
                    e *= int(count) if int(step) != 0 else 1
                tot += e * DT_BYTES.get(dt, 4)
    return tot, n


def traffic_floor(res, cmd, d, threads):
    """The floor of a row above the target (issue 16: where a kernel's algorithm does more work
    than torch's): the bytes its instructions read and write (a --trace of the same command) at
    the speed of a native copy, measured in the same run, spread over the host threads the run
    may use (nisa's --threads, at most its modelled cores): traffic / (bandwidth x threads)."""
    tr = os.path.join(d, "floor.trace")
    _, _, _, _, rc = run_nisa(cmd + ["--trace", tr, "--trace-limit", "0"],
                              os.path.join(d, "floor.log"))
    if rc != 0:
        print("torch_compare: traffic floor of %s: --trace failed (exit %d)" % (res["name"], rc))
        return
    tb, n = traffic_bytes(tr)
    os.unlink(tr)
    cores = 1
    for i, f in enumerate(cmd):
        if f in ("--ranks", "--lnc"):
            cores *= int(cmd[i + 1])
    t = int(threads[1]) if threads else (os.cpu_count() or 1)
    par = max(1, min(t, cores))
    bw = stream_bandwidth()
    res.update(traffic_bytes=tb, traffic_insts=n, stream_bw=bw, floor_threads=par,
               traffic_floor_s=tb / (bw * par))


def search_elements(path):
    """(elements, description): per search instruction of a --trace file, the elements of its
    largest access pattern (the data searched: partitions x the product of the counts)."""
    import re
    ap = re.compile(r"ap\(\w+, \w+, \d+, (\d+), 0x[0-9a-f]+, \[([^()]*)\]\)")
    tot, per = 0, {}
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                continue
            dis = line.split("\t")[7]
            op = dis.split(" ", 1)[0].split(".")[-1]
            if op not in SEARCH_OPS:
                continue
            big = 0
            for parts, dims in ap.findall(dis):
                n = int(parts)
                for c in re.findall(r"\[-?\d+, (\d+)\]", dims):
                    n *= int(c)
                big = max(big, n)
            tot += big
            c = per.setdefault(op, [0, 0])
            c[0] += 1
            c[1] += big
    desc = ", ".join("%d %s, %.3g elements" % (c[0], op, c[1]) for op, c in sorted(per.items()))
    return tot, desc


if __name__ == "__main__":
    sys.exit(main())
