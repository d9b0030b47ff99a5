"""The super-conductor resumes the build requests nobody works on.

In-process services over the fake:// transport and SQLite files, as in
test_super_build.py: the API database, cell1 (``[database]``) and cell0.
A super-conductor that died is one whose build requests carry its name
and were last renewed longer ago than the grace period (what a process
that stopped renewing leaves); the one that takes them over is the real
conductor of the in-process cluster, or a SuperBuildTask of the test.
"""

import datetime
import random
import threading

from oslo_utils import uuidutils
import pytest
import sqlalchemy as sa

from conductor import manager as conductor_manager
from conductor.tasks import build
from conductor.tasks import resume_builds
from conductor.tasks import super_build
from scheduler import cells
from scheduler import context as gantt_context
from scheduler.db import api as db_api
from scheduler.db import api_models
from scheduler.db import build_requests as db_build_requests
from scheduler.db import claims
from scheduler.db import compute_nodes as db_compute_nodes
from scheduler.db import mappings
from scheduler.db import models
from scheduler import exception
from tests.fixtures import databases
from tests.unit.conductor import test_super_build as super_checks
from tests.unit import inprocess

HOST = super_checks.HOST
CELL1 = super_checks.CELL1
CELL2 = '22222222-2222-2222-2222-222222222222'
DEAD = 'dead-super:4242:0badc0de'
GRACE = 60

supercell = super_checks.supercell
cell0_url = super_checks.cell0_url
api_state = super_checks.api_state
rows_in = super_checks.rows_in


def spec(count=1):
    return inprocess.Cluster.spec(1, 512, 1, count=count, project_id='p1')


def accepted_by_dead_owner(count=1):
    """A build accepted by a super-conductor that died before it
    scheduled it; its uuids."""
    uuids = [uuidutils.generate_uuid() for _ in range(count)]
    dead = super_build.SuperBuildTask(None, None, owner=DEAD)
    assert dead.accept(uuids, spec(count))
    age(GRACE + 1)
    return uuids


def age(seconds, created=False):
    """Every build request last renewed (and, with ``created``, made)
    ``seconds`` ago."""
    then = models.utcnow() - datetime.timedelta(seconds=seconds)
    values = {'updated_at': then}
    if created:
        values['created_at'] = then
    with db_api.api_writer() as session:
        session.execute(sa.update(api_models.BuildRequest.__table__)
                        .values(**values))


def build_requests():
    """{uuid: (owner, waiting cell, fault)}."""
    with db_api.api_reader() as session:
        return {row.instance_uuid: (row.owner, row.waiting_cell_uuid,
                                    row.fault)
                for row in session.execute(sa.select(
                    api_models.BuildRequest.__table__))}


def conductor_task(cluster):
    return cluster.services[0].manager.compute_task_mgr.build_task


def test_a_dead_super_conductor_s_builds_are_built_by_the_next_at_start(
        supercell, cell0_url):
    super_checks.map_cell0(cell0_url)
    uuids = accepted_by_dead_owner(count=2)
    with inprocess.Cluster({'h1': HOST}) as cluster:
        # Its first run, when it starts, takes them over.
        rows = cluster.wait_built(uuids)
    assert {row.vm_state for row in rows.values()} == {'active'}
    assert api_state() == {uuid: ('cell1', 'none') for uuid in uuids}
    assert super_checks.allocations() == 2
    assert rows_in(cell0_url) == {}


def test_a_live_owner_keeps_its_build_requests(supercell):
    live = super_build.SuperBuildTask(None, None, owner='live:1:a')
    other = super_build.SuperBuildTask(None, None, owner='other:2:b')
    uuids = [uuidutils.generate_uuid()]
    assert live.accept(uuids, spec())
    # Its last renewal looks old, but it is alive: its next run renews
    # before the other looks.
    age(GRACE + 1)
    assert live.resumer.run(None) == (0, 0)
    assert other.resumer.run(None) == (0, 0)
    assert build_requests() == {uuids[0]: ('live:1:a', None, None)}


def test_a_super_conductor_waits_a_run_after_the_api_database_is_back(
        supercell, config):
    uuids = accepted_by_dead_owner()
    task = super_build.SuperBuildTask(None, None, owner='late:3:c')
    good = config.conf.api_database.connection
    config.config(connection='sqlite:////nonexistent/dir/api.sqlite',
                  group='api_database')
    db_api.dispose_engine()
    assert task.resumer.run(None) == (0, 0)
    config.config(connection=good, group='api_database')
    db_api.dispose_engine()
    # Back: it renews its own first and takes nothing yet.
    assert task.resumer.run(None) == (0, 0)
    assert build_requests()[uuids[0]][0] == DEAD


