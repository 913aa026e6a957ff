"""Builders shared by the core's tests."""
import datetime

from opie.core import host
from opie.core import resources as res

NOW = datetime.datetime(2026, 1, 15, 12, 0, tzinfo=datetime.timezone.utc)
SMALL = res.Resources(1, 2000, 20)
MEDIUM = res.Resources(2, 4000, 40)
LARGE = res.Resources(4, 8000, 80)
PAPER_HOST = res.Resources(8, 16384, 1000)


def inst(name, resources, minutes=0, preemptible=True, eligible=True):
    return host.Instance(
        uuid='uuid-' + name, resources=resources, preemptible=preemptible,
        launched_at=NOW - datetime.timedelta(minutes=minutes),
        eligible=eligible, name=name)


def paper_host(name, instances):
    return host.Host.from_instances(name, PAPER_HOST, instances)
