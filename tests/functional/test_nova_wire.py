"""Nova's scheduler wire over the real broker.

This process plays both sides on a virtual host of its own: Gantt's
Nova-mode endpoint (the real filter scheduler over the test's database)
served by a Service on topic ``scheduler`` of exchange ``nova``, and a
client that sends the messages Nova 34 sent (recorded by
tools/record_nova_wire.py) with Nova's context dict, through
oslo.messaging's rabbit driver, and reads the replies raw, as Nova's
conductor receives them before its own serializer reads them.
"""

import copy
import json
import math
import textwrap
import time

import oslo_messaging as messaging
import pytest

from scheduler import config as gantt_config
from scheduler.nova import manager as nova_manager
from scheduler.nova import primitives
from scheduler import rpc
from scheduler import service
from scheduler.drivers import claimers
from scheduler.nova import placement_client
from tests.functional import cluster as cluster_mod
from tests.functional import placement_server
from tests.functional import test_placement_claims as claims_tests
from tests.functional import test_placement_claims_driver as driver_tests
from tests.unit.nova import nova_cloud
from tests.unit.nova import wire_fixtures
from tests.unit.scheduler import fakes

pytestmark = claims_tests.pytestmark
running_placement = claims_tests.running_placement
placement = claims_tests.placement

CELL = '4e8bafd6-c052-4b9e-9d4f-5c6b7a8f9e0d'
INSTANCES = ['1b5e7c3a-9d2f-4e6b-8a1c-2f3e4d5c6b7a',
             '2c6f8d4b-ae30-4f7c-9b2d-3a4f5e6d7c8b']
HOSTS = ('compute-1', 'compute-2')


class _AsRecorded(messaging.Serializer):
    """Nova's side, reduced to its wire: arguments and context go out as
    recorded, replies come back as they arrive."""

    def serialize_entity(self, ctxt, entity):
        return entity

    def deserialize_entity(self, ctxt, entity):
        return entity

    def serialize_context(self, ctxt):
        return ctxt

    def deserialize_context(self, ctxt):
        return ctxt


@pytest.fixture
def nova_wire(database, config, placement):
    """The endpoint over hosts that are providers of the real Placement
    (in process), where its claims go."""
    gantt_config.register_opts()
    config.config(control_exchange='nova', rpc_response_timeout=30)
    config.config(backend='nova', group='scheduler')
    cloud = fakes.Cloud()
    for host in HOSTS:
        driver_tests.add_host(cloud, placement, host, vcpus=16,
                              memory_mb=32768, local_gb=500)
    with cluster_mod.vhost() as url:
        rpc.cleanup()
        transport = rpc.init(config.conf, url=url)
        manager = nova_manager.NovaSchedulerManager(
            cell_of=dict.fromkeys(HOSTS, CELL).get)
        manager.driver.claimer = claimers.PlacementClaimer(
            manager.driver.host_manager,
            placement_client.PlacementClient(placement.adapter),
            backoff=claims_tests.no_pause)
        server = service.Service('gantt-nova-wire', 'gantt-scheduler',
                                 'scheduler', manager)
        server.start()
        try:
            client = messaging.get_rpc_client(
                transport, messaging.Target(topic='scheduler',
                                            version='4.0'),
                serializer=_AsRecorded())
            yield manager, client
        finally:
            server.stop()
            rpc.cleanup()


def _recorded(name):
    recorded = wire_fixtures.load(name)
    return recorded['context'], copy.deepcopy(recorded['message'])


def _plain(spec):
    """The recorded spec without what the two fake hosts cannot give."""
    data = spec['nova_object.data']
    data['flavor']['nova_object.data']['extra_specs'] = {}
    data['image']['nova_object.data']['properties']['nova_object.data'] = {}
    for name in ('instance_group', 'requested_destination', 'retry',
                 'availability_zone', 'ignore_hosts'):
        data[name] = None
    data['scheduler_hints'] = {}
    return spec


