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

"""The preemption notice (issue 26, client side): the simulated cloud
announces a preemption, the executor saves and moves the work in time.

The properties, over generated jobs (the generator of
``test_hads_property``), random notices, modes, scenarios and traces:

* the deadline guarantee holds exactly as without a notice: every run
  meets D whenever the normal-only baseline within the job's limits meets
  it, and every task runs to completion exactly once;
* on a server told at least one dump before it goes, a running task loses
  no work, unless its run started from scratch and could not do a dump's
  worth of work on the fastest normal flavor and dump it before the server
  goes (a checkpoint would make its restart longer than a fresh one, which
  the take-over does not allow for): it then leaves at once and loses less
  than that dump's worth;
* a notice of 0 is no notice: the journal is the one the executor wrote
  before notices existed (digests taken on main a96965d), but for the
  ``work_lost`` records it adds.

``OPIE_NOTICE_EXAMPLES=2000`` runs more examples than CI's.
"""
import hashlib
import json
import os

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import pytest

from opie.bot.hads import checkpoint
from opie.bot import cli
from opie.bot.hads import fleet as fleet_mod
from opie.bot.hads import interfaces
from opie.bot.hads import job_map
from opie.bot.sim import map_choice
from opie.bot.job import model
from opie.bot.sim import scenarios
from opie.bot.sim import backend
from opie.bot.sim import preemption
from tests.unit.bot import helpers
from tests.unit.bot import test_hads_property as hads
from tests.unit.bot import test_sim

EXAMPLES = int(os.environ.get('OPIE_NOTICE_EXAMPLES', '150'))


def _events(result, name):
    return [r for r in result.records if r['event'] == name]


def _lost(result):
    return sum(r['lost_s'] for r in _events(result, 'work_lost'))


def _plan(runtimes=(400,) * 4, deadline=2100.0):
    return map_choice.primary_map(helpers.job(
        runtimes, flavors=[helpers.flavor('f', gflops=40)], memory=10,
        deadline=deadline))


def _trace(*events):
    return [preemption.TraceEvent(t, 'f', e) for t, e in events]


# -- the run model ---------------------------------------------------------

def test_work_done_counts_neither_restore_nor_dumps():
    run = checkpoint.TaskRun(start=0.2, work_s=100.0,
                             checkpoints=(0.4, 0.6), dump_s=10.0,
                             restore_s=10.0)
    assert run.done_after(5.0) == 0.2                  # restoring
    assert run.done_after(20.0) == pytest.approx(0.3)
    assert run.done_after(35.0) == pytest.approx(0.4)  # dumping at 40 %
    assert run.done_after(45.0) == pytest.approx(0.45)
    assert run.done_after(run.wall_s) == pytest.approx(1.0)
    for fraction in (0.2, 0.3, 0.4, 0.5, 0.6, 0.9, 1.0):
        elapsed = run.elapsed_for(fraction)
        assert run.done_after(elapsed) == pytest.approx(fraction)
        assert run.saved_after(elapsed) <= fraction
        if fraction > run.start:
            assert run.done_after(elapsed - 1e-6) < fraction


# -- the simulated cloud ---------------------------------------------------

def test_a_notice_comes_notice_seconds_before_the_preemption():
    w = test_sim._World(boot=0)
    seen = []
    w.cloud.watch(lambda e: seen.append((w.clock.now(), e.kind, e.at)))
    f = helpers.flavor('f')
    sid = w.cloud.create_server('s', f, preemptible=True)
    source = preemption.TraceReplay(w.clock, w.cloud, _trace(
        (100, preemption.TERMINATE)), notice_s=30.0)
    source.start()
    w.clock.run(until=5000)
    assert seen == [(0, interfaces.ACTIVE, None),
                    (100, interfaces.NOTICE, 130),
                    (130, interfaces.TERMINATED, None)]
    assert w.cloud.bill()[0]['billed_s'] == 130
    assert w.cloud.servers[sid].ended == 130
    assert source.events == [{'t': 130, 'flavor': 'f',
                              'event': preemption.TERMINATE, 'servers': 1}]


