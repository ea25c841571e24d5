; Expressions are compiled once and run at every expansion: one that fails on some expansions
; only must report there, as the tree walk did (the same location and notes), and the other
; expansions must assemble.
.sbuf a : fp32[128, 16]
.macro m d
  dve.memset a[:, 8 / d : 16], 0.0 ; CHECK: :[[@LINE]]:23: error: division by zero
  ; CHECK: note: in expansion of macro 'm' at compiled_expr_errors.nasm:12:3
  ; CHECK: note: in iteration k=2 of .for at compiled_expr_errors.nasm:11:1
.endm
; d = 2, 1, 0: the third expansion divides by zero.
.for k in 0 .. 3
  m 2 - k
.endfor
.set BIG = 4611686018427387904
.for k in 1 .. 3
  dve.memset a[:, BIG * k - BIG : 16], 0.0 ; CHECK: :[[@LINE]]:19: error: integer overflow in compile-time expression
  ; CHECK: note: in iteration k=2 of .for at compiled_expr_errors.nasm:15:1
.endfor
; A parameter that is an integer in one expansion and a float in the next.
.macro s v
  dve.memset a[:, v + 1 : 16], 0.0 ; CHECK: :[[@LINE]]:19: error: slice start must be an integer, not 3.5
  ; CHECK: note: in expansion of macro 's' at compiled_expr_errors.nasm:25:1
.endm
  s 2
s 2.5
; A name bound in the caller's loop is not the macro's: undefined inside it at every expansion.
.macro u
  dve.memset a[:, j * 2 : 16], 0.0 ; CHECK: :[[@LINE]]:19: error: undefined symbol 'j'; did you mean 'a'?
  ; CHECK: note: in expansion of macro 'u' at compiled_expr_errors.nasm:33:3
  ; CHECK: note: in iteration j=0 of .for at compiled_expr_errors.nasm:32:1
.endm
.for j in 0 .. 2
  u
.endfor
; A slice lowered the planned way in one expansion, out of its dim in the next.
.macro q i
  dve.memset a[:, i], 0.0 ; CHECK: :[[@LINE]]:19: error: index 16 is outside the dimension of size 16
  ; CHECK: note: in expansion of macro 'q' at compiled_expr_errors.nasm:41:1
.endm
  q 15
q 16
