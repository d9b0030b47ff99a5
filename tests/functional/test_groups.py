"""Server groups and availability zones through the real daemons.

Four computes in two zones made with ``gantt-manage aggregate``, and a
scheduler with two workers whose host cache refresh is an hour: it loads
the hosts once at start (after they are mapped), so everything it learns
later (the zones, the instances the other worker placed) comes from the
fanout casts, the aggregate ones from gantt-manage and the instance ones
from the computes. Anti-affinity members are booted into the zones with
``gantt-manage server create --hint group=...``; the member that finds no
host ends in ERROR with NoValidHost naming the filter, and ``gantt-manage
explain`` says why, per host.
"""

import re
import time

import pytest

from tests.functional import boot_scenario
from tests.functional import cluster as cluster_mod

pytestmark = pytest.mark.functional

ZONES = {'az-a': ('grp-a1', 'grp-a2'), 'az-b': ('grp-b1', 'grp-b2')}
HOSTS = [host for hosts in ZONES.values() for host in hosts]
FLAVOR = ('--vcpus', '1', '--ram', '512', '--disk', '1')

EXTRA_CONF = '''\
[filter_scheduler]
enabled_filters = AvailabilityZoneFilter,ComputeFilter,RamFilter,
    CoreFilter,DiskFilter,ServerGroupAntiAffinityFilter,
    ServerGroupAffinityFilter,SameHostFilter,DifferentHostFilter
weight_classes = RAMWeigher,ServerGroupSoftAffinityWeigher,
    ServerGroupSoftAntiAffinityWeigher
'''
# The heartbeats the scheduler caches are as old as its last refresh: the
# computes must count as up for that long.
SCHEDULER_CONF = '''\
[DEFAULT]
service_down_time = 7200
[scheduler]
host_state_refresh_interval = 3600
'''
# Seconds for a compute's update_instance_info to reach both scheduler
# workers after gantt-manage saw the server ACTIVE (the compute casts it
# right after reporting ACTIVE to the conductor).
CAST_SETTLE_SECONDS = 1.0


# PostgreSQL and MariaDB: the claim-time group checks run on SQLite too in
# tests/unit/db (test_group_claims*), which keeps this module's time down.
@pytest.fixture(scope='module', params=('postgresql', 'mariadb'))
def cluster(request, tmp_path_factory):
    cluster = cluster_mod.Cluster(
        tmp_path_factory.mktemp('groups-%s' % request.param), request.param,
        extra_conf=EXTRA_CONF)
    cluster.__enter__()
    try:
        cluster.start_conductor()
        for host in HOSTS:
            cluster.start_compute(host, vcpus=4, memory_mb=8192,
                                  local_gb=100)
        cluster.wait_for_computes(HOSTS)
        cluster.manage('discover_hosts')
        cluster.start_scheduler(workers=2, extra_conf=SCHEDULER_CONF)
        # The zones, made once the scheduler runs (it hears them from the
        # fanout), for every test of the module, whichever runs alone.
        for zone, hosts in ZONES.items():
            cluster.manage('aggregate', 'create', 'rack-%s' % zone,
                           '--availability-zone', zone)
            for host in hosts:
                cluster.manage('aggregate', 'add-host', 'rack-%s' % zone,
                               host)
        yield cluster
    finally:
        cluster.__exit__(None, None, None)


def _field(output, name):
    """The value of a ``Field  Value`` row of gantt-manage's output."""
    match = re.search(r'^%s  +(.*)$' % re.escape(name), output, re.M)
    assert match, output
    return match.group(1).strip()


def _hosts_of(cluster, uuids):
    rows = {row.uuid: row for row in cluster.instances()}
    return [rows[uuid].host for uuid in uuids]


def _boot(cluster, *args, expect_rc=0):
    uuids = boot_scenario.create(cluster, *FLAVOR, *args,
                                 expect_rc=expect_rc)
    time.sleep(CAST_SETTLE_SECONDS)
    return uuids


def test_anti_affinity_members_spread_within_zones(cluster):
    group = _field(cluster.manage('server-group', 'create', 'web',
                                  'anti-affinity').stdout, 'uuid')
    hint = ('--hint', 'group=%s' % group)

    # One request of two: the second instance sees where the first went.
    pair = _boot(cluster, '--count', '2', '--az', 'az-a', *hint)
    assert sorted(_hosts_of(cluster, pair)) == list(ZONES['az-a'])

    # One at a time, so that either worker may serve each request.
    single = [_boot(cluster, '--az', 'az-b', *hint)[0] for _ in range(2)]
    assert sorted(_hosts_of(cluster, single)) == list(ZONES['az-b'])

    # A fifth member finds every host of its zone taken.
    [refused] = _boot(cluster, '--az', 'az-a', *hint, expect_rc=1)
    row = next(r for r in cluster.instances() if r.uuid == refused)
    assert row.vm_state == 'error' and row.host is None
    assert ('ServerGroupAntiAffinityFilter 2 -> 0 (removed the last 2)'
            in row.fault), row.fault
    assert 'AvailabilityZoneFilter 4 -> 2' in row.fault
    assert not any(host in row.fault for host in HOSTS), row.fault

    shown = cluster.manage('server-group', 'show', group).stdout
    assert _field(shown, 'hosts') == ', '.join(HOSTS)
    assert '%s (no host)' % refused in shown

    explained = cluster.manage('explain', *FLAVOR, '--az', 'az-a', *hint,
                               check=False)
    assert explained.returncode == 1, explained.stderr
    for host in ZONES['az-a']:
        assert re.search(r'ServerGroupAntiAffinityFilter\s+%s\s+%s\s+.*runs '
                         r'1 member\(s\) of server group %s'
                         % (host, host, group), explained.stdout), (
            explained.stdout)
    # Nothing was claimed by explaining, and every server holds one claim.
    active = {r.uuid for r in cluster.instances() if r.vm_state == 'active'}
    assert {a.consumer_uuid for a in cluster.allocations()} == active
    assert len(active) == 4


def test_zone_change_applies_at_once(cluster):
    # Move grp-b2 into az-a: the scheduler hears it from the fanout.
    cluster.manage('aggregate', 'remove-host', 'rack-az-b', 'grp-b2')
    cluster.manage('aggregate', 'add-host', 'rack-az-a', 'grp-b2')
    uuids = _boot(cluster, '--az', 'az-a', '--count', '3')
    assert 'grp-b2' in _hosts_of(cluster, uuids)
    assert set(_hosts_of(cluster, uuids)) <= set(ZONES['az-a']) | {'grp-b2'}