def test_a_server_resuming_before_an_announced_hibernation_is_told():
    w = test_sim._World(boot=0)
    seen = []
    w.cloud.watch(lambda e: seen.append((w.clock.now(), e.kind, e.at)))
    w.cloud.create_server('s', helpers.flavor('f'), preemptible=True)
    source = preemption.TraceReplay(w.clock, w.cloud, _trace(
        (100, preemption.HIBERNATE), (150, preemption.HIBERNATE),
        (250, preemption.RESUME)), notice_s=120.0)
    source.start()
    w.clock.run(until=5000)
    # The second decision, at 150, finds the server warned already (for
    # 220); it resumes at 250 into that second notice, for 270.
    assert seen == [(0, interfaces.ACTIVE, None),
                    (100, interfaces.NOTICE, 220),
                    (220, interfaces.HIBERNATED, None),
                    (250, interfaces.RESUMED, None),
                    (250, interfaces.NOTICE, 270),
                    (270, interfaces.HIBERNATED, None)]


def test_a_stopped_task_checkpoints_where_it_stands_after_one_dump():
    w = test_sim._World(boot=0)
    job, run = test_sim._task_run()
    sid = w.cloud.create_server('s', job.flavors['f'], preemptible=True)
    w.runner.start(sid, 't00', run)
    w.at(250, w.runner.stop, sid, 't00')
    w.clock.run(until=10000)
    stopped = [(t, kind) for t, kind, _ in w.events
               if kind in (interfaces.STOPPED, interfaces.FINISHED)]
    assert stopped == [(pytest.approx(250 + run.dump_s),
                        interfaces.STOPPED)]
    latest = w.store.latest('t00')
    assert latest.fraction == pytest.approx(run.done_after(250))
    assert latest.fraction > run.saved_after(250)


def test_a_dump_cut_short_by_the_preemption_saves_nothing_new():
    w = test_sim._World(boot=0)
    job, run = test_sim._task_run()
    sid = w.cloud.create_server('s', job.flavors['f'], preemptible=True)
    w.runner.start(sid, 't00', run)
    w.at(250, w.runner.stop, sid, 't00')
    w.at(250 + run.dump_s / 2, w.cloud.terminate, 'f')
    w.clock.run(until=10000)
    assert not [e for e in w.events if e[1] == interfaces.STOPPED]
    assert w.store.latest('t00').fraction == run.saved_after(250)


def test_a_backend_without_notices_is_never_asked_to_stop():
    class Quiet(interfaces.Runner):
        start = restore = poll = kill = watch = None
    with pytest.raises(NotImplementedError):
        Quiet().stop('s', 't')


# -- the executor ----------------------------------------------------------

@pytest.mark.parametrize('mode', preemption.MODES)
def test_a_noticed_server_is_lost_at_once_and_its_work_is_saved(mode):
    plan = _plan()
    trace = _trace((300, mode))
    blind = backend.run(plan, trace=trace)
    told = backend.run(plan, trace=trace, notice_s=60.0)
    assert _lost(blind) > 0
    (notice,) = _events(told, 'server_notice')
    assert notice['t'] == 300 and notice['at'] == 360
    assert notice['stopping'] == notice['running'] and notice['running']
    moves = _events(told, 'task_migrate')
    # The queue moves at the notice, each running task after its dump,
    # from the checkpoint the dump wrote.
    queued = [m for m in moves if m['t'] == 300]
    assert len(queued) == notice['queued'] > 0
    dump = checkpoint.dump_s(plan.job.policy, plan.job.tasks[0])
    after = [m for m in moves if m['task'] in notice['running']]
    assert [m['t'] for m in after] == [pytest.approx(300 + dump)] * len(
        after)
    assert all(m['saved'] > 0.25 for m in after)
    assert not _events(told, 'task_start')[-1]['server'] == notice['server']
    starts = [r for r in _events(told, 'task_start')
              if r['server'] == notice['server'] and r['t'] >= 300]
    assert not starts
    assert _lost(told) == 0
    assert told.finished and told.records[-1]['t'] <= plan.job.deadline_s


