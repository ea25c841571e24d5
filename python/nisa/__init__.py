"""nisa: assemble and run .nasm kernels on the modelled Neuron machine from Python.

    import nisa                     # pip install . (docs/python.md)
    k = nisa.assemble(nisa.kernels_dir() / "cumsum.nasm", ROWS=4, COLS=8)
    r = k.run(x=np.ones((4, 8), np.float32))
    r.y, r["y"], r.outputs["y"]     # numpy arrays
    r.stats["makespan_ns"]          # the `nisa run --stats-json` object as a dict

Arrays: fp32 / fp16 / integers as numpy's own dtypes, either byte order (big-endian ones are
swapped as they are copied in); bf16 as uint16 (raw bits) or ml_dtypes.bfloat16; fp8 as uint8
(raw bits) or ml_dtypes' float8 types. With ranks > 1 an
input may be [ranks, ...shape] (one slice per rank) and every output is [ranks, ...shape].
"""
import collections as _collections
import json as _json
import os as _os
import pathlib as _pathlib
import warnings as _warnings

from . import _nisa

__all__ = ["assemble", "run", "Kernel", "Result", "NisaError", "AssemblyError", "InputError",
           "RunError", "DeadlockError", "FaultError", "RaceError", "BudgetError", "bf16_dtype",
           "cost_units", "kernels_dir", "CheckResult", "CheckPair", "CheckFix", "CheckWarning"]

__version__ = _nisa.__version__  # project(VERSION) of the top CMakeLists.txt

# The units of Kernel.run(cost_scale={unit: factor}) (`nisa run --cost-scale UNIT=F`): the
# engines, then dma (docs/machine.md "Cost scale (what-if)").
cost_units = _nisa.cost_units

try:  # optional: bf16 outputs come back as ml_dtypes.bfloat16 when it is installed
    import ml_dtypes as _ml_dtypes
    bf16_dtype = _ml_dtypes.bfloat16
except ImportError:  # pragma: no cover - depends on the machine
    _ml_dtypes = None
    bf16_dtype = None


class NisaError(Exception):
    """Base of every nisa error."""


class AssemblyError(NisaError):
    """The kernel did not assemble. file, line, column, message: the first error;
    diagnostics: every diagnostic as a dict (schema of `nisa asm --diagnostics-format json`);
    str(): the text `nisa asm` prints."""

    def __init__(self, diagnostics, text):
        self.diagnostics = diagnostics
        first = next((d for d in diagnostics if d["severity"] == "error"), diagnostics[0])
        self.file, self.line, self.column = first["file"], first["line"], first["column"]
        self.message = first["message"]
        self.expansion = first["expansion"]
        super().__init__(text.rstrip("\n"))


class InputError(NisaError, ValueError):
    """A bad argument: unknown or unbound tensor, wrong dtype or shape, bad option."""


class RunError(NisaError):
    """The run did not finish cleanly. report: what `nisa run` prints; exit_code: its exit
    code; result: the Result (stats; outputs only when the run finished)."""
    exit_code = None

    def __init__(self, result):
        self.result = result
        self.report = result.report
        self.exit_code = result.exit_code
        super().__init__(result.report.rstrip("\n"))


class DeadlockError(RunError):
    """Exit code 2: engines wait on each other."""


class FaultError(RunError):
    """Exit code 3: a run-time fault (out of bounds, bad register, ...)."""


class RaceError(RunError):
    """Exit code 4: check_races found unordered conflicting accesses."""


class BudgetError(RunError):
    """Exit code 5: max_steps spent (an endless loop?)."""


_ERRORS = {"deadlock": DeadlockError, "fault": FaultError, "races": RaceError,
           "budget": BudgetError}


class Result:
    """outputs: {name: numpy array}; stats: dict (docs/machine-io.md "Statistics as JSON");
    status, exit_code, report (empty when ok), races (count); profile: with run(profile=True)
    the profile as a dict (docs/profile.md, schema nisa-profile/1), profile_report its text,
    else None. r.NAME and r["NAME"] are r.outputs["NAME"]."""

    def __init__(self, d):
        self.outputs = d["outputs"]
        self.status = d["status"]
        self.exit_code = d["exit_code"]
        self.report = d["report"]
        self.races = d["races"]
        self.stats = _json.loads(d["stats_json"])
        p = d.get("profile_json")
        self.profile = _json.loads(p) if p is not None else None
        self.profile_report = d.get("profile_report")

    def __getitem__(self, name):
        return self.outputs[name]

    def __getattr__(self, name):
        outputs = self.__dict__.get("outputs", {})
        if name in outputs:
            return outputs[name]
        raise AttributeError(name)

    def __repr__(self):
        return f"Result(status={self.status!r}, outputs={list(self.outputs)})"


