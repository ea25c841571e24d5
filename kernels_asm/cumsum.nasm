; cumsum.nasm: inclusive prefix sum along the last axis.
;
; Parameters: ROWS, COLS (any positive sizes), DT (bf16 | fp32).
; Inputs:     x : DT[ROWS, COLS]      Outputs: y : DT[ROWS, COLS]
; Envelope:   any ROWS; any COLS (the seed stops at 8192: the carry makes any width work).
;
; Idea (seed 002, "cumsum"): rows go on partitions (128-row tiles), the free axis is
; scanned by ONE dve.scan per 2048-wide free tile:
;     r = (ones[i] * r) + x[i]    (op0 = multiply, op1 = add, r seeded by the carry)
; The fp32 carry takes the last column of the result tile into the next free tile.
; As in the seed, the carry is re-read from the DT result tile (bf16 rounding at every
; 2048 boundary for bf16 inputs). Loads, scans and stores are ordered by semaphores
; (single-buffered: a load waits for the scan that read the previous tile).
.kernel cumsum
.param ROWS = 256
.param COLS = 5000
.param DT   = fp32
.if DT != fp32 && DT != bf16
  .error "cumsum: DT must be fp32 or bf16"
.endif
.if ROWS < 1 || COLS < 1
  .error "cumsum: ROWS and COLS must be positive"
.endif
.lnc 1                          ; not sharded: on two cores both would store all of y
.equ FT = 2048                  ; one scan per 2048-wide free tile
.equ NP = cdiv(ROWS, 128)       ; partition tiles
.equ NF = cdiv(COLS, FT)        ; free tiles per partition tile

.hbm  x     : DT[ROWS, COLS]   input
.hbm  y     : DT[ROWS, COLS]   output
.sbuf ones  : fp32[128, FT]
.sbuf carry : fp32[128, 1]
.sbuf data  : DT[128, FT]
.sbuf res   : DT[128, FT]
.sem  s_in, s_scan, s_out

        dve.memset ones, 1.0                  ; dve program order puts it before every scan
.for p in 0 .. NP
  .set PS = min(128, ROWS - p*128)
        dve.memset carry, 0.0
  .for f in 0 .. NF
    .set FS = min(FT, COLS - f*FT)
    .set I  = p*NF + f                        ; global tile counter
        sp.dma q0, data[0:PS, 0:FS], x[p*128 : p*128+PS, f*FT : f*FT+FS]  @wait(s_scan >= I) @signal(s_in)
        dve.scan res[0:PS, 0:FS], ones[0:PS, 0:FS], data[0:PS, 0:FS], init=carry[0:PS, :], op0=multiply, op1=add  @wait(s_in >= I+1, s_out >= I) @signal(s_scan)
        sp.dma q1, y[p*128 : p*128+PS, f*FT : f*FT+FS], res[0:PS, 0:FS]  @wait(s_scan >= I+1) @signal(s_out)
        dve.copy carry[0:PS, :], res[0:PS, FS-1 : FS]   ; same engine as the scan: program order
  .endfor
.endfor
