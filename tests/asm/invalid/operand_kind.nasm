.sbuf a : fp32[128, 16]
.sbuf b : fp32[128, 16]
  dve.memset a, b ; CHECK: :[[@LINE]]:17: error: tensor 'b' used where a number is expected (addr(b) is its address, size(b) its size in bytes)
