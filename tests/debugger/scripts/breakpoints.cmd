break 45
tbreak sp:2
break dve:3 if s_in >= 1
info breakpoints
run
info engines
continue
continue
disable 1
info breakpoints
continue
enable 1
delete 1
continue
break cumsum.nasm:46 if $core == 1
break 38
info breakpoints
delete
info breakpoints
run
