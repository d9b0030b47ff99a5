"""The mirror over several of Nova's cells, aggregates that change, the
private mirror file of a process, and the periodic full compare (the
fixtures are conftest.py's)."""

import pathlib
import subprocess
import sys

import pytest
import sqlalchemy as sa

from scheduler import conf
from scheduler.db import api as db_api
from scheduler import host_cache
from scheduler.nova import mirror
from scheduler.nova import nova_reader
from tests.unit.nova import nova_cloud

CONF = conf.CONF

pytestmark = pytest.mark.filterwarnings(
    "ignore:'cgi' is deprecated:DeprecationWarning")

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_hosts_of_every_enabled_cell_with_their_cell(synced, cloud):
    cell2 = cloud.add_cell('cell2')
    cloud.add_cell('cell3', disabled=True)
    cloud.add_compute('host1')
    cloud.add_compute('host2', cell='cell2')
    cloud.add_compute('host3', cell='cell3')
    synced.sync()
    manager = host_cache.HostManager(auto_refresh=False)
    hosts = nova_cloud.by_host(manager.refresh(full=True))
    # As Nova's HostManager: cell0 has no hosts, a disabled cell's are
    # not scheduled to.
    assert set(hosts) == {'host1', 'host2'}
    assert synced.cell_uuid_of('host1') == cloud.cell1_uuid
    assert synced.cell_uuid_of('host2') == cell2


def test_aggregate_changes_reach_the_cache(synced, cloud):
    one = cloud.add_compute('host1')
    cloud.add_compute('host2')
    zone = cloud.add_aggregate('zone', ['host1', 'host2'],
                               availability_zone='az1')
    synced.sync()
    manager = host_cache.HostManager(auto_refresh=False)
    manager.refresh(full=True)

    # A metadata value changed in place, and a Placement aggregate of
    # Nova's aggregate on one provider, and one Placement alone knows.
    cloud.set_metadata(zone, 'availability_zone', 'az2')
    lonely = '7d0c4f3e-0000-4000-8000-00000000000b'
    cloud.set_aggregates(one, zone, lonely)
    written = synced.sync_into(manager)
    assert written.changes['aggregates changed'] == 1
    assert written.changes['aggregates added'] == 1
    hosts = nova_cloud.by_host(manager.snapshot())
    assert hosts['host1'].availability_zones == {'az2'}
    assert hosts['host2'].availability_zones == {'az2'}
    assert {agg.uuid for agg in hosts['host1'].aggregates} == {zone, lonely}
    assert {agg.uuid for agg in hosts['host2'].aggregates} == {zone}
    lonely_agg = next(agg for agg in hosts['host1'].aggregates
                      if agg.uuid == lonely)
    assert lonely_agg.name == 'placement:%s' % lonely

    cloud.set_aggregates(one)
    synced.sync_into(manager)
    hosts = nova_cloud.by_host(manager.snapshot())
    assert {agg.uuid for agg in hosts['host1'].aggregates} == {zone}


_PRIVATE = '''
import os, sys
from scheduler import conf
from scheduler.nova import mirror
from scheduler.nova import nova_reader
CONF = conf.CONF
CONF([], project='gantt', default_config_files=[])
CONF.set_override('connection', sys.argv[1], group='api_database')
mirror.configure(CONF, client_factory=lambda: None)
path = CONF.database.connection[len('sqlite:///'):]
assert os.path.isfile(path), path
print(path)
'''


def test_the_default_mirror_is_a_private_file_removed_at_exit(cloud):
    done = subprocess.run(
        [sys.executable, '-c', _PRIVATE, cloud.api_url], cwd=str(ROOT),
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    path = pathlib.Path(done.stdout.strip().splitlines()[-1])
    assert path.name == 'mirror.sqlite'
    assert path.parent.name.startswith('gantt-nova-mirror-')
    assert not path.parent.exists()


def test_a_full_compare_restores_what_changed_behind_the_sync(
        synced, cloud, monkeypatch):
    cloud.add_compute('host1')
    cloud.add_instance('host1')
    synced.sync()
    before = nova_cloud.mirror_rows()
    # Another writer of the mirror (none should be) removes rows.
    with db_api.writer() as session:
        session.execute(sa.text('DELETE FROM instances'))
    # Within FULL_COMPARE_INTERVAL an unchanged part is not read again...
    assert not synced.sync()
    assert nova_cloud.mirror_rows()['instances'] == []
    # ...at the next full compare it is.
    monkeypatch.setattr(mirror, 'FULL_COMPARE_INTERVAL', 0.0)
    assert synced.sync().changes == {'instances added': 1}
    after = nova_cloud.mirror_rows()
    assert [row[1] for row in after.pop('instances')] == [
        row[1] for row in before.pop('instances')]
    assert after == before


def test_a_worker_s_cache_hears_of_changes_another_worker_wrote(
        synced, cloud, switch):
    # Two syncs on one mirror, as the forked workers of a scheduler.
    other = mirror.Mirror(nova_reader.NovaReader(cloud.api_url),
                          lambda: switch)
    cloud.add_compute('host1')
    cloud.add_compute('host2')
    server = cloud.add_instance('host1')
    synced.sync()
    other.sync()
    manager = host_cache.HostManager(auto_refresh=False)
    manager.refresh(full=True)

    cloud.delete_compute('host2')
    cloud.delete_instance(server)
    assert other.sync().removed == 2
    written = synced.sync_into(manager)
    assert not written and written.seen
    assert written.removed == 2 and written.instance_hosts == {'host1'}
    hosts = nova_cloud.by_host(manager.snapshot())
    assert set(hosts) == {'host1'}
    assert hosts['host1'].instances == {}
    other._nova.dispose()
