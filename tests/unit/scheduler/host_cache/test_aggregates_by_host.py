"""applying.aggregates_by_host: each host's aggregates in order, one
tuple shared by the hosts in the same aggregates."""

import random

import pytest

from scheduler.host_cache import applying
from tests.unit.scheduler import fakes


@pytest.mark.parametrize('seed', range(8))
def test_each_host_has_its_aggregates_in_order_in_a_shared_tuple(seed):
    rng = random.Random(seed)
    hosts = ['h%d' % number for number in range(rng.choice([1, 5, 60]))]
    aggregates = [
        fakes.aggregate('agg%d' % number,
                        rng.sample(hosts, rng.randint(0, len(hosts))))
        for number in range(rng.choice([0, 1, 3, 7]))]
    found = applying.aggregates_by_host(aggregates)
    expected = {}
    for aggregate in aggregates:
        for host in aggregate.hosts:
            expected[host] = expected.get(host, ()) + (aggregate,)
    assert found == expected
    # One tuple per distinct sequence of aggregates.
    by_ids = {}
    for host, held in found.items():
        key = tuple(id(aggregate) for aggregate in held)
        assert by_ids.setdefault(key, held) is held, host
    assert len({id(held) for held in found.values()}) == len(by_ids)
