"""Properties of pools.allocate/apply/release on random hosts and
requests: a claim and its release cancel out, successive claims never
take more devices than a pool has, and the policies nest."""

import hypothesis
from hypothesis import strategies as st

from scheduler.pci import pools
from scheduler.pci import request

settings = hypothesis.settings(
    max_examples=200, deadline=None,
    suppress_health_check=[hypothesis.HealthCheck.too_slow])

PRODUCTS = ('0001', '0002')
DEV_TYPES = ('type-PCI', 'type-VF', 'type-PF')
NODES = (0, 1, 2, None)
TOPOLOGY = {'cells': [{'id': 0, 'socket': 0}, {'id': 1, 'socket': 0},
                      {'id': 2, 'socket': 1}]}

host_pools = st.lists(st.builds(
    lambda product, node, dev_type, net, count: {
        'vendor_id': '8086', 'product_id': product, 'numa_node': node,
        'count': count,
        'tags': dict({'dev_type': dev_type},
                     **({'physical_network': net} if net else {}))},
    st.sampled_from(PRODUCTS), st.sampled_from(NODES),
    st.sampled_from(DEV_TYPES), st.sampled_from((None, 'physnet1')),
    st.integers(0, 4)), max_size=5)
specs = st.builds(
    lambda product, dev_type: dict(
        {'vendor_id': '8086', 'product_id': product},
        **({'dev_type': dev_type} if dev_type else {})),
    st.sampled_from(PRODUCTS), st.sampled_from((None,) + DEV_TYPES))
requests = st.lists(st.builds(
    request.PciRequest, st.just('a'), st.integers(1, 3),
    st.lists(specs, min_size=1, max_size=2).map(tuple),
    st.sampled_from(('required', 'legacy', 'preferred', 'socket'))),
    min_size=1, max_size=3)
numa_cells = st.sampled_from((None, (0,), (1,), (2,), (0, 1)))


def _counts(host):
    return {pool.key: pool.count for pool in pools.index_pools(host)}


@st.composite
def claims(draw):
    """A host with devices, the usage of an earlier claim, and requests
    for devices of its pools (which may or may not fit)."""
    host = draw(host_pools.filter(
        lambda found: any(pool['count'] for pool in found)))
    wanted = []
    for _ in range(draw(st.integers(1, 3))):
        pool = draw(st.sampled_from(host))
        spec = {'vendor_id': '8086', 'product_id': pool['product_id'],
                'dev_type': pool['tags']['dev_type']}
        wanted.append(request.PciRequest(
            'a', draw(st.integers(1, max(1, pool['count']))), (spec,),
            draw(st.sampled_from(('legacy', 'preferred')))))
    first = pools.allocate(host, {}, wanted[:1]) or {}
    return host, pools.apply({}, first, host), wanted


@settings
@hypothesis.given(claims(), numa_cells)
def test_allocate_then_release_restores_the_usage(claim, cells):
    host, usage, wanted = claim
    delta = pools.allocate(host, usage, wanted, cells, TOPOLOGY)
    hypothesis.event('fits' if delta is not None else 'does not fit')
    if delta is None:
        return
    assert sum(delta.values()) == request.devices_needed(wanted)
    assert pools.release(pools.apply(usage, delta, host), delta) == usage


@settings
@hypothesis.given(host_pools, requests, numa_cells)
def test_successive_allocations_never_exceed_a_pool(host, wanted, cells):
    counts = _counts(host)
    usage = {}
    for _ in range(sum(counts.values()) + 1):
        delta = pools.allocate(host, usage, wanted, cells, TOPOLOGY)
        if delta is None:
            break
        usage = pools.apply(usage, delta, host)
        assert all(used <= counts[key] for key, used in usage.items())
    else:
        raise AssertionError('allocations went on past every device')
    assert pools.free_devices_total(host, usage) == (
        sum(counts.values()) - sum(usage.values()))


@settings
@hypothesis.given(host_pools, requests, numa_cells)
def test_too_few_free_devices_never_pass(host, wanted, cells):
    supported = pools.supports(host, {}, wanted, cells, TOPOLOGY)
    assert supported == (
        pools.allocate(host, {}, wanted, cells, TOPOLOGY) is not None)
    if pools.free_devices_total(host, {}) < request.devices_needed(wanted):
        assert not supported


@settings
@hypothesis.given(host_pools, requests.map(lambda found: found[0]),
                  st.sampled_from(((0,), (1,), (0, 1))))
def test_policies_nest_and_required_stays_on_the_cells(host, wanted, cells):
    def fits(policy):
        return pools.allocate(host, {}, [wanted._replace(numa_policy=policy)],
                              cells, TOPOLOGY)
    required, legacy, preferred = (fits('required'), fits('legacy'),
                                   fits('preferred'))
    hypothesis.event('required fits' if required is not None else
                     'legacy fits' if legacy is not None else
                     'preferred fits' if preferred is not None else 'none')
    if required is not None:
        assert legacy is not None and fits('socket') is not None
        by_key = {pool.key: pool for pool in pools.index_pools(host)}
        assert all(by_key[key].numa_node in cells for key in required)
    if legacy is not None:
        assert preferred is not None
    # Without NUMA cells, a lone request fits if its pools hold enough.
    matching = sum(pool.count for pool in pools.index_pools(host)
                   if pools.request_matches(pool, wanted))
    assert (pools.allocate(host, {}, [wanted]) is not None) == (
        matching >= wanted.count)
    assert (preferred is not None) == (matching >= wanted.count)
