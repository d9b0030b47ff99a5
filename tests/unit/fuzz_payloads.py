"""Hypothesis strategies for the RPC fuzz tests: well-formed and malformed
arguments of every RPC method of the scheduler, the conductor (both
namespaces) and the compute.

Each method has a strategy of well-formed keyword arguments and, for each
argument, a strategy of values that argument never accepts. :func:`case`
draws one of them and, for a malformed case, breaks exactly one thing:
one argument replaced by junk, a required one left out, or an unknown one
added::

    api, method, kwargs, valid = data.draw(fuzz_payloads.case('conductor'))
"""

import inspect
import uuid as uuid_lib

from hypothesis import strategies as st

from compute import manager as compute_manager
from conductor import manager as conductor_manager
from scheduler import manager as scheduler_manager
from scheduler.objects import aggregate
from scheduler.objects import instance_info
from scheduler.objects import request_spec
from scheduler.objects import selection
from tests.unit import rpc_harness

HOST = rpc_harness.COMPUTE_HOST
NODE_UUID = compute_manager.node_uuid(HOST, HOST)

ENDPOINT_CLASSES = {'scheduler': scheduler_manager.SchedulerManager,
                    'conductor': conductor_manager.ConductorManager,
                    'compute_task': conductor_manager.ComputeTaskManager,
                    'compute': compute_manager.ComputeManager}

uuids = st.uuids().map(str)
names = st.text('abcdefghijklmnopqrstuvwxyz0123456789-.', min_size=1,
                max_size=20)
small_text = st.text(max_size=20)


def _deep(depth):
    value = 1
    for _ in range(depth):
        value = [value]
    return value


# Values no argument of a given kind accepts.
big_ints = st.sampled_from([-1, -(1 << 40), 1 << 31, 1 << 62, 10 ** 30])
nested = st.one_of(st.integers(30, 60).map(_deep),
                   st.recursive(st.integers() | small_text,
                                lambda inner: st.lists(inner, max_size=3)
                                | st.dictionaries(small_text, inner,
                                                  max_size=3),
                                max_leaves=10))
long_text = st.integers(256, 70000).map(lambda n: 'x' * n)
bad_text = st.sampled_from(['', ' ', 'a\x00b', 'tab\there', 'nl\n'])
junk = st.one_of(st.integers(), big_ints, st.floats(), st.booleans(),
                 nested, long_text, bad_text, st.none(),
                 st.builds(lambda: request_spec.Flavor(vcpus=1, memory_mb=1)),
                 st.builds(lambda: aggregate.Aggregate(
                     id=1, uuid=str(uuid_lib.uuid4()), name='a')))


def _not(*allowed):
    """Junk minus the values of the given Python types."""
    return junk.filter(lambda v: not any(type(v) is t for t in allowed))


not_uuid = _not(str) | st.sampled_from(['nope', 'x' * 36])
not_name = _not(str) | long_text | bad_text
not_name_nor_none = _not(str, type(None)) | long_text | bad_text
not_bool = _not(bool)


def flavors(low=1, high=64):
    return st.builds(request_spec.Flavor, vcpus=st.integers(low, high),
                     memory_mb=st.integers(1, 8192),
                     root_gb=st.integers(0, 100),
                     swap=st.integers(0, 4096))


@st.composite
def specs(draw, count=None, big=False):
    flavor = draw(flavors())
    if big:   # more RAM than the harness' host has: NoValidHost
        flavor.memory_mb = draw(st.integers(8192, 65536))
    return request_spec.RequestSpec(
        flavor=flavor, num_instances=count or draw(st.integers(1, 3)),
        project_id=draw(st.none() | names),
        scheduler_hints=draw(st.dictionaries(
            names, st.lists(small_text, max_size=2), max_size=2)))


def _primitive(obj):
    return obj.obj_to_primitive()


