"""Fuzzed RPC payloads against the real endpoints, over real RPC.

Every RPC method of the scheduler, the conductor (both namespaces) and
the compute gets well-formed and malformed arguments
(:mod:`tests.unit.fuzz_payloads`) from a real oslo.messaging client,
through the ``fake://`` transport, to the real managers over a migrated
SQLite database. Each call must answer a result or one of the method's
expected exceptions (never a built-in one, nor a RemoteError); a
malformed one must be InvalidRequest (casts: dropped, answering None) and
leave every table as it was; and the servers must still answer at the end.

Casts are sent as calls here, so that what their handler raises comes
back to the test instead of a log; ``test_rpc_expose`` sends real casts.
"""

import collections
import os

import hypothesis
from hypothesis import strategies as st
import oslo_messaging as messaging
import pytest

from scheduler import exception
from tests.unit import fuzz_payloads
from tests.unit import inprocess
from tests.unit import rpc_harness

OPERATION = (exception.InvalidRequest, exception.NotFound,
             exception.NoValidHost, exception.MigrationPreCheckError)
# What each method may raise for a well-formed payload.
EXPECTED = collections.defaultdict(lambda: (exception.InvalidRequest,), {
    'select_destinations': (exception.InvalidRequest, exception.NoValidHost),
    'instance_update': (exception.InvalidRequest,
                        exception.InstanceNotFound),
    'check_can_live_migrate_destination': (
        exception.InvalidRequest, exception.MigrationPreCheckError),
    'migrate_server': OPERATION, 'confirm_resize': OPERATION,
    'revert_resize': OPERATION, 'rebuild_instance': OPERATION,
    'shelve_instance': OPERATION, 'unshelve_instance': OPERATION,
    'delete_instance': OPERATION,
})
CASTS = frozenset(('update_aggregates', 'delete_aggregate',
                   'update_instance_info', 'delete_instance_info',
                   'sync_instance_info', 'build_instances',
                   'build_and_run_instance'))
# CI runs the same payloads every time (a submission lands on what it was
# tested with); a developer's run draws new ones.
DERANDOMIZE = bool(os.environ.get('CI'))
# Payloads per API in one run: 1,020 in all (about 60 s).
EXAMPLES = {'scheduler': 280, 'conductor': 240, 'compute_task': 280,
            'compute': 220}


@pytest.fixture
def harness(database, config):
    inprocess.configure(config)
    with rpc_harness.Harness(timeout=30) as running:
        yield running


def _outcome(harness, api, method, kwargs):
    """The call's result, or the exception it raised."""
    try:
        return harness.call(api, method, **kwargs)
    except Exception as error:   # judged by the caller
        return error


def _judge(outcome, method, valid):
    """A failure message, or None if the outcome is acceptable."""
    if not isinstance(outcome, Exception):
        if not valid and method not in CASTS:
            return 'a malformed payload was accepted: %r' % (outcome,)
        if method in CASTS and outcome is not None:
            return 'a cast answered %r' % (outcome,)
        return None
    if isinstance(outcome, messaging.RemoteError) or \
            not isinstance(outcome, exception.GanttException):
        return 'unexpected %s: %s' % (type(outcome).__name__, outcome)
    allowed = (exception.InvalidRequest,) if not valid else \
        EXPECTED[method]
    if not isinstance(outcome, allowed):
        return '%s is not one of %s' % (type(outcome).__name__,
                                        [c.__name__ for c in allowed])
    return None


def _fuzz(harness, api):
    seen = collections.Counter()

    @hypothesis.settings(max_examples=EXAMPLES[api], deadline=None,
                         database=None, derandomize=DERANDOMIZE,
                         suppress_health_check=list(hypothesis.HealthCheck))
    @hypothesis.given(st.data())
    def one_payload(data):
        method, kwargs, valid = data.draw(fuzz_payloads.case(api),
                                          label='case')
        before = harness.snapshot() if not valid else None
        outcome = _outcome(harness, api, method, kwargs)
        problem = _judge(outcome, method, valid)
        assert problem is None, '%s.%s(%r): %s' % (api, method, kwargs,
                                                    problem)
        if not valid:
            assert harness.snapshot() == before, \
                '%s.%s(%r) changed the database' % (api, method, kwargs)
        seen[valid] += 1

    one_payload()
    return seen


def _still_serving(harness):
    assert harness.call('conductor', 'service_update',
                        host=rpc_harness.COMPUTE_HOST,
                        binary='gantt-compute', topic='compute') == \
        {'disabled': False}
    assert harness.call('compute', 'remove_instance',
                        instance_uuid=fuzz_payloads.NODE_UUID) is False
    assert harness.call('scheduler', 'sync_instance_info',
                        host_name='h', instance_uuids=[]) is None
    with pytest.raises(exception.InstanceNotFound):
        harness.call('compute_task', 'shelve_instance',
                     instance_uuid=fuzz_payloads.NODE_UUID)


@pytest.mark.parametrize('api', sorted(EXAMPLES))
def test_fuzzed_payloads_get_expected_answers_and_bad_ones_write_nothing(
        harness, api):
    seen = _fuzz(harness, api)
    # Both kinds were tried, most of them malformed.
    assert seen[True] >= EXAMPLES[api] // 10, seen
    assert seen[False] >= EXAMPLES[api] // 3, seen
    _still_serving(harness)
