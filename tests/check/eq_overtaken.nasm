; nisa check: an `==` wait that two signals can overtake (a deadlock in some schedules).
.kernel eq_overtaken
.sem  s
        act.nop  @signal(s)
        dve.nop  @signal(s)
        pool.nop  @wait(s == 1)
