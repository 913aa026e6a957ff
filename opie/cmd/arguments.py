"""Argument types shared by the ``opie-manage`` subcommands."""
import argparse


def whole_number(minimum):
    """An argparse type: a whole number of at least ``minimum``."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                'expected a whole number, got %r' % text) from None
        if value < minimum:
            raise argparse.ArgumentTypeError(
                'must be >= %d, got %d' % (minimum, value))
        return value
    return parse
