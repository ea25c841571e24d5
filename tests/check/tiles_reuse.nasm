; nisa check: the reuse across iterations of tiles_reuse in a two-level loop with a partial
; last tile (ROWS = 300: tiles of 128, 128 and 44 partitions). The loads (pool) of tile
; I = p*NF + f reuse slot I % 2 without waiting for the compute of tile I - 2. One report for
; the pair of lines (whatever the tile's partitions), with the wait in p and f.
.kernel tiles_reuse
.param ROWS = 300
.param COLS = 128
.equ NP = cdiv(ROWS, 128)
.equ NF = 2
.hbm  x : fp32[ROWS, NF * COLS] input
.hbm  y : fp32[ROWS, NF * COLS] output
.sbuf a : fp32[128, 2, COLS]
.sbuf b : fp32[128, 2, COLS]
.sem  s_in, s_cmp, s_out
.for p in 0 .. NP
  .for f in 0 .. NF
        pool.dma q0, a[0 : min(128, ROWS - p*128), (p*NF + f) % 2, :], x[p*128 : p*128 + min(128, ROWS - p*128), f*COLS : f*COLS + COLS]  @signal(s_in)
        dve.tensor_scalar b[0 : min(128, ROWS - p*128), (p*NF + f) % 2, :], a[0 : min(128, ROWS - p*128), (p*NF + f) % 2, :], op0=mul, operand0=2.0  @wait(s_in >= p*NF + f + 1, s_out >= max(0, p*NF + f - 1))  @signal(s_cmp)
        sp.dma q1, y[p*128 : p*128 + min(128, ROWS - p*128), f*COLS : f*COLS + COLS], b[0 : min(128, ROWS - p*128), (p*NF + f) % 2, :]  @wait(s_cmp >= p*NF + f + 1)  @signal(s_out)
  .endfor
.endfor
