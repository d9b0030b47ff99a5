"""An object version this service does not serve is refused in one log
line naming the object, the version and the versions served; the caller
of a call gets the same words back, and nothing changes.

Real oslo.messaging RPC servers on the ``fake://`` transport (see
:mod:`tests.unit.rpc_harness`); the payloads are primitives edited by
hand, as a newer or foreign peer would send them.
"""

import logging
import time

import pytest

from scheduler import exception
from scheduler.objects import base
from scheduler.objects import request_spec
from scheduler.objects import selection
from tests.unit import inprocess
from tests.unit import rpc_harness

UUID = '7a3c3e5e-3f5a-4d43-9a52-3b8b9bb8f9a1'


@pytest.fixture
def harness(database, config):
    inprocess.configure(config)
    with rpc_harness.Harness(timeout=10) as running:
        yield running


def _primitive(obj, version, *path):
    """``obj``'s primitive with the object at ``path`` (field names)
    claiming ``version``."""
    primitive = base.GanttObjectSerializer().serialize_entity(None, obj)
    inner = primitive
    for name in path:
        inner = inner['gantt_object.data'][name]
    inner['gantt_object.version'] = version
    return primitive


def _spec():
    return request_spec.RequestSpec(
        num_instances=1, flavor=request_spec.Flavor(vcpus=1, memory_mb=64))


def _records(caplog, logger_prefixes=('scheduler', 'oslo_messaging')):
    return [record for record in caplog.records
            if record.name.startswith(logger_prefixes)
            and record.levelno >= logging.WARNING]


def _wait_for_records(caplog, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not _records(caplog):
        time.sleep(0.02)
    time.sleep(0.2)   # a second line, if any, would be there by now
    return _records(caplog)


@pytest.mark.parametrize('spec, words', [
    (_primitive(_spec(), '1.99'),
     'RequestSpec version 1.99 is not served here; versions served: '
     '1.0 to 1.1'),
    (_primitive(_spec(), '9.0', 'flavor'),
     'Flavor version 9.0 is not served here; versions served: 1.0'),
])
def test_a_call_with_an_unknown_version_is_refused_in_one_line(
        harness, caplog, spec, words):
    caplog.set_level(logging.DEBUG)
    before = harness.snapshot()
    with pytest.raises(exception.InvalidRequest) as caught:
        harness.call('scheduler', 'select_destinations', spec_obj=spec,
                     instance_uuids=[UUID])
    assert words in str(caught.value)
    records = _wait_for_records(caplog)
    assert [record.getMessage() for record in records] == [
        'Refused an RPC message: Invalid request: ' + words]
    assert records[0].exc_info is None
    assert 'Traceback' not in caplog.text
    assert harness.snapshot() == before


def test_a_cast_with_an_unknown_selection_version_is_one_line(
        harness, caplog):
    caplog.set_level(logging.DEBUG)
    chosen = selection.Selection.for_host(
        type('Host', (), {'uuid': UUID, 'host': 'h1', 'nodename': 'n1'}),
        _spec().resources(), claimed=True)
    before = harness.snapshot()
    harness.cast('compute', 'build_and_run_instance', instance_uuid=UUID,
                 node=rpc_harness.COMPUTE_HOST, request_spec=_spec(),
                 host_list=[_primitive(chosen, '9.0')])
    records = _wait_for_records(caplog)
    assert [record.getMessage() for record in records] == [
        'Refused an RPC message: Invalid request: Selection version 9.0 is '
        'not served here; versions served: 1.0 to 1.1']
    assert 'Traceback' not in caplog.text
    assert harness.snapshot() == before
    assert harness.managers['compute']._instances == {}


def test_the_versions_served_are_named():
    assert base.served_versions('Destination') == '1.0 to 1.1'
    assert base.served_versions('RequestSpec') == '1.0 to 1.1'
    assert base.served_versions('NoSuchObject') == 'none'


@pytest.mark.parametrize('hints', [5, True, 'zone'])
def test_a_dict_field_given_something_else_is_an_invalid_request(hints):
    # Found by the fuzz test: a number where scheduler_hints' dict goes
    # made the field's own reader fail with an AttributeError.
    primitive = base.GanttObjectSerializer().serialize_entity(None, _spec())
    primitive['gantt_object.data']['scheduler_hints'] = hints
    primitive['gantt_object.changes'] = ['scheduler_hints']
    with pytest.raises(exception.InvalidRequest,
                       match='cannot read the payload as a Gantt object'):
        base.GanttObjectSerializer().deserialize_entity(None, primitive)
