  sp.nop
.endif ; CHECK: :[[@LINE]]:1: error: '.endif' without a matching opening directive
