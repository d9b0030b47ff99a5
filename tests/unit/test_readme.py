"""README.md's promises: its quick-start commands are the ones CI runs,
the tox environments it names exist, and its links lead somewhere.

A newcomer copies the README's commands; ``.ci/run`` runs the test
command, so a change to one that forgets the other fails here.
"""

import configparser
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEMO_COMMAND = 'python3 -m pip install tox && python3 -m tox -e demo'
TEST_COMMAND = 'python3 -m pip install tox && python3 -m tox'
# [text](target): a Markdown inline link.
LINK = re.compile(r'\[[^\]]*\]\(([^)\s]+)\)')


def _readme():
    return (ROOT / 'README.md').read_text()


def _section(text, title):
    """The text of the ``## title`` section."""
    match = re.search(r'^## %s\n(.*?)(?=^## |\Z)' % re.escape(title), text,
                      re.MULTILINE | re.DOTALL)
    assert match, 'README.md has no "## %s" section' % title
    return match.group(1)


def _code_blocks(text):
    return re.findall(r'^```[a-z]*\n(.*?)^```', text,
                      re.MULTILINE | re.DOTALL)


def _commands(block):
    """The commands of a shell block, without their comments."""
    return [line.split('#', 1)[0].rstrip()
            for line in block.splitlines()
            if line.split('#', 1)[0].strip()]


def _ci_commands():
    return [line.strip() for line in
            (ROOT / '.ci' / 'run').read_text().splitlines()
            if line.strip() and not line.lstrip().startswith('#')]


def tox_envs():
    """The environments tox.ini defines (``[testenv:NAME]``)."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(ROOT / 'tox.ini')
    return {section.split(':', 1)[1] for section in parser.sections()
            if section.startswith('testenv:')}


def test_the_quick_start_is_the_demo_then_the_test_suite():
    blocks = _code_blocks(_section(_readme(), 'Quick start'))
    assert blocks, 'the quick start shows no commands'
    assert _commands(blocks[0]) == [DEMO_COMMAND, TEST_COMMAND]


def test_ci_runs_the_readme_s_test_command():
    assert TEST_COMMAND in _ci_commands()


def test_every_tox_environment_the_readme_names_exists():
    named = set(re.findall(r'\btox -e ([\w-]+)', _readme()))
    assert 'demo' in named and 'docs' in named
    assert named <= tox_envs(), named - tox_envs()


def test_every_relative_link_of_the_readme_leads_to_a_file():
    targets = [target for target in LINK.findall(_readme())
               if not re.match(r'[a-z][a-z0-9+.-]*:|#', target)]
    assert targets, 'README.md links to nothing in the tree'
    missing = [target for target in targets
               if not (ROOT / target.split('#', 1)[0]).exists()]
    assert missing == []
