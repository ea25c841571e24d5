  sp.li r64, 1 ; CHECK: :[[@LINE]]:9: error: 'r64' is not a register (r0..r63)
