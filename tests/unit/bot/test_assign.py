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

"""Alg. 7's spare-time rule (opie.bot.hads.assign), pinned on numbers."""
from opie.bot.hads import assign
from opie.bot.hads import fleet as fleet_mod
from opie.bot.job import model
from opie.bot.hads import projection

DEADLINE = 1000.0
ALPHA = 100.0


def _assigner():
    """A fast flavor offered only as preemptible (the task runs 100 s on
    it) and a slow one offered only as normal (400 s)."""
    fast = model.Flavor(name='fast', vcpus=1, ram_mb=4096.0, gflops=40.0,
                        price_h={model.PREEMPTIBLE: 0.01, model.NORMAL: 1.0},
                        limits={model.PREEMPTIBLE: 5, model.NORMAL: 0})
    slow = model.Flavor(name='slow', vcpus=1, ram_mb=4096.0, gflops=10.0,
                        price_h={model.PREEMPTIBLE: 0.01, model.NORMAL: 0.1},
                        limits={model.PREEMPTIBLE: 0, model.NORMAL: 5})
    task = model.Task(id='t', command='', memory_mb=5.0,
                      runtime_s={'fast': 100.0, 'slow': 400.0})
    job = model.Job(name='spare', deadline_s=DEADLINE,
                    policy=model.Policy(alpha_s=ALPHA),
                    flavors={'fast': fast, 'slow': slow}, tasks=(task,))
    fleet = fleet_mod.Fleet(job)
    return assign.Assigner(job, fleet), fleet, fast


def test_spare_time_counts_the_rerun_on_the_flavor_a_normal_server_has():
    """The spare time Alg. 7 keeps is :meth:`Fleet.spare`, the longer of
    the task's run on the server's own flavor (the paper's e_m) and on the
    fastest flavor a normal server may use; the paper's e_m alone would
    let D be missed.

    The task runs 100 s on the fast preemptible server, whose one slot
    frees at 650 s: it would end at 750 s.  The paper's rule admits it
    (D - 750 = 250 > e_m + alpha = 100 + 100).  But a preemption just
    before 750 s leaves only a normal server of the slow flavor for the
    re-run: 750 + alpha + 400 = 1250 s, past D = 1000 s.  Counting the
    re-run where it can happen (400 s) refuses the task (250 < 500), so
    it goes where it can still end by D.  With the slot free at 350 s
    instead, the rule admits it, and the same late preemption still ends
    by D (450 + 100 + 400 = 950 s): the rule keeps exactly the re-run it
    may need, no more.
    """
    assigner, fleet, fast = _assigner()
    own = fleet.runtime('t', fast)
    assert (own, fleet.spare('t', fast)) == (100.0, 400.0)
    late = projection.Projection([650.0])
    eft = late.eft_with(fleet.wall('t', fast, model.PREEMPTIBLE))
    assert eft == 750.0
    assert assigner.keeps_spare(eft, own)             # the paper's e_m
    assert eft + ALPHA + 400.0 > DEADLINE             # ... misses D
    assert assigner.check('t', fast, model.PREEMPTIBLE, late) is None
    early = projection.Projection([350.0])
    assert assigner.check('t', fast, model.PREEMPTIBLE, early) == 100.0
    assert 450.0 + ALPHA + 400.0 <= DEADLINE


def test_the_resume_guard_counts_the_same_spare_time():
    """The executor's resume guard asks the same rule of a queue already
    on the server: its projection's longest task is counted by
    :meth:`Fleet.spare` too, so a queue ending at 750 s fails it."""
    assigner, fleet, fast = _assigner()
    server = fleet_mod.Server('s', 'p0', fast, model.PREEMPTIBLE, 1,
                              550.0, ALPHA)
    server.waiting = ['t']
    fleet.add(server)
    proj, _ = fleet.projection(server, 600.0)
    assert (proj.finish, proj.longest) == (750.0, 400.0)
    assert not assigner.keeps_spare(proj.finish, proj.longest)
