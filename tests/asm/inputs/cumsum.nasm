; cumsum.nasm: inclusive prefix sum along the last axis (design.md section 5)
.kernel cumsum
.param ROWS = 256                 ; overridable: nisa asm -D ROWS=1024
.param COLS = 5000
.param DT   = bf16
.equ   FT   = 2048                ; one TensorScan per 2048-wide free tile
.equ   NP   = cdiv(ROWS, 128)
.equ   NF   = cdiv(COLS, FT)

.hbm  x     : DT[ROWS, COLS]   input
.hbm  y     : DT[ROWS, COLS]   output
.sbuf ones  : fp32[128, FT]
.sbuf carry : fp32[128, 1]
.sbuf data  : DT[128, FT]
.sbuf res   : DT[128, FT]
.sem  s_in, s_scan, s_out        ; counting semaphores, start at 0

        dve.memset ones, 1.0                          ; dve: program order orders it before the scans
.for p in 0 .. NP
  .set PS = min(128, ROWS - p*128)
        dve.memset carry, 0.0
  .for f in 0 .. NF
    .set FS = min(FT, COLS - f*FT)
    .set I  = p*NF + f                                 ; global tile counter
        sp.dma  q0, data[0:PS, 0:FS], x[p*128 : p*128+PS, f*FT : f*FT+FS]  @wait(s_scan >= I) @signal(s_in)
        dve.scan res[0:PS, 0:FS], ones[0:PS, 0:FS], data[0:PS, 0:FS],
                 init=carry[0:PS, :], op0=mul, op1=add  @wait(s_in >= I+1, s_out >= I) @signal(s_scan)
        sp.dma  q1, y[p*128 : p*128+PS, f*FT : f*FT+FS], res[0:PS, 0:FS]   @wait(s_scan >= I+1) @signal(s_out)
        dve.copy carry[0:PS, :], res[0:PS, FS-1 : FS]  ; same engine as the scan: program order suffices
  .endfor
.endfor
