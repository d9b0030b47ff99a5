"""Property test: the batch paths of every built-in filter and weigher
agree with their per-host paths, on random hosts and requests."""

import hypothesis
from hypothesis import strategies as st
import numpy as np

from scheduler import filters
from scheduler import loadables
from scheduler import weights
from tests.unit.scheduler import fakes

ZONES = ('az1', 'az2', 'nova')
MULTIPLIER_KEYS = ('ram_weight_multiplier', 'cpu_weight_multiplier',
                   'disk_weight_multiplier')
FILTERS = [cls() for cls in loadables.load_filter_classes(
    ['all_filters'], loadables.entry_point_names(loadables.FILTER_NAMESPACE))]
WEIGHERS = [cls() for cls in loadables.load_weigher_classes(
    ['all_weighers'])]

ratios = st.sampled_from([0.5, 1.0, 1.1, 1.5, 2.0, 3.3, 16.0])
multiplier_values = st.one_of(
    st.floats(-5, 5, allow_nan=False).map(repr),
    st.sampled_from(['', 'many', 'nan', '1e400', ' 2 ']))


@st.composite
def clouds(draw):
    # Host names repeat (several nodes on one host) and differ only by
    # case at times, which aggregates and the indexes must not confuse.
    names = draw(st.lists(st.sampled_from(['a', 'A', 'b', 'B', 'c']),
                          min_size=1, max_size=25))
    aggregates = []
    for number in range(draw(st.integers(0, 4))):
        metadata = {}
        if draw(st.booleans()):
            metadata['availability_zone'] = draw(st.sampled_from(ZONES))
        for key in MULTIPLIER_KEYS:
            if draw(st.booleans()):
                metadata[key] = draw(multiplier_values)
        members = draw(st.sets(st.sampled_from(names)))
        aggregates.append(fakes.aggregate('agg%d' % number, members,
                                          **metadata))
    states = [draw(host_states(name, 'n%d' % number, aggregates))
              for number, name in enumerate(names)]
    mask = np.array(draw(st.lists(st.booleans(), min_size=len(names),
                                  max_size=len(names))), dtype=bool)
    return states, aggregates, mask


@st.composite
def usage(draw, total, ratio, reserved):
    """Used amounts anywhere, or within a few units of the capacity, so
    that requests often land right on the boundary."""
    capacity = int(total * ratio - reserved)
    near = st.integers(max(0, capacity - 4), max(0, capacity + 1))
    return draw(st.one_of(near, st.integers(0, max(0, 2 * capacity))))


@st.composite
def host_states(draw, name, nodename, aggregates):
    mine = [agg for agg in aggregates if name in agg.hosts]
    zones = {agg.metadata['availability_zone'] for agg in mine
             if 'availability_zone' in agg.metadata} or {'nova'}
    kind = draw(st.sampled_from(['up', 'down', 'disabled', 'forced',
                                 'never', 'none']))
    svc = {
        'up': lambda: fakes.service(name, seen_ago=draw(st.integers(0, 50))),
        'down': lambda: fakes.service(name,
                                      seen_ago=draw(st.integers(70, 900))),
        'disabled': lambda: fakes.service(name, disabled=True),
        'forced': lambda: fakes.service(name, forced_down=True),
        'never': lambda: fakes.service(name, seen_ago=None),
        'none': lambda: None,
    }[kind]()
    fields = {}
    for total, used, reserved, ratio, top in (
            ('vcpus', 'vcpus_used', 'reserved_vcpus', 'cpu_ratio', 64),
            ('memory_mb', 'memory_mb_used', 'reserved_memory_mb',
             'ram_ratio', 65536),
            ('local_gb', 'local_gb_used', 'reserved_disk_gb', 'disk_ratio',
             2000)):
        fields[total] = draw(st.integers(0, top))
        fields[ratio] = draw(ratios)
        fields[reserved] = draw(st.integers(0, top // 8))
        fields[used] = draw(usage(fields[total], fields[ratio],
                                  fields[reserved]))
    small = st.integers(0, 64)
    return fakes.host_state(
        name, nodename=nodename, svc=svc, aggregates=mine, zones=zones,
        io_workload=draw(small), num_instances=draw(small), **fields)


def amounts(top):
    return st.one_of(st.integers(0, 4), st.integers(0, top))


specs = st.builds(
    fakes.spec, vcpus=amounts(40), memory_mb=amounts(70000),
    root_gb=amounts(1000), ephemeral_gb=amounts(500), swap=amounts(8192),
    availability_zone=st.sampled_from([None, 'az1', 'az2', 'nova', 'x']))

settings = hypothesis.settings(
    max_examples=150, deadline=None,
    suppress_health_check=[hypothesis.HealthCheck.too_slow])


class PerHostWeigher(weights.BaseHostWeigher):
    """Wraps a built-in weigher, hiding its batch path."""

    def __init__(self, inner):
        self.inner = inner
        self.minval, self.maxval = inner.minval, inner.maxval

    def _weigh_object(self, host_state, spec):
        return self.inner._weigh_object(host_state, spec)

    def weight_multiplier(self, host_state):
        return self.inner.weight_multiplier(host_state)


class PerHostFilter:
    """Wraps a built-in filter, hiding its batch path."""

    def __init__(self, inner):
        self.inner = inner
        self.run_filter_once_per_request = inner.run_filter_once_per_request
        self.RUN_ON_REBUILD = inner.RUN_ON_REBUILD

    def host_passes(self, host_state, spec):
        return self.inner.host_passes(host_state, spec)


@settings
@hypothesis.given(clouds(), specs)
def test_filters_agree(cloud, spec):
    states, aggregates, mask = cloud
    hosts = fakes.table(states, aggregates)
    for filter_obj in FILTERS:
        batch = filter_obj.filter_all(hosts, mask, spec)
        one_by_one = [bool(mask[row]) and filter_obj.host_passes(state, spec)
                      for row, state in enumerate(states)]
        assert list(batch) == one_by_one, type(filter_obj).__name__
    handler = filters.HostFilterHandler()
    together = handler.run_filters(FILTERS, hosts, mask, spec)
    wrapped = handler.run_filters([PerHostFilter(f) for f in FILTERS],
                                  hosts, mask, spec)
    assert list(together.mask) == list(wrapped.mask)
    assert [tuple(s)[1:] for s in together.steps] == [
        tuple(s)[1:] for s in wrapped.steps]


@settings
@hypothesis.given(clouds(), specs)
def test_weighers_agree(cloud, spec):
    states, aggregates, mask = cloud
    hosts = fakes.table(states, aggregates)
    rows = np.flatnonzero(mask)
    for weigher in WEIGHERS:
        batch = weigher.weigh_all(hosts, rows, spec)
        one_by_one = [float(weigher._weigh_object(states[row], spec))
                      for row in rows]
        assert list(batch) == one_by_one, type(weigher).__name__
        multipliers = np.broadcast_to(
            weigher.weight_multipliers(hosts, rows), (len(rows),))
        assert list(multipliers) == [weigher.weight_multiplier(states[row])
                                     for row in rows]
    handler = weights.HostWeightHandler()
    np.testing.assert_allclose(
        handler.weigh(WEIGHERS, hosts, rows, spec),
        handler.weigh([PerHostWeigher(w) for w in WEIGHERS], hosts, rows,
                      spec), rtol=1e-12, atol=1e-12)
