.sbuf a : fp32[128, 16]
.sbuf b : fp32[128, 16]
  dve.max9 a[:, 0:8], b ; CHECK: :[[@LINE]]:7: error: unknown mnemonic 'max9'; did you mean 'max8'?