def test_a_task_ending_before_its_server_goes_is_left_to_end():
    plan = _plan()
    told = backend.run(plan, trace=_trace((400, preemption.TERMINATE)),
                       notice_s=300.0)
    (notice,) = _events(told, 'server_notice')
    assert notice['running'] and not notice['stopping']
    ended = {r['task'] for r in _events(told, 'task_finish')
             if r['server'] == notice['server'] and r['t'] <= notice['at']}
    assert set(notice['running']) <= ended
    assert _lost(told) == 0


def test_a_fresh_run_stops_once_its_checkpoint_is_worth_a_restore():
    plan = _plan((4000,) * 4, deadline=20000.0)
    assert plan.count(model.PREEMPTIBLE)
    job = plan.job
    dump = checkpoint.dump_s(job.policy, job.tasks[0])
    boot = job.policy.alpha_s
    # Told one second into the runs: a checkpoint then would save less
    # than its restore costs, so the tasks dump once they have done one
    # dump's worth of work.
    told = backend.run(plan, trace=_trace((boot + 1, preemption.TERMINATE)),
                       notice_s=2 * dump + 5)
    stops = _events(told, 'task_stop')
    assert stops and [s['t'] for s in stops] == [
        pytest.approx(boot + dump)] * len(stops)
    assert _lost(told) == 0
    # With too short a notice for that, they leave at once, with the
    # second of work they did.
    short = backend.run(plan, trace=_trace((boot + 1, preemption.TERMINATE)),
                        notice_s=dump + 1)
    assert not _events(short, 'task_stop')
    (notice,) = _events(short, 'server_notice')
    assert notice['leaving'] == notice['running']
    moved = {m['task']: m['t'] for m in _events(short, 'task_migrate')}
    assert all(moved[t] == boot + 1 for t in notice['leaving'])
    assert {r['lost_s'] for r in _events(short, 'work_lost')} == {1.0}
    # Told less than a dump ahead, they carry on as without a notice.
    shorter = backend.run(plan, trace=_trace(
        (boot + 1, preemption.TERMINATE)), notice_s=dump - 1)
    (notice,) = _events(shorter, 'server_notice')
    assert not notice['leaving'] and not notice['stopping']
    assert {r['lost_s'] for r in _events(shorter, 'work_lost')} == {dump}


# -- the command -----------------------------------------------------------

