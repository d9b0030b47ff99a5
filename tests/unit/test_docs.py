"""The documentation's commands and pictures hold against the code.

Every ``gantt-manage`` and ``gantt-sim`` command a page of docs/source
shows in a literal block parses with the command's own parser (a
synopsis, with ``[--option]`` or ``a | b``, is not a command), every
file of the tree it names exists, and every ``tox -e`` environment named
exists. The architecture page's picture of a boot says for each RPC
message whether it is a call or a cast: so does the client that sends
it.
"""

import argparse
import contextlib
import io
import pathlib
import re
import shlex

import pytest

from scheduler.cmd import manage
from scheduler.cmd import sim
from tests.unit import test_readme

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = ROOT / 'docs' / 'source'
# A page writes a server's uuid UUID (or U); the parsers check uuids.
PLACEHOLDERS = {'UUID': '0c2b5d3e-7a51-4d6f-9a0e-2f4c8b1d6e93'}
PLACEHOLDERS['U'] = PLACEHOLDERS['UUID']
RPC_CLIENTS = ('conductor/rpcapi.py', 'scheduler/rpcapi.py',
               'compute/rpcapi.py')


def _pages():
    return sorted(DOCS.rglob('*.rst'))


def _shown_commands(program):
    """(page, command) for each indented line starting with ``program``,
    continuation lines joined and comments dropped."""
    found = []
    for page in _pages():
        lines = iter(page.read_text().splitlines())
        for line in lines:
            if not line.startswith(' ') or \
                    not line.strip().startswith(program + ' ') and \
                    line.strip() != program:
                continue
            command = line.strip()
            while command.split('  #', 1)[0].rstrip().endswith('\\'):
                command = command.split('  #', 1)[0].rstrip()[:-1] + ' ' + \
                    next(lines).strip()
            found.append((page.relative_to(DOCS).as_posix(),
                          command.split('  #', 1)[0].strip()))
    return found


def _is_synopsis(command):
    return '[--' in command or '(--' in command or ' | ' in command


def _manage_parser():
    parser = argparse.ArgumentParser(prog='gantt-manage')
    parser.add_argument('--config-file', action='append')
    parser.add_argument('--config-dir')
    manage._add_commands(parser.add_subparsers(dest='category',
                                               required=True))
    return parser


def _parse_error(parser, argv):
    """argparse's complaint about ``argv``, or None."""
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            parser.parse_args(argv)
    except SystemExit:
        return stderr.getvalue().strip().splitlines()[-1]
    return None


def _tree_paths(argv):
    return [arg for arg in argv
            if re.match(r'(etc|scheduler|tests|benchmarks)/', arg)]


@pytest.mark.parametrize('program, make_parser', [
    ('gantt-manage', _manage_parser),
    ('gantt-sim', sim._parser),
])
def test_every_command_the_docs_show_parses(program, make_parser):
    commands = [(page, command)
                for page, command in _shown_commands(program)
                if not _is_synopsis(command)]
    assert len(commands) > 5, commands
    refused = []
    for page, command in commands:
        words = shlex.split(command)[1:]
        # The shell's redirection is not the program's.
        for at, word in enumerate(words):
            if word in ('>', '>>', '<'):
                words = words[:at]
                break
        argv = [PLACEHOLDERS.get(arg, arg) for arg in words]
        error = _parse_error(make_parser(), argv)
        if error:
            refused.append((page, command, error))
        refused.extend((page, command, 'no such file: %s' % path)
                       for path in _tree_paths(argv)
                       if not (ROOT / path).exists())
    assert refused == []


def test_a_command_the_parser_refuses_is_caught():
    assert _parse_error(_manage_parser(), ['server', 'create', '--vcpus',
                                           '1', '--ram', '512'])
    assert _parse_error(_manage_parser(), ['db', 'archive']) is not None


def test_every_tox_environment_the_docs_name_exists():
    envs = test_readme.tox_envs()
    named = {env for page in _pages()
             for env in re.findall(r'\btox -e ([\w-]+)', page.read_text())}
    assert {'docs', 'releasenotes', 'demo'} <= named
    assert named <= envs, named - envs


def _sent_by_clients():
    """{method: 'call' | 'cast'} as the RPC clients send them."""
    kinds = {}
    for path in RPC_CLIENTS:
        source = (ROOT / path).read_text()
        for kind, method in re.findall(
                r"\.(call|cast)\(\s*ctxt,\s*'(\w+)'", source):
            kinds.setdefault(method, set()).add(kind)
        for method in re.findall(r"_fanout\(\s*ctxt,\s*'[\d.]+',\s*'(\w+)'",
                                 source):
            kinds.setdefault(method, set()).add('cast')
    return kinds


def test_the_boot_picture_says_call_or_cast_as_the_code_does():
    page = (DOCS / 'contributor' / 'architecture.rst').read_text()
    arrows = re.findall(r'\b(CALL|CAST) (\w+)\(', page)
    drawn = {method for _kind, method in arrows}
    # The boot as gantt-manage starts it, and both ends of a compute's
    # build.
    assert {'schedule_and_build_instances', 'select_destinations',
            'build_and_run_instance', 'instance_update',
            'build_instances'} <= drawn
    sent = _sent_by_clients()
    wrong = [(kind, method, sorted(sent.get(method, ())))
             for kind, method in arrows
             if sent.get(method) != {kind.lower()}]
    assert wrong == []
