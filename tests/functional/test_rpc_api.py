"""The scheduler's RPC API from a client's side: errors and versions.

This process is the RPC client (``scheduler.rpc`` on the cluster's virtual
host); a real gantt-scheduler answers, claiming in a real PostgreSQL
database. Malformed payloads must come back as InvalidRequest naming the
problem and change nothing; NoValidHost must explain itself; a client
capped at 1.0 must still get Selections from the 1.1 server.
"""

import oslo_messaging as messaging
from oslo_utils import uuidutils
import pytest

from scheduler import context as gantt_context
from scheduler import exception
from scheduler.objects import request_spec
from scheduler.objects import selection as selection_obj
from scheduler import rpc
from scheduler import rpcapi
from tests.functional import cluster as cluster_mod

pytestmark = pytest.mark.functional

HOSTS = ('cmp-a', 'cmp-b', 'cmp-c')


@pytest.fixture(scope='module')
def cluster(tmp_path_factory):
    with cluster_mod.Cluster(tmp_path_factory.mktemp('rpc'), 'postgresql',
                             extra_conf='[scheduler]\nmax_attempts = 3\n'
                             ) as running:
        running.start_conductor()
        for host in HOSTS:
            running.start_compute(host, vcpus=16, memory_mb=32768,
                                  local_gb=500)
        running.scheduler = running.start_scheduler(workers=2)
        running.wait_for_computes(HOSTS)
        running.discover_hosts()
        yield running


@pytest.fixture
def client(cluster, rpc_transport):
    """(context, raw RPC client of topic 'scheduler') in this process."""
    rpc_transport(cluster, rpc_response_timeout=30)
    raw = rpc.get_client(messaging.Target(topic=rpcapi.RPC_TOPIC,
                                          version=rpcapi.RPC_API_VERSION))
    return gantt_context.get_admin_context(), raw


def make_spec(num_instances=1, vcpus=1, memory_mb=512, root_gb=1, **extra):
    flavor = request_spec.Flavor(name='f%d' % vcpus, vcpus=vcpus,
                                 memory_mb=memory_mb, root_gb=root_gb)
    return request_spec.RequestSpec(num_instances=num_instances,
                                    flavor=flavor, project_id='demo',
                                    **extra)


def new_uuids(count):
    return [uuidutils.generate_uuid() for _ in range(count)]


def allocations_by_consumer(cluster):
    return {row.consumer_uuid: row for row in cluster.allocations()}


def call_1_1(client, **kwargs):
    ctxt, raw = client
    kwargs.setdefault('return_objects', True)
    return raw.prepare(version='1.1').call(ctxt, 'select_destinations',
                                           **kwargs)


def assert_invalid(call, *expected_words):
    with pytest.raises(exception.InvalidRequest) as info:
        call()
    text = str(info.value)
    for word in expected_words:
        assert word in text, text
    return text


class SpyOnVersions:
    """Records the version of every message a SchedulerAPI sends.

    (``can_send_version`` prepares too, without sending; only what is
    called counts.)
    """

    def __init__(self, api):
        self.versions = []
        real_prepare = api.client.prepare

        def prepare(**kwargs):
            prepared = real_prepare(**kwargs)
            real_call = prepared.call

            def call(*args, **call_kwargs):
                self.versions.append(kwargs.get('version'))
                return real_call(*args, **call_kwargs)
            prepared.call = call
            return prepared
        api.client.prepare = prepare


