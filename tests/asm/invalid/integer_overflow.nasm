; Integer overflow in compile-time arithmetic and .for counters is an error (docs/asm.md),
; never a silent wrap (issue 11).
.kernel ovf
.equ BIG = 0x7ffffffffffffff0
.equ MIN = -0x7fffffffffffffff - 1
.equ A = abs(MIN) ; CHECK: :[[@LINE]]:10: error: integer overflow in abs()
.equ B = align_up(BIG, 64) ; CHECK: :[[@LINE]]:10: error: integer overflow in align_up()
.equ C = cdiv(BIG, 64)
.equ D = 3 << 62 ; CHECK: :[[@LINE]]:10: error: integer overflow in compile-time expression
.equ E = -1 << 63
.for i in BIG .. 0x7fffffffffffffff step 100 ; CHECK: :[[@LINE]]:1: error: integer overflow: the .for counter passes INT64_MAX after 1 iterations
        sp.nop
.endfor
.for i in MIN + 10 .. MIN step -7 ; CHECK: :[[@LINE]]:1: error: integer overflow: the .for counter passes INT64_MIN after 2 iterations
        sp.nop
.endfor
.for i in MIN .. BIG step 0x4000000000000000 ; CHECK: :[[@LINE]]:1: error: integer overflow: the .for counter passes INT64_MAX after 4 iterations
        sp.nop
.endfor
.for i in 0 .. 9 step 4
        sp.nop
.endfor
