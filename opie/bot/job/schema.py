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

"""JSON Schema of an opie-bot job file (YAML or JSON).

The schema checks shapes and ranges; what needs the whole file (flavor
names used by tasks, unique ids, generator ranges) is checked by
:mod:`opie.bot.job.jobfile` after it.
"""

from opie.bot.job import generate

# Bounds far beyond any real job that keep planning finite: a deadline
# (and a run time) of at most 30 days, any other number at most 1e9.
MAX_SECONDS = 30 * 86400
MAX_VALUE = 1e9
MAX_COUNT = 10000
_POS = {'type': 'number', 'exclusiveMinimum': 0, 'maximum': MAX_VALUE}
_NONNEG = {'type': 'number', 'minimum': 0, 'maximum': MAX_VALUE}
_SECONDS = {'type': 'number', 'exclusiveMinimum': 0,
            'maximum': MAX_SECONDS}
_COUNT = {'type': 'integer', 'minimum': 0, 'maximum': MAX_COUNT}
_DIST = {
    'type': 'object',
    'description': 'values drawn with the generator seed so that their '
                   'minimum, mean and maximum are exactly these',
    'additionalProperties': False,
    'required': ['min', 'avg', 'max'],
    'properties': {'min': _SECONDS, 'avg': _SECONDS, 'max': _SECONDS},
}
_DIST_NONNEG = dict(_DIST, properties={'min': _NONNEG, 'avg': _NONNEG,
                                       'max': _NONNEG})
_MARKET_PRICES = {
    'type': 'object', 'additionalProperties': False,
    'required': ['preemptible', 'normal'],
    'properties': {'preemptible': _NONNEG, 'normal': _NONNEG},
}
_MARKET_LIMITS = {
    'type': 'object', 'additionalProperties': False,
    'properties': {'preemptible': _COUNT, 'normal': _COUNT},
}
_INPUTS = {'type': 'array', 'items': {'type': 'string'}}
# Glob patterns relative to a task's working directory; that they stay
# below it is checked by opie.bot.job.jobfile.
_OUTPUTS = {'type': 'array', 'items': {'type': 'string', 'minLength': 1}}

SCHEMA = {
    '$schema': 'https://json-schema.org/draft/2020-12/schema',
    'title': 'opie-bot job',
    'type': 'object',
    'additionalProperties': False,
    'required': ['job', 'flavors'],
    'properties': {
        'job': {
            'type': 'object', 'additionalProperties': False,
            'required': ['name', 'deadline_s'],
            'properties': {
                # The job id (name + 7) names Nova servers, a tag of at
                # most 60 characters, files and objects.
                'name': {'type': 'string',
                         'pattern': r'^[A-Za-z0-9][A-Za-z0-9_.-]{0,43}\Z'},
                'description': {'type': 'string'},
                'deadline_s': _SECONDS,
                'outputs': _OUTPUTS,
            },
        },
        'policy': {
            'type': 'object', 'additionalProperties': False,
            'properties': {
                'ac_s': _SECONDS,
                'alpha_s': {'type': 'number', 'minimum': 0,
                            'maximum': MAX_SECONDS},
                'ckpt_overhead': {'type': 'number', 'minimum': 0,
                                  'exclusiveMaximum': 1},
                'max_normal': dict(_COUNT, minimum=1),
                'dspot': {'oneOf': [{'enum': ['paper', 'code']},
                                    {'type': 'number', 'minimum': 0,
                                     'maximum': MAX_SECONDS}]},
                'checkpoints': {'enum': ['interior', 'paper']},
                'dump_base_s': _POS,
                'dump_per_mb_s': _NONNEG,
                'hang_factor': {'type': 'number', 'minimum': 1,
                                'maximum': 1000},
                'hang_retries': {'type': 'integer', 'minimum': 0,
                                 'maximum': 100},
            },
        },
        'flavors': {
            'type': 'object', 'minProperties': 1,
            'additionalProperties': {
                'type': 'object', 'additionalProperties': False,
                'required': ['vcpus', 'ram_gb', 'gflops', 'price_h'],
                'properties': {
                    'vcpus': {'type': 'integer', 'minimum': 1,
                              'maximum': 1024},
                    'ram_gb': _POS,
                    'gflops': _POS,
                    'price_h': _MARKET_PRICES,
                    'limits': _MARKET_LIMITS,
                },
            },
        },
        'tasks': {
            'type': 'array',
            'items': {
                'type': 'object', 'additionalProperties': False,
                'required': ['id'],
                'properties': {
                    'id': {'type': 'string', 'minLength': 1},
                    'command': {'type': 'string'},
                    'memory_mb': _NONNEG,
                    'runtime_s': {'oneOf': [
                        _SECONDS,
                        {'type': 'object', 'minProperties': 1,
                         'additionalProperties': _SECONDS}]},
                    'runtime_ref_s': _SECONDS,
                    'ref_flavor': {'type': 'string'},
                    'inputs': _INPUTS,
                    'outputs': _OUTPUTS,
                },
            },
        },
        'generate': {
            'type': 'array',
            'items': {
                'type': 'object', 'additionalProperties': False,
                'required': ['id'],
                'properties': {
                    'id': {'type': 'string', 'minLength': 1},
                    'count': {'type': 'integer', 'minimum': 1,
                              'maximum': generate.MAX_TASKS},
                    'sweep': {
                        'type': 'object', 'minProperties': 1,
                        'additionalProperties': {'type': 'array',
                                                 'minItems': 1}},
                    'seed': {'type': 'integer'},
                    'command': {'type': 'string'},
                    'memory_mb': {'oneOf': [_NONNEG, _DIST_NONNEG]},
                    'runtime_s': {'oneOf': [_SECONDS, _DIST]},
                    'runtime_ref_s': {'oneOf': [_SECONDS, _DIST]},
                    'ref_flavor': {'type': 'string'},
                    'inputs': _INPUTS,
                    'outputs': _OUTPUTS,
                },
            },
        },
    },
}
