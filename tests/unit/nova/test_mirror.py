"""The mirror of Nova mode: Nova's databases (SQLite files with the
columns Nova mode reads) and the real Placement in process, synced into
a mirror in Gantt's schema that a real HostManager reads; changes reach
it at the next sync; a Nova database or Placement away leaves the
mirror as it was; nothing is ever written into Nova's databases."""

import datetime

import pytest
import sqlalchemy as sa

from scheduler import conf
from scheduler.db import api as db_api
from scheduler import host_cache
from scheduler.nova import mirror
from scheduler.nova import nova_reader
from scheduler.resources import request as request_mod
from tests.unit.nova import nova_cloud

CONF = conf.CONF

pytestmark = pytest.mark.filterwarnings(
    "ignore:'cgi' is deprecated:DeprecationWarning")

def fresh_hosts():
    """``{host: HostState}`` of a new HostManager's first load."""
    return nova_cloud.by_host(
        host_cache.HostManager(auto_refresh=False).refresh(full=True))


def ask(resources, required=(), member_of=()):
    return request_mod.ResourceRequest(groups=(request_mod.RequestGroup(
        resources=resources, required_traits=frozenset(required),
        forbidden_traits=frozenset(), member_of=member_of),))


@pytest.fixture
def with_replica(config, cloud):
    config.config(slave_connection=cloud.cell_url, group='database')


def test_configure_points_gantt_at_the_mirror_alone(with_replica, synced,
                                                    cloud):
    assert CONF.database.connection.endswith('mirror.sqlite')
    assert CONF.database.slave_connection is None
    assert CONF.api_database.connection is None
    assert not db_api.api_database_configured()


def test_nova_hosts_reach_the_host_manager(synced, cloud):
    gold = cloud.add_compute('host1', vcpus=8, memory_mb=8192,
                             PCPU={'total': 4})
    plain = cloud.add_compute('host2', vcpus=4, memory_mb=4096)
    cloud.set_traits(gold, 'CUSTOM_GOLD', 'HW_CPU_X86_AVX2')
    fast = cloud.add_aggregate('fast', ['host1'],
                               availability_zone='az1')
    shared = '5a1d2c7e-0000-4000-8000-00000000000a'
    cloud.set_aggregates(plain, shared)
    cloud.allocate({gold: {'VCPU': 3, 'MEMORY_MB': 1024, 'PCPU': 2}})
    # A child provider with a class of its own and its own usage: not
    # mirrored, and not counted on the root.
    child = cloud.add_child(gold, VGPU=2)
    cloud.allocate({child: {'VGPU': 1}})
    server = cloud.add_instance('host1')
    cloud.add_compute('nowhere', mapped=False)
    cloud.add_compute('unplaced', provider=False)

    written = synced.sync()
    assert written.changes['nodes added'] == 3

    manager = host_cache.HostManager(auto_refresh=False)
    table = manager.refresh(full=True)
    hosts = nova_cloud.by_host(table)
    assert set(hosts) == {'host1', 'host2', 'nowhere'}
    host1, host2 = hosts['host1'], hosts['host2']
    assert host1.uuid == gold
    assert (host1.vcpus_total, host1.vcpus_used,
            host1.cpu_allocation_ratio) == (8, 3, 4.0)
    assert host1.free_ram_mb == 8192 - 512 - 1024
    assert host2.free_ram_mb == 4096 - 512
    assert host1.inventories['PCPU'].used == 2
    assert 'VGPU' not in host1.inventories
    assert host1.traits == {'CUSTOM_GOLD', 'HW_CPU_X86_AVX2'}
    assert {agg.uuid for agg in host1.aggregates} == {fast}
    assert host1.availability_zones == {'az1'}
    assert {agg.uuid for agg in host2.aggregates} == {shared}
    assert host1.service.binary == host_cache.COMPUTE_BINARY
    assert host1.service.alive and not host1.service.disabled
    assert set(host1.instances) == {server}
    # An unmapped host is no candidate; a node without a provider is
    # not mirrored.
    assert not hosts['nowhere'].mapped
    assert list(table.candidates) == [
        state.host != 'nowhere' for state in table.states]
    # Placement's view of the table: traits, member_of, free amounts.
    placement = table.placement
    roots = list(placement.root_uuids)
    ok = placement.acceptable_roots(ask({'VCPU': 1}, ['CUSTOM_GOLD']))
    assert [roots[i] for i, fits in enumerate(ok) if fits] == [gold]
    ok = placement.acceptable_roots(ask({'VCPU': 1},
                                        member_of=((shared,),)))
    assert [roots[i] for i, fits in enumerate(ok) if fits] == [plain]
    ok = placement.acceptable_roots(ask({'PCPU': 3}))
    assert not any(ok)
    assert synced.cell_uuid_of('host1') == cloud.cell1_uuid
    # The cell its node was found in, as Nova's scheduler says.
    assert mirror.cell_uuid_of('nowhere') == cloud.cell1_uuid
    assert mirror.cell_uuid_of('unknown') is None


