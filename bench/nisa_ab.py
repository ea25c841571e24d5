#!/usr/bin/python3
"""Two nisa binaries on the same whole-process commands, interleaved run by run (a shared host's
load hits both alike): median wall, user, sys and page faults per row.

The commands come from a torch_compare JSON written with kept inputs:
  /usr/bin/python3 bench/torch_compare.py --workdir DIR --keep --json rows.json [--only ...]
  python3 bench/nisa_ab.py rows.json BASE_NISA NEW_NISA [--repeat 7] [--only ROW ...]
"""
import argparse
import json
import os
import statistics
import time


def run(cmd):
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.execv(cmd[0], cmd)
    _, st, ru = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(st) != 0:
        raise SystemExit("nisa_ab: %s exited %d" % (cmd[0], os.waitstatus_to_exitcode(st)))
    return time.perf_counter() - t0, ru.ru_utime, ru.ru_stime, ru.ru_minflt


def own_outputs(args, tag):
    """The command with every --out file renamed for one binary: two binaries replacing the same
    file would each pay for the other's leftovers (on ext4, removing a file whose pages the
    other's rename() sent to the disk waits for that write)."""
    out = list(args)
    for i in range(1, len(out)):
        if out[i - 1] == "--out" and "=" in out[i]:
            name, path = out[i].split("=", 1)
            root, ext = os.path.splitext(path)
            out[i] = "%s=%s.%s%s" % (name, root, tag, ext)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rows")
    ap.add_argument("base")
    ap.add_argument("new")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--only", action="append", default=[])
    a = ap.parse_args()
    for r in json.load(open(a.rows))["rows"]:
        if a.only and r["name"] not in a.only or "cmdline" not in r:
            continue
        res = {"base": [], "new": []}
        for _ in range(a.repeat):
            for k, b in (("base", a.base), ("new", a.new)):
                res[k].append(run([b] + own_outputs(r["cmdline"][1:], k)))
        out = []
        for k in ("base", "new"):
            m = [statistics.median(x[j] for x in res[k]) for j in range(4)]
            out.append("%s %.1f ms (user %.1f / sys %.1f ms, %d faults)" %
                       (k, m[0] * 1e3, m[1] * 1e3, m[2] * 1e3, m[3]))
        print("%-26s %s | %s" % (r["name"], out[0], out[1]), flush=True)


if __name__ == "__main__":
    main()
