.param COLS = 100
.if COLS % 8 != 0
  .error "COLS must be a multiple of 8" ; CHECK: :[[@LINE]]:3: error: COLS must be a multiple of 8
.endif
