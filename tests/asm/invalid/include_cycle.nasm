.include "include_cycle.nasm" ; CHECK: :[[@LINE]]:10: error: include cycle: 'include_cycle.nasm' is already being included
