.sbuf a : fp32[128, 4]
.equ X = sqrt(-1.0) ; CHECK: :[[@LINE]]:10: error: sqrt() of a negative value
.equ Y = addr(3) ; CHECK: :[[@LINE]]:15: error: addr() needs a tensor, not 3
.equ Z = size(aa) ; CHECK: :[[@LINE]]:15: error: size() needs a tensor, not aa; did you mean 'a'?
.equ W = dim(a, 2) ; CHECK: :[[@LINE]]:17: error: dim(): tensor 'a' has 2 dimension(s), not 2
  sp.dma q(16), a, a ; CHECK: :[[@LINE]]:10: error: q() needs an integer queue number in [0, 16), got 16