def test_select_destinations_4_5_answers_nova_selections(nova_wire):
    manager, client = nova_wire
    ctxt, message = _recorded('select_destinations_4_5')
    args = message['args']
    _plain(args['spec_obj'])
    answer = client.prepare(version=message['version']).call(
        ctxt, message['method'], **args)
    # What crossed the broker is JSON: read it as Nova's serializer would.
    answer = json.loads(json.dumps(answer))
    assert len(answer) == 2
    nova_made = wire_fixtures.load('selection')['primitive'][0][0]
    claimed = set()
    for alternates in answer:
        for item in alternates:
            assert set(item) == set(nova_made)
            assert set(item['nova_object.data']) == set(
                nova_made['nova_object.data'])
            selection = primitives.decode(item, 'selection')
            assert (selection.name, selection.version) == ('Selection',
                                                           (1, 1))
            assert selection.get('cell_uuid') == CELL
            assert selection.get('allocation_request_version') == '1.36'
        claimed.add(alternates[0]['nova_object.data']['service_host'])
    assert claimed <= set(HOSTS)


def test_select_destinations_4_4_answers_legacy_dicts(nova_wire):
    manager, client = nova_wire
    ctxt, message = _recorded('select_destinations_4_4')
    _plain(message['args']['spec_obj'])
    answer = client.prepare(version=message['version']).call(
        ctxt, message['method'], **message['args'])
    assert [set(dest) for dest in answer] == [
        {'host', 'nodename', 'limits'}] * 2


def test_no_valid_host_crosses_as_novas(nova_wire):
    manager, client = nova_wire
    ctxt, message = _recorded('select_destinations_4_5')
    spec = _plain(message['args']['spec_obj'])
    spec['nova_object.data']['flavor']['nova_object.data'][
        'memory_mb'] = 400000
    with pytest.raises(messaging.RemoteError) as info:
        client.prepare(version='4.5').call(ctxt, 'select_destinations',
                                           **message['args'])
    # Gantt's transport does not allow nova.exception; Nova's does, and
    # rebuilds it (tools/check_nova_reads_gantt.py shows it does).
    assert info.value.exc_type == 'NoValidHost'
    assert 'No valid host was found.' in info.value.value


def test_fanout_cast_reaches_the_host_manager(nova_wire):
    manager, client = nova_wire
    ctxt, message = _recorded('update_aggregates')
    client.prepare(version=message['version'], fanout=True).cast(
        ctxt, message['method'], **message['args'])
    host_manager = manager.driver.host_manager
    deadline = time.monotonic() + 20
    while not any(agg.name == 'ssd-hosts'
                  for agg in host_manager._aggregates):
        assert time.monotonic() < deadline, 'the fanout never arrived'
        time.sleep(0.1)


def _nova_mode_conf(cloud, placement):
    return textwrap.dedent('''\
        [DEFAULT]
        control_exchange = nova
        [scheduler]
        backend = nova
        [nova_backend]
        sync_interval = 1
        [api_database]
        connection = %s
        ''') % cloud.api_url + placement.conf_section()


@pytest.fixture(scope='module')
def nova_daemon(tmp_path_factory):
    """gantt-scheduler in Nova mode (two workers) over a Nova cloud: Nova's
    API and cell databases (SQLite files with Nova's tables and names),
    and the real Placement over HTTP, where its claims go."""
    workdir = tmp_path_factory.mktemp('nova-wire')
    with placement_server.serving(workdir) as placement, \
            cluster_mod.Cluster(workdir, 'sqlite') as running:
        cloud = nova_cloud.NovaCloud(workdir, placement.client)
        running.nodes = {
            host: cloud.add_compute(host, vcpus=16, memory_mb=32768,
                                    disk_gb=500)
            for host in ('cmp-a', 'cmp-b')}
        running.cloud = cloud
        running.placement = placement
        running.scheduler = running.start(
            'gantt-scheduler', 'scheduler',
            '[DEFAULT]\nhost = nova-sched\n[scheduler]\nworkers = 2\n'
            + _nova_mode_conf(cloud, placement))
        yield running
        cloud.dispose()


