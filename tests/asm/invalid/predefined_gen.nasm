; TARGET and GEN are predefined from the target and read-only.
.param GEN = 3 ; CHECK: :[[@LINE]]:8: error: 'GEN' is predefined from the target (TARGET = trn2, GEN = 3); it cannot be redefined
.set TARGET = trn1 ; CHECK: :[[@LINE]]:6: error: 'TARGET' is predefined from the target; .set cannot change it
