"""Property test: the batch paths of every built-in filter and weigher
agree with their per-host paths, on random hosts, requests and options.

Hosts carry random stats, metrics, supported instances, IPs and
instances (flavors, image properties); their
aggregates set zones, ratios, limits, tenants, flavors, extra specs and
multipliers (valid or not); requests carry extra specs, image properties,
projects, retries and JsonFilter queries; the options the filters and
weighers read are drawn too. Where one path raises, the other must raise
the same exception.
"""

import contextlib
import json

import hypothesis
from hypothesis import strategies as st
import numpy as np

from scheduler import conf
from scheduler import filters
from scheduler.filters import json_query
from scheduler import host_cache
from scheduler import loadables
from scheduler.objects import request_spec
from scheduler import weights
from tests.unit.scheduler import fakes

CONF = conf.CONF
ZONES = ('az1', 'az2', 'nova')
MULTIPLIER_KEYS = ('ram_weight_multiplier', 'cpu_weight_multiplier',
                   'disk_weight_multiplier', 'io_ops_weight_multiplier',
                   'build_failure_weight_multiplier',
                   'num_instances_weight_multiplier',
                   'hypervisor_version_weight_multiplier',
                   'metrics_weight_multiplier', 'pci_weight_multiplier')
RATIO_KEYS = ('ram_allocation_ratio', 'cpu_allocation_ratio',
              'disk_allocation_ratio')
LIMIT_KEYS = ('max_io_ops_per_host', 'max_instances_per_host')
FLAVOR_NAMES = ('m1.tiny', 'm1.small', 'm1.xl')
PROJECTS = ('p1', 'p2', 'p3')
IMAGES = ('img-iso', 'img-plain')
ARCHES = ('x86_64', 'aarch64', 'i686', 'amd64', 'i386', 'X86_64')
HV_TYPES = ('qemu', 'kvm', 'xen', 'xapi')
VM_MODES = ('hvm', 'xen', 'hv', 'pv', 'exe')
METRICS = ('cpu.percent', 'mem.free', 'load')
BOOLEANS = ('yes', 'no', 'true', '1')
WORDS = ('true', 'false', 'a100', 'k80', 'r1', 'r2', '1', '10', '100')
FILTERS = [cls() for cls in loadables.load_filter_classes(
    ['all_filters'], loadables.entry_point_names(loadables.FILTER_NAMESPACE))]
WEIGHERS = [cls() for cls in loadables.load_weigher_classes(
    ['all_weighers'])]

ratios = st.sampled_from([0.5, 1.0, 1.1, 1.5, 2.0, 3.3, 16.0])
multiplier_values = st.one_of(
    st.floats(-5, 5, allow_nan=False).map(repr),
    st.sampled_from(['', 'many', 'nan', '1e400', ' 2 ']))
ratio_values = st.one_of(st.sampled_from(['0.5', '1.0', '1.5', '16', ' 2 ']),
                         st.sampled_from(['', 'x', 'inf', '-1']))
limit_values = st.one_of(st.integers(0, 70).map(str),
                         st.sampled_from(['', '2.5', 'lots', ' 4 ']))


def comma_list(values):
    return st.lists(st.sampled_from(values), min_size=1,
                    max_size=3).map(', '.join)


@st.composite
def aggregate_metadata(draw):
    """Metadata for one aggregate: any of the keys the filters and
    weighers read, with good and bad values."""
    metadata = {}
    if draw(st.booleans()):
        metadata['availability_zone'] = draw(st.sampled_from(ZONES))
    optional = {
        RATIO_KEYS: ratio_values, LIMIT_KEYS: limit_values,
        MULTIPLIER_KEYS: multiplier_values,
        ('instance_type',): comma_list(FLAVOR_NAMES),
        ('filter_tenant_id', 'filter_tenant_id_2'): comma_list(PROJECTS),
        ('ssd', 'speed', 'os_type', 'iso.os_type'): comma_list(WORDS),
        ('hw_architecture',): comma_list(ARCHES),
        ('hw_qemu_guest_agent',): comma_list(BOOLEANS + ('True',)),
    }
    for keys, values in optional.items():
        for key in keys:
            if draw(st.integers(0, 3)) == 0:
                metadata[key] = draw(values)
    return metadata


