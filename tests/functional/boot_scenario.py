"""The boot scenario run on every backend and in both concurrency modes.

Three computes of unlike shapes, allocation ratios of 1.0 so that capacity
is tight, RAMWeigher alone so that placement is predictable, and a
scheduler with two workers. With a flavor of 1 vCPU, 1024 MB and 10 GB:

=========  =====  ======  =======  ==================================
host       vCPUs  RAM MB  disk GB  servers that fit (limited by)
=========  =====  ======  =======  ==================================
cmp-ram    4      8192    40       4 (vCPUs, disk); most free RAM
cmp-cpu    8      4096    80       4 (RAM); most vCPUs and disk
cmp-small  2      2048    20       2
=========  =====  ======  =======  ==================================

so ten such servers fill the three hosts exactly. A fourth compute,
``cmp-late``, starts after host discovery and must not be used until it is
mapped.
"""

import re

from tests.functional import checks
from tests.functional import cluster as cluster_mod

HOSTS = {
    'cmp-ram': dict(vcpus=4, memory_mb=8192, local_gb=40),
    'cmp-cpu': dict(vcpus=8, memory_mb=4096, local_gb=80),
    'cmp-small': dict(vcpus=2, memory_mb=2048, local_gb=20),
}
LATE_HOST = 'cmp-late'
LATE_SIZE = dict(vcpus=2, memory_mb=2048, local_gb=20)
SERVERS_THAT_FIT = {'cmp-ram': 4, 'cmp-cpu': 4, 'cmp-small': 2}

FLAVOR = ('--vcpus', '1', '--ram', '1024', '--disk', '10')

EXTRA_CONF = '''\
[filter_scheduler]
cpu_allocation_ratio = 1.0
ram_allocation_ratio = 1.0
weight_classes = RAMWeigher
'''

SERVER_TIMEOUT = '60'


def start(workdir, backend, eventlet=False):
    """Enter a Cluster with the conductor, the three computes and a
    scheduler with two workers running; the caller exits it."""
    cluster = cluster_mod.Cluster(workdir, backend, eventlet=eventlet,
                                  extra_conf=EXTRA_CONF)
    cluster.__enter__()
    try:
        cluster.start_conductor()
        for host, size in HOSTS.items():
            cluster.start_compute(host, **size)
        cluster.start_scheduler(workers=2)
        cluster.wait_for_computes(list(HOSTS))
        cluster.discover_hosts()
    except BaseException:
        cluster.__exit__(None, None, None)
        raise
    return cluster


def create(cluster, *args, expect_rc=0):
    """``server create ... --wait``; the UUIDs it printed."""
    result = cluster.manage('server', 'create', *args, '--wait',
                            '--timeout', SERVER_TIMEOUT, check=False)
    assert result.returncode == expect_rc, (
        'server create %s exited %d, expected %d:\n%s\n%s'
        % (' '.join(args), result.returncode, expect_rc, result.stdout,
           result.stderr))
    # The UUIDs come first, one a line, then the table of where they went.
    uuids = []
    for line in result.stdout.splitlines():
        if not re.fullmatch(r'[0-9a-f-]{36}', line):
            break
        uuids.append(line)
    return uuids


def servers(cluster, uuids):
    rows = {row.uuid: row for row in cluster.instances()}
    return [rows[uuid] for uuid in uuids]


def assert_failed_without_claims(cluster, uuid):
    (row,) = servers(cluster, [uuid])
    assert row.vm_state == 'error', row
    assert row.host is None and row.node is None, row
    assert uuid not in {a.consumer_uuid for a in cluster.allocations()}
    return row.fault


def run(cluster):
    """The whole scenario; asserts at every step."""
    # One server goes to the host with the most free RAM, although
    # another host has more vCPUs and disk.
    (first,) = create(cluster, *FLAVOR)
    (row,) = servers(cluster, [first])
    assert (row.vm_state, row.host, row.node) == ('active', 'cmp-ram',
                                                  'cmp-ram'), row
    checks.assert_consistent(cluster)

    # Too big for every host: ERROR, the fault names the filter that
    # removed the last hosts, and nothing is claimed.
    (too_big,) = create(cluster, '--vcpus', '1', '--ram', '9000', '--disk',
                        '1', expect_rc=1)
    fault = assert_failed_without_claims(cluster, too_big)
    assert 'No valid host' in fault, fault
    assert re.search(r'\bRamFilter 3 -> 0\b', fault), fault
    assert 'Traceback' not in fault, fault
    checks.assert_consistent(cluster)

    # Nine more fill the three hosts exactly.
    rest = create(cluster, *FLAVOR, '--count', '9')
    assert len(rest) == 9
    placed = servers(cluster, [first] + rest)
    assert all(row.vm_state == 'active' and row.host and row.node
               for row in placed), placed
    per_host = {host: sum(1 for row in placed if row.host == host)
                for host in HOSTS}
    assert per_host == SERVERS_THAT_FIT
    checks.assert_consistent(cluster)
    usage = cluster.node_usage()
    for host, size in HOSTS.items():
        node = usage[host]
        assert node.vcpus_used == SERVERS_THAT_FIT[host]
        assert node.memory_mb_used == 1024 * SERVERS_THAT_FIT[host]
        assert node.local_gb_used == 10 * SERVERS_THAT_FIT[host]

    # A compute that reported after discovery is not scheduled to, even
    # though it is the only one with room...
    late = cluster.start_compute(LATE_HOST, **LATE_SIZE)
    cluster.wait_for_computes([LATE_HOST])
    assert checks.host_list(cluster)[LATE_HOST]['Mapped'] == 'no'
    (unplaced,) = create(cluster, *FLAVOR, expect_rc=1)
    fault = assert_failed_without_claims(cluster, unplaced)
    assert 'No valid host' in fault, fault
    node = cluster.node_usage()[LATE_HOST]
    assert (node.vcpus_used, node.memory_mb_used, node.local_gb_used) == (
        0, 0, 0)
    assert 'Spawned' not in late.log()

    # ...until it is mapped.
    result = cluster.discover_hosts()
    assert LATE_HOST in result.stdout, result.stdout
    assert checks.host_list(cluster)[LATE_HOST]['Mapped'] == 'yes'
    (mapped,) = create(cluster, *FLAVOR)
    (row,) = servers(cluster, [mapped])
    assert (row.vm_state, row.host, row.node) == ('active', LATE_HOST,
                                                  LATE_HOST), row
    checks.assert_consistent(cluster)


def assert_backend_logged(cluster, backend_name):
    """Every daemon's log says which oslo.service backend it loaded:
    oslo.service's own line, or Gantt's, which says the same once logging
    is set up (oslo.service picks its backend before that)."""
    lines = ('Loading backend: %s' % backend_name,
             'runs on the %s backend' % backend_name)
    missing = [name for name, log in cluster.logs().items()
               if not any(line in log for line in lines)]
    assert not missing, 'none of %s in the logs of %s' % (lines, missing)


def assert_no_log_from(cluster, module):
    for name, log in cluster.logs().items():
        assert module not in log, '%s: a log line from %s' % (name, module)
