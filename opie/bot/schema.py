"""JSON Schema of an opie-bot job file (YAML or JSON).

The schema checks shapes and ranges; what needs the whole file (flavor
names used by tasks, unique ids, generator ranges) is checked by
:mod:`opie.bot.jobfile` after it.
"""

_POS = {'type': 'number', 'exclusiveMinimum': 0}
_NONNEG = {'type': 'number', 'minimum': 0}
_DIST = {
    'type': 'object',
    'description': 'values drawn with the generator seed so that their '
                   'minimum, mean and maximum are exactly these',
    'additionalProperties': False,
    'required': ['min', 'avg', 'max'],
    'properties': {'min': _POS, 'avg': _POS, 'max': _POS},
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
    'properties': {'preemptible': {'type': 'integer', 'minimum': 0},
                   'normal': {'type': 'integer', 'minimum': 0}},
}
_INPUTS = {'type': 'array', 'items': {'type': 'string'}}

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
                'name': {'type': 'string', 'minLength': 1},
                'description': {'type': 'string'},
                'deadline_s': _POS,
            },
        },
        'policy': {
            'type': 'object', 'additionalProperties': False,
            'properties': {
                'ac_s': _POS,
                'alpha_s': _NONNEG,
                'ckpt_overhead': {'type': 'number', 'minimum': 0,
                                  'exclusiveMaximum': 1},
                'max_normal': {'type': 'integer', 'minimum': 1},
                'dspot': {'oneOf': [{'enum': ['paper', 'code']}, _NONNEG]},
                'checkpoints': {'enum': ['interior', 'paper']},
                'dump_base_s': _POS,
                'dump_per_mb_s': _NONNEG,
            },
        },
        'flavors': {
            'type': 'object', 'minProperties': 1,
            'additionalProperties': {
                'type': 'object', 'additionalProperties': False,
                'required': ['vcpus', 'ram_gb', 'gflops', 'price_h'],
                'properties': {
                    'vcpus': {'type': 'integer', 'minimum': 1},
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
                        _POS,
                        {'type': 'object', 'minProperties': 1,
                         'additionalProperties': _POS}]},
                    'runtime_ref_s': _POS,
                    'ref_flavor': {'type': 'string'},
                    'inputs': _INPUTS,
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
                    'count': {'type': 'integer', 'minimum': 1},
                    'sweep': {
                        'type': 'object', 'minProperties': 1,
                        'additionalProperties': {'type': 'array',
                                                 'minItems': 1}},
                    'seed': {'type': 'integer'},
                    'command': {'type': 'string'},
                    'memory_mb': {'oneOf': [_NONNEG, _DIST_NONNEG]},
                    'runtime_s': {'oneOf': [_POS, _DIST]},
                    'runtime_ref_s': {'oneOf': [_POS, _DIST]},
                    'ref_flavor': {'type': 'string'},
                    'inputs': _INPUTS,
                },
            },
        },
    },
}