def test_a_build_request_past_the_build_timeout_is_buried_in_cell0(
        supercell, database, cell0_url, config):
    config.config(instance_build_timeout=300)
    super_checks.map_cell0(cell0_url)
    uuids = accepted_by_dead_owner()
    age(301, created=True)
    task = super_build.SuperBuildTask(None, None, owner='next:5:e')

    assert task.resumer.run(None) == (0, 1)
    task.stop()

    row = rows_in(cell0_url)[uuids[0]]
    assert (row.vm_state, row.fault) == ('error', resume_builds.TIMED_OUT
                                         % 300)
    assert api_state() == {uuids[0]: ('cell0', 'none')}
    assert rows_in(database) == {}
    assert task.leases.held() == set()


def _cell2_with_a_node(url):
    """cell2 mapped (no broker of its own) with one compute node; the
    node's id."""
    with db_api.api_writer() as session:
        mappings.create_cell(session, CELL2, 'cell2', None, url)
    cells.clear_cache()
    with db_api.target_cell(url), db_api.writer() as session:
        db_compute_nodes.report_inventory(
            session, uuidutils.generate_uuid(), 'b1', 'b1', dict(
                vcpus=8, memory_mb=16384, local_gb=200))
        return db_compute_nodes.get_node_by_name(session, 'b1', 'b1').id


def _usage(url):
    with db_api.target_cell(url), db_api.reader() as session:
        allocations = session.scalar(sa.select(sa.func.count()).select_from(
            models.Allocation))
        used = session.scalar(sa.select(sa.func.sum(
            models.ComputeNode.vcpus_used)))
    return allocations, used


def test_what_a_dead_owner_left_in_another_cell_is_cleared(
        supercell, database, cell0_url):
    super_checks.map_cell0(cell0_url)
    with databases.cell_database('sqlite') as cell2_url:
        node_id = _cell2_with_a_node(cell2_url)
        [uuid] = accepted_by_dead_owner(count=1)
        # The dead super-conductor got as far as the scheduler's claim in
        # cell2 and the instance's row there, not its mapping.
        with db_api.target_cell(cell2_url):
            assert claims.claim_in_sql(node_id, uuid,
                                       claims.Resources(1, 512, 1))
            build._record([uuid], spec())
        assert _usage(cell2_url) == (1, 1)

        with inprocess.Cluster({'h1': HOST}) as cluster:
            rows = cluster.wait_built([uuid])

        # Built once, in cell1 (cell2's node was never reported, so
        # the scheduler had only h1); nothing left in cell2.
        assert rows[uuid].vm_state == 'active'
        assert api_state() == {uuid: ('cell1', 'none')}
        assert rows_in(cell2_url) == {}
        assert _usage(cell2_url) == (0, 0)
        assert super_checks.allocations() == 1


def test_a_row_of_another_request_with_the_same_uuid_is_left_alone(
        supercell, database, cell0_url):
    super_checks.map_cell0(cell0_url)
    [uuid] = accepted_by_dead_owner()
    with db_api.target_cell(database):
        build._record([uuid], inprocess.Cluster.spec(2, 1024, 2))
    task = super_build.SuperBuildTask(None, None, owner='next:6:f')
    with db_api.api_reader() as session:
        requests = mappings.build_requests_of(session, [uuid])

    assert resume_builds._clear_cells(requests) == (None, 0)

    assert rows_in(database)[uuid].flavor['vcpus'] == 2
    assert task.leases.held() == set()


def test_a_build_left_waiting_for_its_cell_is_built_once_it_answers(
        supercell, database, cell0_url):
    supercell.config(db_max_retries=1, db_retry_interval=1,
                     group='database')
    # Its runs are the test's own (after the one at start).
    supercell.config(build_request_poll_interval=3600,
                     build_request_grace_period=7201, group='conductor')
    super_checks.map_cell0(cell0_url)
    ctxt = gantt_context.get_admin_context()
    with inprocess.Cluster({'h1': HOST}) as cluster:
        resumer = conductor_task(cluster).resumer
        with super_checks.instance_inserts_fail(database, -1):
            [uuid] = cluster.boot(vcpus=1, memory_mb=512, root_gb=1)
            super_checks.wait_for(
                lambda: build_requests().get(uuid, (0,))[0] is None,
                'the build request to be left behind')
        owner, waiting, fault = build_requests()[uuid]
        assert waiting == CELL1
        assert fault.startswith('Creating the instance in cell cell1 '
                                'failed')
        # Its database does not answer: it waits, however long.
        with super_checks.statements_fail(
                db_api.get_engine(), 'SELECT 1', -1):
            age(7201 * 2)
            assert resumer.run(ctxt) == (0, 0)
            assert resumer.run(ctxt) == (0, 0)
        assert build_requests()[uuid][:2] == (None, CELL1)
        # It answers at two runs in a row: scheduled again.
        assert resumer.run(ctxt) == (0, 0)
        assert resumer.run(ctxt) == (1, 0)
        rows = cluster.wait_built([uuid])
    assert rows[uuid].vm_state == 'active'
    assert api_state() == {uuid: ('cell1', 'none')}
    assert super_checks.allocations() == 1


