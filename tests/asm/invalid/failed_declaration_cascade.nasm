; One error per failing declaration: a tensor that does not fit takes no space, so the next one
; is tried at the same offset and is an error only if it does not fit there on its own (the
; message says what is left); a .view of the failed tensor, addr() / size() / dim() of it, the
; .equ computed from those and their uses are no errors of their own.
; RUN: --target trn2
.sbuf a : fp32[128, 50000]
.sbuf b : fp32[128, 30000] ; CHECK: :[[@LINE]]:7: error: SBUF over capacity: tensor 'b' needs 120000 bytes per partition at offset 200000 (after the tensors placed before it), where 12984 of the SBUF's 212984 usable bytes per partition are left
.sbuf c : fp32[128, 3000]
.sbuf d : fp32[128, 1000] ; CHECK: :[[@LINE]]:7: error: SBUF over capacity: tensor 'd' needs 4000 bytes per partition at offset 212032 (after the tensors placed before it), where 952 of the SBUF's 212984 usable bytes per partition are left
.sbuf e : fp32[128, 200]
.if addr(c) != 200000 || addr(e) != 212032
.error "c must take the place b would have had, e the place after c"
.endif
.view bv = b as int32[128, 30000]
.equ X = addr(b)
.equ Y = size(b) + dim(b, 1)
.equ Z = X + Y
  dve.memset b, 0.0
  dve.memset bv, 0.0
  dve.memset c[:, 0:Z], 0.0
  dve.memset e, 0.0
  dve.memset zz, 0.0 ; CHECK: :[[@LINE]]:14: error: unknown tensor 'zz'
