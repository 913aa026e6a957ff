"""The simulated cloud: opie-bot's default backend.

A discrete-event simulation (one heap of timers, no ticking) of servers
that boot, bill per second except while hibernated, and run tasks exactly
as long as the run model says, plus the preemption emulator of the HADS
paper (section 5.2.1) or the replay of a trace.  It implements the
interfaces of :mod:`opie.bot.interfaces`, so the executor cannot tell it
from a real cloud.
"""