@pytest.mark.parametrize('value', ['-1', 'nan', 'inf', 'soon', '1e9'])
def test_a_bad_notice_is_one_line_and_exit_2(value, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(['sim', str(helpers.JOBS / 'j60.yaml'), '--notice', value])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and '--notice' in err


def test_run_on_a_cloud_refuses_a_simulated_notice(capsys):
    code = cli.main(['run', str(helpers.JOBS / 'j60.yaml'), '--backend',
                     'openstack', '--notice', '30'])
    assert code == 2
    # One line, saying where a real cloud's notice comes from.
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert '--notice' in err and 'opie:preempt_at' in err


def test_the_table_shows_the_work_lost_when_asked(capsys):
    job = str(helpers.JOBS / 'j60.yaml')
    args = ['sim', job, '--scenarios', 'sc2', '--seeds', '2', '--mode',
            'terminate']
    assert cli.main(args) == 0
    plain = capsys.readouterr().out
    assert 'lost' not in plain and 'notice' not in plain
    assert cli.main(args + ['--notice', '0']) == 0
    blind = capsys.readouterr().out
    assert 'notice 0 s' in blind and 'lost/preemption (s)' in blind
    # The same figures, plus two columns.
    assert blind.splitlines()[3].startswith(
        plain.splitlines()[3].rsplit('0/2', 1)[0])
    assert cli.main(args + ['--notice', '120', '-f', 'json']) == 0
    (row,) = json.loads(capsys.readouterr().out)['rows']
    assert row['lost work (s)'] == '0 [0-0]'
    assert row['lost/preemption (s)'] == '0.0'


# -- properties --------------------------------------------------------------

# Journals of main a96965d, before notices existed (sha256 of the sorted
# JSON records, 16 hex digits): j60 and j100, kh/kr of sc2 and sc5.
BEFORE = {
    'j60/hibernate/5.0/0.0/0': 'b10cad2f5692e701',
    'j60/hibernate/5.0/0.0/1': '49c0826385a0899a',
    'j60/hibernate/3.0/2.5/0': '8cac344d92ba5f1b',
    'j60/hibernate/3.0/2.5/1': '805d34915a0928e8',
    'j60/terminate/5.0/0.0/0': '6e8c5bdc3b391b09',
    'j60/terminate/5.0/0.0/1': '784f547058716fe0',
    'j60/terminate/3.0/2.5/0': 'bf1c3f438cd7abb5',
    'j60/terminate/3.0/2.5/1': 'e6e51383d10f9ed7',
    'j100/hibernate/5.0/0.0/0': '358ae2b52eca910f',
    'j100/hibernate/5.0/0.0/1': '038723ca605738c7',
    'j100/hibernate/3.0/2.5/0': '12d5152f0290c150',
    'j100/hibernate/3.0/2.5/1': 'c87bd3ac6c8b9701',
    'j100/terminate/5.0/0.0/0': 'e5e9bf78fc8c8a7b',
    'j100/terminate/5.0/0.0/1': 'd8a24616c761ca25',
    'j100/terminate/3.0/2.5/0': 'f3a2bb2e9bc33023',
    'j100/terminate/3.0/2.5/1': '41ea1ff1a3f2ada4',
}


@pytest.mark.parametrize('key', sorted(BEFORE))
def test_a_notice_of_0_is_no_notice(key):
    name, mode, kh, kr, seed = key.split('/')
    plan = map_choice.primary_map(helpers.example(name))
    result = backend.run(plan, kh=float(kh), kr=float(kr), seed=int(seed),
                         mode=mode, notice_s=0.0)
    records = [r for r in result.records if r['event'] != 'work_lost']
    digest = hashlib.sha256(json.dumps(records, sort_keys=True)
                            .encode()).hexdigest()[:16]
    assert digest == BEFORE[key]
    assert not _events(result, 'server_notice')


@st.composite
def _cases(draw):
    """(job index, run arguments): a scenario or a random trace, a mode
    and a notice."""
    index = draw(st.integers(0, hads.JOBS - 1))
    notice = draw(st.one_of(st.sampled_from([0.0, 1.0, 30.0, 120.0]),
                            st.floats(0.0, 600.0)))
    if draw(st.booleans()):
        sc = draw(st.sampled_from(sorted(scenarios.TABLE8)))
        sc = scenarios.TABLE8[sc]
        kwargs = dict(kh=sc.kh, kr=sc.kr, seed=draw(st.integers(0, 99)),
                      mode=draw(st.sampled_from(preemption.MODES)))
    else:
        job = hads.generate(index)
        flavors = sorted(job.flavors)
        events = draw(st.lists(st.tuples(
            st.floats(0.0, job.deadline_s), st.sampled_from(flavors),
            st.sampled_from([preemption.HIBERNATE, preemption.RESUME,
                             preemption.TERMINATE])), max_size=12))
        kwargs = dict(trace=[preemption.TraceEvent(*e) for e in events])
    return index, dict(kwargs, notice_s=notice)


def _baseline_meets(index):
    job = hads.generate(index)
    base = backend.run(job_map.normal_only(map_choice.primary_map(job)))
    end = hads.makespan(base)
    return end is not None and end <= job.deadline_s


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True)
@given(_cases())
def test_the_deadline_guarantee_holds_with_any_notice(case):
    index, kwargs = case
    job = hads.generate(index)
    result = backend.run(map_choice.primary_map(job), **kwargs)
    done = hads.finishes(result)
    assert not done or max(done.values()) == 1
    if _baseline_meets(index):
        assert set(done) == {t.id for t in job.tasks}
        assert hads.makespan(result) <= job.deadline_s
    # A server is lost from its notice on, until it resumes: no task
    # starts there or is moved there, and it steals none.
    noticed = set()
    for r in result.records:
        if r['event'] == 'server_notice':
            noticed.add(r['server'])
        elif r['event'] == 'server_resumed':
            noticed.discard(r['server'])
        elif r['event'] in ('task_start', 'task_steal'):
            assert r.get('server', r.get('dst')) not in noticed, r
        elif r['event'] == 'task_migrate':
            assert r['dst'] not in noticed, r


