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

"""A core Host works out its free room once, when it is made (fields the
constructor fills, left out of equality and repr): equality, hashing,
copies, pickles and ``dataclasses.replace`` see only the fields it was
given, and a replaced host works out its own room."""
import copy
import dataclasses
import pickle

from opie.core import host as core_host
from opie.core import resources as res
from tests.unit.core import helpers


def _host():
    return helpers.paper_host('h', [
        helpers.inst('n', helpers.MEDIUM, preemptible=False),
        helpers.inst('p', helpers.SMALL, minutes=5)])


def _room(host):
    return host.full_used, host.free_full, host.free_normal


def test_a_host_asked_equals_and_hashes_as_one_not_asked():
    asked, fresh = _host(), _host()
    _room(asked)
    assert asked == fresh
    assert hash(asked) == hash(fresh)
    assert repr(asked) == repr(fresh)
    assert dataclasses.asdict(asked) == dataclasses.asdict(fresh)


def test_copies_keep_the_room_of_their_fields():
    host = _host()
    room = _room(host)
    for copied in (copy.copy(host), copy.deepcopy(host),
                   pickle.loads(pickle.dumps(host))):
        assert copied == host
        assert _room(copied) == room


def test_a_replaced_host_computes_its_own_room():
    host = _host()
    _room(host)
    emptied = dataclasses.replace(host, preemptibles=())
    assert emptied.free_full == host.free_normal
    assert _room(emptied) == _room(core_host.Host(
        host.name, host.capacity, host.normal_used))


def test_a_host_given_its_listed_total_is_the_host_that_added_it_up():
    host = _host()
    given = core_host.Host(host.name, host.capacity, host.normal_used,
                           host.preemptibles, listed=res.total(
                               i.resources for i in host.preemptibles))
    assert given == host and repr(given) == repr(host)
    assert _room(given) == _room(host)
