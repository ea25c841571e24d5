; A local label is visible in the expansion that defines it (and those nested in it) only.
.for k in 0 .. 2
.Linner:
  sp.nop
.endfor
  sp.br .Linner ; CHECK: :[[@LINE]]:9: error: undefined label '.Linner'
.Lx:
.Lx: ; CHECK: :[[@LINE]]:1: error: duplicate label '.Lx' (first defined at line 7)
.data: ; CHECK: :[[@LINE]]:1: error: '.data' is not a label: a local label starts with '.L'
  sp.nop