@st.composite
def clouds(draw):
    # Host names repeat (several nodes on one host) and differ only by
    # case at times, which aggregates and the indexes must not confuse.
    names = draw(st.lists(st.sampled_from(['a', 'A', 'b', 'B', 'c']),
                          min_size=1, max_size=25))
    aggregates = []
    for number in range(draw(st.integers(0, 4))):
        metadata = draw(aggregate_metadata())
        members = draw(st.sets(st.sampled_from(names)))
        aggregates.append(fakes.aggregate('agg%d' % number, members,
                                          **metadata))
    states = [draw(host_states(name, 'n%d' % number, aggregates))
              for number, name in enumerate(names)]
    # The nodes of one host share its instances, as in the host manager.
    instances = {name: draw(host_instances_of(name)) for name in set(names)}
    for state in states:
        state.instances = instances[state.host]
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
                                 'never', 'ahead', 'none']))
    svc = {
        'up': lambda: fakes.service(name, seen_ago=draw(st.integers(0, 50))),
        'down': lambda: fakes.service(name,
                                      seen_ago=draw(st.integers(70, 900))),
        'disabled': lambda: fakes.service(name, disabled=True),
        'forced': lambda: fakes.service(name, forced_down=True),
        'never': lambda: fakes.service(
            name, seen_ago=None, created_ago=draw(st.sampled_from(
                [None, 0, 50, 900]))),
        'ahead': lambda: fakes.service(
            name, seen_ago=-draw(st.integers(0, 900))),
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
    # Nova's free disk is bounded by disk_available_least when reported.
    fields['disk_available_least'] = draw(st.one_of(
        st.none(), st.integers(-50, fields['local_gb'])))
    small = st.integers(0, 64)
    fields.update(draw(host_facts()))
    return fakes.host_state(
        name, nodename=nodename, svc=svc, aggregates=mine, zones=zones,
        io_workload=draw(small), num_instances=draw(small), **fields)


@st.composite
def host_instances_of(draw, host):
    """``{uuid: InstanceInfo}`` of the instances on ``host``."""
    images = st.fixed_dictionaries({}, optional={
        'os_distro': st.sampled_from(['linux', 'windows']),
        'hw_machine_type': st.sampled_from(['pc', 'q35']),
        'hw_numa_nodes': st.sampled_from(['1', '2']),
        'architecture': st.sampled_from(ARCHES),
        'hw_qemu_guest_agent': st.sampled_from(BOOLEANS),
        'vmware_ostype': st.sampled_from(['linux', 'windows'])})
    return {'%s-instance-%d' % (host, number): host_cache.InstanceInfo(
                draw(st.sampled_from(FLAVOR_NAMES + (None,))), draw(images))
            for number in range(draw(st.integers(0, 3)))}


@st.composite
def host_facts(draw):
    """What computes report beyond capacity: stats, metrics, supported
    instances, hypervisor, IP."""
    stats = {}
    for key, values in (('failed_builds', st.one_of(
            st.integers(0, 5), st.sampled_from(['3', 'x']))),
            ('gpu', st.sampled_from(WORDS)),
            ('ssd', st.sampled_from(WORDS)),
            ('cpu', st.sampled_from(['{"vendor": "intel"}', 'nojson'])),
            ('hypervisor_type', st.sampled_from(HV_TYPES))):
        if draw(st.booleans()):
            stats[key] = draw(values)
    metrics = [{'name': metric, 'value': draw(st.one_of(
        st.integers(-100, 100), st.floats(-1e3, 1e3, allow_nan=False),
        st.sampled_from([None, 'x'])))}
        for metric in draw(st.sets(st.sampled_from(METRICS)))]
    supported = draw(st.lists(st.tuples(
        st.sampled_from(ARCHES[:3]), st.sampled_from(HV_TYPES[:3]),
        st.sampled_from(VM_MODES[::2])).map(list), max_size=3))
    return dict(
        stats=stats, metrics=metrics, supported_instances=supported,
        hypervisor_type=draw(st.sampled_from(HV_TYPES)),
        hypervisor_version=draw(st.sampled_from(
            [0, 1000, 6000000, 6002001, 7000000])),
        host_ip=draw(st.sampled_from([
            None, 'bogus', '10.0.0.5', '10.0.1.9', '10.1.0.1',
            '2001:db8::5', '2001:db8:1::9'])))


def amounts(top):
    return st.one_of(st.integers(0, 4), st.integers(0, top))


EXTRA_SPEC_KEYS = (
    'capabilities:hypervisor_type', 'capabilities:vcpus_total',
    'capabilities:free_ram_mb', 'capabilities:stats:gpu', 'capabilities:gpu',
    'capabilities:cpu:vendor', 'capabilities:consumed', 'ssd', 'gpu',
    'free_ram_mb', 'aggregate_instance_extra_specs:speed',
    'aggregate_instance_extra_specs:ssd', 'hw:cpu_policy')
REQUIREMENTS = st.one_of(
    st.sampled_from(WORDS + HV_TYPES + ('intel',)),
    st.tuples(st.sampled_from(['=', '==', '!=', '>=', '<=', 's==', 's!=',
                               's<', 's>=', '<in>', '<all-in>', '<or>']),
              st.lists(st.sampled_from(WORDS + ('16', '4096', 'x')),
                       min_size=0, max_size=3)).map(
        lambda parts: ' '.join([parts[0]] + parts[1])))
VARIABLES = ('$free_ram_mb', '$num_instances', '$vcpus_total',
             '$cpu_allocation_ratio', '$stats.gpu', '$stats.failed_builds',
             '$hypervisor_type', '$hypervisor_version', '$host',
             '$stats.none', '$stats', '$service.disabled',
             '$service.forced_down', '$service.host', '$free_ram',
             '$service.topic')
literals = st.one_of(
    st.integers(-5, 70000), st.floats(-10, 10, allow_nan=False),
    st.booleans(), st.sampled_from(WORDS + HV_TYPES + ('', None)),
    st.sampled_from(VARIABLES), st.just({'gpu': 'k80'}))
queries = st.recursive(
    st.tuples(st.sampled_from(sorted(json_query.COMMANDS)),
              st.lists(literals, max_size=3)).map(
        lambda parts: [parts[0]] + parts[1]),
    lambda inner: st.tuples(
        st.sampled_from(sorted(json_query.COMMANDS)),
        st.lists(st.one_of(literals, inner), max_size=3)).map(
            lambda parts: [parts[0]] + parts[1]),
    max_leaves=8)


@st.composite
def specs(draw):
    spec = fakes.spec(
        vcpus=draw(amounts(40)), memory_mb=draw(amounts(70000)),
        root_gb=draw(amounts(1000)), ephemeral_gb=draw(amounts(500)),
        swap=draw(amounts(8192)),
        availability_zone=draw(st.sampled_from(
            [None, 'az1', 'az2', 'nova', 'x'])),
        project_id=draw(st.sampled_from((None,) + PROJECTS)))
    spec.flavor.name = draw(st.sampled_from((None,) + FLAVOR_NAMES))
    spec.flavor.flavorid = draw(st.sampled_from((None,) + FLAVOR_NAMES))
    spec.flavor.extra_specs = draw(st.dictionaries(
        st.sampled_from(EXTRA_SPEC_KEYS), REQUIREMENTS, max_size=3))
    if draw(st.booleans()):
        properties = draw(st.fixed_dictionaries({}, optional={
            'hw_architecture': st.sampled_from(ARCHES),
            'img_hv_type': st.sampled_from(HV_TYPES),
            'hw_vm_mode': st.sampled_from(VM_MODES),
            'img_hv_requested_version': st.sampled_from(
                ['>=6.0', '<7.0, >= 6.2', '== 1.0', 'soon']),
            'os_type': st.sampled_from(WORDS),
            'iso.os_type': st.sampled_from(WORDS),
            'os_distro': st.sampled_from(['linux', 'windows']),
            'hw_machine_type': st.sampled_from(['pc', 'q35']),
            'architecture': st.sampled_from(ARCHES),
            'vm_mode': st.sampled_from(VM_MODES),
            'hw_qemu_guest_agent': st.sampled_from(BOOLEANS),
            'vmware_ostype': st.sampled_from(['linux', 'windows'])}))
        spec.image = request_spec.ImageMeta(
            id=draw(st.sampled_from(IMAGES)), properties=properties)
    hints = {}
    if draw(st.integers(0, 2)) == 0:
        hints['query'] = [json.dumps(draw(queries))]
    if draw(st.integers(0, 3)) == 0:
        hints['build_near_host_ip'] = [draw(st.sampled_from(
            ['10.0.0.1', '10.1.2.3', '2001:db8::1']))]
        if draw(st.booleans()):
            hints['cidr'] = [draw(st.sampled_from(['/8', '/24', '/64']))]
    spec.scheduler_hints = hints
    if draw(st.booleans()):
        spec.retry = request_spec.SchedulerRetries(hosts=draw(st.lists(
            st.tuples(st.sampled_from('aAbc'),
                      st.sampled_from(['n0', 'n1', 'n2', 'n3'])).map(list),
            max_size=3)))
    return spec


# Options the filters and weighers read: {group: {name: values}}.
OPTION_VALUES = {
    'filter_scheduler': {
        'max_io_ops_per_host': st.integers(0, 40),
        'max_instances_per_host': st.integers(1, 40),
        'isolated_images': st.lists(st.sampled_from(IMAGES), max_size=1),
        'isolated_hosts': st.lists(st.sampled_from('aAbc'), max_size=2),
        'restrict_isolated_hosts_to_isolated_images': st.booleans(),
        'aggregate_image_properties_isolation_namespace':
            st.sampled_from([None, 'iso', 'hw']),
        'aggregate_image_properties_isolation_separator':
            st.sampled_from(['.', '_']),
        'image_properties_default_architecture':
            st.sampled_from([None, 'x86_64', 'aarch64']),
        'io_ops_weight_multiplier': st.floats(-2, 2),
        'num_instances_weight_multiplier': st.floats(-2, 2),
        'build_failure_weight_multiplier': st.sampled_from([0.0, 1e6]),
        'image_props_weight_multiplier': st.sampled_from([0.0, 1.0, -2.0]),
        'image_props_weight_setting': st.lists(st.sampled_from(
            ['os_distro=10', 'hw_machine_type=0', 'os_type=2', 'bad',
             'hw_architecture=3']),
            max_size=2),
    },
    'metrics': {
        'weight_setting': st.lists(st.tuples(
            st.sampled_from(METRICS), st.sampled_from(
                ['1', '-2.5', '0', 'x'])).map('='.join), max_size=2),
        'required': st.booleans(),
        'weight_multiplier': st.sampled_from([-1.0, 0.0, 2.0]),
    },
}


@st.composite
def options(draw):
    return {group: {name: draw(values) for name, values in names.items()
                    if draw(st.booleans())}
            for group, names in OPTION_VALUES.items()}


@contextlib.contextmanager
def overridden(drawn):
    try:
        for group, values in drawn.items():
            for name, value in values.items():
                CONF.set_override(name, value, group=group)
        yield
    finally:
        for group, values in drawn.items():
            for name in values:
                CONF.clear_override(name, group=group)


def outcome(call, *args):
    """What ``call(*args)`` returns, or the type of what it raises."""
    try:
        return 'returned', call(*args)
    except Exception as error:  # noqa: BLE001 - compared, not hidden
        return 'raised', type(error)

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


def _batch_mask(filter_obj, hosts, mask, spec):
    return list(filter_obj.filter_all(hosts, mask, spec))


def _host_by_host(filter_obj, states, mask, spec):
    return [bool(mask[row]) and filter_obj.host_passes(state, spec)
            for row, state in enumerate(states)]


def _run(filter_list, hosts, mask, spec):
    result = filters.HostFilterHandler().run_filters(filter_list, hosts,
                                                     mask, spec)
    return list(result.mask), [tuple(s)[1:] for s in result.steps]


@settings
@hypothesis.given(clouds(), specs(), options())
def test_filters_agree(cloud, spec, drawn):
    states, aggregates, mask = cloud
    hosts = fakes.table(states, aggregates)
    with overridden(drawn):
        for filter_obj in FILTERS:
            assert outcome(_batch_mask, filter_obj, hosts, mask, spec) == (
                outcome(_host_by_host, filter_obj, states, mask, spec)), (
                    type(filter_obj).__name__)
        assert outcome(_run, FILTERS, hosts, mask, spec) == outcome(
            _run, [PerHostFilter(f) for f in FILTERS], hosts, mask, spec)


def _raw_batch(weigher, hosts, rows, spec):
    return list(weigher.weigh_all(hosts, rows, spec))


def _raw_each(weigher, states, rows, spec):
    return [float(weigher._weigh_object(states[row], spec)) for row in rows]


@settings
@hypothesis.given(clouds(), specs(), options())
def test_weighers_agree(cloud, spec, drawn):
    states, aggregates, mask = cloud
    hosts = fakes.table(states, aggregates)
    rows = np.flatnonzero(mask)
    with overridden(drawn):
        for weigher in WEIGHERS:
            assert outcome(_raw_batch, weigher, hosts, rows, spec) == (
                outcome(_raw_each, weigher, states, rows, spec)), (
                    type(weigher).__name__)
            multipliers = np.broadcast_to(
                weigher.weight_multipliers(hosts, rows), (len(rows),))
            assert list(multipliers) == [
                weigher.weight_multiplier(states[row]) for row in rows]
        handler = weights.HostWeightHandler()
        together = outcome(handler.weigh, WEIGHERS, hosts, rows, spec)
        wrapped = outcome(handler.weigh, [PerHostWeigher(w)
                                          for w in WEIGHERS],
                          hosts, rows, spec)
    assert together[0] == wrapped[0]
    if together[0] == 'raised':
        assert together == wrapped
    else:
        np.testing.assert_allclose(together[1], wrapped[1], rtol=1e-12,
                                   atol=1e-12)


@settings
@hypothesis.given(clouds(), st.lists(specs(), min_size=1, max_size=3),
                  st.lists(st.tuples(st.integers(0, 24),
                                     host_facts()), max_size=4), options())
def test_filters_agree_on_tables_derived_by_replace(cloud, spec_list,
                                                    changes, drawn):
    """Per-state values a table carried over from an older one (through
    replace, consumed and new instances) match the HostStates it holds."""
    with overridden(drawn):
        _derive_and_compare(cloud, spec_list, changes)


def _derive_and_compare(cloud, spec_list, changes):
    states, aggregates, mask = cloud
    rows = np.flatnonzero(mask)
    hosts = fakes.table(states, aggregates)
    steps = zip(spec_list * 4, changes + [(0, None)] * 4)
    for step, (spec, (row, facts)) in enumerate(steps):
        for filter_obj in FILTERS:
            outcome(_batch_mask, filter_obj, hosts, mask, spec)
        for weigher in WEIGHERS:
            outcome(_raw_batch, weigher, hosts, rows, spec)
        if facts is not None:
            row %= len(states)
            fields = {name: getattr(hosts.states[row], name)
                      for name in hosts.states[row].NODE_FIELDS}
            fields.update(facts)
            old = hosts.states[row]
            new = type(old)(service=old.service, aggregates=old.aggregates,
                            availability_zones=old.availability_zones,
                            **fields)
            new.instances = old.instances
            hosts = hosts.replace({row: new})
        hosts = hosts.consumed(0, spec.resources())
        image = spec.obj_get('image')
        hosts = host_cache.with_instance(
            hosts, step % len(states), 'placed-%d' % step,
            host_cache.info_from_flavor_and_image(
                spec.flavor, image.properties if image else None))
        fresh = fakes.table(hosts.states, aggregates)
        for filter_obj in FILTERS:
            assert outcome(_batch_mask, filter_obj, hosts, mask, spec) == (
                outcome(_batch_mask, filter_obj, fresh, mask, spec)), (
                    type(filter_obj).__name__)
        for weigher in WEIGHERS:
            assert outcome(_raw_batch, weigher, hosts, rows, spec) == (
                outcome(_raw_batch, weigher, fresh, rows, spec)), (
                    type(weigher).__name__)


@st.composite
def stretches(draw, count):
    lo = draw(st.integers(0, count))
    return lo, draw(st.integers(lo, count))


def _confined(cloud, data):
    """``(table, mask, lo, hi)``: the cloud's table and its mask left
    with the hosts of a drawn stretch lo..hi-1 only."""
    states, aggregates, mask = cloud
    lo, hi = data.draw(stretches(len(states)))
    mask = mask.copy()
    mask[:lo] = False
    mask[hi:] = False
    return fakes.table(states, aggregates), mask, lo, hi


@settings
@hypothesis.given(clouds(), specs(), options(), st.data())
def test_filters_and_weighers_agree_on_a_stretch(cloud, spec, drawn, data):
    """Every built-in filter and weigher may be given a stretch of the
    table (host_cache.Stretch): on rows lo..hi-1 it answers what it
    answers for them on the whole table, when the hosts in the running
    lie in the stretch (as the handler gives one), and the weight
    handler's totals are the same to the bit."""
    hosts, mask, lo, hi = _confined(cloud, data)
    stretch = host_cache.Stretch(hosts, lo, hi)
    part = mask[lo:hi]
    local = np.flatnonzero(part)
    with overridden(drawn):
        for filter_obj in FILTERS:
            assert host_cache.reads_stretches(
                filter_obj, filters.BaseHostFilter, ('filter_all',))
            whole = outcome(_batch_mask, filter_obj, hosts, mask, spec)
            if whole[0] == 'returned':
                whole = whole[0], whole[1][lo:hi]
            assert outcome(_batch_mask, filter_obj, stretch, part,
                           spec) == whole, type(filter_obj).__name__
        for weigher in WEIGHERS:
            assert weights.reads_stretches(weigher)
            assert outcome(_raw_batch, weigher, stretch, local, spec) == (
                outcome(_raw_batch, weigher, hosts, local + lo, spec)), (
                    type(weigher).__name__)
            assert np.array_equal(
                np.broadcast_to(weigher.weight_multipliers(stretch, local),
                                (len(local),)),
                np.broadcast_to(weigher.weight_multipliers(hosts, local + lo),
                                (len(local),)))
        handler = weights.HostWeightHandler()
        on_stretch = outcome(handler.weigh, WEIGHERS, stretch, local, spec)
        on_table = outcome(handler.weigh, WEIGHERS, hosts, local + lo, spec)
    assert on_stretch[0] == on_table[0]
    if on_stretch[0] == 'raised':
        assert on_stretch == on_table
    else:
        assert on_stretch[1].tolist() == on_table[1].tolist()


@settings
@hypothesis.given(clouds(), specs(), options(), st.data())
def test_the_handler_filters_on_a_stretch_alike(cloud, spec, drawn, data):
    """Filtering with stretches (every table big enough) gives the mask
    and steps of filtering the whole table, when the hosts left lie in
    a stretch."""
    hosts, mask, _lo, _hi = _confined(cloud, data)

    def run(stretch):
        result = filters.HostFilterHandler().run_filters(
            FILTERS, hosts, mask, spec, stretch=stretch)
        return (result.mask.tolist(), result.rows().tolist(), result.passed,
                [tuple(step) for step in result.steps])
    least = filters.STRETCH_MIN_ROWS
    try:
        # (Not monkeypatch: a fixture each example would share.)
        filters.STRETCH_MIN_ROWS = 0
        with overridden(drawn):
            assert outcome(run, True) == outcome(run, False)
    finally:
        filters.STRETCH_MIN_ROWS = least
