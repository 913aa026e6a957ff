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

"""The demo's task: a computation that checkpoints its own state.

``python -m opie.testing.democloud.work SECONDS`` sums the squares of 1..N in
100 steps lasting SECONDS of job time in all (``$OPIE_SPEED`` job seconds
per wall second), keeping its state in ``$OPIE_STATE_DIR`` (written
atomically, with its progress) so the agent's checkpoints capture it and a
restored run goes on from there.  It prints the sum, which the result
records; restored or not, the sum is the same.
"""
import json
import os
import sys
import time

STEPS = 100
PER_STEP = 1000


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    seconds = float(argv[0])
    speed = float(os.environ.get('OPIE_SPEED', '1'))
    state_dir = os.environ['OPIE_STATE_DIR']
    path = os.path.join(state_dir, 'state.json')
    state = {'step': 0, 'sum': 0}
    if os.path.exists(path):
        with open(path) as f:
            state = json.load(f)
    print('starting at step %d' % state['step'], flush=True)
    while state['step'] < STEPS:
        base = state['step'] * PER_STEP
        state['sum'] += sum(i * i for i in range(base + 1,
                                                 base + PER_STEP + 1))
        state['step'] += 1
        time.sleep(seconds / STEPS / speed)
        _save(state_dir, 'state.json', json.dumps(state))
        _save(state_dir, 'progress', str(state['step'] / STEPS))
    print('sum of squares 1..%d = %d' % (STEPS * PER_STEP, state['sum']))


def _save(directory, name, text):
    tmp = os.path.join(directory, '.' + name)
    with open(tmp, 'w') as f:
        f.write(text)
    os.replace(tmp, os.path.join(directory, name))


if __name__ == '__main__':
    main()