@pytest.fixture
def nova_client(nova_daemon, config):
    gantt_config.register_opts()
    config.config(control_exchange='nova', rpc_response_timeout=30)
    rpc.cleanup()
    transport = rpc.init(config.conf, url=nova_daemon.transport_url)
    yield messaging.get_rpc_client(
        transport, messaging.Target(topic='scheduler', version='4.0'),
        serializer=_AsRecorded())
    rpc.cleanup()


def _call_when_served(daemon, client, version, ctxt, args, timeout=60):
    """The daemon's answer, once it consumes its queue (a call sent
    before is lost with no queue to hold it, and times out)."""
    deadline = time.monotonic() + timeout
    while True:
        assert daemon.scheduler.alive(), daemon.scheduler.log()[-3000:]
        try:
            return client.prepare(version=version, timeout=5).call(
                ctxt, 'select_destinations', **args)
        except messaging.MessagingTimeout:
            assert time.monotonic() < deadline, \
                daemon.scheduler.log()[-3000:]


def test_daemon_answers_novas_4_4_call(nova_daemon, nova_client):
    ctxt, message = _recorded('select_destinations_4_4')
    _plain(message['args']['spec_obj'])
    message['args']['instance_uuids'] = [
        '7c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f',
        '8d2e3f4a-5b6c-4d7e-9f8a-0b1c2d3e4f5a']
    answer = _call_when_served(nova_daemon, nova_client, '4.4', ctxt,
                               message['args'])
    assert len(answer) == 2
    assert {dest['host'] for dest in answer} <= {'cmp-a', 'cmp-b'}


def test_daemon_claims_in_placement_and_names_novas_cell(
        nova_daemon, nova_client):
    ctxt, message = _recorded('select_destinations_4_5')
    spec = _plain(message['args']['spec_obj'])
    flavor = spec['nova_object.data']['flavor']['nova_object.data']
    instances = ['9e3f4a5b-6c7d-4e8f-8a9b-1c2d3e4f5a6b',
                 'af4a5b6c-7d8e-4f9a-9b0c-2d3e4f5a6b7c']
    message['args']['instance_uuids'] = instances
    answer = _call_when_served(nova_daemon, nova_client, '4.5', ctxt,
                               message['args'])
    placement = nova_daemon.placement.client
    for uuid, alternates in zip(instances, answer):
        chosen = alternates[0]['nova_object.data']
        # The cell Nova's mappings give the host, as Nova's scheduler says.
        assert chosen['cell_uuid'] == nova_daemon.cloud.cell1_uuid
        node = nova_daemon.nodes[chosen['service_host']]
        assert chosen['compute_node_uuid'] == node
        held = placement.get('/allocations/%s' % uuid)['allocations']
        assert held == {node: {
            'generation': held[node]['generation'],
            'resources': {'VCPU': flavor['vcpus'],
                          'MEMORY_MB': flavor['memory_mb'],
                          # Nova counts swap (MiB) in DISK_GB, rounded up.
                          'DISK_GB': flavor['root_gb']
                          + flavor['ephemeral_gb']
                          + math.ceil(flavor['swap'] / 1024)}}}
    # Nothing was written into Nova's databases (the scheduler has a
    # mirror of its own, in its private directory).
    assert nova_daemon.scheduler.alive()


def test_start_up_stops_when_placement_is_away(tmp_path):
    with cluster_mod.Cluster(tmp_path, 'sqlite') as running:
        with placement_server.serving(tmp_path) as placement:
            cloud = nova_cloud.NovaCloud(tmp_path, placement.client)
            cloud.add_compute('cmp-a')
            conf_text = _nova_mode_conf(cloud, placement)
        # Placement has stopped: its port refuses.
        process = running.start('gantt-scheduler', 'scheduler',
                                '[DEFAULT]\nhost = nova-sched\n'
                                + conf_text)
        assert process.popen.wait(60) != 0
        cloud.dispose()
        log = process.log()
        assert "cannot read Nova's state" in log
        assert 'Placement is unreachable' in log
        assert 'Traceback' not in log
