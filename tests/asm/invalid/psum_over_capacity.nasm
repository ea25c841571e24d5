.psum p : fp32[128, 4096]
.psum q : fp32[128, 512] ; CHECK: :[[@LINE]]:7: error: PSUM over capacity: tensor 'q' needs 2048 bytes per partition at offset 16384 (after the tensors placed before it), where 0 of the PSUM's 16384 usable bytes per partition are left
