"""NovaSchedulerManager: Nova's recorded calls over the real filter
scheduler and the test's SQLite database; Gantt's Selections encoded as
Nova's own, Gantt's refusals as nova.exception.NoValidHost.

The RPC layer is exercised through the real serializer (decoding each
argument as the server does); the broker is the functional test's.
"""

import copy
import json

import oslo_messaging as messaging
from oslo_messaging._drivers import common as driver_common
import pytest

from scheduler import config as gantt_config
from scheduler import conf
from scheduler import exception
from scheduler import notifications
from scheduler.nova import errors
from scheduler.nova import legacy_spec
from scheduler.nova import manager as nova_manager
from scheduler.nova import primitives
from scheduler.nova import request_spec
from scheduler.nova import selections
from scheduler.nova import wire
from scheduler.objects import request_spec as spec_objects
from scheduler.objects import selection as selection_obj
from scheduler import placement_types
from scheduler import rpc
from scheduler.drivers import claimers
from scheduler.nova import placement_client
from tests.functional import test_placement_claims as claims_tests
from tests.functional import test_placement_claims_driver as driver_tests
from tests.unit.nova import test_placement_client
from tests.unit.nova import wire_fixtures
from tests.unit.scheduler.notifications import recorder
from tests.unit.scheduler import fakes

CONF = conf.CONF
CELL = '4e8bafd6-c052-4b9e-9d4f-5c6b7a8f9e0d'
INSTANCES = ['1b5e7c3a-9d2f-4e6b-8a1c-2f3e4d5c6b7a',
             '2c6f8d4b-ae30-4f7c-9b2d-3a4f5e6d7c8b']


@pytest.fixture
def nova_mode(config):
    gantt_config.register_opts()
    config.config(control_exchange='nova')
    config.config(backend='nova', group='scheduler')


running_placement = claims_tests.running_placement
placement = claims_tests.placement


def make_endpoint(placement, hosts, **kwargs):
    """The endpoint over ``hosts`` that are providers of the real
    Placement (in process), where its claims go."""
    cloud = fakes.Cloud()
    for host in hosts:
        driver_tests.add_host(cloud, placement, host, vcpus=16,
                              memory_mb=32768, local_gb=500)
    mgr = nova_manager.NovaSchedulerManager(
        cell_of=dict.fromkeys(hosts, CELL).get, **kwargs)
    mgr.driver.claimer = claimers.PlacementClaimer(
        mgr.driver.host_manager,
        placement_client.PlacementClient(placement.adapter),
        backoff=claims_tests.no_pause)
    mgr.init_host()
    return mgr


@pytest.fixture
def endpoint(database, nova_mode, placement):
    mgr = make_endpoint(placement, ('compute-1', 'compute-2', 'compute-3'),
                        availability_zone_of={'compute-1': 'az1'}.get)
    yield mgr
    mgr.cleanup_host()


def _plain_spec(**flavor):
    """The recorded spec, made plain enough for the fake cloud: no
    pinning, zone, group, destination or retry."""
    raw = copy.deepcopy(wire_fixtures.args('select_destinations_4_5')[
        'spec_obj'])
    data = raw['nova_object.data']
    data['flavor']['nova_object.data']['extra_specs'] = {}
    data['flavor']['nova_object.data'].update(flavor)
    data['image']['nova_object.data']['properties']['nova_object.data'] = {}
    data['network_metadata']['nova_object.data']['physnets'] = []
    # The recorded flavor is pinned: its NUMA topology goes with the
    # extra specs (a NUMA request would get NUMA limits).
    for name in ('instance_group', 'requested_destination', 'retry',
                 'numa_topology'):
        data[name] = None
    data['scheduler_hints'] = {}
    data['ignore_hosts'] = None
    data['availability_zone'] = None
    return raw


def _call(mgr, method, args):
    """Deserialize ``args`` as the server does, then dispatch."""
    serializer = wire.NovaSerializer()
    ctxt = serializer.deserialize_context(
        wire_fixtures.load('select_destinations_4_5')['context'])
    kwargs = {name: serializer.deserialize_entity(ctxt, value)
              for name, value in args.items()}
    return getattr(mgr, method)(ctxt, **kwargs)


def _types(primitive):
    """Keys, versions and value types of a primitive, recursively."""
    if isinstance(primitive, dict):
        return {key: (_types(value) if not key.endswith('.changes')
                      else sorted(value))
                for key, value in primitive.items()}
    return type(primitive).__name__


def test_control_exchange_must_be_nova(database, config):
    gantt_config.register_opts()
    config.config(control_exchange='gantt')
    with pytest.raises(exception.ConfigError) as info:
        nova_manager.NovaSchedulerManager()
    assert 'control_exchange = nova' in str(info.value)