# Values each RequestSpec field refuses even after the object's own
# coercion (which would turn 5 into '5' for a string field, say).
SPEC_FIELD_BREAKERS = {
    'num_instances': [0, -1, 1001, 1 << 31, 'x'],
    'scheduler_hints': [5, 'x', [1], True],
    'project_id': ['a\x00b', 'x' * 300],
    'force_hosts': [5, 1.5],
    'instance_group': [5, 'x', [1]],
}


@st.composite
def broken_specs(draw):
    """A RequestSpec whose serialized form is broken in one place."""
    primitive = _primitive(draw(specs()))
    data = primitive['gantt_object.data']
    flavor = data['flavor']['gantt_object.data']
    how = draw(st.sampled_from(['flavor_field', 'drop_size', 'no_flavor',
                                'field', 'version', 'name']))
    if how == 'flavor_field':
        flavor[draw(st.sampled_from(['vcpus', 'memory_mb', 'swap',
                                     'root_gb']))] = draw(
            big_ints | not_bool | st.just(True))
    elif how == 'drop_size':
        del flavor[draw(st.sampled_from(['vcpus', 'memory_mb']))]
    elif how == 'no_flavor':
        del data['flavor']
    elif how == 'field':
        field = draw(st.sampled_from(sorted(SPEC_FIELD_BREAKERS)))
        data[field] = draw(st.sampled_from(SPEC_FIELD_BREAKERS[field]))
    elif how == 'version':
        primitive['gantt_object.version'] = '9.9'
    else:
        primitive['gantt_object.name'] = 'NoSuchObject'
    return primitive


not_spec = _not() | broken_specs() | st.builds(
    lambda: selection.Selection(service_host='h', nodename='n',
                                compute_node_uuid=None))


@st.composite
def nodes(draw):
    inventory = {'vcpus': draw(st.integers(0, 64)),
                 'memory_mb': draw(st.integers(0, 1 << 20)),
                 'local_gb': draw(st.integers(0, 1 << 12)),
                 'cpu_allocation_ratio': draw(st.none() | st.floats(0, 32)),
                 'host_ip': draw(st.sampled_from(['10.0.0.1', '::1', None])),
                 'stats': draw(st.dictionaries(names, names, max_size=3))}
    return [{'uuid': NODE_UUID, 'nodename': HOST, 'inventory': inventory}]


@st.composite
def broken_nodes(draw):
    node = draw(nodes())[0]
    how = draw(st.sampled_from(['size', 'unknown', 'ratio', 'ip', 'stats',
                                'uuid', 'keys', 'metrics']))
    inventory = node['inventory']
    if how == 'size':
        inventory[draw(st.sampled_from(['vcpus', 'memory_mb', 'local_gb',
                                        'reserved_vcpus', 'num_instances']))
                  ] = draw(big_ints | _not(int))
    elif how == 'unknown':
        inventory['vcpus_used'] = 0
    elif how == 'ratio':
        inventory['ram_allocation_ratio'] = draw(st.sampled_from(
            [float('nan'), float('inf'), -1.0, 1e9, True, '1.5']))
    elif how == 'ip':
        inventory['host_ip'] = draw(st.sampled_from(['nope', 42, '1.2.3']))
    elif how == 'stats':
        inventory['stats'] = draw(_not(dict, type(None))
                                  | st.just({'k': 1}))
    elif how == 'uuid':
        node['uuid'] = draw(not_uuid)
    elif how == 'keys':
        node['extra'] = 1
    else:
        inventory['metrics'] = draw(st.sampled_from(
            [[{'name': 'm', 'value': float('nan')}], [{'value': 1.0}],
             [{'name': 'm', 'value': 'high'}], 'metrics']))
    return [node]


def selections():
    return st.builds(
        lambda n: selection.Selection(
            compute_node_uuid=NODE_UUID, service_host=HOST, nodename=HOST,
            allocation_request='{"vcpus": %d, "memory_mb": 1, '
                               '"disk_gb": 0}' % n), st.integers(1, 4))


