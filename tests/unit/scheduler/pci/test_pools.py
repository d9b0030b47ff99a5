"""Host PCI pools: matching, NUMA policies, spreading, usage and races,
on small hosts whose answers are worked out by hand."""

import pytest

from scheduler import exception
from scheduler.pci import errors
from scheduler.pci import pools
from scheduler.pci import request

VF = {'vendor_id': '8086', 'product_id': '154d', 'dev_type': 'type-VF'}


def _pool(numa_node=0, count=1, product_id='154d', **tags):
    tags.setdefault('dev_type', 'type-VF')
    return {'vendor_id': '8086', 'product_id': product_id,
            'numa_node': numa_node, 'count': count, 'tags': tags}


def _req(count=1, policy='legacy', specs=(VF,)):
    return request.PciRequest('vf', count, tuple(specs), policy)


def _taken(host_pools, delta):
    """The delta as ``{(numa_node, product_id): devices}``."""
    if delta is None:
        return None
    by_key = {pools.pool_key(pool): pool for pool in host_pools}
    return {(by_key[key]['numa_node'], by_key[key]['product_id']): taken
            for key, taken in delta.items()}


def test_pool_key_is_canonical():
    one = _pool(tags_a='x', physical_network='physnet1')
    other = {'tags': {'physical_network': 'physnet1', 'tags_a': 'x',
                      'dev_type': 'type-VF'},
             'count': 7, 'numa_node': 0, 'product_id': '154D',
             'vendor_id': '8086'}
    assert pools.pool_key(one) == pools.pool_key(other)
    assert pools.pool_key(one) != pools.pool_key(_pool(1, tags_a='x',
                                                       physical_network=
                                                       'physnet1'))
    assert pools.pool_key({'vendor_id': '8086', 'product_id': '154d',
                           'numa_node': None}) == (
        '{"numa_node":null,"product_id":"154d","tags":{},'
        '"vendor_id":"8086"}')
    assert pools.pool_key(_pool()) == (
        '{"numa_node":0,"product_id":"154d","tags":{"dev_type":"type-VF"},'
        '"vendor_id":"8086"}')


def test_a_request_spreads_over_two_matching_pools():
    host = [_pool(0, 1), _pool(1, 2)]
    assert _taken(host, pools.allocate(host, {}, [_req(3)])) == {
        (0, '154d'): 1, (1, '154d'): 2}
    assert pools.allocate(host, {}, [_req(4)]) is None


def test_alias_alternatives_match_either_product():
    other = dict(VF, product_id='1520')
    host = [_pool(0, 1), _pool(0, 1, product_id='1520'),
            _pool(0, 5, product_id='9999')]
    assert _taken(host, pools.allocate(host, {}, [_req(2, specs=(VF, other))
                                                  ])) == {
        (0, '154d'): 1, (0, '1520'): 1}
    assert not pools.supports(host, {}, [_req(2)])


def test_usage_exhausting_a_pool():
    host = [_pool(0, 2)]
    key = pools.pool_key(host[0])
    assert pools.free_devices_total(host, {key: 1}) == 1
    assert pools.supports(host, {key: 1}, [_req(1)])
    assert not pools.supports(host, {key: 1}, [_req(2)])
    assert pools.free_devices_total(host, {key: 2}) == 0
    assert not pools.supports(host, {key: 2}, [_req(1)])
    # Usage above the count (the pool shrank) leaves nothing free.
    assert pools.free_counts(host, {key: 5}) == {key: 0}


def test_requests_are_served_in_turn_from_what_is_left():
    host = [_pool(0, 3)]
    assert pools.supports(host, {}, [_req(1), _req(2)])
    assert not pools.supports(host, {}, [_req(2), _req(2)])
    assert pools.supports(host, {}, [])


# Two devices wanted by an instance on cell 0 of a host with one device
# on cell 0, two on cell 1 and two with no NUMA node.
NUMA_HOST = [_pool(0, 1), _pool(1, 2), _pool(None, 2)]


