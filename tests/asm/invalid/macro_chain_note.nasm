.sbuf a : fp32[128, 16]
.macro inner t
  dve.memset t, 1.0
  dve.max88 t ; CHECK: :[[@LINE]]:7: error: unknown mnemonic 'max88'; did you mean 'max8'?
  ; CHECK: note: in expansion of macro 'inner' at macro_chain_note.nasm:9:3
  ; CHECK: note: in expansion of macro 'outer' at macro_chain_note.nasm:11:1
.endm
.macro outer t
  inner t
.endm
outer a
