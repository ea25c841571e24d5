# check-races on and a race-free kernel: the end of the run says what was checked
set check-races on
run
