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

"""The OPIE lab: a real, multi-process OpenStack on 127.0.0.1.

What DevStack starts for OPIE, without DevStack (which clones from the
internet): MariaDB and RabbitMQ from Debian's packages; keystone,
placement, glance, neutron and nova-api from the package index, each
under gunicorn; nova-conductor, ``opie-scheduler`` with several workers
and N nova-compute processes on the lab's fake virt driver. Nova's OPIE
settings and each compute's provider.yaml come from ``opie-manage``, as
the DevStack plugin writes them. ``opie-lab up|down|status`` (through
``tools/lab.py`` on a fresh machine) drives it; ``tests/integration``
use it.
"""
