#!/usr/bin/env python3
"""Generates, from the --help texts of `nisa` and of every subcommand (the only place they are
written), the man page's subcommand sections (a help2man --include file) or the bash completion.

    cli_docs.py NISA man-include OUT     # [COMMANDS] section of nisa.1, one .SS per subcommand
    cli_docs.py NISA completion OUT      # share/bash-completion/completions/nisa

The subcommands are those `nisa --help` lists under "commands:"; a subcommand's options are the
lines of its --help that start with "  -" (Boost.Program_options' layout: the option, then its
description at a fixed column, continued on indented lines).
"""
import re
import subprocess
import sys


def help_of(nisa, *args):
    p = subprocess.run([nisa, *args, "--help"], capture_output=True, text=True)
    if p.returncode != 0 or not p.stdout.strip():
        sys.exit(f"cli_docs: `{nisa} {' '.join(args)} --help` failed (exit {p.returncode}): "
                 f"{p.stderr.strip()}")
    return p.stdout


def subcommands(nisa):
    """[(name, summary)] of `nisa --help`'s "commands:" list."""
    lines = help_of(nisa).splitlines()
    if "commands:" not in lines:
        sys.exit("cli_docs: `nisa --help` has no \"commands:\" list")
    out = []
    for line in lines[lines.index("commands:") + 1:]:
        m = re.match(r"^  (\S+)\s+(.*)$", line)
        if not m:
            break
        out.append((m.group(1), m.group(2)))
    if not out:
        sys.exit("cli_docs: `nisa --help` lists no commands")
    return out


def parse(text):
    """A subcommand's --help as blocks: ("text", paragraph) and ("option", tag, description)."""
    lines = text.splitlines()
    opt_lines = [l for l in lines if l.startswith("  -")]
    # The description column: where continuation lines (indented past the options) start.
    cont = [len(l) - len(l.lstrip()) for l in lines if l.startswith("    ") and l.strip()]
    col = min(cont) if cont else None
    if col is None and opt_lines:  # no continuation line: the first run of 2+ spaces
        col = min(re.search(r"\S\s{2,}\S", l).end() - 1 for l in opt_lines
                  if re.search(r"\S\s{2,}\S", l))
    blocks, para = [], []

    def flush():
        if para:
            blocks.append(("text", " ".join(para)))
            para.clear()

    for line in lines:
        if line.startswith("  -"):
            flush()
            blocks.append(["option", line[:col].strip(), line[col:].strip()])
        elif line.startswith("    ") and line.strip() and blocks and blocks[-1][0] == "option":
            blocks[-1][2] += " " + line.strip()
        elif not line.strip():
            flush()
        elif line.strip() == "options:":
            flush()
        else:
            para.append(line.strip())
    flush()
    return [tuple(b) for b in blocks]


def option_names(tag):
    """["-h", "--help"] of "-h [ --help ]"; ["--in"] of "--in arg"."""
    return re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", tag)


def roff(s):
    s = s.replace("\\", "\\e").replace("-", "\\-")
    return ("\\&" + s) if s[:1] in (".", "'") else s


def man_include(nisa, out):
    w = ["[COMMANDS]",
         "Each command takes \\fB\\-h\\fR, \\fB\\-\\-help\\fR; what follows is that help."]
    for name, _summary in subcommands(nisa):
        w.append(f".SS \"nisa {name}\"")
        for b in parse(help_of(nisa, name)):
            if b[0] == "text":
                w += [".PP", roff(b[1])]
            else:
                # "-h [ --help ]" as "-h, --help"
                tag = re.sub(r"^(-\w) \[ (--[\w-]+) \]", r"\1, \2", b[1])
                w += [".TP", "\\fB" + roff(tag) + "\\fR", roff(b[2])]
    w += ["[SEE ALSO]",
          "The documentation in /usr/share/doc/nisa (docs/*.md of the sources); the kernels in "
          "/usr/share/nisa/kernels_asm; the Python module: python3 \\-c 'import nisa; "
          "help(nisa)'."]
    open(out, "w").write("\n".join(w) + "\n")


def completion(nisa, out):
    cmds = subcommands(nisa)
    cases, values = [], []
    for name, _summary in cmds:
        opts = []
        for b in parse(help_of(nisa, name)):
            if b[0] != "option":
                continue
            names = option_names(b[1])
            opts += names
            # An option whose values are listed ("trn1 | trn2 | trn3: ..." or "text|json"):
            # those complete after it.
            m = re.match(r"^(\w+(?:\s*\|\s*\w+)+)\b", b[2]) or \
                re.search(r"\s(\w+(?:\|\w+)+)$", b[1])
            if m:
                words = " ".join(re.split(r"\s*\|\s*", m.group(1)))
                for n in names:
                    values.append(f"      {name}:{n}) COMPREPLY=($(compgen -W '{words}' -- \"$cur\"));"
                                  " return ;;")
        cases.append(f"    {name}) opts='{' '.join(opts)}' ;;")
    script = f"""# bash completion of nisa: generated at build time from the --help texts of nisa and its
# commands (packaging/cli_docs.py); do not edit.
_nisa() {{
  local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}} opts
  COMPREPLY=()
  if ((COMP_CWORD == 1)); then
    COMPREPLY=($(compgen -W '{' '.join(n for n, _ in cmds)} --help --version' -- "$cur"))
    return
  fi
  case ${{COMP_WORDS[1]}}:$prev in
{chr(10).join(values)}
  esac
  case ${{COMP_WORDS[1]}} in
{chr(10).join(cases)}
    *) return ;;
  esac
  # Options after "-"; otherwise files (complete -o default).
  if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W "$opts" -- "$cur")); fi
}}
complete -o default -F _nisa nisa
"""
    open(out, "w").write(script)


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[2] not in ("man-include", "completion"):
        sys.exit("usage: cli_docs.py NISA man-include|completion OUT")
    (man_include if sys.argv[2] == "man-include" else completion)(sys.argv[1], sys.argv[3])
