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

"""Release notes are reno notes that reno can render.

``tox -e releasenotes`` renders them with Sphinx, which CI does not run; so
the shape reno needs is checked here: a note is ``SLUG-<16 hex>.yaml``, a
mapping of reno's sections, the prelude a text and every other section a
list of texts.
"""
import pathlib
import re

import pytest
import yaml

NOTES = pathlib.Path(__file__).resolve().parents[2] / 'releasenotes' / 'notes'
# reno's default sections.
SECTIONS = {'prelude', 'features', 'issues', 'upgrade', 'deprecations',
            'critical', 'security', 'fixes', 'other'}


def problems(path):
    """What is wrong with the note at ``path``, as lines."""
    if not re.fullmatch(r'[a-z0-9-]+-[0-9a-f]{16}\.yaml', path.name):
        return ['name is not SLUG-<16 hex>.yaml (use reno new SLUG)']
    note = yaml.safe_load(path.read_text())
    if not isinstance(note, dict) or not note:
        return ['not a mapping of sections']
    found = ['unknown section %r' % key for key in note
             if key not in SECTIONS]
    for key, value in note.items():
        texts = [value] if key == 'prelude' else value
        if not isinstance(texts, list) or not texts or not all(
                isinstance(text, str) and text.strip() for text in texts):
            wanted = 'a text' if key == 'prelude' else 'a list of texts'
            found.append('%s: not %s' % (key, wanted))
    return found


@pytest.mark.parametrize('path', sorted(NOTES.iterdir()),
                         ids=lambda path: path.name)
def test_note_is_reno_s(path):
    assert problems(path) == []


@pytest.mark.parametrize('name, text, problem', [
    ('no-id.yaml', 'fixes: [a]', 'name is not SLUG'),
    ('a-0123456789abcdef.yaml', '- a', 'not a mapping'),
    ('a-0123456789abcdef.yaml', 'fix: [a]', "unknown section 'fix'"),
    ('a-0123456789abcdef.yaml', 'fixes: a', 'fixes: not a list'),
    ('a-0123456789abcdef.yaml', 'prelude: [a]', 'prelude: not a text'),
])
def test_the_check_finds_each_problem(tmp_path, name, text, problem):
    path = tmp_path / name
    path.write_text(text)
    assert any(problem in line for line in problems(path))
