.for i in 0 .. 100000000 ; CHECK: :[[@LINE]]:1: error: .for of 100000000 iterations exceeds the limit of 1000000
  sp.nop
.endfor
