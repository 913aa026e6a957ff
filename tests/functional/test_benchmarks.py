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

"""The cloud benchmarks still run, end to end.

``benchmarks/ranking.py`` builds on ``benchmarks/scale.py``'s cloud and
cases: a change of one broke the other, unseen until a benchmark run an
hour long failed before printing anything. ranking.py runs here on two
nodes, once per case, in its own process (it builds its own cloud and
freezes its objects, which must not leak into the tests), and must print
scale.py's table and its own. scale.py runs here too, for what
ranking.py does not start: its twin process, which meters the machine's
speed in each phase. What they measure is not judged: one call on two
nodes tells nothing about speed.
"""
import os
import subprocess
import sys

import testtools

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
# Ten times what it takes on a slow machine: a benchmark that hangs
# fails instead of holding CI.
TIMEOUT = 300


def run(name):
    """Run ``benchmarks/<name>`` on two nodes, once per case: its
    standard output."""
    done = subprocess.run(
        [sys.executable, os.path.join('benchmarks', name), '--nodes', '2',
         '--iterations', '1'],
        cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, (done.returncode, done.stdout,
                                  done.stderr[-4000:])
    return done.stdout


class TestCloudBenchmarks(testtools.TestCase):

    def test_ranking_prints_scales_table_and_its_phases(self):
        out = run('ranking.py')
        # scale.py's cases and report, run by ranking.py first.
        for case in ('stock, empty', 'OPIE, empty', 'stock, restarted',
                     'stock, saturated', 'OPIE, saturated',
                     'OPIE, restarted'):
            self.assertIn('     2  %s' % case, out)
        self.assertIn('saturated cloud, interleaved: OPIE', out)
        self.assertIn('first call after a restart: OPIE', out)
        self.assertIn('2 nodes, saturated: ms per request', out)
        # Both modes assessed the two hosts, one call each.
        self.assertIn('hosts assessed per request: 2, every host read 2',
                      out)

    def test_scale_corrects_its_ratios_for_the_twins_drift(self):
        out = run('scale.py')
        for case in ('twin: empty cloud', "twin: stock's restarts",
                     'twin: saturated', "twin: OPIE's restarts"):
            self.assertIn('     2  %s ' % case, out)
        for label in ('saturated cloud', 'first call after a restart'):
            self.assertIn('%s, corrected for drift: OPIE' % label, out)
