"""Only the methods of the versioned RPC APIs can be called remotely.

Lifecycle hooks and helpers of the endpoints (``init_host``,
``periodic_tasks``, ``heartbeat``...) answer oslo.messaging's
NoSuchMethod, over real RPC, and run nothing; missing or unknown
arguments are InvalidRequest naming them; malformed casts are logged
once at ERROR, naming the field, and change nothing.
"""

import logging
import time

import oslo_messaging as messaging
import pytest

from scheduler import context as gantt_context
from scheduler import exception
from scheduler import rpc
from tests.unit import inprocess
from tests.unit import rpc_harness

MISSING = '00000000-0000-4000-8000-000000000000'
NOT_RPC = {
    'scheduler': ('init_host', 'cleanup_host', 'reset', 'periodic_tasks',
                  '_log_stats', '_discover_hosts_in_cells', 'driver',
                  '_validated_spec', 'idle'),
    'conductor': ('init_host', 'cleanup_host', 'reset', 'periodic_tasks',
                  'compute_task_mgr'),
    'compute_task': ('init_host', 'run_periodic_tasks', 'build_task'),
    'compute': ('init_host', 'cleanup_host', 'reset', 'periodic_tasks',
                'heartbeat', 'update_available_resource',
                'sync_scheduler_instance_info', '_build_failed', '_track'),
}


@pytest.fixture
def harness(database, config):
    inprocess.configure(config)
    with rpc_harness.Harness(timeout=10) as running:
        yield running


def test_lifecycle_methods_are_not_callable_over_rpc(harness):
    before = harness.snapshot()
    for api, names in NOT_RPC.items():
        for name in names:
            with pytest.raises(messaging.NoSuchMethod) as caught:
                harness.call(api, name)
            assert 'does not support RPC method %s' % name in str(
                caught.value)
    assert harness.snapshot() == before
    # The endpoints still serve their API.
    assert harness.call('compute', 'remove_instance',
                        instance_uuid=MISSING) is False


def test_a_newer_version_than_served_is_unsupported(harness):
    client = harness.clients['conductor'].prepare(version='1.9')
    with pytest.raises(messaging.UnsupportedVersion) as caught:
        client.call(gantt_context.get_admin_context(), 'service_update',
                    host='h', binary='gantt-compute', topic='compute')
    assert 'does not support RPC version 1.9' in str(caught.value)


@pytest.mark.parametrize('kwargs, words', [
    ({'host': 'h', 'binary': 'gantt-compute'}, "missing a required argument: "
                                               "'topic'"),
    ({'host': 'h', 'binary': 'gantt-compute', 'topic': 'compute',
      'extra': 1}, "unexpected keyword argument 'extra'"),
    ({'host': 'h', 'binary': 'nova-compute', 'topic': 'compute'},
     'binary must be one of'),
    ({'host': 'h' * 256, 'binary': 'gantt-compute', 'topic': 'compute'},
     'host is 256 characters long; at most 255'),
    ({'host': True, 'binary': 'gantt-compute', 'topic': 'compute'},
     'host must be a string, not bool'),
])
def test_bad_arguments_are_invalid_requests_naming_them(harness, kwargs,
                                                        words):
    before = harness.snapshot()
    with pytest.raises(exception.InvalidRequest) as caught:
        harness.call('conductor', 'service_update', **kwargs)
    assert words in str(caught.value)
    assert harness.snapshot() == before


