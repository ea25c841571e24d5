break dve:10
run
next
info engines
continue
