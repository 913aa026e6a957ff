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

"""Wire the executor to the simulated cloud and run one job to its end."""
import dataclasses
import typing

from opie.bot.hads import executor
from opie.bot.state import stores
from opie.bot.sim import clock as clock_mod
from opie.bot.sim import cloud as cloud_mod
from opie.bot.sim import preemption
from opie.bot.sim import runner as runner_mod

# A job still running this many deadlines in is stuck (e.g. every server
# lost for good and no normal server allowed): stop and report it.
HORIZON = 10
HORIZON_REASON = 'horizon: %d deadlines passed' % HORIZON


@dataclasses.dataclass
class Result:
    plan: typing.Any
    records: typing.List[dict]
    bill: typing.List[dict]
    preemptions: typing.List[dict]
    checkpoints: int
    finished: bool
    kh: float
    kr: float
    seed: int
    mode: str
    notice_s: float = 0.0


def run(plan, kh=0.0, kr=0.0, seed=0, mode=preemption.HIBERNATE,
        trace=None, boot_s=None, progress=None, progress_every=120.0,
        notice_s=0.0):
    """Simulate ``plan``; ``progress(snapshot)`` is called periodically.
    Each preemption is announced ``notice_s`` seconds before it comes
    (:mod:`opie.bot.sim.preemption`)."""
    job = plan.job
    clock = clock_mod.SimClock()
    cloud = cloud_mod.SimCloud(
        clock, job.policy.alpha_s if boot_s is None else boot_s)
    store = stores.MemoryCheckpointStore()
    journal = stores.MemoryStateStore()
    runner = runner_mod.SimRunner(clock, cloud, store)
    sched = executor.Executor(plan, clock, cloud, runner, store, journal,
                              on_done=clock.stop)
    if trace is not None:
        source = preemption.TraceReplay(clock, cloud, trace, notice_s)
    else:
        source = preemption.PoissonPreemptions(
            clock, cloud, job.flavors, kh, kr, job.deadline_s, seed, mode,
            notice_s)
    source.start()
    sched.start()
    if progress is not None:
        def tick():
            progress(sched.snapshot())
            clock.call_at(clock.now() + progress_every, tick)
        clock.call_at(progress_every, tick)
    clock.run(until=HORIZON * job.deadline_s)
    if not sched.finished:
        # As on a cloud: a job stopped unfinished deletes every server,
        # so the report bills what the last progress line showed.
        sched.stop(HORIZON_REASON)
    if progress is not None:
        progress(sched.snapshot())
    return Result(plan=plan, records=journal.records(), bill=cloud.bill(),
                  preemptions=source.events, checkpoints=store.taken,
                  finished=sched.finished, kh=kh, kr=kr, seed=seed,
                  mode='trace' if trace is not None else mode,
                  notice_s=notice_s)
