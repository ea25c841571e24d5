.sbuf t : fp32[256, 4] ; CHECK: :[[@LINE]]:16: error: sbuf tensor 't' has 256 partitions; at most 128
