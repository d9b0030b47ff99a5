"""Server-group claims racing on every backend.

Threads released at once claim members of one group through
:func:`scheduler.db.claims.claim_in_sql`, the way scheduler workers and
processes do: each tries the hosts in its own order and moves on when a
claim is refused, as the filter scheduler does after a lost race. The
group's row lock must make them take turns, so that the policy holds
whatever the interleaving: anti-affinity never puts more than
``max_server_per_host`` members on a host, and affinity members that all
arrive first still end up together.
"""

import collections
import uuid

import pytest
import sqlalchemy as sa

from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import instance_groups
from scheduler.db import models
from tests.unit.db import test_claims

_ALLOC = models.Allocation.__table__
_NODE = models.ComputeNode.__table__

SMALL = claims.Resources(1, 256, 1)
HOSTS = ('host1', 'host2', 'host3')


def make_group(policy, members, max_per_host=None):
    rules = ({'max_server_per_host': max_per_host}
             if max_per_host is not None else None)
    with db_api.writer() as session:
        group = instance_groups.create(session, 'g-' + policy, policy,
                                       rules=rules)
        instance_groups.add_members(session, group.id, members)
    return group.uuid


def make_nodes(hosts=HOSTS, **inventory):
    """``{host: node id}``, one roomy node per host unless told."""
    return {host: test_claims.make_node(host, **dict(
        dict(vcpus=64, memory_mb=65536, local_gb=1000), **inventory))
        for host in hosts}


def hosts_of_members(members):
    """``{host: number of the members holding an allocation there}``."""
    with db_api.reader() as session:
        rows = session.execute(
            sa.select(_NODE.c.host)
            .join(_ALLOC, _ALLOC.c.compute_node_id == _NODE.c.id)
            .where(_ALLOC.c.consumer_uuid.in_(members))).all()
    return collections.Counter(row.host for row in rows)


def claim_somewhere(nodes, member, group_uuid, first, refusals):
    """Try every host, starting with the ``first``-th; the host won, or
    None. Each refusal is recorded as ``(member, outcome)``."""
    hosts = sorted(nodes)
    for step in range(len(hosts)):
        host = hosts[(first + step) % len(hosts)]
        won = claims.claim_in_sql(nodes[host], member, SMALL, group_uuid,
                                host)
        if won is True:
            return host
        refusals.append((member, won))
    return None


@pytest.mark.parametrize('workers, max_per_host', [(12, 1), (12, 2)])
def test_anti_affinity_race_fills_each_host_to_its_limit(
        any_database, workers, max_per_host):
    nodes = make_nodes()
    members = [str(uuid.uuid4()) for _ in range(workers)]
    group = make_group('anti-affinity', members, max_per_host)
    refusals = []

    won = test_claims.race(workers, lambda i: claim_somewhere(
        nodes, members[i], group, i % len(nodes), refusals))

    fits = len(nodes) * max_per_host
    winners = [member for member, host in zip(members, won) if host]
    assert len(winners) == fits
    placed = hosts_of_members(members)
    assert placed == {host: max_per_host for host in nodes}
    # Each winner holds one allocation, on the host its claim returned.
    for member, host in zip(members, won):
        held = test_claims.allocations(member)
        if host is None:
            assert held == []
        else:
            assert held == [(nodes[host], SMALL)]
    # Capacity was never the reason: every refusal names the group.
    assert refusals
    assert all(isinstance(outcome, claims.GroupConflict)
               and outcome.group_uuid == group for _m, outcome in refusals)
    for host, node in nodes.items():
        assert test_claims.node_state(node)['vcpus_used'] == max_per_host
    assert test_claims.inconsistencies() == []


def test_anti_affinity_race_on_one_host_has_one_winner(any_database):
    nodes = make_nodes(hosts=('host1',))
    members = [str(uuid.uuid4()) for _ in range(8)]
    group = make_group('anti-affinity', members)

    results = test_claims.race(8, lambda i: claims.claim_in_sql(
        nodes['host1'], members[i], SMALL, group, 'host1'))

    assert [r for r in results if r is True] == [True]
    losers = [r for r in results if r is not True]
    assert all(isinstance(r, claims.GroupConflict) and not r.allows('host1')
               for r in losers)
    assert hosts_of_members(members) == {'host1': 1}
    assert test_claims.node_state(nodes['host1'])['vcpus_used'] == 1


