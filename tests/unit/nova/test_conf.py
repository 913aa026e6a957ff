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

"""``[opie]`` values OPIE cannot use stop the scheduler with one line
naming the option and what it accepts (issue 23)."""
from oslo_config import cfg
import pytest

from opie.nova import conf as opie_conf


TAG = 'text of at most 60 characters matching ^[^,/]*$'


def _conf(tmp_path, lines):
    path = tmp_path / 'nova.conf'
    path.write_text('[opie]\n' + lines + '\n')
    conf = cfg.ConfigOpts()
    # Nova's: heartbeat_path's default is under it.
    conf.register_opt(cfg.StrOpt('state_path', default=str(tmp_path)))
    opie_conf.register_opts(conf)
    conf(['--config-file', str(path)], default_config_files=[],
         default_config_dirs=[])
    return conf


def _error(tmp_path, lines):
    with pytest.raises(opie_conf.ConfigError) as exc_info:
        opie_conf.load_settings(_conf(tmp_path, lines))
    message = str(exc_info.value)
    assert len(message.splitlines()) == 1, message
    return message


@pytest.mark.parametrize('line, allowed', [
    ('overcommit_weight_multiplier = -1000', 'a finite number >= 0'),
    ('overcommit_weight_multiplier = nan', 'a finite number >= 0'),
    ('overcommit_weight_multiplier = inf', 'a finite number >= 0'),
    ('preemption_cost_weight_multiplier = nan', 'a finite number >= 0'),
    ('preemption_cost_weight_multiplier = -100', 'a finite number >= 0'),
    ('preemption_cost_weight_multiplier = -inf', 'a finite number >= 0'),
    ('reconcile_interval = -5', 'an integer >= 0 and <= 31536000'),
    ('reconcile_grace_period = -1', 'an integer >= 0 and <= 31536000'),
    ('claimed_grace_period = -1', 'an integer >= 0 and <= 31536000'),
    ('heartbeat_interval = 0', 'an integer >= 1 and <= 31536000'),
    ('claimed_grace_period = 31536001', 'an integer >= 0 and <= 31536000'),
    ('billing_period = 0', 'an integer >= 1 and <= 31536000'),
    ('max_victims = -2', 'an integer >= 0'),
    ('minimum_uptime = -1', 'an integer >= 0 and <= 31536000'),
    ('minimum_uptime = 31536001', 'an integer >= 0 and <= 31536000'),
    ('minimum_uptime = 10m', 'an integer >= 0 and <= 31536000'),
    ('maximum_lifetime = -1', 'an integer >= 0 and <= 31536000'),
    ('maximum_lifetime = 31536001', 'an integer >= 0 and <= 31536000'),
    ('maximum_lifetime = 1d', 'an integer >= 0 and <= 31536000'),
    ('max_victims = many', 'an integer >= 0'),
    ('freeze_after_warm_up = sometimes', 'true or false'),
    ('ranking = best', 'one of victims, all-preemptibles'),
    ('termination_mode = kill', 'one of delete, shelve'),
    ('preempt_on_move = resize,teleport', 'a comma-separated list of one '
     'of resize, migrate, live-migrate, evacuate, unshelve'),
    ('preempted_tag = ' + 'x' * 61, TAG),
    ('preempted_tag = opie/preempted', TAG),
])
def test_each_bad_value_is_one_line_naming_option_and_range(
        tmp_path, line, allowed):
    option = line.partition(' = ')[0]

    message = _error(tmp_path, line)

    assert message.startswith('[opie] %s is not valid: ' % option), message
    assert message.endswith('(allowed: %s)' % allowed), message


def test_a_reason_is_kept_but_not_the_file_location(tmp_path):
    assert _error(tmp_path, 'reconcile_interval = -5') == (
        '[opie] reconcile_interval is not valid: Should be greater than '
        'or equal to 0 (allowed: an integer >= 0 and <= 31536000)')
    assert _error(tmp_path, 'overcommit_weight_multiplier = nan') == (
        '[opie] overcommit_weight_multiplier is not valid: nan is not a '
        'finite number (allowed: a finite number >= 0)')


@pytest.mark.parametrize('spec, reason', [
    ('period=0', "cost plugin 'period': multiplier must be a finite number "
     "> 0, got '0'"),
    ('period=-1', "cost plugin 'period': multiplier must be a finite "
     "number > 0, got '-1'"),
    ('period=inf', "multiplier must be a finite number > 0, got 'inf'"),
    ('period=nan', "multiplier must be a finite number > 0, got 'nan'"),
    ('period,period', "cost plugin 'period' is named twice"),
    ('period=1, count=2,period=3', "cost plugin 'period' is named twice"),
])
def test_each_bad_costs_string_is_one_line_naming_the_option(
        tmp_path, spec, reason):
    message = _error(tmp_path, 'costs = ' + spec)

    assert message.startswith('[opie] costs = %s: ' % spec), message
    assert reason in message


def test_a_value_with_a_line_break_stays_one_line(tmp_path):
    message = _error(tmp_path, 'termination_mode = kill\u2028x')

    assert 'kill\\u2028x' in message


@pytest.mark.parametrize('line', [
    'overcommit_weight_multiplier = 0',
    'preemption_cost_weight_multiplier = 0',
    'reconcile_interval = 0',
    'minimum_uptime = 31536000',
    'maximum_lifetime = 31536000',
    'costs = period=0.5,count=60',
    'preempted_tag = ' + 'x' * 60,
])
def test_edges_of_the_ranges_load(tmp_path, line):
    assert opie_conf.load_settings(_conf(tmp_path, line))


@pytest.mark.parametrize('opt', opie_conf.opie_opts + opie_conf.terms_opts,
                         ids=lambda o: o.dest)
def test_every_option_says_what_it_accepts(opt):
    """A type, and a range or choices where a number or a word is read
    (paths, topics and the costs string are checked otherwise; a boolean
    is true or false)."""
    kind = opt.type
    words = opie_conf.allowed(opt)
    if opt.dest in ('costs', 'heartbeat_path', 'metrics_dir',
                    'notification_topics'):
        return
    assert (getattr(kind, 'min', None) is not None
            or getattr(kind, 'choices', None)
            or getattr(kind, 'max_length', None)
            or isinstance(kind, (cfg.types.List, cfg.types.Boolean))), words