def _lost_to_another(database, other_created):
    """A super-conductor ('hung') accepted a build and hung past the
    grace period; another ('next') took the build request over (and,
    with ``other_created``, created the instance in cell1). Then the
    hung one wakes up and creates it in cell1: whether it went on."""
    hung = super_build.SuperBuildTask(None, None, owner='hung:7:a')
    [uuid] = [uuidutils.generate_uuid()]
    assert hung.accept([uuid], spec())
    age(GRACE + 1)
    cutoff = models.utcnow() - datetime.timedelta(seconds=GRACE)
    with db_api.api_writer() as session:
        assert db_build_requests.take(session, uuid, 'next:8:b', cutoff)
    if other_created:
        with db_api.target_cell(database):
            build._record([uuid], spec())
    cell1 = cells.get_cell(CELL1)
    with cells.target(cell1):
        went_on = super_build._create_in_cell(uuid, spec(), cell1,
                                              'hung:7:a')
    return uuid, went_on


def test_a_super_conductor_that_lost_the_build_undoes_its_creation(
        supercell, database):
    uuid, went_on = _lost_to_another(database, other_created=False)

    assert not went_on
    # Not mapped: the build is the other's, whose request is intact.
    assert rows_in(database) == {}
    assert api_state() == {uuid: (None, None)}
    assert build_requests()[uuid][0] == 'next:8:b'


def test_a_super_conductor_that_lost_the_build_leaves_the_other_s_row(
        supercell, database):
    uuid, went_on = _lost_to_another(database, other_created=True)

    assert not went_on
    assert [row.vm_state for row in rows_in(database).values()] == [
        'building']
    assert api_state() == {uuid: (None, None)}
    assert build_requests()[uuid][0] == 'next:8:b'


def test_racing_super_conductors_take_each_build_request_once(
        any_api_database, config):
    uuids = [uuidutils.generate_uuid() for _ in range(40)]
    with db_api.api_writer() as session:
        for uuid in uuids:
            mappings.create_instance_mapping(session, uuid, 'p1')
            mappings.create_build_request(session, uuid, 'p1', {},
                                          owner=DEAD)
    age(GRACE + 1)
    cutoff = models.utcnow() - datetime.timedelta(seconds=GRACE)
    won = {'a': [], 'b': []}
    start = threading.Barrier(2)

    def take_all(owner):
        order = list(uuids)
        random.Random(owner).shuffle(order)
        start.wait()
        for uuid in order:
            with db_api.api_writer() as session:
                if db_build_requests.take(session, uuid, owner, cutoff):
                    won[owner].append(uuid)

    threads = [threading.Thread(target=take_all, args=(owner,))
               for owner in won]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    assert sorted(won['a'] + won['b']) == sorted(uuids)
    assert not set(won['a']) & set(won['b'])
    # The loser can neither end nor leave what it did not win.
    with db_api.api_writer() as session:
        owner_of = {uuid: owner for owner, taken in won.items()
                    for uuid in taken}
        loser = {'a': 'b', 'b': 'a'}
        assert not any(db_build_requests.finish(session, uuid,
                                                loser[owner_of[uuid]])
                       for uuid in uuids)
        assert not any(db_build_requests.leave(session, uuid,
                                               loser[owner_of[uuid]], 'x')
                       for uuid in uuids)
        assert db_build_requests.renew(session, 'a', uuids) == \
            len(won['a'])


def test_a_grace_period_a_live_owner_cannot_renew_within_is_refused(
        supercell):
    supercell.config(build_request_poll_interval=30,
                     build_request_grace_period=60, group='conductor')
    with pytest.raises(exception.ConfigError,
                       match='build_request_grace_period \\(60\\) must be '
                             'more than twice'):
        conductor_manager.ConductorManager()


def test_the_periodic_task_runs_only_on_a_super_conductor(supercell,
                                                          config):
    names = [task.name for task in
             conductor_manager.ConductorManager().periodic_tasks()]
    assert names == ['conductor_periodic_tasks', 'build_requests']
    config.config(connection=None, group='api_database')
    names = [task.name for task in
             conductor_manager.ConductorManager().periodic_tasks()]
    assert names == ['conductor_periodic_tasks']


def test_resuming_keeps_going_through_an_api_database_error(supercell):
    task = super_build.SuperBuildTask(None, None, owner='next:9:c')
    ctxt = gantt_context.get_admin_context()
    with super_checks.statements_fail(db_api.api_engine(), 'SELECT', -1):
        assert task.resumer.run(ctxt) == (0, 0)