def _wait_for_record(caplog, words, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [r for r in caplog.records
                 if r.levelno == logging.ERROR and words in r.getMessage()]
        if found:
            return found
        time.sleep(0.02)
    raise AssertionError('no ERROR saying %r' % words)


@pytest.mark.parametrize('api, method, kwargs, words', [
    ('scheduler', 'update_instance_info',
     {'host_name': 'h1', 'instance_info': [{'uuid': 'x'}]},
     'instance_info[0] must be a InstanceInfo object, not dict'),
    ('scheduler', 'sync_instance_info',
     {'host_name': 7, 'instance_uuids': []},
     'host_name must be a string, not int'),
    ('compute_task', 'build_instances',
     {'instance_uuids': ['nope'], 'request_spec': None},
     'instance_uuids[0] must be a UUID string'),
    ('compute', 'build_and_run_instance',
     {'instance_uuid': MISSING,
      'node': rpc_harness.COMPUTE_HOST, 'request_spec': 'spec',
      'host_list': []},
     'request_spec must be a RequestSpec object, not str'),
    ('compute', 'build_and_run_instance', {'node': 'n'},
     "missing a required argument: 'instance_uuid'"),
])
def test_malformed_casts_log_one_error_and_change_nothing(
        harness, caplog, api, method, kwargs, words):
    caplog.set_level(logging.ERROR)
    before = harness.snapshot()
    harness.cast(api, method, **kwargs)
    assert len(_wait_for_record(caplog, words)) == 1
    assert harness.snapshot() == before
    assert harness.call('scheduler', 'sync_instance_info', host_name='h',
                        instance_uuids=[]) is None


def test_expose_marks_and_keeps_the_method():
    class Endpoint:
        @rpc.expose
        @messaging.expected_exceptions(exception.InvalidRequest)
        def ping(self, ctxt, value):
            """Answer ``value``."""
            return value

        def hidden(self, ctxt):
            return 'no'

    policy = rpc.ExposedRPCAccessPolicy()
    endpoint = Endpoint()
    assert policy.is_allowed(endpoint, 'ping')
    assert not policy.is_allowed(endpoint, 'hidden')
    assert not policy.is_allowed(endpoint, '__init__')
    assert not policy.is_allowed(endpoint, 'missing')
    assert endpoint.ping({}, value=3) == 3
    assert Endpoint.ping.__name__ == 'ping'
    with pytest.raises(messaging.ExpectedException) as caught:
        endpoint.ping({}, other=3)
    assert isinstance(caught.value.exc_info[1], exception.InvalidRequest)


class _Shapes:
    """Methods of the argument shapes :func:`rpc.expose` checks."""

    @rpc.expose
    def plain(self, ctxt, first, second=2, *, third=3):
        return (first, second, third)

    @rpc.expose
    def open_ended(self, ctxt, first, **rest):
        return (first, rest)


@pytest.mark.parametrize('method, args, kwargs, expected', [
    ('plain', (), {'first': 1}, (1, 2, 3)),
    ('plain', (), {'first': 1, 'second': 5, 'third': 6}, (1, 5, 6)),
    ('plain', (4,), {}, (4, 2, 3)),
    ('plain', (4,), {'third': 7}, (4, 2, 7)),
    ('open_ended', (), {'first': 1, 'other': 2}, (1, {'other': 2})),
])
def test_exposed_methods_take_what_their_signature_takes(method, args,
                                                         kwargs, expected):
    assert getattr(_Shapes(), method)({}, *args, **kwargs) == expected


@pytest.mark.parametrize('method, args, kwargs, words', [
    ('plain', (), {}, "missing a required argument: 'first'"),
    ('plain', (), {'second': 1}, "missing a required argument: 'first'"),
    ('plain', (), {'first': 1, 'fourth': 4},
     "unexpected keyword argument 'fourth'"),
    ('plain', (1,), {'first': 1}, "multiple values for argument 'first'"),
    ('plain', (1, 2, 3), {}, 'too many positional arguments'),
    ('open_ended', (), {'other': 2}, "missing a required argument: "
                                     "'first'"),
])
def test_exposed_methods_refuse_what_their_signature_refuses(
        method, args, kwargs, words):
    with pytest.raises(messaging.ExpectedException) as caught:
        getattr(_Shapes(), method)({}, *args, **kwargs)
    error = caught.value.exc_info[1]
    assert isinstance(error, exception.InvalidRequest)
    assert words in str(error)
    assert method in str(error)
