"""How opie-bot writes a duration, shared by the console and the report.

One formatter, so a makespan read on the console and in the HTML page is
the same string.
"""


def fmt_time(seconds):
    """``m:ss`` below an hour, ``h:mm:ss`` from an hour on.

    Minutes and seconds read faster than a count of seconds; past an hour
    a count of minutes ("95:00") stops reading as a time.
    """
    total = int(round(seconds))
    sign = '-' if total < 0 else ''
    minutes, secs = divmod(abs(total), 60)
    if minutes < 60:
        return '%s%d:%02d' % (sign, minutes, secs)
    hours, minutes = divmod(minutes, 60)
    return '%s%d:%02d:%02d' % (sign, hours, minutes, secs)
