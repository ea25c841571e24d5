#!/usr/bin/env python3
"""vsix.py FILE.vsix VERSION EDITOR_DIR: the check `make vsix` runs on the file it made (it needs
npm, so it is no CTest test). Unzips the .vsix and checks its manifests: the version is the
project's, the language, grammar and `nisa` debugger contributions are there with the files they
name, the grammar is the ISA's (a scope and an instruction it must hold), the debug adapter
launcher is executable, and the README is the extension's."""
import json
import re
import stat
import sys
import zipfile
from pathlib import Path


def fail(msg):
    sys.exit(f"vsix: {msg}")


def main(vsix, version, editor_dir):
    with zipfile.ZipFile(vsix) as z:
        names = set(z.namelist())
        # vsce stores the README as extension/readme.md.
        readme_name = next((n for n in names if n.lower() == "extension/readme.md"), "")
        for want in ("extension.vsixmanifest", "[Content_Types].xml", "extension/package.json",
                     readme_name or "extension/README.md", "extension/nisa-dap",
                     "extension/language-configuration.json"):
            if want not in names:
                fail(f"{vsix} has no {want} (it has {sorted(names)})")
        pkg = json.loads(z.read("extension/package.json"))
        manifest = z.read("extension.vsixmanifest").decode()
        readme = z.read(readme_name).decode()
        dap_mode = z.getinfo("extension/nisa-dap").external_attr >> 16

        if pkg.get("version") != version:
            fail(f"package.json states version {pkg.get('version')!r}, the project {version}")
        m = re.search(r'<Identity [^>]*Version="([^"]+)"', manifest)
        if not m or m.group(1) != version:
            fail(f"extension.vsixmanifest's Identity Version is {m and m.group(1)!r}, want {version}")
        if not re.search(rf'Id="{re.escape(pkg["name"])}"', manifest):
            fail(f"extension.vsixmanifest does not name the extension {pkg['name']}")

        c = pkg.get("contributes", {})
        langs = {lang["id"]: lang for lang in c.get("languages", [])}
        if ".nasm" not in langs.get("nasm-nisa", {}).get("extensions", []):
            fail(f"no language nasm-nisa for .nasm files: {c.get('languages')}")
        grammars = [g for g in c.get("grammars", []) if g.get("language") == "nasm-nisa"]
        if len(grammars) != 1:
            fail(f"expected one grammar of nasm-nisa: {c.get('grammars')}")
        gpath = "extension/" + grammars[0]["path"].removeprefix("./")
        if gpath not in names:
            fail(f"the grammar {gpath} is not in the file")
        grammar = json.loads(z.read(gpath))
        if grammar.get("scopeName") != grammars[0].get("scopeName"):
            fail(f"the grammar's scopeName {grammar.get('scopeName')} is not the contribution's")
        text = json.dumps(grammar)
        for word in ("matmul", "tensor_tensor", "activation", "dma_transpose"):
            if word not in text:
                fail(f"the grammar does not know the instruction {word}")

        debuggers = {d["type"]: d for d in c.get("debuggers", [])}
        dbg = debuggers.get("nisa")
        if not dbg or "nasm-nisa" not in dbg.get("languages", []):
            fail(f"no debugger of type nisa for nasm-nisa: {c.get('debuggers')}")
        if "extension/" + dbg["program"].removeprefix("./") not in names:
            fail(f"the debugger's program {dbg['program']} is not in the file")
        if not dap_mode & stat.S_IXUSR:
            fail(f"extension/nisa-dap is not executable (mode {oct(dap_mode)})")
        if "program" not in dbg["configurationAttributes"]["launch"]["required"]:
            fail("the launch configuration does not require a program")

        if readme != (Path(editor_dir) / "README.md").read_text():
            fail("extension/README.md is not editors/vscode/README.md")
    print(f"vsix: {vsix}: version {version}, grammar, debugger and README checked")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: vsix.py FILE.vsix VERSION EDITOR_DIR")
    main(*sys.argv[1:])
