#!/usr/bin/env bash
# Packaging.man_page: man_page.sh NISA.1 NISA VERSION. The page renders with man (man-db) and
# names every command `nisa --help` lists (each a "nisa CMD" subsection holding its options),
# and the version.
set -euo pipefail
page=$1 nisa=$2 version=$3
fail() { echo "man_page: $*" >&2; exit 1; }
[ -f "$page" ] || fail "$page is missing (help2man missing? run scripts/bootstrap.sh, then build target man)"
command -v man >/dev/null || fail "man is missing: install man-db (scripts/bootstrap.sh does)"
text=$(MANWIDTH=80 man -l "$page" 2>&1) || fail "man -l $page failed: $text"
cmds=$("$nisa" --help | sed -n '/^commands:$/,$p' | awk 'NR > 1 && /^  [a-z]/ {print $1}')
[ "$(echo "$cmds" | wc -w)" -ge 7 ] || fail "nisa --help lists too few commands: $cmds"
for c in $cmds; do
  grep -q "^   nisa $c\$" <<<"$text" || fail "no subsection \"nisa $c\" in the page"
done
# Options of the commands, past their help's first line.
for o in '--profile-json FILE' '--diagnostics-format text|json' '--max-rounds N' '-f, --format'; do
  grep -qF -- "$o" <<<"$text" || fail "option '$o' missing from the page"
done
grep -q "^nisa $version .*NISA(1)\$" <<<"$text" || fail "no footer with version $version"
echo "man_page: $(echo "$cmds" | wc -w) commands, $(wc -l <<<"$text") lines, version $version"
