.sbuf a : fp32[128, 16]
.sbuf b : fp32[128, 16]
  pe.max8 a[:, 0:8], b ; CHECK: :[[@LINE]]:3: error: instruction 'max8' does not run on engine pe (it runs on: dve)
