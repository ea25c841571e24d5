"""The VS Code extension folder: package.json wires the generated grammar and the adapter."""
import json
import os
import subprocess

from conftest import NISA, SRC

EXT = SRC / "editors" / "vscode"


def test_package_json_wires_grammar_and_debugger():
    pkg = json.loads((EXT / "package.json").read_text())
    c = pkg["contributes"]
    lang = c["languages"][0]
    assert ".nasm" in lang["extensions"] and (EXT / lang["configuration"]).exists()
    json.loads((EXT / lang["configuration"]).read_text())
    g = c["grammars"][0]
    assert g["language"] == lang["id"] and g["scopeName"] == "source.nasm"
    assert json.loads((EXT / g["path"]).read_text())["scopeName"] == "source.nasm"
    d = c["debuggers"][0]
    assert d["type"] == "nisa" and lang["id"] in d["languages"]
    prog = EXT / d["program"]
    assert os.access(prog, os.X_OK)
    assert c["breakpoints"][0]["language"] == lang["id"]
    # The adapter script starts `nisa dap`.
    p = subprocess.run([str(prog), "--help"], env=dict(os.environ, NISA=NISA),
                       capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.startswith("usage: nisa dap")
