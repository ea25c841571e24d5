.sbuf a : bf16[128, 200000] ; CHECK: :[[@LINE]]:7: error: SBUF tensor 'a' needs 400000 bytes per partition; the SBUF has 212984
