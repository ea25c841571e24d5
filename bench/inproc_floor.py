#!/usr/bin/python3
"""The in-process instruction floor of torch_compare rows (issue 36, docs/performance.md "Floors").

For each row: the kernel through nisa's Python module in one process, as torch_compare's
in-process column runs it (kernel assembled once, machine reused, inputs in memory). After one
warm-up run, `--repeat` timed runs (wall and CPU time, no profiler), then `--profile-runs` more
under `perf record --call-graph dwarf -p` (attached to the process for those runs only). Each
sample is sorted by its stack:

  work       inside an instruction's semantic function (nisa::interp::sem_*), but not in its
             operand resolution or static checks: the copies, the fma loops, the searches
  operands   ExecCtx::view, operand_view, require_legal / legality rules, the overlap tests
  scheduler  the event loop outside any semantics (issue, signals, queues, the event heap)
  reset      Machine::reset (poisoning the HBM, SBUF and PSUM for the next run)
  copy in    the inputs copied into HBM; binding: the rest of Kernel.run (outputs copied out)
  wait       a thread yielding or asleep (the pool's threads between pieces, a core's thread
             whose phase ended first)
  pool       host-pool threads outside any of the above

floor = work share of the profiled CPU time x the timed runs' CPU time / threads, threads = the
run's host threads at most its modelled cores (each core's instructions on its own thread at
best); ratio = the timed runs' median wall / floor. At --threads 1 the ratio is the CPU time
over the instruction work. Needs perf (linux-perf) and torch (the rows come from
torch_compare.py).
"""

import argparse
import collections
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

OPERANDS = re.compile(r"require_legal|legality_error|shape_error|gen_error|ap_operand_error|"
                      r"ExecCtx::view|operand_view|LazyPages::populate|extents_overlap|"
                      r"views_overlap|needs_snapshot|row_safe|byte_span|row_starts")
SEM = re.compile(r"nisa::interp::(sem_\w+)")


def child(args):
    """The measured process: the timed runs, then (once the parent's perf is attached) the
    profiled ones; prints the times as JSON."""
    import numpy as np
    import torch_compare as tc
    import torch
    import torch.nn.functional as F
    tc.bind_modules(np, torch, F)
    why = tc.load_nisa_module(args.nisa)
    if why:
        sys.exit("inproc_floor: " + why)
    make = dict(tc.ROWS)[args.child]
    row = make(np.random.default_rng(tc.seed_of(args.child)))
    k = tc.nisa_py.assemble(os.path.join(tc.KDIR, row.kernel),
                            **{n: str(v) for n, v in row.defines.items()})
    kw = tc.run_kwargs(row.flags + (["--threads", str(args.threads)] if args.threads else []))
    run = lambda: k.run(**kw, fetch=tuple(row.outs), **row.ins)  # noqa: E731
    run()
    walls, cpus = [], []
    for _ in range(args.repeat):
        c0, t0 = time.process_time(), time.perf_counter()
        run()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    # The parent attaches `perf record -p` now (every thread, the pool's included) and says go.
    print("ready", flush=True)
    sys.stdin.readline()
    for _ in range(args.profile_runs):
        run()
    print("done", flush=True)
    sys.stdin.readline()
    json.dump({"walls": walls, "cpus": cpus, "threads": kw.get("threads", 0),
               "cores": kw.get("lnc", 1) * kw.get("ranks", 1)}, sys.stdout)


def samples(script_text):
    """perf script output -> lists of symbol names, leaf first."""
    cur = None
    for line in script_text.splitlines():
        if not line.strip():
            if cur:
                yield cur
            cur = None
        elif not line.startswith("\t"):  # "TID" (right-aligned), then one frame a line
            cur = []
        elif cur is not None:
            parts = line.split(None, 1)
            cur.append(parts[1] if len(parts) > 1 else "?")
    if cur:
        yield cur


def classify(stack):
    """-> (group, detail) of one sample."""
    for i, f in enumerate(stack):
        m = SEM.search(f)
        if m:
            if any(OPERANDS.search(g) for g in stack[:i + 1]):
                return "operands", m.group(1)
            return "work", m.group(1)
    joined = "\n".join(stack)
    if re.search(r"sched_yield|__schedule|futex|do_syscall_64|entry_SYSCALL", stack[0]):
        return "wait", ""  # a host thread yielding or asleep (its core's phase done first)
    if "Machine::reset" in joined:
        return "reset", ""
    if "copy_into_hbm" in joined:
        return "copy in", ""
    if re.search(r"nisa::interp::detail::|Sched::|nisa::interp::run\b", joined):
        return "scheduler", stack[0][:50]
    if "run_kernel" in joined:
        return "binding", stack[0][:50]
    if "HostPool" in joined:
        return "pool", ""
    return "other", stack[0][:50]