class CheckWarning(UserWarning):
    """What the bounded static check before Kernel.run(check=True) found: unordered pairs or
    deadlocks (the text `nisa run` prints), or that it was skipped. The run goes on."""


# One suggested wait of a CheckPair: add `@wait(wait)` to the line loc ("file:line"); when
# new_sem is not "", first declare `.sem new_sem` and add `@signal(new_sem)` to signal_loc.
CheckFix = _collections.namedtuple("CheckFix", "loc wait signal_loc new_sem")


class CheckPair:
    """One pair of source lines with unordered accesses (docs/check.md "Reports"), in the order
    the kernel intends: a (a_loc "file:line", a_who, a_iter "i=2", a_write) must come before b.
    region: the bytes of the witness; instances: how many instance pairs; suggestion: the text
    of the fix; fixes: [CheckFix(loc, wait, signal_loc, new_sem)]."""

    def __init__(self, d):
        self.__dict__.update(d)
        self.fixes = [CheckFix(*f) for f in d["fixes"]]

    def __repr__(self):
        return f"CheckPair({self.a_loc!r} -> {self.b_loc!r}, fixes={self.fixes!r})"


class CheckResult:
    """Kernel.check(): proved (bool), status ("proved", "races", "deadlock" or "outside"),
    exit_code (as `nisa check`), report (its text), pairs ([CheckPair]), deadlock (bool) and
    deadlocks (one text per report), outside (why the kernel is outside what is proved, else
    ""), limit (outside because a limit was reached), and the sizes instructions, nodes,
    streams, sem_edges, rounds."""

    def __init__(self, d):
        self.status = d["status"]
        self.proved = self.status == "proved"
        self.exit_code = d["exit_code"]
        self.report = d["report"]
        self.pairs = [CheckPair(p) for p in d["pairs"]]
        self.deadlocks = list(d["deadlocks"])
        self.deadlock = bool(self.deadlocks)
        self.outside = d["outside"]
        self.limit = d["limit"]
        for k in ("instructions", "nodes", "streams", "sem_edges", "rounds"):
            setattr(self, k, d[k])

    def __bool__(self):
        return self.proved

    def __repr__(self):
        return f"CheckResult(status={self.status!r}, pairs={len(self.pairs)})"


