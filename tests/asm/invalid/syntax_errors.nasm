; Syntax errors: one per line, and parsing goes on with the next line. "found end of line"
; points at the end of the line (after its comment), where the parser met it.
.kernel k
.sbuf a : fp32[128, 64]
  dve.tensor_tensor a[:, 0:8], a[:, 8:16] a[:, 16:24], op=add ; CHECK: :[[@LINE]]:43: error: expected ',' before the next operand
  dve.iota a[:, (1 + ], 0 ; CHECK: :[[@LINE]]:22: error: expected an expression, found ']'
  dve.iota a[:, 0:4, 0 ; CHECK: :[[@LINE]]:93: error: expected ']' or ',', found end of line
.for i in 0 .. ; CHECK: :[[@LINE]]:88: error: expected an expression, found end of line
.sbuf b fp32[128, 4] ; CHECK: :[[@LINE]]:9: error: expected ':', found 'fp32'
  sp.nop @wait(s0 >= 1 ; CHECK: :[[@LINE]]:93: error: expected ')' or ',', found end of line
3 + 4 ; CHECK: :[[@LINE]]:1: error: expected a statement, found '3'
.equ = 4 ; CHECK: :[[@LINE]]:6: error: expected a name, found '='
