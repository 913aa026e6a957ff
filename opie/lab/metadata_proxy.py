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

"""The lab's stand-in for Neutron's metadata proxy.

In a cloud, a guest asks ``http://169.254.169.254/<path>``; Neutron's
metadata agent finds which instance asked (by its port) and forwards the
request to Nova's metadata API with ``X-Instance-ID``, ``X-Tenant-ID`` and
``X-Instance-ID-Signature`` (the instance id signed with Nova's ``[neutron]
metadata_proxy_shared_secret``), which Nova checks before it answers
(``[neutron] service_metadata_proxy = true``). The lab's guests are local
processes with no port: each is given ``OPIE_METADATA_URL``, this proxy's
address with its instance and project ids in front
(``http://127.0.0.1:8776/<instance>/<project>``), which stands for
``http://169.254.169.254``; the proxy adds the same headers and forwards
the rest of the path. So a guest reads ``$OPIE_METADATA_URL/openstack/
latest/meta_data.json`` and gets what Nova gives that instance, through
Nova's own checks.

Run by gunicorn (``opie-lab up``); ``OPIE_LAB_METADATA_API`` and
``OPIE_LAB_METADATA_SECRET`` say where Nova's metadata API is and the
shared secret.
"""
import hashlib
import hmac
import http.client
import os
import re
import urllib.error
import urllib.parse
import urllib.request

API = os.environ.get('OPIE_LAB_METADATA_API', '')
SECRET = os.environ.get('OPIE_LAB_METADATA_SECRET', '')
# An instance or project id as Nova writes them: they become headers.
_ID = re.compile(rb'[A-Za-z0-9_-]+\Z')
# A path byte Nova's metadata API reads as is; any other is quoted.
_SAFE = "/-._~!$&'()*+,;=:@"


def signature(instance_id, secret=SECRET):
    """``X-Instance-ID-Signature`` as Neutron's agent computes it."""
    return hmac.new(secret.encode(), instance_id.encode(),
                    hashlib.sha256).hexdigest()


def application(environ, start_response):
    try:
        # PEP 3333: the path's bytes, each as one character.
        asked = environ.get('PATH_INFO', '').encode('latin-1')
    except UnicodeEncodeError:
        asked = b''
    instance, _, rest = asked.lstrip(b'/').partition(b'/')
    project, _, path = rest.partition(b'/')
    if not _ID.match(instance) or not _ID.match(project):
        return _answer(start_response, 404, b'ask /<instance>/<project>/'
                       b'<path>, as a guest asks 169.254.169.254/<path>\n')
    instance = instance.decode()
    request = urllib.request.Request(
        API + '/' + urllib.parse.quote(path, safe=_SAFE), headers={
            'X-Instance-ID': instance, 'X-Tenant-ID': project.decode(),
            'X-Instance-ID-Signature': signature(instance),
            'X-Forwarded-For': environ.get('REMOTE_ADDR', '127.0.0.1')})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return _answer(start_response, response.status, response.read(),
                           response.headers.get('Content-Type'))
    except urllib.error.HTTPError as exc:
        return _answer(start_response, exc.code, exc.read(),
                       exc.headers.get('Content-Type'))
    except (OSError, http.client.HTTPException) as exc:
        # Nova's metadata API down, slow or gone mid-answer: the guest is
        # told so, as by a proxy.
        return _answer(start_response, 502, ('%s\n' % exc).encode())


def _answer(start_response, status, body, content_type=None):
    start_response('%d %s' % (status, http.client.responses.get(
        status, 'Unknown')), [('Content-Type', content_type or 'text/plain'),
                              ('Content-Length', str(len(body)))])
    return [body]
