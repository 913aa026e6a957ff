"""Errors every ``opie-manage`` subcommand may raise.

``opie-manage`` prints a :class:`UsageError` as one line on stderr and
exits 2, never with a traceback: the operator can fix the input.
"""

EXIT_BAD_INPUT = 2


class UsageError(Exception):
    """Bad input the user can fix; printed without a traceback."""
