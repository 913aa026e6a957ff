"""Argument types shared by the ``opie-manage`` subcommands."""
import argparse
import math


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


def finite_number(text):
    """An argparse type: a finite number (float() also takes nan, inf)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(
            'expected a finite number, got %r' % text)
    return value


def add_nova_conf_arguments(parser, what):
    """``--config-file`` (repeatable) and ``--config-dir``: the nova.conf
    files read, as Nova reads them; ``what`` says whose they are."""
    parser.add_argument('--config-file', action='append', default=[],
                        metavar='PATH',
                        help='%s nova.conf (repeatable: merged in order, as '
                        'Nova does)' % what)
    parser.add_argument('--config-dir', metavar='DIR',
                        help='its --config-dir (nova.conf.d): the *.conf '
                        'files there are read after the --config-file ones, '
                        'by name')


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
