"""The machine-readable outputs of the command (nlohmann-json): --stats-json, asm
--diagnostics-format json, isa --format json, the --timeline trace, and the TextMate grammar
generated from the instruction table."""
import json
import re
import subprocess

import numpy as np

from conftest import NISA, SRC, kernel


def nisa(*args, check=True):
    p = subprocess.run([NISA, *map(str, args)], capture_output=True, text=True)
    if check:
        assert p.returncode == 0, p.stderr
    return p


def test_isa_json_is_the_table():
    doc = json.loads(nisa("isa", "--format", "json").stdout)
    assert doc["schema"] == "nisa-isa/1"
    md = (SRC / "docs" / "isa.md").read_text()
    summary = re.findall(r"^\| `([a-z0-9_]+)` \| ([a-z, ]+) \| `0x([0-9a-f]{4})`", md, re.M)
    assert len(summary) == len(doc["instructions"]) > 50
    for (mn, engines, op), j in zip(summary, doc["instructions"]):
        assert j["mnemonic"] == mn and j["opcode"] == int(op, 16)
        assert j["engines"] == engines.split(", ")
    memset = next(i for i in doc["instructions"] if i["mnemonic"] == "memset")
    assert memset["operands"][0]["kind"] == "dst-ap" and "sbuf" in memset["operands"][0]["spaces"]
    assert {"name": "add", "value": 0} in doc["enums"]["AluOp"] or doc["enums"]["AluOp"]
    assert [d["name"] for d in doc["dtypes"]][:2] == ["fp32", "bf16"]
    assert ".macro" in doc["directives"] and ".kernel" in doc["directives"]


def test_diagnostics_json(tmp_path):
    inc = tmp_path / "inc.inc"
    inc.write_text(".macro m N\n  dve.memset x, N + nosuch\n.endm\n")
    src = tmp_path / "k.nasm"
    src.write_text(".kernel k\n.sbuf x : fp32[4, 4]\n.include \"inc.inc\"\n"
                   ".for i in 0 .. 2\n  m i\n.endfor\n  dve.frobnicate x\n")
    p = nisa("asm", src, "-o", tmp_path / "k.nbin", "--diagnostics-format", "json", check=False)
    assert p.returncode == 1
    doc = json.loads(p.stderr)
    assert doc["schema"] == "nisa-diagnostics/1"
    ds = doc["diagnostics"]
    assert len(ds) == 2  # the loop's repeats are reported once
    d = ds[0]
    assert d["severity"] == "error" and d["file"].endswith("inc.inc") and d["line"] == 2
    assert d["column"] > 1 and "nosuch" in d["message"] and "nosuch" in d["source_line"]
    kinds = [n["kind"] for n in d["expansion"]]
    assert kinds == ["macro", "for"], d["expansion"]
    assert d["expansion"][0]["what"] == "m" and d["expansion"][0]["line"] == 5
    assert d["expansion"][1]["line"] == 4 and d["expansion"][1]["file"] == str(src)
    assert ds[1]["line"] == 7 and "frobnicate" in ds[1]["message"]
    # The text form carries the same facts.
    t = nisa("asm", src, "-o", tmp_path / "k.nbin", check=False).stderr
    assert f"inc.inc:2:{d['column']}: error: {d['message']}" in t
    bad = nisa("asm", src, "--diagnostics-format", "xml", check=False)
    assert bad.returncode == 1 and "unknown --diagnostics-format" in bad.stderr


