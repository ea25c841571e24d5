here:
  sp.nop
here: ; CHECK: :[[@LINE]]:1: error: duplicate label 'here' (first defined at line 1)
  sp.nop
