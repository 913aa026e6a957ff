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

"""Weighted round robin over preemptible flavors (HADS Alg. 2, Eq. 3).

The weight of a flavor is Gflops per dollar (Eq. 3).  Raw weights are
close to each other and share no divisor, so a plain weighted round robin
would hand out one flavor many times in a row; like the authors' code
(research note A5) the weights are ranked onto the integers 1..3 and served
interleaved (the LVS algorithm), which reproduces the server mixes of the
paper's Table 9.  A flavor at its limit is skipped.
"""
import functools
import math

from opie.bot.job import model

_LOW, _HIGH = 1, 3


def weights(flavors):
    # A free flavor gives the most Gflops per dollar there can be.
    raw = {f.name: f.gflops / f.price_h[model.PREEMPTIBLE]
           if f.price_h[model.PREEMPTIBLE] else math.inf for f in flavors}
    if math.inf in raw.values():
        return {name: _HIGH if w == math.inf else _LOW
                for name, w in raw.items()}
    lo, hi = min(raw.values()), max(raw.values())
    if hi == lo:
        return {name: _LOW for name in raw}
    return {name: int(math.ceil((w - lo) / (hi - lo) * (_HIGH - _LOW)))
            + _LOW for name, w in raw.items()}


def sequence(flavors):
    """One period of the interleaved round robin, as flavor names."""
    w = weights(flavors)
    names = sorted(w)
    step = functools.reduce(math.gcd, w.values())
    order = []
    current = max(w.values())
    while current > 0:
        order.extend(n for n in names if w[n] >= current)
        current -= step
    return order


class RoundRobin:
    """Hands out flavors in weighted round-robin order."""

    def __init__(self, flavors):
        self._order = sequence(flavors)
        self._next = 0

    def next(self, allowed):
        """The next flavor name for which ``allowed(name)`` holds, or None."""
        for _ in range(len(self._order)):
            name = self._order[self._next]
            self._next = (self._next + 1) % len(self._order)
            if allowed(name):
                return name
        return None