@pytest.mark.parametrize('policy, expected', [
    ('required', None),
    ('legacy', {(0, '154d'): 1, (None, '154d'): 1}),
    ('preferred', {(0, '154d'): 1, (None, '154d'): 1}),
])
def test_two_devices_on_cell_0(policy, expected):
    delta = pools.allocate(NUMA_HOST, {}, [_req(2, policy)], numa_cells=(0,))
    assert _taken(NUMA_HOST, delta) == expected


@pytest.mark.parametrize('policy, expected', [
    ('required', None),
    ('legacy', None),
    ('preferred', {(0, '154d'): 1, (1, '154d'): 1}),
])
def test_two_devices_when_no_device_has_no_numa_node(policy, expected):
    host = [_pool(0, 1), _pool(1, 2)]
    delta = pools.allocate(host, {}, [_req(2, policy)], numa_cells=(0,))
    assert _taken(host, delta) == expected


def test_required_is_met_on_the_instance_s_cells():
    delta = pools.allocate(NUMA_HOST, {}, [_req(3, 'required')],
                           numa_cells=(0, 1))
    assert _taken(NUMA_HOST, delta) == {(0, '154d'): 1, (1, '154d'): 2}


def test_enough_local_devices_are_used_first_whatever_the_policy():
    host = [_pool(None, 2), _pool(1, 2), _pool(0, 2)]
    for policy in ('required', 'legacy', 'preferred', 'socket'):
        delta = pools.allocate(host, {}, [_req(2, policy)], numa_cells=(0,))
        assert _taken(host, delta) == {(0, '154d'): 2}, policy


def test_without_numa_cells_the_policy_is_not_applied():
    delta = pools.allocate(NUMA_HOST, {}, [_req(5, 'required')])
    assert sum(delta.values()) == 5


TOPOLOGY = {'cells': [{'id': 0, 'socket': 0}, {'id': 1, 'socket': 0},
                      {'id': 2, 'socket': 1}]}


def test_socket_policy_uses_cells_of_the_same_socket():
    host = [_pool(1, 2), _pool(2, 2), _pool(None, 2)]
    delta = pools.allocate(host, {}, [_req(2, 'socket')], numa_cells=(0,),
                           host_topology=TOPOLOGY)
    assert _taken(host, delta) == {(1, '154d'): 2}
    # Neither the other socket nor devices without a NUMA node will do.
    host = [_pool(2, 2), _pool(None, 2)]
    assert not pools.supports(host, {}, [_req(2, 'socket')], (0,), TOPOLOGY)
    assert pools.supports(host, {}, [_req(2, 'socket')], (2,), TOPOLOGY)


def test_socket_policy_fails_without_socket_information():
    host = [_pool(1, 2)]
    assert not pools.supports(host, {}, [_req(2, 'socket')], (0,), None)
    unknown = {'cells': [{'id': 0, 'socket': None}, {'id': 1, 'socket': 0}]}
    assert not pools.supports(host, {}, [_req(2, 'socket')], (0,), unknown)
    # A cell without 'socket' is its own socket.
    own = {'cells': [{'id': 0}, {'id': 1}]}
    assert not pools.supports(host, {}, [_req(2, 'socket')], (0,), own)
    assert pools.supports(host, {}, [_req(2, 'socket')], (1,), own)


def test_pfs_are_only_given_to_requests_for_pfs():
    host = [_pool(0, 4, dev_type='type-PF')]
    any_type = {'vendor_id': '8086', 'product_id': '154d'}
    assert not pools.supports(host, {}, [_req(1, specs=(any_type,))])
    assert not pools.supports(host, {}, [_req(1)])
    assert pools.supports(host, {}, [_req(1, specs=(dict(
        any_type, dev_type='type-PF'),))])


def test_matching_ignores_case_and_extra_tags():
    host = [_pool(0, 1, physical_network='physnet1')]
    spec = {'vendor_id': '8086', 'product_id': '154D', 'dev_type': 'type-vf'}
    assert pools.supports(host, {}, [_req(1, specs=(spec,))])


