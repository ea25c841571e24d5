.sbuf a : fp33[128, 16] ; CHECK: :[[@LINE]]:11: error: unknown dtype 'fp33'; did you mean 'fp32'?
