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

"""Nothing the lab started listens on anything but loopback."""
import ipaddress
import os

from opie.lab import process
from opie.testing import lab


def _socket_inodes(pids):
    inodes = set()
    for pid in pids:
        try:
            fds = os.listdir('/proc/%d/fd' % pid)
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink('/proc/%d/fd/%s' % (pid, fd))
            except OSError:
                continue
            if target.startswith('socket:['):
                inodes.add(target[8:-1])
    return inodes


def _address(hex_address):
    raw = bytes.fromhex(hex_address)
    if len(raw) == 4:
        return ipaddress.IPv4Address(raw[::-1])
    # IPv6 in /proc: four 32-bit words, each in host (little endian) order.
    return ipaddress.IPv6Address(b''.join(
        raw[i:i + 4][::-1] for i in range(0, 16, 4)))


def _bound(inodes):
    """(address, port) of the TCP listeners and UDP sockets of inodes."""
    found = []
    for table, state in (('tcp', '0A'), ('tcp6', '0A'), ('udp', '07'),
                         ('udp6', '07')):
        with open('/proc/net/%s' % table) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if fields[3] == state and fields[9] in inodes:
                    address, port = fields[1].split(':')
                    found.append((_address(address), int(port, 16)))
    return found


def test_nothing_listens_beyond_loopback():
    bound = _bound(_socket_inodes(process.members(
        set(process.recorded(lab.LAB).values()))))
    ports = {port for _, port in bound}
    assert set(lab.settings.PORTS.values()) <= ports, ports
    exposed = [(str(a), p) for a, p in bound if not a.is_loopback]
    assert not exposed
