; sb2sb_allgather.nasm: small-tensor all-gather with SBUF source and destination, seed 000
; section 2 (sb2sb_allgather.py allgather_sb2sb / allgather_sb2sb_tiled).
;
; Parameters: ROWS, COLS, TP (ranks; `.ranks TP`), TILED (0, 1), DT (bf16, fp32, fp16).
; Inputs:     inp : DT[ROWS, COLS]
; Outputs:    out : DT[ROWS, COLS*TP], rank r's block in columns r*COLS .. (r+1)*COLS - 1; one
;             replica group of all TP ranks.
; Envelope:   TP in [1, 128]; untiled: ROWS <= 128 (ROWS is the SBUF partition dim); tiled:
;             ROWS <= 128 or a multiple of 128; an input and an output tile, double-buffered,
;             within the SBUF partition (2 * (COLS + COLS*TP) * bytes <= 180224).
;
; Idea: load a tile of TM = min(ROWS, 128) rows to SBUF, one all_gather along dim 1 (SBUF to
; SBUF: row p of the result is row p of every rank side by side), store it. Tiled: tile t goes
; to core t % 2 under --lnc 2 (every tile to core 0 under --lnc 1, and untiled always on
; core 0): core c runs tiles c, c + L, ... with the tile index in a register (the DMAs' scalar
; offset) and stops at the first index past the last tile. Tiles alternate between two
; buffers: the load of tile i + 1 (pool) overlaps the gather of tile i (cc) and the store of
; tile i - 1 (sp).
.kernel sb2sb_allgather
.param ROWS = 128
.param COLS = 512
.param TP = 8
.param TILED = 0
.param DT = bf16

.if DT != bf16 && DT != fp32 && DT != fp16
  .error "sb2sb_allgather: DT must be bf16, fp32 or fp16"
.endif
.if TP < 1 || TP > 128
  .error "sb2sb_allgather: TP must be in [1, 128]"
.endif
.ranks TP                ; one rank per shard: run and check default to --ranks TP
.if ROWS < 1 || COLS < 1
  .error "sb2sb_allgather: ROWS and COLS must be positive"
.endif
.if TILED == 0 && ROWS > 128
  .error "sb2sb_allgather: untiled ROWS must be <= 128 (the partition dim); use TILED=1"
.endif
.if TILED != 0 && ROWS > 128 && ROWS % 128 != 0
  .error "sb2sb_allgather: tiled ROWS must be <= 128 or a multiple of 128"
.endif
.if DT == fp32
  .equ BYTES = 4
.else
  .equ BYTES = 2
.endif
.if 2 * (COLS + COLS * TP) * BYTES > 180224
  .error "sb2sb_allgather: 2 * (COLS + COLS*TP) * bytes exceeds the SBUF partition"
.endif
.equ TM = min(ROWS, 128)
.equ NT = ROWS / TM

.hbm inp : DT[ROWS, COLS] input
.hbm out : DT[ROWS, COLS * TP] output
.view inpv = inp as DT[NT, TM, COLS]
.view outv = out as DT[NT, TM, COLS * TP]
.sbuf ib : DT[TM, 2, COLS]
.sbuf ob : DT[TM, 2, COLS * TP]
.group g = rank_groups(TP, 1)
.sem ld, ag, st

; r6 = tile index of this core's iteration I: I * num_programs + program_id (untiled: I).
.macro tile_reg eng, i
  .if eng == pool
        pool.sysreg r1, program_id
        pool.sysreg r2, num_programs
    .if TILED == 0
        pool.li r2, 1
    .endif
        pool.mul r6, r2, i
        pool.add r6, r6, r1
  .elif eng == cc
        cc.sysreg r1, program_id
        cc.sysreg r2, num_programs
    .if TILED == 0
        cc.li r2, 1
    .endif
        cc.mul r6, r2, i
        cc.add r6, r6, r1
  .else
        sp.sysreg r1, program_id
        sp.sysreg r2, num_programs
    .if TILED == 0
        sp.li r2, 1
    .endif
        sp.mul r6, r2, i
        sp.add r6, r6, r1
  .endif
.endm

.for i in 0 .. NT
  .set B = i % 2
        tile_reg pool, i
        tile_reg cc, i
        tile_reg sp, i
        pool.blt r6, NT, .Lmine
        pool.br done
        cc.blt r6, NT, .Lmine
        cc.br done
        sp.blt r6, NT, .Lmine
        sp.br done
.Lmine:
        pool.dma q0, ib[:, B, :], inpv[@r6, :, :]  @wait(ag >= max(0, i - 1)) @signal(ld)
        cc.all_gather ob[:, B, :], ib[:, B, :], g, dim=1  @wait(ld >= i + 1, st >= max(0, i - 1)) @signal(ag)
        sp.dma q1, outv[@r6, :, :], ob[:, B, :]  @wait(ag >= i + 1) @signal(st)
.endfor
done:
