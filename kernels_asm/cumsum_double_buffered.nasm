; cumsum_double_buffered.nasm: cumsum.nasm with double-buffered tiles (same parameters,
; inputs, outputs and bits; modelled 2048 x 8192 fp32: 365 us instead of 719 us). Kept
; beside cumsum.nasm because the debugger's golden tests pin cumsum.nasm's lines.
;
; Inclusive prefix sum along the last axis.
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
; 2048 boundary for bf16 inputs). Loads, scans and stores are ordered by semaphores and
; double-buffered: tile I uses slot I % 2; its load (issued by pool) waits for the scan of
; tile I-2, its scan for the store (issued by sp) of tile I-2, so the load of the next tile
; and the store of the previous one overlap the scan.
.kernel cumsum_double_buffered
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
.sbuf data0 : DT[128, FT]
.sbuf data1 : DT[128, FT]
.sbuf res0  : DT[128, FT]
.sbuf res1  : DT[128, FT]
.sem  s_in, s_scan, s_out

; One free tile: I = global tile counter, slot buffers DATA / RES.
.macro cumsum_tile p, f, data, res
  .set PS = min(128, ROWS - p*128)
  .set FS = min(FT, COLS - f*FT)
  .set I  = p*NF + f
        pool.dma q0, data[0:PS, 0:FS], x[p*128 : p*128+PS, f*FT : f*FT+FS]  @wait(s_scan >= max(0, I-1)) @signal(s_in)
        dve.scan res[0:PS, 0:FS], ones[0:PS, 0:FS], data[0:PS, 0:FS], init=carry[0:PS, :], op0=multiply, op1=add  @wait(s_in >= I+1, s_out >= max(0, I-1)) @signal(s_scan)
        sp.dma q1, y[p*128 : p*128+PS, f*FT : f*FT+FS], res[0:PS, 0:FS]  @wait(s_scan >= I+1) @signal(s_out)
        dve.copy carry[0:PS, :], res[0:PS, FS-1 : FS]   ; same engine as the scan: program order
.endm

        dve.memset ones, 1.0                  ; dve program order puts it before every scan
.for p in 0 .. NP
        dve.memset carry, 0.0
  .for f in 0 .. NF
    .if (p*NF + f) % 2 == 0
        cumsum_tile p, f, data0, res0
    .else
        cumsum_tile p, f, data1, res1
    .endif
  .endfor
.endfor
