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

"""The preemption scenarios of the HADS paper's Table 8.

``kh`` and ``kr`` are the expected numbers of hibernation and resume
events per flavor over the deadline: the emulator's rates are
``kh / D`` and ``kr / D``.
"""
import collections

Scenario = collections.namedtuple('Scenario', 'name kh kr')

TABLE8 = {s.name: s for s in (
    Scenario('sc1', 1.0, 0.0),
    Scenario('sc2', 5.0, 0.0),
    Scenario('sc3', 1.0, 5.0),
    Scenario('sc4', 5.0, 5.0),
    Scenario('sc5', 3.0, 2.5),
    Scenario('sc6', 2.0, 1.0),
    Scenario('sc7', 2.0, 2.0),
)}


def parse_list(text):
    """``sc1..sc7``, ``sc1,sc3`` or ``all`` into scenario objects; a
    reversed range (``sc7..sc1``) or an empty list is an error, not an
    empty table."""
    names = []
    keys = list(TABLE8)
    for part in text.split(','):
        part = part.strip()
        if part == 'all':
            names.extend(TABLE8)
        elif '..' in part:
            first, _, last = part.partition('..')
            if first not in TABLE8 or last not in TABLE8:
                raise ValueError('unknown scenario range %r' % part)
            if keys.index(first) > keys.index(last):
                raise ValueError('scenario range %r is reversed (write '
                                 '%s..%s)' % (part, last, first))
            names.extend(keys[keys.index(first):keys.index(last) + 1])
        elif part in TABLE8:
            names.append(part)
        else:
            raise ValueError('unknown scenario %r (known: %s)'
                             % (part, ', '.join(TABLE8)))
    return [TABLE8[n] for n in dict.fromkeys(names)]
