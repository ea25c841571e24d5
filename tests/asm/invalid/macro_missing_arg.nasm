.macro clear t, v=0.0
  dve.memset t, v
.endm
  clear v=1.0 ; CHECK: :[[@LINE]]:3: error: missing argument 't' of macro 'clear' (t, v=...)