def test_changes_show_after_the_next_sync(synced, cloud, switch):
    one = cloud.add_compute('host1', vcpus=8)
    cloud.add_compute('host2', vcpus=8)
    gone = cloud.add_instance('host1')
    kept = cloud.add_instance('host1')
    synced.sync()
    manager = host_cache.HostManager(auto_refresh=False)
    manager.refresh(full=True)

    # Nothing changed: one listing of Placement, nothing written.
    switch.gets = 0
    assert not synced.sync()
    assert switch.gets == 1

    cloud.allocate({one: {'VCPU': 5, 'MEMORY_MB': 2048}})
    cloud.update_service('host2', disabled=True,
                         disabled_reason='maintenance')
    cloud.delete_instance(gone)
    three = cloud.add_compute('host3', vcpus=2)
    switch.gets = 0
    written = synced.sync_into(manager)
    # The list, then the two providers that changed.
    assert switch.gets == 1 + 2 * 4
    assert written.instance_hosts == {'host1'}

    hosts = nova_cloud.by_host(manager.snapshot())
    assert hosts['host1'].vcpus_used == 5
    assert hosts['host1'].memory_mb_used == 2048
    assert hosts['host2'].service.disabled
    assert hosts['host2'].service.disabled_reason == 'maintenance'
    assert set(hosts['host1'].instances) == {kept}
    assert hosts['host3'].uuid == three

    cloud.delete_compute('host3')
    written = synced.sync_into(manager)
    assert written.removed == 2
    assert 'host3' not in nova_cloud.by_host(manager.snapshot())


def service_row(host):
    with db_api.reader() as session:
        return session.execute(sa.text(
            "SELECT last_seen_up, updated_at FROM services WHERE "
            "host = :host"), {'host': host}).one()


def test_a_heartbeat_moves_last_seen_up_not_updated_at(synced, cloud):
    cloud.add_compute('host1')
    synced.sync()
    before = service_row('host1')
    heartbeat = nova_cloud.utcnow() + datetime.timedelta(seconds=1)
    cloud.update_service('host1', last_seen_up=heartbeat)
    assert synced.sync().changes == {'heartbeats': 1}
    after = service_row('host1')
    assert after.last_seen_up != before.last_seen_up
    assert str(after.last_seen_up).startswith(
        heartbeat.strftime('%Y-%m-%d %H:%M:%S'))
    assert after.updated_at == before.updated_at
    # A state change moves it.
    cloud.update_service('host1', disabled=True)
    assert synced.sync().changes == {'services changed': 1}
    assert service_row('host1').updated_at > before.updated_at


