"""The Nova deployment of ``tox -e nova-interop`` (see environment.py),
one per run, and the scheduler under test: Nova's own, then Gantt's.

Skipped unless Nova is installed (the environment's own virtualenv), or
failed with ``GANTT_NOVA_INTEROP_REQUIRED=1`` (what tox sets)."""

import importlib.util
import json
import os

import pytest

from tests.nova_interop import environment

KINDS = ('nova', 'gantt')
# {kind: {measure: [seconds]}}, printed at the end of the run.
LATENCIES = {}


def pytest_collection_modifyitems(config, items):
    if importlib.util.find_spec('nova') is not None:
        return
    if os.environ.get('GANTT_NOVA_INTEROP_REQUIRED'):
        raise pytest.UsageError('nova is not installed: run tox -e '
                                'nova-interop')
    skip = pytest.mark.skip(reason='nova is not installed (tox -e '
                                   'nova-interop installs it)')
    for item in items:
        if 'nova_interop' in str(item.fspath):
            item.add_marker(skip)


@pytest.fixture(scope='session')
def nova_env(tmp_path_factory):
    with environment.Environment(
            tmp_path_factory.mktemp('nova-interop')) as env:
        yield env


@pytest.fixture(scope='module', params=KINDS)
def scheduler(request, nova_env):
    """``(kind, env)`` with that kind's scheduler serving."""
    nova_env.start_scheduler(request.param)
    try:
        yield request.param, nova_env
    finally:
        nova_env.stop_scheduler()


def pytest_terminal_summary(terminalreporter):
    if not LATENCIES:
        return
    write = terminalreporter.write_line
    write('')
    write('select_destinations, as Nova\'s conductor calls it (ms):')
    write('%-40s %10s %10s %10s' % ('', 'p50', 'p90', 'calls'))
    for kind in KINDS:
        for measure, seconds in sorted(LATENCIES.get(kind, {}).items()):
            ordered = sorted(seconds)
            write('%-40s %10.1f %10.1f %10d' % (
                '%s: %s' % (kind, measure),
                1000 * ordered[len(ordered) // 2],
                1000 * ordered[min(len(ordered) - 1,
                                   int(len(ordered) * 0.9))],
                len(ordered)))
    path = os.environ.get('GANTT_NOVA_INTEROP_REPORT')
    if path:
        with open(path, 'w') as stream:
            json.dump(LATENCIES, stream, indent=1)