@st.composite
def first_builds(draw):
    spec = draw(specs(big=True))
    return {'instance_uuids': draw(st.lists(
        uuids, min_size=spec.num_instances, max_size=spec.num_instances)),
        'request_spec': spec}


@st.composite
def reschedules(draw):
    return {'instance_uuids': [draw(uuids)],
            'request_spec': draw(specs(count=1)),
            'host_lists': [draw(st.lists(selections(), max_size=2))],
            'failure': {'host': HOST, 'node': HOST,
                        'reason': draw(small_text)}}


def _fixed(**strategies):
    return st.fixed_dictionaries(strategies)


# api -> method -> (well-formed kwargs, {argument: what it never takes})
METHODS = {
    'scheduler': {
        'select_destinations': (
            _fixed(spec_obj=specs(count=1), instance_uuids=st.lists(
                uuids, min_size=1, max_size=1),
                return_objects=st.booleans(), return_alternates=st.booleans()),
            {'spec_obj': not_spec,
             'instance_uuids': _not(list, type(None)),
             'return_objects': not_bool, 'return_alternates': not_bool}),
        'update_aggregates': (
            _fixed(aggregates=st.lists(st.builds(
                lambda u, h: aggregate.Aggregate(id=1, uuid=u, name='agg',
                                                 hosts=h),
                uuids, st.lists(names, max_size=2)), max_size=2)),
            {'aggregates': _not(list) | st.just([{'id': 1}])}),
        'delete_aggregate': (
            _fixed(aggregate=st.builds(lambda u: aggregate.Aggregate(
                id=2, uuid=u, name='gone'), uuids)),
            {'aggregate': _not(aggregate.Aggregate)
                          | st.just({'id': 1})}),
        'update_instance_info': (
            _fixed(host_name=names, instance_info=st.lists(st.builds(
                lambda u: instance_info.InstanceInfo(uuid=u), uuids),
                max_size=2)),
            {'host_name': not_name, 'instance_info': _not(list)}),
        'delete_instance_info': (
            _fixed(host_name=names, instance_uuid=uuids),
            {'host_name': not_name, 'instance_uuid': not_uuid}),
        'sync_instance_info': (
            _fixed(host_name=names, instance_uuids=st.lists(uuids,
                                                            max_size=3)),
            {'host_name': not_name,
             'instance_uuids': _not(list) | st.just(['x'])}),
    },
    'conductor': {
        'service_update': (
            _fixed(host=st.just(HOST), binary=st.just('gantt-compute'),
                   topic=st.just('compute')),
            {'host': not_name, 'binary': not_name | st.just('rogue'),
             'topic': not_name | st.just('scheduler')}),
        'compute_node_update': (
            _fixed(host=st.just(HOST), nodes=nodes()),
            {'host': not_name | st.just('42'), 'nodes': broken_nodes()
             | _not(list)}),
        'instance_update': (
            _fixed(instance_uuid=uuids, updates=st.just(
                {'vm_state': 'active', 'task_state': None,
                 'launched_at': True}), host=st.just(HOST),
                node=st.just(HOST)),
            {'instance_uuid': not_uuid, 'host': not_name,
             'node': not_name,
             'updates': _not(dict) | st.sampled_from([
                 {'vm_state': 'error'},
                 {'vm_state': 'active', 'task_state': ['x']},
                 {'vm_state': 'active', 'fault': 'f' * 70000},
                 {'vm_state': 'active', 'host': 'h2'}, {}])}),
        'sync_instances': (
            _fixed(host=st.just(HOST), instances=st.dictionaries(
                uuids, st.just(HOST), max_size=3)),
            {'host': not_name,
             'instances': _not(dict) | st.just({'x': HOST})}),
    },
    'compute_task': {
        'build_instances': (
            first_builds() | reschedules(),
            {'instance_uuids': _not(list) | st.just([]),
             'request_spec': not_spec,
             'failure': _not(dict, type(None)) | st.just({'host': HOST})}),
        'migrate_server': (
            _fixed(instance_uuid=uuids, flavor=st.none() | flavors()),
            {'instance_uuid': not_uuid, 'live': not_bool,
             'flavor': _not(type(None), request_spec.Flavor) | st.builds(
                 lambda: request_spec.Flavor(vcpus=-1, memory_mb=1))}),
        'confirm_resize': (_fixed(instance_uuid=uuids),
                           {'instance_uuid': not_uuid}),
        'revert_resize': (_fixed(instance_uuid=uuids),
                          {'instance_uuid': not_uuid}),
        'rebuild_instance': (
            _fixed(instance_uuid=uuids, evacuate=st.just(True),
                   host=st.none() | names,
                   force=st.booleans()),
            {'instance_uuid': not_uuid, 'evacuate': not_bool,
             'host': not_name_nor_none, 'force': not_bool}),
        'shelve_instance': (_fixed(instance_uuid=uuids),
                            {'instance_uuid': not_uuid}),
        'unshelve_instance': (_fixed(instance_uuid=uuids),
                              {'instance_uuid': not_uuid}),
        'delete_instance': (_fixed(instance_uuid=uuids),
                            {'instance_uuid': not_uuid}),
        'schedule_and_build_instances': (
            _fixed(instance_uuids=st.lists(uuids, min_size=1, max_size=1),
                   request_spec=specs(count=1)),
            {'instance_uuids': _not(list) | st.just([]),
             'request_spec': not_spec}),
    },
    'compute': {
        'build_and_run_instance': (
            _fixed(instance_uuid=uuids, node=st.sampled_from([HOST, 'other']),
                   request_spec=specs(count=1),
                   host_list=st.lists(selections(), max_size=2)),
            {'instance_uuid': not_uuid, 'node': not_name,
             'request_spec': not_spec,
             'host_list': _not(list) | st.just([{'host': HOST}])}),
        'check_can_live_migrate_destination': (
            _fixed(instance_uuid=uuids, node=st.sampled_from([HOST, 'x'])),
            {'instance_uuid': not_uuid, 'node': not_name}),
        'receive_instance': (
            _fixed(instance_uuid=uuids, node=st.just(HOST),
                   request_spec=specs(count=1)),
            {'instance_uuid': not_uuid, 'node': not_name,
             'request_spec': not_spec}),
        'remove_instance': (_fixed(instance_uuid=uuids),
                            {'instance_uuid': not_uuid}),
        'terminate_instance': (_fixed(instance_uuid=uuids),
                               {'instance_uuid': not_uuid}),
    },
}


@st.composite
def case(draw, api):
    """``(method, kwargs, valid)`` for one method of ``api``."""
    method = draw(st.sampled_from(sorted(METHODS[api])))
    well_formed, breakers = METHODS[api][method]
    kwargs = dict(draw(well_formed))
    how = draw(st.sampled_from(['junk', 'valid', 'junk', 'missing',
                                'valid', 'junk', 'extra']))
    if how == 'valid':
        return method, kwargs, True
    required = sorted(set(kwargs) & required_arguments(api, method))
    if how == 'missing' and required:
        del kwargs[draw(st.sampled_from(required))]
    elif how == 'extra':
        kwargs[draw(st.sampled_from(['nope', 'context', 'host_id']))] \
            = draw(junk)
    else:
        field = draw(st.sampled_from(sorted(breakers)))
        kwargs[field] = draw(breakers[field])
    return method, kwargs, False


def required_arguments(api, method):
    """The arguments of the endpoint method that have no default."""
    endpoint = ENDPOINT_CLASSES[api]
    parameters = inspect.signature(getattr(endpoint, method)).parameters
    return {name for name, parameter in list(parameters.items())[2:]
            if parameter.default is inspect.Parameter.empty}
