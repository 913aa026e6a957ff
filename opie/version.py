# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

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
