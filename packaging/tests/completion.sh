#!/usr/bin/env bash
# Packaging.completion: completion.sh SCRIPT. Sources the generated completion and calls its
# function as bash would (COMP_WORDS, COMP_CWORD), checking what it offers.
set -uo pipefail
source "$1" || { echo "completion: cannot source $1" >&2; exit 1; }
fails=0
expect() { # expect "WANT" WORD...: completing the last word gives exactly WANT
  local want=$1; shift
  COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=()
  _nisa
  local got="${COMPREPLY[*]}"
  if [ "$got" != "$want" ]; then
    echo "completion: '$*' gave '$got', want '$want'" >&2; fails=1
  fi
}
expect "run" nisa r
expect "disasm debug dap" nisa d
expect "--profile --profile-json --profile-no-what-if" nisa run --pro
expect "--diagnostics-format" nisa asm --diag
expect "trn1 trn2 trn3" nisa run --target ""
expect "text json" nisa asm x.nasm --diagnostics-format ""
expect "--batch" nisa debug k.nasm --ba
expect "" nisa run --no-such
[ $fails = 0 ] && echo "completion: ok"
exit $fails