def measure(args, name):
    tmp = tempfile.mkdtemp(prefix="inproc_floor.")
    data = os.path.join(tmp, "perf.data")
    cmd = [sys.executable, os.path.abspath(__file__), "--child", name, "--nisa", args.nisa,
           "--repeat", str(args.repeat), "--profile-runs", str(args.profile_runs)]
    cmd += ["--threads", str(args.threads)] if args.threads else []
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    if p.stdout.readline().strip() != "ready":
        sys.exit("inproc_floor: %s failed" % name)
    rec = subprocess.Popen([args.perf, "record", "-q", "-F", str(args.freq), "--call-graph",
                            "dwarf,32768", "-p", str(p.pid), "-o", data],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # (perf attaches to every thread)
    p.stdin.write("go\n")
    p.stdin.flush()
    if p.stdout.readline().strip() != "done":
        sys.exit("inproc_floor: %s failed while profiled" % name)
    rec.send_signal(signal.SIGINT)
    rec.wait()
    p.stdin.write("end\n")
    p.stdin.flush()
    out, _ = p.communicate()
    if p.returncode != 0:
        sys.exit("inproc_floor: %s failed (exit %d)" % (name, p.returncode))
    times = json.loads(out.strip().splitlines()[-1])
    text = subprocess.run([args.perf, "script", "-i", data, "-F", "tid,ip,sym"],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
    os.unlink(data)
    os.rmdir(tmp)
    groups, detail = collections.Counter(), collections.Counter()
    for st in samples(text):
        g, d = classify(st)
        groups[g] += 1
        detail[(g, d)] += 1
    return times, groups, detail


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--nisa", default=os.path.join(os.path.dirname(HERE), "build", "cli", "nisa"),
                    help="the nisa binary whose build's Python module runs (default: build/)")
    ap.add_argument("--only", action="append", default=[],
                    help="a torch_compare row (repeatable; default depthwise_conv1d and "
                    "topk_cascaded)")
    ap.add_argument("--threads", type=int, default=0, help="Kernel.run(threads=N) (0: default)")
    ap.add_argument("--repeat", type=int, default=11, help="timed runs (median)")
    ap.add_argument("--profile-runs", type=int, default=20, help="profiled runs")
    ap.add_argument("--freq", type=int, default=1999, help="perf samples per second")
    ap.add_argument("--perf", default="perf")
    ap.add_argument("--json", metavar="FILE", help="write the figures to this file")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)
    rows = args.only or ["depthwise_conv1d", "topk_cascaded"]
    out = []
    for name in rows:
        times, groups, detail = measure(args, name)
        total = sum(groups.values())
        threads = times["threads"] or (os.cpu_count() or 1)
        par = max(1, min(threads, times["cores"]))
        wall, cpu = statistics.median(times["walls"]), statistics.median(times["cpus"])
        share = groups["work"] / total if total else float("nan")
        floor = share * cpu / par
        print("%s, threads %s (%d at once), %s: wall median %.2f ms (%.2f-%.2f) CPU %.2f ms over "
              "%d runs; %d samples of %d profiled runs" %
              (name, times["threads"] or "default", par, time.strftime("%Y-%m-%d %H:%M UTC",
                                                                      time.gmtime()),
               wall * 1e3, min(times["walls"]) * 1e3, max(times["walls"]) * 1e3, cpu * 1e3,
               len(times["walls"]), total, args.profile_runs))
        for g, n in groups.most_common():
            parts = sorted(((d, c) for (gg, d), c in detail.items() if gg == g and d),
                           key=lambda x: -x[1])[:6]
            print("  %-9s %5.1f%%  %s" % (g, 100.0 * n / total,
                                          ", ".join("%s %.1f%%" % (d, 100.0 * c / total)
                                                    for d, c in parts)))
        print("  floor = %.1f%% x %.2f ms CPU / %d = %.2f ms; wall / floor = %.2fx; CPU / work "
              "= %.2fx" % (100 * share, cpu * 1e3, par, floor * 1e3, wall / floor, 1 / share))
        out.append(dict(row=name, threads=times["threads"], parallel=par, walls=times["walls"],
                        cpus=times["cpus"], groups=dict(groups), work_share=share,
                        floor_s=floor, ratio=wall / floor))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
