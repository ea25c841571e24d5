.macro boom n
  boom n + 1 ; CHECK: :[[@LINE]]:3: error: expansion depth limit (64) exceeded in macro 'boom' (recursive expansion?)
.endm
boom 0
