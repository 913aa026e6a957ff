"""``opie-bot watch``: a job's status, again and again, until it ends.

It reads the job as ``status`` does: the journal only, so it never
turns a client away and may run beside one; for a job on a controller,
the controller's records copied from the store first, so it follows
the controller too.  The loop takes its reader, its
display and its pause as arguments, so nothing in it depends on time.
"""
import time

from opie.bot import lifecycle

DEFAULT_INTERVAL = 10.0
# The pause between two looks (the tests put their own here).
pause = time.sleep


def follow(read, show, interval, count=None, sleep=None):
    """``show(read())`` every ``interval`` seconds until the job has
    ended (neither running nor paused), or ``count`` times; the last
    status."""
    sleep = sleep or pause
    looks = 0
    while True:
        status = read()
        show(status)
        looks += 1
        if status['status'] not in (lifecycle.RUNNING, lifecycle.PAUSED) \
                or looks == count:
            return status
        sleep(interval)
