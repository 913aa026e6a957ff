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

"""One line for what keystoneauth1 or novaclient raised.

The line names what went wrong and never a credential: a 401 says the
cloud refused them, without repeating the request.
"""
from keystoneauth1 import exceptions as ks_exceptions


def describe(exc):
    """One line for an error of keystoneauth1 or novaclient."""
    if isinstance(exc, ks_exceptions.ConnectFailure):
        return 'cannot reach the cloud: %s' % _first_line(exc)
    if isinstance(exc, (ks_exceptions.Unauthorized,)) or \
            getattr(exc, 'http_status', None) == 401 or \
            getattr(exc, 'code', None) == 401:
        return 'the cloud refused the credentials (HTTP 401)'
    if isinstance(exc, ks_exceptions.EndpointNotFound):
        return 'the cloud has no such service: %s' % _first_line(exc)
    return 'cloud error: %s' % _first_line(exc)


def _first_line(exc):
    return ' '.join(str(exc).split())[:300]
