"""Property test: the affinity filters and weighers give the same answer
on their batch path (instance counts per row) and per host, on random
hosts (some with several nodes), instances, server groups and hints."""

import hypothesis
from hypothesis import strategies as st
import numpy as np

from scheduler import host_cache
from scheduler.filters import different_host_filter
from scheduler.filters import same_host_filter
from scheduler.filters import server_group_affinity_filter
from scheduler.filters import server_group_anti_affinity_filter
from scheduler.weights import server_group_soft_affinity
from scheduler.weights import server_group_soft_anti_affinity
from tests.unit.scheduler import fakes
from tests.unit.scheduler import group_fakes as gf

FILTERS = [server_group_affinity_filter.ServerGroupAffinityFilter(),
           server_group_anti_affinity_filter.ServerGroupAntiAffinityFilter(),
           same_host_filter.SameHostFilter(),
           different_host_filter.DifferentHostFilter()]
WEIGHERS = [server_group_soft_affinity.ServerGroupSoftAffinityWeigher(),
            server_group_soft_anti_affinity.ServerGroupSoftAntiAffinityWeigher(
            )]
HOST_NAMES = ['h%d' % i for i in range(6)]
POLICIES = ('affinity', 'anti-affinity', 'soft-affinity',
            'soft-anti-affinity')
uuids = st.sampled_from(gf.UUIDS)


@st.composite
def clouds(draw):
    """Host states; an instance runs on one host, seen by all its nodes."""
    names = draw(st.lists(st.sampled_from(HOST_NAMES), min_size=1,
                          max_size=8))
    placed = draw(st.dictionaries(uuids, st.sampled_from(HOST_NAMES)))
    states = []
    for position, name in enumerate(names):
        state = gf.host(name, nodename='%s-n%d' % (name, position))
        states.append(state)
    per_host = {}
    for uuid, name in placed.items():
        per_host.setdefault(name, {})[uuid] = gf.INFO
    for state in states:
        state.instances = per_host.get(state.host, {})
    return states


@st.composite
def specs(draw):
    group = None
    if draw(st.booleans()):
        rules = {}
        if draw(st.booleans()):
            rules['max_server_per_host'] = draw(st.sampled_from(
                ['1', '2', '3', 'x']))
        group = gf.group(draw(st.sampled_from(POLICIES)),
                         draw(st.lists(uuids, max_size=8)),
                         draw(st.lists(st.sampled_from(HOST_NAMES),
                                       max_size=3)), rules)
    hints = {}
    for hint in ('same_host', 'different_host'):
        if draw(st.booleans()):
            hints[hint] = draw(st.lists(uuids, min_size=1, max_size=3))
    return gf.spec(group, scheduler_hints=hints,
                   instance_uuid=draw(st.one_of(st.none(), uuids)))


@hypothesis.settings(max_examples=300, deadline=None)
@hypothesis.given(clouds(), specs())
def test_batch_and_per_host_paths_agree(states, spec):
    for filter_obj in FILTERS:
        fakes.passes(filter_obj, states, spec)
    for weigher in WEIGHERS:
        fakes.raw_weights(weigher, states, spec)


@hypothesis.settings(max_examples=200, deadline=None)
@hypothesis.given(clouds(), specs(), st.data())
def test_a_stretch_filters_as_its_rows_of_the_table(states, spec, data):
    """On a stretch of the table (a zone's rows), the filters pass what
    they pass of those rows on the whole table, and the rows running
    some instances are those the whole table counts."""
    table = fakes.table(states)
    lo = data.draw(st.integers(0, len(states)))
    hi = data.draw(st.integers(lo, len(states)))
    stretch = host_cache.Stretch(table, lo, hi)
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=len(states),
                                       max_size=len(states))),
                    dtype=np.bool_)
    for filter_obj in FILTERS:
        whole = np.asarray(filter_obj.filter_all(table, mask, spec))
        cut = np.asarray(filter_obj.filter_all(stretch, mask[lo:hi], spec))
        assert cut.tolist() == whole[lo:hi].tolist(), filter_obj
    members = spec.instance_group.members if spec.obj_get(
        'instance_group') else gf.UUIDS[:3]
    for on in (table, stretch):
        counts = on.instance_counts(members)
        assert on.instance_rows(members) == {
            row: int(count) for row, count in enumerate(counts) if count}
