.target trn1
.sbuf d : fp32[128, 64]
.sbuf v : fp32[128, 8]
.sbuf i : uint32[128, 8]
  dve.match_replace8 d, d, v, idx=i ; CHECK: :[[@LINE]]:35: error: operand 'idx' of dve.match_replace8 is not available on trn1 (available on: trn2, trn3)