def test_selections_have_nova_selection_keys_versions_and_types(endpoint):
    answer = _call(endpoint, 'select_destinations', {
        'spec_obj': _plain_spec(), 'instance_uuids': INSTANCES,
        'return_objects': True, 'return_alternates': True})
    assert len(answer) == 2
    nova_made = wire_fixtures.load('selection')['primitive'][0][0]
    for alternates in answer:
        assert len(alternates) >= 2  # the claimed host, alternates
        for selection in alternates:
            assert _types(selection) == _types(nova_made)
    first = answer[0][0]['nova_object.data']
    assert first['cell_uuid'] == CELL
    assert first['allocation_request_version'] == '1.36'
    request = json.loads(first['allocation_request'])
    node = first['compute_node_uuid']
    assert request == {'allocations': {node: {'resources': {
        'VCPU': 4, 'MEMORY_MB': 4096, 'DISK_GB': 51}}},
        'mappings': {'': [node]}}
    zones = {sel['nova_object.data']['service_host']:
             sel['nova_object.data']['availability_zone']
             for alternates in answer for sel in alternates}
    assert zones.pop('compute-1') == 'az1'
    assert set(zones.values()) == {'nova'}  # default_availability_zone


@pytest.mark.parametrize('name', ['select_destinations_4_4',
                                  'select_destinations_4_3'])
def test_older_callers_get_legacy_dicts(endpoint, name):
    args = dict(wire_fixtures.args(name))
    args['spec_obj'] = _plain_spec()
    if 'instance_uuids' not in args:
        args['spec_obj']['nova_object.data']['num_instances'] = 2
    answer = _call(endpoint, 'select_destinations', args)
    assert len(answer) == 2
    for dest in answer:
        assert set(dest) == {'host', 'nodename', 'limits'}
        assert set(dest['limits']) == {'vcpu', 'memory_mb', 'disk_gb'}
        assert all(type(v) is int for v in dest['limits'].values())


def test_no_valid_host_reaches_nova_as_its_own(endpoint):
    with pytest.raises(messaging.ExpectedException) as info:
        _call(endpoint, 'select_destinations', {
            'spec_obj': _plain_spec(memory_mb=400000),
            'instance_uuids': INSTANCES,
            'return_objects': True, 'return_alternates': True})
    failure = json.loads(driver_common.serialize_remote_exception(
        info.value.exc_info))
    nova_made = wire_fixtures.load('no_valid_host')['failure']
    assert (failure['module'], failure['class']) == (
        nova_made['module'], nova_made['class'])
    assert failure['message'].startswith('No valid host was found.')
    assert set(failure['kwargs']) <= set(nova_made['kwargs'])
    # As Placement's candidates would: the resources stage refused every
    # host, and no claim was tried.
    assert 'resources' in failure['message'], failure['message']
    assert endpoint.driver.stats['claim_retries'] == 0
    assert isinstance(failure['kwargs']['reason'], str)
    assert len(failure['args']) == 1


def test_refused_spec_reaches_nova_as_no_valid_host(endpoint):
    spec = _plain_spec()
    spec['nova_object.data']['request_level_params'][
        'nova_object.data']['same_subtree'] = [['a', 'b']]
    with pytest.raises(messaging.ExpectedException) as info:
        _call(endpoint, 'select_destinations', {
            'spec_obj': spec, 'instance_uuids': INSTANCES,
            'return_objects': True})
    error = info.value.exc_info[1]
    assert type(error) is errors.NoValidHost
    assert type(error).__module__ == 'nova.exception'
    assert 'request_level_params.same_subtree is set' in str(error)


def test_legacy_4_0_dicts_are_read_as_nova_reads_them(endpoint):
    args = copy.deepcopy(wire_fixtures.args('select_destinations_4_0'))
    plain = _plain_spec()['nova_object.data']
    args['request_spec']['instance_type'] = plain['flavor']
    args['request_spec']['image']['properties'] = {}
    args['request_spec']['instance_properties']['availability_zone'] = None
    for name in ('requested_destination', 'retry', 'ignore_hosts'):
        args['filter_properties'].pop(name)
    args['filter_properties']['group_hosts'] = []
    answer = _call(endpoint, 'select_destinations', args)
    assert len(answer) == 2
    # Anti-affinity, read from the legacy group_* keys: two hosts.
    assert len({dest['host'] for dest in answer}) == 2
    assert all(set(dest) == {'host', 'nodename', 'limits'}
               for dest in answer)