def test_remote_managed_and_live_migratable_devices():
    host = [_pool(0, 1, remote_managed='True')]
    assert not pools.supports(host, {}, [_req(1)])
    host = [_pool(0, 1, remote_managed='false', live_migratable='false'),
            _pool(1, 1, live_migratable='true')]
    migratable = dict(VF, live_migratable='true')
    fixed = dict(VF, live_migratable='false')
    assert _taken(host, pools.allocate(host, {}, [_req(1, specs=(
        migratable,))])) == {(1, '154d'): 1}
    assert _taken(host, pools.allocate(host, {}, [_req(1, specs=(
        fixed,))])) == {(0, '154d'): 1}


def test_pools_with_fewer_tags_are_served_first():
    host = [_pool(0, 1, physical_network='physnet1'), _pool(1, 1)]
    assert _taken(host, pools.allocate(host, {}, [_req(1)])) == {
        (1, '154d'): 1}


def test_duplicate_pools_are_merged():
    host = [_pool(0, 1), _pool(0, 2)]
    assert pools.free_counts(host, {}) == {pools.pool_key(host[0]): 3}
    assert pools.allocate(host, {}, [_req(3)]) == {
        pools.pool_key(host[0]): 3}


def test_apply_and_release_are_inverses():
    host = [_pool(0, 2), _pool(1, 1)]
    key0, key1 = pools.pool_key(host[0]), pools.pool_key(host[1])
    usage = {key0: 1}
    used = pools.apply(usage, {key0: 1, key1: 1}, host)
    assert used == {key0: 2, key1: 1}
    assert usage == {key0: 1}
    assert pools.release(used, {key0: 1, key1: 1}) == {key0: 1}
    assert pools.release(used, {key0: 2, key1: 1}) == {}


def test_a_delta_that_no_longer_fits_is_a_lost_race():
    host = [_pool(0, 2)]
    key = pools.pool_key(host[0])
    with pytest.raises(errors.PciDevicesUnavailable) as error:
        pools.apply({key: 1}, {key: 2}, host)
    assert isinstance(error.value, exception.ClaimFailed)
    assert '2 more wanted, 1 of 2 free' in str(error.value)
    with pytest.raises(errors.PciDevicesUnavailable) as error:
        pools.apply({}, {'gone': 1}, host)
    assert 'gone' in str(error.value) and '0 of 0 free' in str(error.value)


def test_releasing_more_than_used_is_refused():
    with pytest.raises(errors.PciUsageInvalid) as error:
        pools.release({'k': 1}, {'k': 2})
    assert 'releasing 2 device(s) but only 1 are used' in str(error.value)


@pytest.mark.parametrize('pool, expected', [
    ('x', 'not an object'),
    (dict(_pool(), count=-1), "'count' must be a non-negative integer"),
    (dict(_pool(), count=True), "'count' must be a non-negative integer"),
    ({'vendor_id': '8086', 'product_id': '154d'}, "'count' must be"),
    (dict(_pool(), numa_node='0'), "'numa_node' must be an integer"),
    (dict(_pool(), vendor_id=None), "'vendor_id' must be a non-empty"),
    (dict(_pool(), tags=['a']), "'tags' must be an object"),
    (dict(_pool(), tags={'a': {1, 2}}), 'tags are not JSON'),
])
def test_malformed_pools_are_named(pool, expected):
    with pytest.raises(errors.PciPoolInvalid) as error:
        pools.free_devices_total([pool], {})
    assert expected in str(error.value)


@pytest.mark.parametrize('usage, expected', [
    ({'k': -1}, "-1 is not a non-negative integer"),
    ({'k': '1'}, "'1' is not a non-negative integer"),
    ({1: 1}, 'not a string'),
])
def test_malformed_usage_is_named(usage, expected):
    with pytest.raises(errors.PciUsageInvalid) as error:
        pools.free_devices_total([_pool()], usage)
    assert expected in str(error.value)
