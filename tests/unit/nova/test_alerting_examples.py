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

"""The example Prometheus rules and Grafana dashboard of the operator
guide (doc/source/operator/monitoring.rst) name only metrics that
``opie-scheduler`` exports, and the rules the guide promises are there.

Every text of both files is searched for ``opie_`` names (PromQL
expressions, and any description naming one); a histogram's ``_bucket``,
``_sum`` and ``_count`` series count as the histogram.
"""
import json
import pathlib
import re

import pytest
import yaml

from opie.nova import metrics

OPERATOR = (pathlib.Path(__file__).resolve().parents[3] / 'doc' / 'source'
            / 'operator')
RULES = OPERATOR / 'prometheus-rules.yaml'
DASHBOARD = OPERATOR / 'grafana-dashboard.json'
NAME = re.compile(r'\bopie_[a-z_]+')
HISTOGRAM_SERIES = re.compile(r'_(bucket|sum|count)$')


def exported():
    """{metric name as PromQL names it: its type} of every metric
    :mod:`opie.nova.metrics` declares."""
    names = {}
    for family in metrics.REGISTRY.collect():
        suffix = '_total' if family.type == 'counter' else ''
        names[family.name + suffix] = family.type
    return names


def texts(document):
    """Every string in a parsed YAML or JSON document."""
    if isinstance(document, str):
        yield document
    elif isinstance(document, dict):
        for value in document.values():
            yield from texts(value)
    elif isinstance(document, list):
        for value in document:
            yield from texts(value)


def unknown(document, known):
    """The ``opie_`` names ``document`` uses that are not in ``known``
    ({name: type})."""
    found = set()
    for text in texts(document):
        for name in NAME.findall(text):
            base = HISTOGRAM_SERIES.sub('', name)
            if known.get(base) == 'histogram':
                name = base
            if name not in known:
                found.add(name)
    return sorted(found)


def load(path):
    with open(path, encoding='utf-8') as f:
        return yaml.safe_load(f) if path.suffix == '.yaml' else json.load(f)


@pytest.mark.parametrize('path', [RULES, DASHBOARD], ids=lambda p: p.name)
def test_names_only_exported_metrics(path):
    document = load(path)
    assert list(texts(document))
    assert unknown(document, exported()) == []


def test_the_rules_the_guide_promises():
    rules = {rule['alert']: rule['expr'] for group in load(RULES)['groups']
             for rule in group['rules']}
    for alert, metric in (
            ('OpieSafeMode', 'opie_safe_mode'),
            ('OpieTerminationFailures', 'opie_termination_failures_total'),
            ('OpieReconcileStale',
             'opie_last_reconcile_success_timestamp_seconds'),
            ('OpieNoLeaseHolder', 'opie_lease_holder'),
            ('OpieNormalRequestsFailing', 'opie_no_room_total')):
        assert metric in rules[alert], alert


def test_every_panel_has_a_query():
    panels = load(DASHBOARD)['panels']
    assert panels and all(
        NAME.search(target['expr']) for panel in panels
        if panel['type'] != 'row' for target in panel['targets'])


def test_the_check_finds_a_metric_not_exported():
    rule = {'groups': [{'name': 'opie', 'rules': [{
        'alert': 'Typo',
        'expr': 'rate(opie_preemption_total[5m]) > 0 or '
                'histogram_quantile(0.9, opie_select_destinations_seconds'
                '_bucket) > 1 or opie_safe_mode_count > 0'}]}]}
    assert unknown(rule, exported()) == ['opie_preemption_total',
                                         'opie_safe_mode_count']
