; An argument given positionally (an integer: kept without a Value, asm/expand.cpp) and again
; by name: the error is at the named argument.
.sbuf a : fp32[128, 8]
.macro fill t, c, v=0.0
  dve.memset t[:, c : c + 1], v
.endm
  fill a, 1 + 2, c=3 ; CHECK: :[[@LINE]]:18: error: argument 'c' given twice
