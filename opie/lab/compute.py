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

"""``nova-compute`` on the lab's virt driver (see :mod:`opie.lab.virt`).

Nova's own ``nova-compute`` main, with :mod:`opie.lab.virt` registered as
``nova.virt.opie_lab`` first, since Nova imports drivers only from there.
"""
import sys


def main():
    # Nova's compute command monkey patches before anything else imports.
    from nova.cmd import compute
    from nova import virt

    from opie.lab import virt as lab_virt
    sys.modules['nova.virt.opie_lab'] = lab_virt
    virt.opie_lab = lab_virt
    compute.main()


if __name__ == '__main__':
    main()
