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

"""Servers of a fake virt driver that run what cloud-init would run.

Nova's ``FakeDriver`` keeps servers as records; a driver holding a
:class:`Guests` also runs a server's user data when it is a script
(``#!``), as cloud-init runs user scripts on first boot, as a real
subprocess in a directory of its own (the server's disk), recorded in its
``pid`` file. Stopping, shelving or deleting the server kills that process
group; unshelving runs the script again, as a boot would. A clean shutdown
(Nova's stop with a timeout) sends it SIGTERM first, as ACPI's power button
tells a guest's init to shut down, and kills it once the timeout is over.
Given a ``metadata_url``, a script finds in ``OPIE_METADATA_URL`` where
it reads its metadata, as a guest reads ``http://169.254.169.254``. Used
by the demo cloud and by the lab's computes.
"""
import base64
import io
import os
import signal
import subprocess
import sys
import tarfile

PID_FILE = 'pid'


class Guests:
    """The processes standing for running servers, by instance uuid."""

    def __init__(self, root, metadata_url=None):
        self.root = root
        self.metadata_url = metadata_url
        self.procs = {}

    def boot(self, instance):
        if not instance.user_data:
            return
        script = base64.b64decode(instance.user_data)
        if not script.startswith(b'#!'):
            return
        disk = os.path.join(self.root, instance.uuid)
        os.makedirs(disk, exist_ok=True)
        path = os.path.join(disk, 'user-data')
        with open(path, 'wb') as f:
            f.write(script)
        env = {'PATH': os.environ.get('PATH', '/usr/bin:/bin'),
               'HOME': disk, 'OPIE_AGENT_DIR': os.path.join(disk, 'agent')}
        if self.metadata_url:
            env['OPIE_METADATA_URL'] = '%s/%s/%s' % (
                self.metadata_url, instance.uuid, instance.project_id)
        with open(os.path.join(disk, 'console.log'), 'ab') as log:
            # The venv's Python stands for the guest's python3, so demo
            # tasks can import opie.
            self.procs[instance.uuid] = subprocess.Popen(
                [sys.executable, path], cwd=disk, env=env, stdout=log,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)
        with open(os.path.join(disk, PID_FILE), 'w') as f:
            f.write(str(self.procs[instance.uuid].pid))

    def disk_image(self, uuid):
        """The server's disk as bytes (a tar.gz of its directory), for a
        snapshot; a server that never ran a script has an empty disk."""
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode='w:gz') as tar:
            disk = os.path.join(self.root, uuid)
            if os.path.isdir(disk):
                tar.add(disk, arcname=uuid,
                        filter=lambda info: None
                        if info.name.endswith('/' + PID_FILE) else info)
        return buf.getvalue()

    def halt(self, uuid, timeout=0):
        """Stop the server's process group: with SIGTERM and ``timeout``
        seconds to exit if given (a clean shutdown), then SIGKILL."""
        proc = self.procs.pop(uuid, None)
        if proc is None:
            return
        if proc.poll() is None:
            if timeout:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    pass
            try:
                # The agent leads its own session: its tasks go with it.
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait()
        os.unlink(os.path.join(self.root, uuid, PID_FILE))

    def halt_all(self):
        for uuid in list(self.procs):
            self.halt(uuid)


class RunsUserData:
    """Mixin for a ``FakeDriver``: its servers' user data runs in
    ``self.guests`` (a :class:`Guests`, set before the first boot)."""
    guests = None

    def spawn(self, context, instance, image_meta, injected_files,
              admin_password, allocations, network_info=None,
              block_device_info=None, power_on=True, accel_info=None):
        super().spawn(context, instance, image_meta, injected_files,
                      admin_password, allocations, network_info,
                      block_device_info, power_on, accel_info)
        if power_on:
            self.guests.boot(instance)

    def power_off(self, instance, timeout=0, retry_interval=0):
        self.guests.halt(instance.uuid, timeout)
        super().power_off(instance, timeout, retry_interval)

    def destroy(self, context, instance, network_info, block_device_info=None,
                destroy_disks=True, destroy_secrets=True):
        self.guests.halt(instance.uuid)
        super().destroy(context, instance, network_info, block_device_info,
                        destroy_disks, destroy_secrets)