def test_stats_json_and_timeline(tmp_path):
    x = np.random.default_rng(0).standard_normal((6, 1000)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    sj, tl = tmp_path / "s.json", tmp_path / "t.json"
    # cascaded_max shards its rows over the two cores (cumsum declares .lnc 1)
    p = nisa("run", kernel("cascaded_max.nasm"), "-D", "BXS=6", "-D", "V=1000", "--lnc", "2",
             "--in", f"x={tmp_path / 'x.npy'}", "--stats", "--stats-json", sj, "--timeline", tl)
    s = json.loads(sj.read_text())
    assert s["schema"] == "nisa-stats/1" and s["status"] == "ok" and s["exit_code"] == 0
    assert s["lnc"] == 2 and len(s["cores"]) == 2 and s["target"] == "trn2"
    total = sum(e["insts"] for c in s["cores"] for e in c["engines"])
    assert total == s["instructions"]
    # The text table says the same.
    m = re.search(r"instructions (\d+)  makespan ([0-9.]+) ns", p.stdout)
    assert int(m.group(1)) == s["instructions"]
    assert abs(float(m.group(2)) - s["makespan_ns"]) < 0.06
    assert abs(s["makespan_ns"] - s["makespan_ticks"] * 1000 / s["tick_mhz"]) < 1e-6
    q = [q for c in s["cores"] for q in c["queues"]]
    assert q and all(v["bytes"] > 0 for v in q)
    # The timeline: Chrome trace JSON whose instruction slices match the stats.
    t = json.loads(tl.read_text())
    assert t["displayTimeUnit"] == "ns"
    ev = t["traceEvents"]
    insts = [e for e in ev if e["ph"] == "X" and e["cat"] == "inst"]
    assert len(insts) == s["instructions"]
    assert {e["name"] for e in ev if e["ph"] == "M"} == {"process_name", "thread_name",
                                                           "thread_sort_index"}
    assert all(e["dur"] >= 0 and "source" in e["args"] for e in insts)
    end = max(e["ts"] + e["dur"] for e in ev if e["ph"] == "X")
    assert abs(end * 1000 - s["makespan_ns"]) < 1


def test_stats_json_after_deadlock(tmp_path):
    np.save(tmp_path / "x.npy", np.zeros((128, 64), np.float32))
    sj = tmp_path / "s.json"
    p = nisa("run", SRC / "tests" / "debugger" / "deadlock.nasm", "--in",
             f"x={tmp_path / 'x.npy'}", "--stats-json", sj, check=False)
    assert p.returncode == 2
    s = json.loads(sj.read_text())
    assert s["status"] == "deadlock" and s["exit_code"] == 2
    # An unwritable path is a usage error, no partial file left behind.
    p = nisa("run", kernel("cumsum.nasm"), "--in", f"x={tmp_path / 'x.npy'}",
             "--stats-json", tmp_path / "no" / "s.json", check=False)
    assert p.returncode == 1


def test_grammar_is_current():
    committed = (SRC / "editors" / "vscode" / "syntaxes" / "nasm.tmLanguage.json").read_text()
    assert committed == nisa("isa", "--format", "tmlanguage").stdout, (
        "regenerate: nisa isa --format tmlanguage > editors/vscode/syntaxes/nasm.tmLanguage.json")


def test_grammar_covers_the_kernels():
    """Every ENGINE.MNEMONIC of every kernel is scoped as an instruction, none as invalid."""
    g = json.loads((SRC / "editors" / "vscode" / "syntaxes" / "nasm.tmLanguage.json").read_text())
    pats = {p.get("name", ""): p for p in g["patterns"]}
    inst = next(p for p in g["patterns"] if "captures" in p and
                p["captures"].get("3", {}).get("name") == "keyword.other.instruction.nasm")
    rx = re.compile(inst["match"])
    dirs = re.compile(pats["keyword.control.directive.nasm"]["match"])
    files = list((SRC / "kernels_asm").rglob("*.nasm")) + list((SRC / "kernels_asm").rglob("*.inc"))
    seen = 0
    for f in files:
        for line in f.read_text().splitlines():
            code = line.split(";")[0]
            for m in re.finditer(r"\b(pe|act|dve|pool|sp|cc)\.([a-z_0-9]+)", code):
                assert rx.match(code, m.start()), (f, line)
                seen += 1
            d = re.match(r"\s*(\.[a-z]+)\b", code)
            if d and not re.match(r"\s*\.L", code):
                assert dirs.match(code, d.start(1)), (f, line)
    assert seen > 500
    json.loads(json.dumps(g))
    assert g["scopeName"] == "source.nasm"


def test_bad_formats_and_paths(tmp_path):
    p = nisa("isa", "--format", "yaml", check=False)
    assert p.returncode == 1 and "json or tmlanguage" in p.stderr
    np.save(tmp_path / "x.npy", np.zeros((2, 3), np.float32))
    same = tmp_path / "o.json"
    p = nisa("run", kernel("cumsum.nasm"), "-D", "ROWS=2", "-D", "COLS=3", "--in",
             f"x={tmp_path / 'x.npy'}", "--timeline", same, "--stats-json", same, check=False)
    assert p.returncode == 1 and "--stats-json" in p.stderr and not same.exists()
    p = nisa("run", kernel("cumsum.nasm"), "-D", "ROWS=2", "-D", "COLS=3", "--in",
             f"x={tmp_path / 'x.npy'}", "--stats-json", tmp_path / "x.npy", check=False)
    assert p.returncode == 1 and np.load(tmp_path / "x.npy").shape == (2, 3)
