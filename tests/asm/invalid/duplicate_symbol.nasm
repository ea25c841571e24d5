.sbuf a : fp32[128, 16]
.sbuf a : fp32[128, 32] ; CHECK: :[[@LINE]]:7: error: duplicate symbol 'a' (tensor); first defined at duplicate_symbol.nasm:1:7
