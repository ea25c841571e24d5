; fault.nasm (tests/debugger): a dynamic offset out of range, for the debugger's fault stop.
; Same parameters and tensors as cumsum.nasm so the tests bind the same input.
.kernel fault
.param ROWS = 128
.param COLS = 64
.hbm  x : fp32[ROWS, COLS] input
.hbm  y : fp32[ROWS, COLS] output
.sbuf t : fp32[128, 4, 16]
        dve.li r3, 7
        dve.memset t[:, @r3, :], 1.0    ; r3 = 7 is outside [0, 4)
        dve.memset t[:, 0, :], 2.0
