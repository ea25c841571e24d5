.for i in 0 .. 2
  sp.nop
.endif ; CHECK: :[[@LINE]]:1: error: '.endif' closes '.for' opened at line 1; expected '.endfor'
