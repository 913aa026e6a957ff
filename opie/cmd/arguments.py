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


def add_cloud_arguments(parser):
    """``--os-cloud`` and ``--os-region-name``, for commands that connect.

    Here rather than in :mod:`.cloud`, so that declaring them does not load
    the cloud client libraries for every ``opie-manage`` command.
    """
    group = parser.add_argument_group('cloud connection')
    group.add_argument('--os-cloud', metavar='NAME',
                       help='cloud of clouds.yaml (default: $OS_CLOUD, '
                       'else the OS_* variables)')
    group.add_argument('--os-region-name', metavar='REGION',
                       help='region (default: the cloud\'s)')
