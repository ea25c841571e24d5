set check-races on
run
info engines
info races
where
reverse-step 1
set check-races off
continue
info races
