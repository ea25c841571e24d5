"""nisa: assemble and run .nasm kernels on the modelled Neuron machine from Python.

    import nisa                     # PYTHONPATH=build/python (docs/python.md)
    k = nisa.assemble("kernels_asm/cumsum.nasm", ROWS=4, COLS=8)
    r = k.run(x=np.ones((4, 8), np.float32))
    r.y, r["y"], r.outputs["y"]     # numpy arrays
    r.stats["makespan_ns"]          # the `nisa run --stats-json` object as a dict

Arrays: fp32 / fp16 / integers as numpy's own dtypes, either byte order (big-endian ones are
swapped as they are copied in); bf16 as uint16 (raw bits) or ml_dtypes.bfloat16; fp8 as uint8
(raw bits) or ml_dtypes' float8 types. With ranks > 1 an
input may be [ranks, ...shape] (one slice per rank) and every output is [ranks, ...shape].
"""
import json as _json

from . import _nisa

__all__ = ["assemble", "run", "Kernel", "Result", "NisaError", "AssemblyError", "InputError",
           "RunError", "DeadlockError", "FaultError", "RaceError", "BudgetError", "bf16_dtype",
           "cost_units"]

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
    """outputs: {name: numpy array}; stats: dict (docs/machine.md "Statistics as JSON");
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


class Kernel:
    """An assembled kernel (nisa.assemble). tensors: [{name, space, dtype, shape, role}]."""

    def __init__(self, k):
        self._k = k
        self.path, self.name, self.target = k.path, k.name, k.target
        self.tensors = k.tensors()

    def run(self, lnc=1, ranks=1, schedule="fixed", seed=0, check_races=False, *,
            max_steps=0, target="", fetch=(), threads=0, cost_scale=None, profile=False,
            raise_on_error=True, **inputs):
        """Runs the kernel on the inputs (numpy arrays by tensor name) and returns a Result.
        Its outputs are the kernel's output tensors plus the HBM tensors named in fetch (e.g.
        a cache updated in place, as `nisa run --out` saves it).
        Raises DeadlockError, FaultError, RaceError or BudgetError (with the report `nisa run`
        prints) unless raise_on_error=False; InputError for bad arguments. threads: host
        threads (0: the host's cores); the results are the same for every value.
        cost_scale: what-if, {unit: factor} as `nisa run --cost-scale UNIT=F` (e.g. {"dma": 2}:
        DMA transfers twice as fast; units: nisa.cost_units; docs/machine.md "Cost scale").
        profile: the result carries the profile (`nisa run --profile`, docs/profile.md): the
        critical path, time per unit and line, stalls, hints and the what-if makespans (each
        busy unit 2x faster: up to 7 more runs).
        Arrays of any layout and byte order are copied once, straight into the machine's
        memory, after every limit was checked. Ctrl-C (any signal handler that raises) stops
        the run within milliseconds and raises KeyboardInterrupt; the Kernel stays usable."""
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


def assemble(path, target=None, include=(), **params):
    """Assembles a .nasm kernel (params: its .param values, e.g. ROWS=4, DT="bf16") or loads a
    .nbin. Raises AssemblyError carrying file, line, column and message."""
    try:
        k, diags, text = _nisa.assemble(str(path), target or "",
                                        [(n, _define(v)) for n, v in params.items()],
                                        [str(i) for i in include])
    except ValueError as e:
        raise InputError(str(e)) from None
    if k is None:
        raise AssemblyError(diags, text)
    return Kernel(k)


def run(path, params=None, *, target=None, lnc=1, ranks=1, schedule="fixed", seed=0,
        check_races=False, fetch=(), threads=0, cost_scale=None, profile=False, **inputs):
    """assemble(path, target, **params).run(lnc, ranks, schedule, seed, check_races, **inputs)."""
    return assemble(path, target=target, **(params or {})).run(
        lnc=lnc, ranks=ranks, schedule=schedule, seed=seed, check_races=check_races,
        fetch=fetch, threads=threads, cost_scale=cost_scale, profile=profile, **inputs)
