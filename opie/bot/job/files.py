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

"""Reading the files a tenant names (job files, traces): bounded.

A device, a FIFO or a file larger than any job needs would block or fill
memory; each is refused with a one-line reason instead.
"""
import os
import stat


class ReadError(Exception):
    """Why a file cannot be read; one line, without the path."""


def read_text(path, max_bytes):
    """The UTF-8 text of the regular file ``path`` (at most
    ``max_bytes``)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise ReadError('cannot read: %s' % exc.strerror) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ReadError('not a regular file')
    with os.fdopen(fd, 'rb') as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ReadError('larger than %d MB' % (max_bytes // 2 ** 20))
    try:
        return data.decode('utf-8')
    except UnicodeDecodeError as exc:
        raise ReadError('not UTF-8 text (byte %d)' % exc.start) from None
