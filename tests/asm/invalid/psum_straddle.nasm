.psum p : fp32[128, 768] ; CHECK: :[[@LINE]]:7: error: PSUM tensor 'p' needs 3072 bytes per partition: larger than a 2048-byte bank but not a whole number of banks