def test_affinity_first_members_racing_end_on_one_host(any_database):
    """No member is placed yet: whichever claim commits first picks the
    host, and every other member is sent there."""
    nodes = make_nodes()
    members = [str(uuid.uuid4()) for _ in range(9)]
    group = make_group('affinity', members)
    refusals = []

    won = test_claims.race(9, lambda i: claim_somewhere(
        nodes, members[i], group, i % len(nodes), refusals))

    assert None not in won
    assert len(set(won)) == 1
    assert hosts_of_members(members) == {won[0]: 9}
    assert all(isinstance(outcome, claims.GroupConflict)
               and set(outcome.hosts) == {won[0]}
               for _m, outcome in refusals)
    assert test_claims.inconsistencies() == []


def test_affinity_race_on_a_small_host_spills_nowhere(any_database):
    """The host affinity picked fills up: the members that do not fit
    fail instead of starting a second host."""
    nodes = make_nodes(vcpus=3, memory_mb=65536, local_gb=1000)
    members = [str(uuid.uuid4()) for _ in range(8)]
    group = make_group('affinity', members)

    won = test_claims.race(8, lambda i: claim_somewhere(
        nodes, members[i], group, i % len(nodes), []))

    hosts = [host for host in won if host]
    assert len(hosts) == 3 and len(set(hosts)) == 1
    assert hosts_of_members(members) == {hosts[0]: 3}
    assert test_claims.inconsistencies() == []


def _holdings(nodes):
    return {host: test_claims.node_state(node) for host, node in
            nodes.items()}


@pytest.mark.parametrize('why', ['group', 'capacity'])
def test_failed_claim_keeps_the_earlier_allocation(any_database, why):
    """A consumer asks again elsewhere (a retried request) and is refused:
    the release of its earlier allocation is rolled back with the claim."""
    nodes = make_nodes(hosts=('host1', 'host2'))
    mine, other = str(uuid.uuid4()), str(uuid.uuid4())
    group = make_group('anti-affinity', [mine, other])
    assert claims.claim_in_sql(nodes['host1'], mine, SMALL, group,
                             'host1') is True
    if why == 'group':
        assert claims.claim_in_sql(nodes['host2'], other, SMALL, group,
                                 'host2') is True
        asked = SMALL
    else:
        asked = claims.Resources(1, 65536 + 1, 1)
    before = _holdings(nodes)

    outcome = claims.claim_in_sql(nodes['host2'], mine, asked, group, 'host2')

    assert not outcome
    if why == 'group':
        assert isinstance(outcome, claims.GroupConflict)
    else:
        assert outcome is False
    assert test_claims.allocations(mine) == [(nodes['host1'], SMALL)]
    assert _holdings(nodes) == before
    assert test_claims.inconsistencies() == []


def test_racing_copies_of_one_request_leave_one_allocation(any_database):
    """Several copies of one member's claim (a conductor retrying while
    the first answer is in flight) race on different hosts: whatever the
    order, the member ends with exactly one allocation and usage matches."""
    nodes = make_nodes()
    member = str(uuid.uuid4())
    group = make_group('anti-affinity', [member])
    hosts = sorted(nodes)

    results = test_claims.race(6, lambda i: claims.claim_in_sql(
        nodes[hosts[i % 3]], member, SMALL, group, hosts[i % 3]))

    assert results == [True] * 6
    held = test_claims.allocations(member)
    assert len(held) == 1 and held[0][1] == SMALL
    assert sum(test_claims.node_state(node)['vcpus_used']
               for node in nodes.values()) == 1
    assert test_claims.inconsistencies() == []


def test_members_joining_at_once_all_join(any_database):
    """Conductors add the members of several requests to one group at
    the same moment: each joins, none fails on a deadlock (MariaDB locks
    the group row for the members' foreign key, then for its update)."""
    group = make_group('anti-affinity', [])
    members = [str(uuid.uuid4()) for _ in range(12)]

    def join(index):
        with db_api.writer() as session:
            group_id = instance_groups.get(session, group).id
            return instance_groups.add_members(session, group_id,
                                               [members[index]])

    results = test_claims.race(12, join)

    assert results == [[member] for member in members]
    with db_api.reader() as session:
        assert sorted(instance_groups.get(session, group).members) == \
            sorted(members)
