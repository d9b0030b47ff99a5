"""Server-group claims with cells: the group in the API database, the
members' claims in two cell databases.

Threads released at once claim members of one group on hosts of both
cells, each in its host's cell (``target_cell``), as schedulers and
conductors do. The group's row lock, taken in the API database and held
around each cell claim, must make them take turns whatever cell they
claim in: anti-affinity never puts more than ``max_server_per_host``
members on a host, and affinity members arriving together end on one
host, in one cell. Each backend runs the API database and both cells;
``mixed`` puts the API database on PostgreSQL, cell1 on MariaDB and
cell2 on SQLite.
"""

import collections
import contextlib
import uuid

from oslo_db import exception as db_exc
import pytest
import sqlalchemy as sa

from scheduler.db import api as db_api
from scheduler.db import api_models
from scheduler.db import claims
from scheduler.db import group_claims
from scheduler.db import instance_groups
from scheduler.db import mappings
from scheduler.db import models
from tests.fixtures import databases
from tests.unit.db import test_claims

CELL1 = '11111111-1111-1111-1111-111111111111'
CELL2 = '22222222-2222-2222-2222-222222222222'
SMALL = claims.Resources(1, 256, 1)
HOSTS = {CELL1: ('a1', 'a2'), CELL2: ('b1', 'b2')}
CLOSED_PORT_URL = 'postgresql+psycopg2://gantt@127.0.0.1:1/gone'
# (API database, cell1, cell2)
LAYOUTS = {
    'sqlite': ('sqlite', 'sqlite', 'sqlite'),
    'postgresql': ('postgresql', 'postgresql', 'postgresql'),
    'mariadb': ('mariadb', 'mariadb', 'mariadb'),
    'mixed': ('postgresql', 'mariadb', 'sqlite'),
}

_NODE = models.ComputeNode.__table__
_ALLOC = models.Allocation.__table__


class Cells:
    """An API database with cell0, cell1 ([database]) and cell2, each
    cell with two roomy hosts, every host mapped."""

    def __init__(self, api_url, urls):
        self.api_url = api_url
        self.urls = urls            # {cell uuid: url}
        self.nodes = {}             # host -> (cell url, node id)
        with db_api.api_writer() as session:
            mappings.create_cell(session, mappings.CELL0_UUID, 'cell0',
                                 None, 'sqlite:///nowhere_cell0')
            for number, (cell, url) in enumerate(sorted(urls.items()), 1):
                cell_id = mappings.create_cell(session, cell,
                                               'cell%d' % number, None, url)
                for host in HOSTS[cell]:
                    mappings.create_host_mapping(session, host, cell_id)
        for cell, url in urls.items():
            for host in HOSTS[cell]:
                with db_api.target_cell(url):
                    self.nodes[host] = (url, test_claims.make_node(
                        host, vcpus=64, memory_mb=65536, local_gb=1000))

    def hosts(self):
        return sorted(self.nodes)

    def claim(self, member, host, group_uuid):
        url, node = self.nodes[host]
        with db_api.target_cell(url):
            return claims.claim_in_sql(node, member, SMALL, group_uuid,
                                       host)

    def map_instance(self, member, cell=None):
        """An instance mapping of ``member``, to ``cell`` (None: not
        placed yet)."""
        with db_api.api_writer() as session:
            cell_id = None if cell is None else mappings.get_cell(
                session, cell).id
            mappings.create_instance_mapping(session, member, 'p',
                                             cell_id=cell_id)

    def placed(self, members):
        """``{host: members holding an allocation there}``, every cell."""
        found = collections.Counter()
        for url in self.urls.values():
            with db_api.target_cell(url), db_api.reader() as session:
                found.update(session.execute(
                    sa.select(_NODE.c.host)
                    .join(_ALLOC, _ALLOC.c.compute_node_id == _NODE.c.id)
                    .where(_ALLOC.c.consumer_uuid.in_(members)))
                    .scalars().all())
        return dict(found)

    def consistent(self):
        for url in self.urls.values():
            with db_api.target_cell(url):
                assert test_claims.inconsistencies() == []


@contextlib.contextmanager
def cells_on(layout, config):
    api_backend, first, second = LAYOUTS[layout]
    with databases.migrated_api_database(api_backend, config) as api_url, \
            databases.migrated_database(first, config) as cell1, \
            databases.cell_database(second) as cell2:
        yield Cells(api_url, {CELL1: cell1, CELL2: cell2})


