.equ X = 1
.if X ; CHECK: :[[@LINE]]:1: error: unterminated '.if': no '.endif' before the end of the file
  sp.nop
