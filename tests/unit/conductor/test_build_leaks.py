"""Every path that ends a build releases what the instance holds, in the
transaction that puts it in ERROR.

The case from the field: a ``select_destinations`` call timed out after
the scheduler had claimed, the conductor asked again, and the second
answer was NoValidHost (or any failure). The scheduler here is a stand-in
that claims in the real database, as the first answer did, and then
answers with the second answer's error; everything else is real.
"""

import types
import uuid as uuid_lib

import oslo_messaging as messaging
from oslo_serialization import jsonutils
import pytest

from conductor.tasks import build
from scheduler import context as gantt_context
from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import compute_nodes as db_compute_nodes
from scheduler import exception
from scheduler.objects import request_spec as request_spec_obj
from scheduler.objects import selection as selection_obj
from tests.unit.conductor import sql_state


class ClaimThenFail:
    """Claims every instance on the node, then raises ``error``."""

    def __init__(self, node_id, error, version='1.1'):
        self.node_id = node_id
        self.error = error
        self.client = types.SimpleNamespace(
            can_send_version=lambda wanted: wanted <= version)

    def select_destinations(self, ctxt, spec, instance_uuids, **kwargs):
        with db_api.writer() as session:
            for uuid in instance_uuids:
                assert claims.claim_resources(session, self.node_id, uuid,
                                              claims.Resources(1, 512, 1))
        raise self.error


ERRORS = {
    'no valid host': exception.NoValidHost(reason='second answer'),
    'timeout': messaging.MessagingTimeout('second answer'),
    'anything else': RuntimeError('second answer'),
}


@pytest.fixture
def node(database):
    with db_api.writer() as session:
        return db_compute_nodes.report_inventory(
            session, str(uuid_lib.uuid4()), 'h1', 'h1',
            {'vcpus': 8, 'memory_mb': 8192, 'local_gb': 100})


def _spec(count=1):
    return request_spec_obj.RequestSpec(
        num_instances=count,
        flavor=request_spec_obj.Flavor(vcpus=1, memory_mb=512, root_gb=1))


def _assert_failed_and_released(uuids):
    for uuid in uuids:
        row = sql_state.instance(uuid)
        assert (row.vm_state, row.task_state, row.host) == (
            'error', None, None)
        assert row.fault
    assert sql_state.allocations() == {}
    assert sql_state.usage() == {'h1': (0, 0, 0)}
    sql_state.assert_consistent()


@pytest.mark.parametrize('error', ERRORS.values(), ids=list(ERRORS))
def test_first_build_failing_after_a_claim_releases_it(node, error):
    uuids = [str(uuid_lib.uuid4()) for _ in range(2)]
    task = build.BuildTask(ClaimThenFail(node, error), compute_api=None)

    task.build(gantt_context.get_admin_context(), uuids, _spec(2))

    _assert_failed_and_released(uuids)


@pytest.mark.parametrize('error', ERRORS.values(), ids=list(ERRORS))
def test_legacy_reschedule_failing_after_a_claim_releases_it(node, error):
    uuid = str(uuid_lib.uuid4())
    build._record([uuid], _spec())
    task = build.BuildTask(ClaimThenFail(node, error, version='1.0'),
                           compute_api=None)

    task.reschedule(gantt_context.get_admin_context(), uuid, _spec(), [],
                    {'host': 'h0', 'node': 'h0', 'reason': 'spawn failed'})

    _assert_failed_and_released([uuid])


def test_reschedule_without_alternates_left_releases_everything(node):
    uuid = str(uuid_lib.uuid4())
    build._record([uuid], _spec())
    with db_api.writer() as session:
        assert claims.claim_resources(session, node, uuid,
                                      claims.Resources(1, 512, 1))
    task = build.BuildTask(ClaimThenFail(node, None), compute_api=None)

    task.reschedule(gantt_context.get_admin_context(), uuid, _spec(), [],
                    {'host': 'elsewhere', 'node': 'elsewhere',
                     'reason': 'spawn failed'})

    _assert_failed_and_released([uuid])
    assert 'Exceeded maximum number of retries' in \
        sql_state.instance(uuid).fault


