.param TP = 200
.ranks TP ; CHECK: :[[@LINE]]:8: error: .ranks 200: expected 1..128
.lnc 3 ; CHECK: :[[@LINE]]:6: error: .lnc 3: expected 1 or 2
.ranks 4
.lnc 2
  .ranks 4 ; CHECK: :[[@LINE]]:3: error: duplicate .ranks (.ranks 4 first declared at launch_values.nasm:4:1)
.lnc 2 ; CHECK: :[[@LINE]]:1: error: duplicate .lnc (.lnc 2 first declared at launch_values.nasm:5:1)