@pytest.fixture(params=sorted(LAYOUTS))
def any_cells(request, config):
    with cells_on(request.param, config) as deployment:
        yield deployment


@pytest.fixture
def sqlite_cells(config):
    with cells_on('sqlite', config) as deployment:
        yield deployment


def make_group(policy, members, max_per_host=None):
    """A group in the API database (the only one that has it)."""
    rules = ({'max_server_per_host': max_per_host}
             if max_per_host is not None else None)
    with db_api.api_writer() as session:
        group = instance_groups.create(session, 'g-' + policy, policy,
                                       rules=rules)
        instance_groups.add_members(session, group.id, members)
    return group.uuid


def claim_somewhere(deployment, member, group_uuid, first, refusals):
    """Try every host of both cells, from the ``first``-th on; the host
    won, or None. Each refusal is kept as ``(member, outcome)``."""
    hosts = deployment.hosts()
    for step in range(len(hosts)):
        host = hosts[(first + step) % len(hosts)]
        won = deployment.claim(member, host, group_uuid)
        if won is True:
            return host
        refusals.append((member, won))
    return None


def new_members(count):
    return [str(uuid.uuid4()) for _ in range(count)]


# -- races --------------------------------------------------------------------

@pytest.mark.parametrize('max_per_host', [1, 2])
def test_anti_affinity_race_over_two_cells_never_overfills(any_cells,
                                                           max_per_host):
    members = new_members(12)
    group = make_group('anti-affinity', members, max_per_host)
    refusals = []

    won = test_claims.race(12, lambda i: claim_somewhere(
        any_cells, members[i], group, i % 4, refusals))

    assert any_cells.placed(members) == {
        host: max_per_host for host in any_cells.hosts()}
    assert sum(1 for host in won if host) == 4 * max_per_host
    assert refusals and all(
        isinstance(outcome, claims.GroupConflict) for _m, outcome in refusals)
    any_cells.consistent()


def test_affinity_first_members_racing_in_two_cells_share_one_host(
        any_cells):
    """No member is placed yet and none is mapped to a cell (being
    built): whichever claim commits first picks the host, in its cell,
    and every other member follows it there."""
    members = new_members(8)
    for member in members:
        any_cells.map_instance(member)
    group = make_group('affinity', members)
    refusals = []

    won = test_claims.race(8, lambda i: claim_somewhere(
        any_cells, members[i], group, i % 4, refusals))

    assert None not in won and len(set(won)) == 1
    assert any_cells.placed(members) == {won[0]: 8}
    assert all(isinstance(outcome, claims.GroupConflict)
               and set(outcome.hosts) == {won[0]}
               for _m, outcome in refusals)
    any_cells.consistent()


# -- what each policy looks at --------------------------------------------

def test_affinity_follows_a_member_mapped_to_the_other_cell(sqlite_cells):
    first, second = new_members(2)
    group = make_group('affinity', [first, second])
    assert sqlite_cells.claim(first, 'b2', group) is True
    sqlite_cells.map_instance(first, CELL2)

    refused = sqlite_cells.claim(second, 'a1', group)

    assert isinstance(refused, claims.GroupConflict)
    assert refused.hosts == {'b2': 1}
    assert not refused.allows('a2') and refused.allows('b2')
    assert 'b2' in str(refused)
    assert sqlite_cells.claim(second, 'b2', group) is True


def test_affinity_finds_an_unmapped_member_in_any_cell(sqlite_cells):
    """A member the super-conductor has not mapped yet (its claim is
    made, its mapping not) or that has no mapping at all is looked for
    in every cell."""
    first, second, third = new_members(3)
    group = make_group('affinity', [first, second, third])
    sqlite_cells.map_instance(first)            # cell_id still NULL
    assert sqlite_cells.claim(first, 'b1', group) is True

    assert isinstance(sqlite_cells.claim(second, 'a1', group),
                      claims.GroupConflict)
    # No mapping at all: the same.
    assert isinstance(sqlite_cells.claim(third, 'a2', group),
                      claims.GroupConflict)
    assert sqlite_cells.claim(third, 'b1', group) is True


def test_affinity_ignores_members_in_cell0_and_without_claims(sqlite_cells):
    buried, unclaimed, new = new_members(3)
    group = make_group('affinity', [buried, unclaimed, new])
    sqlite_cells.map_instance(buried, mappings.CELL0_UUID)
    sqlite_cells.map_instance(unclaimed, CELL2)

    assert sqlite_cells.claim(new, 'a1', group) is True


