; RUN: --target trn1
.sbuf a : fp32[128, 40000]
.sbuf b : fp32[128, 8000] ; CHECK: :[[@LINE]]:7: error: SBUF over capacity: tensor 'b' needs 32000 bytes per partition at offset 160000 (after the tensors placed before it), where 20224 of the SBUF's 180224 usable bytes per partition are left
