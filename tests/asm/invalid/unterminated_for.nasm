.for i in 0 .. 4 ; CHECK: :[[@LINE]]:1: error: unterminated '.for': no '.endfor' before the end of the file
  sp.nop