def test_anti_affinity_counts_the_target_host_only(sqlite_cells):
    first, second = new_members(2)
    group = make_group('anti-affinity', [first, second])
    assert sqlite_cells.claim(first, 'b1', group) is True
    sqlite_cells.map_instance(first, CELL2)

    assert sqlite_cells.claim(second, 'a1', group) is True
    refused = sqlite_cells.claim(second, 'b1', group)
    assert isinstance(refused, claims.GroupConflict)
    assert refused.hosts == {'b1': 1}
    # The refusal rolled back: the member still holds a1.
    assert sqlite_cells.placed([second]) == {'a1': 1}


def test_soft_and_deleted_groups_constrain_nothing(sqlite_cells):
    members = new_members(2)
    soft = make_group('soft-anti-affinity', members)
    assert sqlite_cells.claim(members[0], 'a1', soft) is True
    assert sqlite_cells.claim(members[1], 'a1', soft) is True
    gone = str(uuid.uuid4())
    assert sqlite_cells.claim(new_members(1)[0], 'a1', gone) is True


def test_the_cell_schemas_groups_are_not_read_with_cells(sqlite_cells):
    """A group left in a cell's own tables (from before cells) is not
    the group: the API database's is, and it has none by that uuid."""
    members = new_members(2)
    with db_api.target_cell(sqlite_cells.urls[CELL1]), \
            db_api.writer() as session:
        stale = instance_groups.create(session, 'old', 'anti-affinity')
        instance_groups.add_members(session, stale.id, members)
    assert sqlite_cells.claim(members[0], 'a1', stale.uuid) is True
    assert sqlite_cells.claim(members[1], 'a1', stale.uuid) is True


# -- databases that go away -------------------------------------------------

def _move_cell(cell, url):
    table = api_models.CellMapping.__table__
    with db_api.api_writer() as session:
        session.execute(table.update().where(table.c.uuid == cell)
                        .values(database_connection=url))


def test_affinity_with_an_unreadable_cell_refuses_and_says_which(
        sqlite_cells):
    placed, new = new_members(2)
    group = make_group('affinity', [placed, new])
    assert sqlite_cells.claim(placed, 'b1', group) is True
    sqlite_cells.map_instance(placed, CELL2)
    _move_cell(CELL2, CLOSED_PORT_URL)

    refused = sqlite_cells.claim(new, 'a1', group)

    assert isinstance(refused, claims.GroupConflict)
    assert refused.unreadable == ('cell2',)
    assert not refused.allows('a1') and not refused.allows('b1')
    assert 'cannot be read' in str(refused)
    assert sqlite_cells.placed([new]) == {}


def test_anti_affinity_does_not_need_the_other_cells(sqlite_cells):
    placed, new = new_members(2)
    group = make_group('anti-affinity', [placed, new])
    assert sqlite_cells.claim(placed, 'b1', group) is True
    sqlite_cells.map_instance(placed, CELL2)
    _move_cell(CELL2, CLOSED_PORT_URL)

    assert sqlite_cells.claim(new, 'a1', group) is True


def test_an_api_database_away_fails_the_claim_and_writes_nothing(
        sqlite_cells, config):
    member = new_members(1)[0]
    group = make_group('anti-affinity', [member])
    config.config(connection=CLOSED_PORT_URL, group='api_database')
    config.config(db_max_retries=0, group='database')
    db_api.dispose_engine()

    with pytest.raises(db_exc.DBConnectionError):
        sqlite_cells.claim(member, 'a1', group)

    assert sqlite_cells.placed([member]) == {}


def test_a_claim_stands_when_the_api_database_goes_away_after_it(config):
    """The API transaction writes nothing: when its connection is lost
    once the cell's claim is committed, the claim stands (the lock went
    with the connection)."""
    with cells_on('postgresql', config) as deployment:
        member = new_members(1)[0]
        group = make_group('anti-affinity', [member])
        url, node = deployment.nodes['a1']
        with db_api.target_cell(url):
            with group_claims.policy_lock(group) as check:
                with db_api.writer() as session:
                    assert check(session, member, 'a1') is None
                    assert claims.claim_resources(session, node, member,
                                                  SMALL)
                databases.end_sessions(deployment.api_url)

        assert deployment.placed([member]) == {'a1': 1}
        # The next claim of the group gets a new connection.
        other = new_members(1)[0]
        with db_api.api_writer() as session:
            instance_groups.add_members(
                session, instance_groups.get(session, group).id, [other])
        assert isinstance(deployment.claim(other, 'a1', group),
                          claims.GroupConflict)