def test_malformed_payloads_are_refused(cluster, client):
    before = allocations_by_consumer(cluster)
    ctxt, raw = client
    one = new_uuids(1)

    assert_invalid(lambda: call_1_1(client, spec_obj='not a spec',
                                    instance_uuids=one),
                   'RequestSpec', 'str')
    assert_invalid(
        lambda: raw.prepare(version='1.0').call(
            ctxt, 'select_destinations',
            request_spec={'num_instances': 1, 'instance_uuids': one,
                          'instance_properties': {'uuid': one[0]}},
            filter_properties={}),
        'flavor')
    assert_invalid(lambda: call_1_1(client, spec_obj=make_spec(vcpus=-1),
                                    instance_uuids=one),
                   'flavor.vcpus', 'at least 1')
    assert_invalid(lambda: call_1_1(client, spec_obj=make_spec(),
                                    instance_uuids=['not-a-uuid']),
                   'instance_uuids', 'UUID')
    assert_invalid(
        lambda: call_1_1(client, spec_obj={
            'gantt_object.name': 'NoSuchThing',
            'gantt_object.namespace': 'gantt',
            'gantt_object.version': '1.0',
            'gantt_object.data': {'flavor': 'big'}}, instance_uuids=one),
        'NoSuchThing')

    # The scheduler is still there and still right.
    assert cluster.scheduler.alive()
    valid = new_uuids(2)
    selections = call_1_1(client, spec_obj=make_spec(num_instances=2),
                          instance_uuids=valid)
    assert [len(alternates) for alternates in selections] == [1, 1]
    after = allocations_by_consumer(cluster)
    assert set(after) - set(before) == set(valid)
    for uuid, alternates in zip(valid, selections):
        assert after[uuid].host == alternates[0].service_host
        assert (after[uuid].vcpus, after[uuid].memory_mb,
                after[uuid].disk_gb) == (1, 512, 1)


def test_no_valid_host_explains_itself(cluster, client):
    before = allocations_by_consumer(cluster)
    api = rpcapi.SchedulerAPI()
    with pytest.raises(exception.NoValidHost) as info:
        api.select_destinations(client[0], make_spec(memory_mb=10 ** 6),
                                new_uuids(1))
    text = str(info.value)
    assert 'No valid host' in text
    assert 'RamFilter 3 -> 0' in text, text
    assert allocations_by_consumer(cluster) == before
    assert cluster.scheduler.alive()


def test_capped_client_sends_legacy_form(cluster, client, config):
    config.config(scheduler='1.0', group='upgrade_levels')
    api = rpcapi.SchedulerAPI()
    spy = SpyOnVersions(api)
    uuids = new_uuids(3)
    selections = api.select_destinations(client[0], make_spec(3), uuids,
                                         return_alternates=True)
    assert spy.versions == ['1.0']
    assert len(selections) == 3
    allocations = allocations_by_consumer(cluster)
    for uuid, alternates in zip(uuids, selections):
        (chosen,) = alternates
        assert isinstance(chosen, selection_obj.Selection)
        assert chosen.claimed
        assert chosen.service_host in HOSTS
        assert chosen.nodename == chosen.service_host
        # What only the 1.1 form carries is absent: proof of the 1.0 path.
        assert chosen.compute_node_uuid is None
        assert chosen.allocation_request is None
        assert allocations[uuid].host == chosen.service_host


def test_alternates(cluster, client):
    api = rpcapi.SchedulerAPI()
    spy = SpyOnVersions(api)
    uuids = new_uuids(2)
    selections = api.select_destinations(client[0], make_spec(2), uuids,
                                         return_alternates=True)
    assert spy.versions == ['1.1']
    assert len(selections) == 2
    allocations = allocations_by_consumer(cluster)
    node_uuids = {row.host: row.uuid for row in cluster.query(
        'SELECT host, uuid FROM compute_nodes')}
    for uuid, alternates in zip(uuids, selections):
        chosen, others = alternates[0], alternates[1:]
        assert chosen.claimed
        assert chosen.compute_node_uuid == node_uuids[chosen.service_host]
        assert 1 <= len(others) <= 2, alternates
        hosts = [alt.service_host for alt in alternates]
        assert len(set(hosts)) == len(hosts), hosts
        for alt in others:
            assert not alt.claimed
            assert alt.compute_node_uuid == node_uuids[alt.service_host]
            assert alt.requested_resources() == {
                'vcpus': 1, 'memory_mb': 512, 'disk_gb': 1}
        # Only the chosen host holds a claim.
        assert allocations[uuid].host == chosen.service_host
    assert len(cluster.query(
        'SELECT id FROM allocations WHERE consumer_uuid IN (:a, :b)',
        a=uuids[0], b=uuids[1])) == 2
