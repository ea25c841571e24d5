; Run-time registers, dynamic offsets (@reg, @vec), labels and branches.
.kernel indirect
.hbm  table : fp32[4096, 64] input
.hbm  w     : bf16[16, 128, 128] input
.sbuf idx   : int32[128, 2]
.sbuf rows  : fp32[128, 64]
.sbuf wt    : bf16[128, 128]
  sp.sysreg r1, program_id
  sp.li r2, 0
  sp.ld r3, idx[0:1, 1:2]
  sp.dma q0, wt, w[@r3, :, :]                        ; scalar offset on dim 0
  sp.dma q1, rows, table[@vec(idx[:, 0:1]), :]       ; one row per partition
loop:
  sp.add r2, r2, 1
  sp.blt r2, 4, loop
  sp.bnz r1, done
  sp.dma q2, rows[0:1, :], table[@r2, :]
done:
  sp.halt
