.sbuf a : fp32[128, 16]
  dve.memset b, 0.0 ; CHECK: :[[@LINE]]:14: error: unknown tensor 'b'; did you mean 'a'?
  sp.nop
  dve.memsett a, 0.0 ; CHECK: :[[@LINE]]:7: error: unknown mnemonic 'memsett'; did you mean 'memset'?
.equ Z = 1 / 0 ; CHECK: :[[@LINE]]:14: error: division by zero
