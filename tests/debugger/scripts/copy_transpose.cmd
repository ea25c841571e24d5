set check-races on
run
continue
info races
