step
step 3
step dve
step q0
step sp 2
next
next
finish
until 47
where
list
disas
disas sp
info engines
info queues
info timeline 5
continue
step
quit
