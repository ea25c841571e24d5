.sbuf a : fp32[128, 16]
.macro clear t, v=0.0
  dve.memset t, v
.endm
  clear a, 1.0, 2.0 ; CHECK: :[[@LINE]]:17: error: macro 'clear' takes 2 argument(s) (t, v=...), got more
