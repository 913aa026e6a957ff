"""OPIE's release, as installed: the ``openstack-opie`` distribution.

The import package is ``opie``; the distribution on the package index is
``openstack-opie`` (``opie`` there is an unrelated project).  pbr takes the
version from the git tag of a release, and gives an untagged checkout the
next release from ``setup.cfg`` with a ``.devN`` suffix.
"""
from pbr import version

DISTRIBUTION = 'openstack-opie'
version_info = version.VersionInfo(DISTRIBUTION)


def release():
    """The installed version, e.g. ``0.9.0`` or ``0.9.0.dev12``."""
    return version_info.release_string()
