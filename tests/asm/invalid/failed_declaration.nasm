; A failed declaration is reported once; its uses are not "unknown tensor" errors of their own.
.sbuf pt : fp32[128, 4]
.sbuf pc : fp32[128, 99999999] ; CHECK: :[[@LINE]]:7: error: SBUF tensor 'pc' needs 399999996 bytes per partition; the SBUF has 212984
  dve.memset pc, 0.0
  dve.copy pt, pc[:, 0:4]
  dve.copy pc, pt
  dve.nope pt ; CHECK: :[[@LINE]]:7: error: unknown mnemonic 'nope'; did you mean 'nop'?