def test_legacy_4_0_dicts_become_the_same_spec():
    args = primitives.decode(wire_fixtures.args('select_destinations_4_0'),
                             'args')
    legacy = request_spec.from_nova(legacy_spec.to_nova_spec(
        args['request_spec'], args['filter_properties']))
    current = request_spec.from_nova(primitives.decode(
        wire_fixtures.args('select_destinations_4_5')['spec_obj'],
        'spec_obj'))
    current.instance_group.name = None
    current.instance_group.rules = {}  # the legacy keys carry no rules
    for name in ('flavor', 'image', 'num_instances', 'instance_uuid',
                 'project_id', 'user_id', 'availability_zone',
                 'scheduler_hints', 'ignore_hosts', 'retry',
                 'requested_destination', 'instance_group'):
        assert getattr(legacy, name) == getattr(current, name), name


def test_wrong_namespace_argument_is_refused_by_the_serializer():
    spec = _plain_spec()
    spec['nova_object.namespace'] = 'gantt'
    with pytest.raises(messaging.ExpectedException) as info:
        wire.NovaSerializer().deserialize_entity(None, spec)
    assert type(info.value.exc_info[1]) is errors.NoValidHost


def test_fanouts_reach_the_host_manager(endpoint):
    hm = endpoint.driver.host_manager
    _call(endpoint, 'update_aggregates',
          wire_fixtures.args('update_aggregates'))
    table = hm.snapshot()
    assert any(agg.name == 'ssd-hosts' for agg in hm._aggregates)
    _call(endpoint, 'update_instance_info',
          wire_fixtures.args('update_instance_info'))
    assert INSTANCES[0] in hm._instances['compute-1']
    _call(endpoint, 'delete_instance_info',
          dict(wire_fixtures.args('delete_instance_info'),
               instance_uuid=INSTANCES[0]))
    assert INSTANCES[0] not in hm._instances.get('compute-1', {})
    _call(endpoint, 'sync_instance_info',
          wire_fixtures.args('sync_instance_info'))
    _call(endpoint, 'delete_aggregate',
          wire_fixtures.args('delete_aggregate'))
    assert not any(agg.name == 'ssd-hosts' for agg in hm._aggregates)
    assert table is not None


def test_malformed_fanout_is_dropped(endpoint, caplog):
    args = copy.deepcopy(wire_fixtures.args('update_aggregates'))
    args['aggregates'][0]['nova_object.data']['id'] = 'x'
    _call(endpoint, 'update_aggregates', args)
    assert 'Dropped update_aggregates: Invalid request: aggregates[0].id' \
        in caplog.text


def test_limits_primitive_matches_nova():
    nova_made = wire_fixtures.load('selection')['primitive'][0][0][
        'nova_object.data']['limits']
    ours = selections.limits_primitive({'vcpu': 16.0, 'memory_mb': 98304.5,
                                        'disk_gb': 900.0})
    assert ours['nova_object.data'] == nova_made['nova_object.data']
    assert _types(ours) == _types(nova_made)
    assert primitives.decode(ours, 'limits').version == (1, 0)


def _numa_spec():
    """A plain spec of one instance with the recorded NUMA topology."""
    spec = _plain_spec()
    spec['nova_object.data']['num_instances'] = 1
    spec['nova_object.data']['numa_topology'] = copy.deepcopy(
        wire_fixtures.args('select_destinations_4_5')['spec_obj'][
            'nova_object.data']['numa_topology'])
    return spec


def test_numa_limits_default_to_the_cached_hosts_ratios(database, nova_mode,
                                                        placement):
    mgr = make_endpoint(placement, ('compute-1',))
    try:
        answer = _call(mgr, 'select_destinations', {
            'spec_obj': _numa_spec(), 'instance_uuids': INSTANCES[:1],
            'return_objects': True, 'return_alternates': False})
    finally:
        mgr.cleanup_host()
    state = mgr._state_of('compute-1')
    assert state.cpu_allocation_ratio == 1.0
    limits = answer[0][0]['nova_object.data']['limits'][
        'nova_object.data']['numa_topology']['nova_object.data']
    assert (limits['cpu_allocation_ratio'],
            limits['ram_allocation_ratio']) == (
        state.cpu_allocation_ratio, state.ram_allocation_ratio)


def test_numa_request_carries_the_hosts_ratios(database, nova_mode,
                                               placement):
    mgr = make_endpoint(placement, ('compute-1',),
                        ratios_of=lambda host, node: (16.0, 1.5))
    try:
        spec = _numa_spec()
        spec['nova_object.data']['network_metadata'][
            'nova_object.data']['physnets'] = ['physnet1']
        answer = _call(mgr, 'select_destinations', {
            'spec_obj': spec, 'instance_uuids': INSTANCES[:1],
            'return_objects': True, 'return_alternates': False})
        legacy = _call(mgr, 'select_destinations', {
            'spec_obj': spec, 'instance_uuids': INSTANCES[1:]})
    finally:
        mgr.cleanup_host()
    nova_made = wire_fixtures.load('selection')['numa_primitive'][0][0]
    ours = answer[0][0]
    assert _types(ours) == _types(nova_made)
    limits = ours['nova_object.data']['limits']['nova_object.data']
    assert limits['numa_topology'] == nova_made['nova_object.data'][
        'limits']['nova_object.data']['numa_topology']
    assert legacy[0]['limits']['numa_topology'][
        'nova_object.name'] == 'NUMATopologyLimits'