def test_dead_and_forced_down_services_are_judged_as_nova_does(
        synced, cloud):
    stale = nova_cloud.utcnow() - datetime.timedelta(
        seconds=CONF.service_down_time + 30)
    cloud.add_compute('dead', heartbeat=stale)
    cloud.add_compute('forced')
    cloud.update_service('forced', forced_down=True)
    cloud.add_compute('alive')
    synced.sync()
    hosts = fresh_hosts()
    assert not hosts['dead'].service.alive
    assert hosts['forced'].service.forced_down
    assert hosts['alive'].service.alive


def test_a_nova_database_away_leaves_the_mirror_as_it_was(
        synced, cloud, caplog):
    node = cloud.add_compute('host1')
    synced.sync()
    before = nova_cloud.mirror_rows()
    cloud.allocate({node: {'VCPU': 1}})
    cloud.add_compute('host2')
    cloud.set_cell_connection('sqlite:////nonexistent/dir/cell1.sqlite')
    for _attempt in range(2):
        with pytest.raises(mirror.SyncFailed, match='cell cell1'):
            synced.sync()
    assert nova_cloud.mirror_rows() == before
    warnings = [record for record in caplog.records
                if record.levelname == 'WARNING'
                and 'was not synced' in record.getMessage()]
    assert len(warnings) == 1
    assert 'nonexistent' in warnings[0].getMessage()

    cloud.set_cell_connection(cloud.cell_url)
    synced.sync()
    hosts = fresh_hosts()
    assert set(hosts) == {'host1', 'host2'}
    assert hosts['host1'].vcpus_used == 1


def test_placement_away_leaves_the_mirror_as_it_was(synced, cloud, switch):
    node = cloud.add_compute('host1')
    synced.sync()
    before = nova_cloud.mirror_rows()
    cloud.allocate({node: {'VCPU': 2}})
    cloud.update_service('host1', disabled=True)
    switch.away = True
    with pytest.raises(mirror.SyncFailed, match='Placement is unreachable'):
        synced.sync()
    assert synced.sync_into(None) is None
    assert nova_cloud.mirror_rows() == before
    switch.away = False
    synced.sync()
    hosts = fresh_hosts()
    assert hosts['host1'].vcpus_used == 2
    assert hosts['host1'].service.disabled


def test_nothing_is_ever_written_to_nova(synced, cloud):
    node = cloud.add_compute('host1')
    cloud.add_aggregate('fast', ['host1'], speed='high')
    cloud.add_instance('host1')
    digest = cloud.digest()
    synced.sync()
    cloud.allocate({node: {'VCPU': 1}})
    synced.sync()
    assert cloud.digest() == digest
    # The reader's own engines refuse writes.
    engine = nova_reader.read_only_engine(cloud.cell_url)
    try:
        with pytest.raises(sa.exc.OperationalError, match='readonly'):
            with engine.begin() as connection:
                connection.execute(sa.text(
                    "UPDATE services SET disabled = 1"))
    finally:
        engine.dispose()
    assert cloud.digest() == digest


def test_the_periodic_task_syncs_at_the_configured_interval(
        synced, config, cloud):
    config.config(sync_interval=7, group='nova_backend')
    cloud.add_compute('host1')
    manager = host_cache.HostManager(auto_refresh=False)
    manager.refresh(full=True)
    task = mirror.periodic_task(manager)
    assert (task.name, task.spacing) == ('nova_mirror_sync', 7)
    task.func()
    assert set(nova_cloud.by_host(manager.snapshot())) == {'host1'}


def test_cell_templates_are_filled_from_the_database_url():
    assert nova_reader.cell_url(
        'mysql+pymysql://{username}:{password}@{hostname}/nova_cell1',
        'mysql+pymysql://nova:secret@db.example/nova') == \
        'mysql+pymysql://nova:secret@db.example/nova_cell1'
    with pytest.raises(nova_reader.NovaUnavailable, match='template'):
        nova_reader.cell_url('mysql://{username}@x/y', None)


def test_without_nova_s_api_database_configure_says_so(config):
    config.config(connection=None, group='api_database')
    with pytest.raises(nova_reader.NovaUnavailable,
                       match=r'\[api_database\] connection'):
        mirror.configure(CONF)