class Kernel:
    """An assembled kernel (nisa.assemble). tensors: [{name, space, dtype, shape, role}];
    ranks, lnc: the kernel's `.ranks` / `.lnc` (the defaults of run and check), None when it
    declares none."""

    def __init__(self, k):
        self._k = k
        self.path, self.name, self.target = k.path, k.name, k.target
        self.ranks, self.lnc = k.ranks, k.lnc
        self.tensors = k.tensors()
        self._prechecked = {}  # (lnc, ranks, target) -> what the bounded check printed

    def check(self, lnc=None, ranks=None, *, target="", max_seconds=60.0, max_memory=0,
              max_rounds=100, max_reports=40):
        """`nisa check` of the kernel (docs/check.md): whether every conflicting access is
        ordered and no schedule deadlocks, on lnc x ranks cores (None: the kernel's `.lnc` /
        `.ranks`, else 1, as in run). max_memory in MiB (0: the default). Returns a
        CheckResult; bad options raise InputError."""
        try:
            d = _nisa.check(self._k, lnc, ranks, target or "", float(max_seconds),
                            int(max_memory), int(max_rounds), int(max_reports), False)
        except (ValueError, TypeError, OverflowError) as e:
            raise InputError(str(e)) from None
        return CheckResult(d)

    def _precheck(self, lnc, ranks, target):
        key = (lnc, ranks, target)
        if key not in self._prechecked:
            try:
                d = _nisa.check(self._k, lnc, ranks, target, 0.0, 0, 100, 10, True)
            except (ValueError, TypeError, OverflowError) as e:
                raise InputError(str(e)) from None
            self._prechecked[key] = d["text"]
        if self._prechecked[key]:
            _warnings.warn(self._prechecked[key].rstrip("\n"), CheckWarning, stacklevel=3)

    def run(self, lnc=None, ranks=None, schedule="fixed", seed=0, check_races=False, *,
            max_steps=0, target="", fetch=(), threads=0, cost_scale=None, profile=False,
            check=True, raise_on_error=True, **inputs):
        """Runs the kernel on the inputs (numpy arrays by tensor name) and returns a Result.
        Its outputs are the kernel's output tensors plus the HBM tensors named in fetch (e.g.
        a cache updated in place, as `nisa run --out` saves it).
        lnc, ranks: None for the kernel's `.lnc` / `.ranks`, else 1; a value that differs from
        the kernel's declaration is an InputError naming both.
        Raises DeadlockError, FaultError, RaceError or BudgetError (with the report `nisa run`
        prints) unless raise_on_error=False; InputError for bad arguments. threads: host
        threads (0: the host's cores); the results are the same for every value.
        cost_scale: what-if, {unit: factor} as `nisa run --cost-scale UNIT=F` (e.g. {"dma": 2}:
        DMA transfers twice as fast; units: nisa.cost_units; docs/machine.md "Cost scale").
        profile: the result carries the profile (`nisa run --profile`, docs/profile.md): the
        critical path, time per unit and line, stalls, hints and the what-if makespans (each
        busy unit 2x faster: up to 7 more runs).
        check: first the bounded static check `nisa run` makes (docs/check.md "Before every
        run"), once per Kernel and (lnc, ranks, target): what it finds is a CheckWarning; the
        run goes on either way.
        Arrays of any layout and byte order are copied once, straight into the machine's
        memory, after every limit was checked. Ctrl-C (any signal handler that raises) stops
        the run within milliseconds and raises KeyboardInterrupt; the Kernel stays usable."""
        if check:
            self._precheck(lnc, ranks, target or "")
        try:
            d = _nisa.run(self._k, lnc, ranks, schedule, seed, check_races, inputs, max_steps,
                          target, bf16_dtype, list(fetch), threads, cost_scale,
                          bool(profile))
        except (ValueError, TypeError) as e:
            raise InputError(str(e)) from None
        r = Result(d)
        if raise_on_error and r.status != "ok":
            raise _ERRORS.get(r.status, RunError)(r)
        return r

    def __repr__(self):
        return f"Kernel({self.name!r}, target={self.target!r}, path={self.path!r})"


def _define(v):
    if isinstance(v, bool):
        return "1" if v else "0"
    return str(v)


def kernels_dir():
    """The kernels shipped with nisa (kernels_asm/: topk.nasm, ..., and their .include library
    lib/) as a pathlib.Path, or None: $NISA_KERNELS_DIR if set; installed (a wheel, the .deb),
    <prefix>/share/nisa/kernels_asm beside <prefix>/lib/pythonX/site-packages/nisa; in the build
    tree, the source tree's kernels_asm."""
    env = _os.environ.get("NISA_KERNELS_DIR")
    if env:
        return _pathlib.Path(env)
    here = _pathlib.Path(__file__).resolve().parent
    installed = here.parents[3] / "share" / "nisa" / "kernels_asm" if len(here.parents) > 3 else None
    if installed is not None and installed.is_dir():
        return installed
    try:
        from . import _build_tree  # written by python/CMakeLists.txt into the build tree only
        return _pathlib.Path(_build_tree.KERNELS_DIR)
    except ImportError:
        return None


def assemble(path, target=None, include=(), **params):
    """Assembles a .nasm kernel (params: its .param values, e.g. ROWS=4, DT="bf16") or loads a
    .nbin. `.include` files are searched beside the kernel, then in `include`, then in
    kernels_dir() (the kernels' library: `.include "lib/attn.inc"`). Raises AssemblyError
    carrying file, line, column and message."""
    dirs = [str(i) for i in include]
    lib = kernels_dir()
    if lib is not None:
        dirs.append(str(lib))
    try:
        k, diags, text = _nisa.assemble(str(path), target or "",
                                        [(n, _define(v)) for n, v in params.items()], dirs)
    except ValueError as e:
        raise InputError(str(e)) from None
    if k is None:
        raise AssemblyError(diags, text)
    return Kernel(k)


def run(path, params=None, *, target=None, lnc=None, ranks=None, schedule="fixed", seed=0,
        check_races=False, fetch=(), threads=0, cost_scale=None, profile=False, check=True,
        **inputs):
    """assemble(path, target, **params).run(lnc, ranks, schedule, seed, check_races, **inputs)."""
    return assemble(path, target=target, **(params or {})).run(
        lnc=lnc, ranks=ranks, schedule=schedule, seed=seed, check_races=check_races,
        fetch=fetch, threads=threads, cost_scale=cost_scale, profile=profile, check=check,
        **inputs)
