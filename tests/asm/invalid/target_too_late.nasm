.sbuf a : fp32[128, 16]
.target trn1 ; CHECK: :[[@LINE]]:1: error: .target must come before tensor declarations and instructions
