.sbuf t : fp32[128, 4]
.for i in 0 .. 2 ; CHECK: :[[@LINE]]:1: error: unterminated '.for': no '.endfor' before the end of the file
  dve.memset t, 1.0
.endfro ; CHECK: :[[@LINE]]:1: error: unknown directive '.endfro'; did you mean '.endfor' (closing '.for' at line 2)?
