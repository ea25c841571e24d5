until 99
until 48
until cumsum.nasm:300
until 45
info breakpoints
