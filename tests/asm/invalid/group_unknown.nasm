.group ring = [[0, 1], [2, 3]]
.hbm x : fp32[128, 16]
.hbm y : fp32[128, 16]
  cc.all_reduce y, x, rnig ; CHECK: :[[@LINE]]:23: error: unknown replica group 'rnig'; did you mean 'ring'?