def test_only_novas_methods_are_exposed(endpoint):
    policy = rpc.ExposedRPCAccessPolicy()
    exposed = {name for name in dir(endpoint)
               if policy.is_allowed(endpoint, name)}
    assert exposed == {'select_destinations'} | nova_manager.FANOUT_METHODS
    assert endpoint.target.version == '4.5'


@pytest.mark.parametrize('field, what', [('cell_uuid', 'cell'),
                                         ('compute_node_uuid',
                                          'compute node UUID')])
def test_a_selection_nova_cannot_read_is_refused(field, what):
    class Host:
        uuid = '5f9cb0e7-d163-4caf-8e5a-6d7c8b9a0f1e'
        host = nodename = 'compute-1'
        cell_uuid = CELL
    setattr(Host, {'cell_uuid': 'cell_uuid',
                   'compute_node_uuid': 'uuid'}[field], None)
    chosen = selection_obj.Selection.for_host(
        Host(), placement_types.Resources(1, 512, 1), True)
    with pytest.raises(selections.HostUnanswerable) as info:
        selections.Encoder().selection(chosen)
    assert 'Host compute-1 was chosen but its %s is not known' % what in \
        str(info.value)
    assert isinstance(info.value, exception.NoValidHost)


def test_placement_away_reaches_nova_as_no_valid_host(endpoint, placement):
    # The host cache is full; then Placement goes away for good: the
    # claim cannot be made, and nothing is claimed.
    endpoint.driver.host_manager.snapshot()
    endpoint.driver.claimer = claimers.PlacementClaimer(
        endpoint.driver.host_manager,
        test_placement_client.unreachable_client(),
        backoff=claims_tests.no_pause)
    with pytest.raises(messaging.ExpectedException) as info:
        _call(endpoint, 'select_destinations', {
            'spec_obj': _plain_spec(), 'instance_uuids': INSTANCES,
            'return_objects': True})
    error = info.value.exc_info[1]
    assert type(error) is errors.NoValidHost
    assert 'Placement is unreachable' in str(error)
    for instance in INSTANCES:
        assert placement.get('/allocations/%s' % instance)[
            'allocations'] == {}


def test_a_request_sends_novas_notifications(endpoint, config):
    recorder.enable(config, 'versioned')
    try:
        _call(endpoint, 'select_destinations', {
            'spec_obj': _plain_spec(name='m1.notified'),
            'instance_uuids': INSTANCES, 'return_objects': True})
        with pytest.raises(messaging.ExpectedException):
            _call(endpoint, 'select_destinations', {
                'spec_obj': _plain_spec(memory_mb=400000),
                'instance_uuids': INSTANCES, 'return_objects': True})
        sent = [(message['event_type'], message['publisher_id'],
                 message['payload']['nova_object.data']['flavor'][
                     'nova_object.data']['name'])
                for _priority, message in recorder.sent()]
    finally:
        notifications.cleanup()
    publisher = 'nova-scheduler:%s' % CONF.host
    flavor = _plain_spec()['nova_object.data']['flavor'][
        'nova_object.data']['name']
    # The refused request says it started, and never that it ended.
    assert sent == [
        ('scheduler.select_destinations.start', publisher, 'm1.notified'),
        ('scheduler.select_destinations.end', publisher, 'm1.notified'),
        ('scheduler.select_destinations.start', publisher, flavor)]


def test_a_move_kept_in_its_cell_ignores_the_hosts_of_others(
        synced, cloud, nova_mode):
    cell2 = cloud.add_cell('cell2')
    cloud.add_compute('here-1')
    cloud.add_compute('here-2')
    cloud.add_compute('there', cell='cell2')
    synced.sync()
    mgr = nova_manager.NovaSchedulerManager()
    try:
        def restricted(cell, cross_cell=False):
            spec = request_spec.from_nova(
                primitives.decode(_plain_spec(), 'spec_obj'))
            spec.requested_destination = spec_objects.Destination(
                cell=spec_objects.CellMapping(uuid=cell),
                allow_cross_cell_move=cross_cell)
            spec.ignore_hosts = ['here-2']
            mgr._cell_as_hosts(spec)
            assert spec.requested_destination.cell is None
            return spec.ignore_hosts

        assert restricted(cloud.cell1_uuid) == ['here-2', 'there']
        assert restricted(cell2) == ['here-1', 'here-2']
        assert restricted(cell2, cross_cell=True) == ['here-2']
    finally:
        mgr.cleanup_host()