def _redo_s(job, task_id):
    """A task's run time on the fastest flavor a normal server may use."""
    task = next(t for t in job.tasks if t.id == task_id)
    normal = [f for f in job.flavors.values()
              if f.limits[model.NORMAL] and task.memory_mb <= f.ram_mb]
    return min(task.runtime_on(f) for f in normal) if normal else None


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True)
@given(_cases())
def test_a_notice_of_a_dump_or_more_loses_no_running_work(case):
    index, kwargs = case
    job = hads.generate(index)
    result = backend.run(map_choice.primary_map(job), **kwargs)
    flavor = {r['server']: r['flavor'] for r in _events(result,
                                                        'server_create')}
    start = {}      # (task, server) -> fraction its run started from
    told = {}       # (task, server) -> notice length
    for r in result.records:
        if r['event'] == 'task_start':
            start[r['task'], r['server']] = r['saved']
        elif r['event'] == 'server_notice':
            for task_id in r['running']:
                told[task_id, r['server']] = r['at'] - r['t']
        elif r['event'] == 'work_lost' and r['noticed'] and r['lost_s'] > 0:
            key = r['task'], r['server']
            task = next(t for t in job.tasks if t.id == r['task'])
            dump = checkpoint.dump_s(job.policy, task)
            if key not in told or told[key] < dump:
                continue
            # Only a fresh run too young to checkpoint usefully may lose.
            assert start[key] == 0, r
            work = task.runtime_on(job.flavors[flavor[r['server']]])
            redo = _redo_s(job, r['task']) or work
            assert r['lost_s'] < dump * work / redo + 1e-6, r


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True)
@given(st.integers(0, hads.JOBS - 1), st.data())
def test_a_checkpoint_worth_saving_never_lengthens_a_take_over(index, data):
    # The take-over maps a task at risk with fleet.take_over_wall: what
    # it may take on a normal server from the fraction it has saved.  A
    # checkpoint the notice makes it write must not make that longer, or
    # a map the watch holds could end after D without it knowing.
    job = hads.generate(index)
    fleet = fleet_mod.Fleet(job)
    task = data.draw(st.sampled_from(job.tasks))
    fleet.saved[task.id] = data.draw(st.sampled_from([0.0, 0.3]))
    normal = [f for f in job.flavors.values()
              if f.limits[model.NORMAL] and task.memory_mb <= f.ram_mb]
    bound = {f.name: fleet.take_over_wall(task.id, f) for f in normal}
    least = fleet.worth_saving(task.id)
    if least > 1.0:
        return      # a dump longer than the task: it never checkpoints
    fraction = data.draw(st.floats(least, 1.0))
    fleet.saved[task.id] = fraction
    for f in normal:
        assert fleet.take_over_wall(task.id, f) <= bound[f.name] + 1e-9


def test_a_dump_ending_as_the_server_goes_is_written():
    # The preemption's timer was set at the notice, before the dump's:
    # at the same instant it runs first, and must not lose the dump.
    w = test_sim._World(boot=0)
    job, run = test_sim._task_run()
    sid = w.cloud.create_server('s', job.flavors['f'], preemptible=True)
    w.runner.start(sid, 't00', run)
    source = preemption.TraceReplay(w.clock, w.cloud, _trace(
        (250, preemption.TERMINATE)), notice_s=run.dump_s)
    source.start()
    w.at(250, w.runner.stop, sid, 't00')
    w.clock.run(until=10000)
    assert not [e for e in w.events if e[1] == interfaces.STOPPED]
    assert w.store.latest('t00').fraction == pytest.approx(
        run.done_after(250))
