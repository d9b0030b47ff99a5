"""The reads of an incremental refresh: each a union in one statement,
each row once, on every backend."""

import datetime

import pytest

from scheduler.db import api as db_api
from scheduler.db import models
from scheduler import host_reads
from tests.fixtures import databases
from tests.unit.scheduler import fakes


@pytest.fixture(params=databases.BACKENDS)
def cell_url(request):
    with databases.cell_database(request.param) as url:
        yield url


def test_written_and_reread_nodes_come_once_each(cell_url):
    with db_api.target_cell(cell_url):
        cloud = fakes.Cloud()
        old = cloud.add_node('old')
        alive_since = models.utcnow() - datetime.timedelta(seconds=60)
        since = models.utcnow() + datetime.timedelta(seconds=1)
        with db_api.reader() as session:
            assert host_reads.read_changes(
                session, since, set(), alive_since, set()) == ([], [])
            # 'old' was not written since: only the reread brings it.
            nodes, _services = host_reads.read_changes(
                session, since, {old}, alive_since, set())
            assert [row.id for row in nodes] == [old]
            assert isinstance(nodes[0].stats, (str, type(None)))
        fresh = cloud.add_node('fresh')
        since = models.utcnow() - datetime.timedelta(seconds=30)
        with db_api.reader() as session:
            nodes, _services = host_reads.read_changes(
                session, since, {fresh, old}, alive_since, set())
    # Both written since and reread: once each, in id order.
    assert [row.id for row in nodes] == sorted([old, fresh])


def test_service_changes_are_written_dead_and_revived_hosts_once(cell_url):
    with db_api.target_cell(cell_url):
        cloud = fakes.Cloud()
        for host in ('quiet', 'dead', 'revived'):
            cloud.add_node(host)
        cloud.set_last_seen('dead', 3600)
        alive_since = models.utcnow() - datetime.timedelta(seconds=60)
        # Nothing written since `since`: the dead one still comes, and
        # the host believed dead comes to show it heartbeated again.
        since = models.utcnow() + datetime.timedelta(seconds=1)
        with db_api.reader() as session:
            rows = host_reads.read_service_changes(
                session, since, alive_since, {'revived', 'dead'})
        assert [row.host for row in rows] == ['dead', 'revived']
        # Written since, dead and believed dead at once: one row.
        since = models.utcnow() - datetime.timedelta(seconds=30)
        with db_api.reader() as session:
            rows = host_reads.read_service_changes(
                session, since, alive_since, {'dead'})
    assert sorted(row.host for row in rows) == ['dead', 'quiet', 'revived']
    assert len({row.id for row in rows}) == len(rows) == 3