class Recorder:
    """A compute API that records the builds sent to it."""

    def __init__(self):
        self.sent = []

    def build_and_run_instance(self, ctxt, host, instance_uuid, node,
                               request_spec, host_list):
        self.sent.append((instance_uuid, host))


def _selection(host):
    with db_api.reader() as session:
        row = db_compute_nodes.get_node_by_name(session, host, host)
    return selection_obj.Selection(
        compute_node_uuid=row.uuid, service_host=host, nodename=host,
        limits={}, claimed=True, allocation_request=jsonutils.dumps(
            {'vcpus': 1, 'memory_mb': 512, 'disk_gb': 1}))


@pytest.mark.parametrize('claimed_on', [
    # The broker delivered select_destinations twice: the copy claimed on
    # h2 after the first answer (h1) claimed.
    pytest.param(('h1', 'h2'), id='replaced by a duplicate'),
    # The database crashed after the scheduler's claim was committed but
    # before the commit reached its disk ([filter_scheduler]
    # build_claim_flush): the instance holds no claim.
    pytest.param((), id='lost with the database'),
])
def test_an_answer_whose_claim_is_gone_goes_to_an_alternate(node,
                                                            claimed_on):
    # The first answer (h1) must not be sent to h1 unclaimed; the build
    # goes to an alternate that claims.
    with db_api.writer() as session:
        nodes = {'h1': node, 'h2': db_compute_nodes.report_inventory(
            session, str(uuid_lib.uuid4()), 'h2', 'h2',
            {'vcpus': 8, 'memory_mb': 8192, 'local_gb': 100})}
    uuid = str(uuid_lib.uuid4())
    build._record([uuid], _spec())
    for host in claimed_on:
        with db_api.writer() as session:
            claims.release_resources(session, uuid)
            assert claims.claim_resources(session, nodes[host], uuid,
                                          claims.Resources(1, 512, 1))
    computes = Recorder()
    task = build.BuildTask(scheduler_api=None, compute_api=computes)

    task._send_to(gantt_context.get_admin_context(), uuid, _spec(),
                  _selection('h1'), [_selection('h2')])

    assert computes.sent == [(uuid, 'h2')]
    assert sql_state.instance(uuid).host == 'h2'
    assert sql_state.allocations() == {uuid: 'h2'}
    assert sql_state.usage()['h1'] == (0, 0, 0)
    sql_state.assert_consistent()


def test_an_answer_for_a_build_the_reaper_ended_goes_nowhere(node, caplog):
    """The reaper timed the build out while it was scheduled (ERROR, its
    claim released): the answer is not sent, no alternate is claimed,
    and the log says the build stopped, not that a claim was lost."""
    from conductor.tasks import reaper
    with db_api.writer() as session:
        db_compute_nodes.report_inventory(
            session, str(uuid_lib.uuid4()), 'h2', 'h2',
            {'vcpus': 8, 'memory_mb': 8192, 'local_gb': 100})
    uuid = str(uuid_lib.uuid4())
    build._record([uuid], _spec())
    with db_api.writer() as session:
        assert claims.claim_resources(session, node, uuid,
                                      claims.Resources(1, 512, 1))
    assert reaper._reap(uuid, 600)
    computes = Recorder()
    task = build.BuildTask(scheduler_api=None, compute_api=computes)

    task._send_to(gantt_context.get_admin_context(), uuid, _spec(),
                  _selection('h1'), [_selection('h2')])

    assert computes.sent == []
    row = sql_state.instance(uuid)
    assert (row.vm_state, row.host) == ('error', None)
    assert sql_state.allocations() == {}
    assert sql_state.usage() == {'h1': (0, 0, 0), 'h2': (0, 0, 0)}
    sql_state.assert_consistent()
    warnings = [record.getMessage() for record in caplog.records
                if record.levelname == 'WARNING']
    assert warnings == ['Instance %s stopped building while it was '
                        'scheduled; its claim was released with it, on h1'
                        % uuid]
