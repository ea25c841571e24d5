.equ X = 4
.set X = 5 ; CHECK: :[[@LINE]]:6: error: 'X' is a constant (.equ); .set cannot change it
