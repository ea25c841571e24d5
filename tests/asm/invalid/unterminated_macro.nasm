.macro m ; CHECK: :[[@LINE]]:1: error: unterminated '.macro': no '.endm' before the end of the file
  sp.nop
