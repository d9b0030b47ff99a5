"""Many schedulers, many clients, one cloud: placement without races.

One cluster per database: four gantt-scheduler processes (two of them
with two workers), two conductors and eight compute agents (four with two
nodes each), at exact allocation ratios (1.0), so that a node's capacity
is its size and nothing more. Client threads in this process cast
``build_instances`` to the conductors at once, in two waves:

1. the members of one anti-affinity server group, twice as many as there
   are hosts, each in a request of its own: exactly one member per host
   becomes ACTIVE, the others end in ERROR with NoValidHost;
2. a mix of flavors (1, 2 and 4 vCPUs with proportional memory and disk)
   in single and multi-instance requests, asking for about 5% more than
   the room left.

Afterwards no node is over capacity in any resource, each server is either
ACTIVE on a node and holds exactly its flavor there, or in ERROR with a
NoValidHost fault and holds nothing; ``gantt-manage db check`` agrees, and
the cloud is nearly full (the schedulers did not give up while room was
left). The schedulers' ``Scheduler stats:`` log lines, read after they
stopped, tell how many claims were lost to a concurrent scheduler and
retried; a summary line per database is printed and, if the environment
variable ``GANTT_STRESS_REPORT`` names a file, appended to it.
"""

import collections
import json
import math
import os
import random
import re
import signal
import subprocess
import threading
import time

from oslo_utils import uuidutils
import pytest

from conductor import rpcapi as conductor_rpcapi
from scheduler.cmd import manage_server
from scheduler import context as gantt_context
from tests.functional import cluster as cluster_mod

pytestmark = pytest.mark.functional

# (name, [scheduler] workers)
SCHEDULERS = (('sched-1', 2), ('sched-2', 2), ('sched-3', 1),
              ('sched-4', 1))
CONDUCTORS = ('cond-1', 'cond-2')
# host -> (nodes, vCPUs of each node); memory and disk follow the vCPUs.
COMPUTES = {'cmp-%d' % index: (2, 24) if index <= 4 else (1, 40)
            for index in range(1, 9)}
MB_PER_VCPU = 1024
GB_PER_VCPU = 10
# flavor vCPUs -> weight in the mix of the second wave
FLAVOR_MIX = {1: 4, 2: 3, 4: 2}
CLIENTS = 8
GROUP_REQUESTS_PER_CLIENT = 2
OVERBOOKING = 1.0 / 0.95
MIN_FILL = 0.85
SETTLE_TIMEOUT = 60

EXTRA_CONF = '''\
[filter_scheduler]
cpu_allocation_ratio = 1.0
ram_allocation_ratio = 1.0
disk_allocation_ratio = 1.0

[scheduler]
periodic_task_interval = 2
'''
STATS_LINE = re.compile(r'^\S+ \S+ (\d+) INFO \S+ .*?Scheduler stats: (.*)$',
                        re.M)


def flavor(vcpus):
    return (vcpus, vcpus * MB_PER_VCPU, vcpus * GB_PER_VCPU)


def start_cloud(cluster):
    """Daemons started side by side, then waited for."""
    for name in CONDUCTORS:
        cluster.start('gantt-conductor', name, '[DEFAULT]\nhost = %s\n'
                      % name)
    schedulers = [cluster.start(
        'gantt-scheduler', name,
        '[DEFAULT]\nhost = %s\n[scheduler]\nworkers = %d\n'
        % (name, workers)) for name, workers in SCHEDULERS]
    for process in cluster.processes[:len(CONDUCTORS)]:
        cluster.wait_for_service(process.name, 'gantt-conductor', process)
    for host, (nodes, vcpus) in COMPUTES.items():
        cluster.start_compute(
            host, vcpus=vcpus, memory_mb=vcpus * MB_PER_VCPU,
            local_gb=vcpus * GB_PER_VCPU,
            extra_conf='[fake_virt]\nnode_count = %d\n' % nodes)
    for process in schedulers:
        cluster.wait_for_service(process.name, 'gantt-scheduler', process)
    cluster.wait_for_computes(COMPUTES)
    cluster.discover_hosts()
    return schedulers


def nodes_of(cluster):
    """``{node name: row}`` with capacity (ratio 1.0) and usage."""
    rows = cluster.query(
        'SELECT host, hypervisor_hostname AS node, vcpus - reserved_vcpus '
        'AS cap_vcpus, memory_mb - reserved_memory_mb AS cap_memory_mb, '
        'local_gb - reserved_disk_gb AS cap_disk_gb, vcpus_used, '
        'memory_mb_used, local_gb_used FROM compute_nodes')
    return {row.node: row for row in rows}


def allocations_by_consumer(cluster):
    held = collections.defaultdict(list)
    for row in cluster.allocations():
        held[row.consumer_uuid].append(
            (row.node, (row.vcpus, row.memory_mb, row.disk_gb)))
    return held


class Clients:
    """``CLIENTS`` threads casting their share of the requests at once.

    Each request is ``(uuids, spec)``; the threads start together and
    cast their requests one after the other.
    """

    def __init__(self, requests):
        self.api = conductor_rpcapi.ComputeTaskAPI()
        self.shares = [requests[index::CLIENTS] for index in range(CLIENTS)]
        self.errors = []

    def run(self):
        barrier = threading.Barrier(CLIENTS)

        def cast(share):
            ctxt = gantt_context.get_admin_context()
            try:
                barrier.wait(timeout=30)
                for uuids, spec in share:
                    self.api.build_instances(ctxt, uuids, spec)
            except Exception as error:  # reported by the test
                self.errors.append(error)

        threads = [threading.Thread(target=cast, args=(share,))
                   for share in self.shares]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert not any(thread.is_alive() for thread in threads)
        assert self.errors == []


def request(vcpus, count, hints=()):
    uuids = [uuidutils.generate_uuid() for _ in range(count)]
    spec = manage_server.build_request_spec(
        *flavor(vcpus), count, None, list(hints), None, uuids)
    return uuids, spec


def fill_requests(room_vcpus, rng):
    """Requests for about ``OVERBOOKING`` times ``room_vcpus``: one in
    three asks for 2 or 3 instances at once."""
    wanted = math.ceil(room_vcpus * OVERBOOKING)
    sizes = [size for size, weight in FLAVOR_MIX.items()
             for _ in range(weight)]
    requests, asked = [], 0
    while asked < wanted:
        vcpus = rng.choice(sizes)
        count = rng.choice((1, 1, 2, 3))
        count = max(1, min(count, (wanted - asked) // vcpus))
        requests.append(request(vcpus, count))
        asked += vcpus * count
    rng.shuffle(requests)
    return requests


def wait_settled(cluster, uuids, timeout=SETTLE_TIMEOUT):
    """Until every uuid has a row and none is building; the rows."""
    wanted = set(uuids)
    rows = {}

    def settled():
        rows.clear()
        rows.update({row.uuid: row for row in cluster.instances()
                     if row.uuid in wanted})
        return len(rows) == len(wanted) and not any(
            row.vm_state == 'building' for row in rows.values())

    cluster.wait_until(settled, timeout, '%d servers to settle'
                       % len(wanted))
    return dict(rows)


def check_servers(rows, held, nodes):
    """Every server ACTIVE with exactly its flavor on its node, or ERROR
    with NoValidHost and nothing held. The ACTIVE ones' rows."""
    active = {}
    for uuid, row in rows.items():
        size = json.loads(row.flavor) if isinstance(row.flavor, str) \
            else row.flavor
        wanted = (size['vcpus'], size['memory_mb'], size['root_gb'])
        if row.vm_state == 'active':
            assert row.node in nodes and nodes[row.node].host == row.host, row
            assert held.get(uuid) == [(row.node, wanted)], (uuid, held.get(
                uuid))
            active[uuid] = row
        else:
            assert row.vm_state == 'error', row
            assert 'No valid host' in (row.fault or ''), row.fault
            assert uuid not in held, (uuid, held[uuid])
    return active


def overfilled(cluster, held):
    """Nodes over capacity, or whose usage columns differ from the sum of
    their allocations: ``[(node, problem)]``."""
    sums = collections.defaultdict(lambda: [0, 0, 0])
    for allocations in held.values():
        for node, amounts in allocations:
            for index, amount in enumerate(amounts):
                sums[node][index] += amount
    problems = []
    for node, row in nodes_of(cluster).items():
        used = (row.vcpus_used, row.memory_mb_used, row.local_gb_used)
        capacity = (row.cap_vcpus, row.cap_memory_mb, row.cap_disk_gb)
        if list(used) != sums[node]:
            problems.append((node, 'usage %s, allocations %s'
                             % (used, sums[node])))
        if any(u > c for u, c in zip(used, capacity)):
            problems.append((node, 'usage %s over capacity %s'
                             % (used, capacity)))
    return problems


def stop_side_by_side(processes, timeout=30):
    """SIGTERM them all, then wait for each: each must exit cleanly."""
    for process in processes:
        process.signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for process in processes:
        try:
            process.popen.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for process in processes:
        returncode = process.stop()
        assert returncode == 0, (process.name, returncode,
                                 process.log()[-3000:])


def scheduler_stats(processes):
    """The counters summed over every scheduler process and worker: the
    last stats line each pid logged (at its stop)."""
    last = {}
    for process in processes:
        for pid, text in STATS_LINE.findall(process.log()):
            last[(process.name, pid)] = dict(
                (key, int(value)) for key, value in
                (pair.split('=') for pair in text.split()))
    totals = collections.Counter()
    for stats in last.values():
        totals.update(stats)
    return totals, len(last)


def report(line):
    print(line)
    path = os.environ.get('GANTT_STRESS_REPORT')
    if path:
        with open(path, 'a') as report_file:
            report_file.write(line + '\n')


def group_wave(cluster, nodes):
    """Wave 1: twice as many anti-affinity members as hosts, each in a
    request of its own, at once; exactly one per host becomes ACTIVE.
    The requests, and the ACTIVE members' rows."""
    group = re.search(r'^uuid +(\S+)', cluster.manage(
        'server-group', 'create', 'stress', 'anti-affinity').stdout,
        re.M).group(1)
    members = [request(1, 1, [('group', group)])
               for _ in range(CLIENTS * GROUP_REQUESTS_PER_CLIENT)]
    Clients(members).run()
    rows = wait_settled(cluster, [uuids[0] for uuids, _spec in members])
    active = check_servers(rows, allocations_by_consumer(cluster), nodes)
    hosts = sorted(row.host for row in active.values())
    assert hosts == sorted(COMPUTES), hosts
    return members, active


# MariaDB, where concurrent claims meet deadlocks and retry: the claims
# race on every backend in tests/unit/db/test_claims.py; this is the
# daemons' side, and the suite's time is bounded.
@pytest.mark.parametrize('backend', ['mariadb'])
def test_many_schedulers_never_overfill(tmp_path, rpc_transport, backend):
    started = time.monotonic()
    rng = random.Random(backend)
    with cluster_mod.Cluster(tmp_path, backend,
                             extra_conf=EXTRA_CONF) as cluster:
        schedulers = start_cloud(cluster)
        up_seconds = time.monotonic() - started
        rpc_transport(cluster, rpc_response_timeout=30)
        nodes = nodes_of(cluster)
        capacity = sum(row.cap_vcpus for row in nodes.values())

        wave_started = time.monotonic()
        members, active = group_wave(cluster, nodes)
        member_uuids = [uuids[0] for uuids, _spec in members]
        group_seconds = time.monotonic() - wave_started

        # Wave 2: the rest of the room, overbooked, in a mix of flavors.
        room = capacity - len(active)
        fill = fill_requests(room, rng)
        wave_started = time.monotonic()
        Clients(fill).run()
        uuids = member_uuids + [uuid for ids, _spec in fill for uuid in ids]
        rows = wait_settled(cluster, uuids)
        fill_seconds = time.monotonic() - wave_started
        held = allocations_by_consumer(cluster)
        active = check_servers(rows, held, nodes)
        assert set(held) == set(active), 'allocations without a server'
        assert overfilled(cluster, held) == []
        check = cluster.manage('db', 'check', check=False)
        assert check.returncode == 0, check.stdout + check.stderr
        used = sum(size[0] for allocations in held.values()
                   for _node, size in allocations)
        assert used >= MIN_FILL * capacity, (used, capacity)
        # The group kept its policy through the second wave.
        member_hosts = [rows[uuid].host for uuid in member_uuids
                        if uuid in active]
        assert len(member_hosts) == len(set(member_hosts)) == len(COMPUTES)

        stop_side_by_side(schedulers)
        stats, counted = scheduler_stats(schedulers)
        workers = sum(workers for _name, workers in SCHEDULERS)
        assert counted >= workers, counted
        # Every claim a scheduler kept is an ACTIVE server's allocation.
        assert stats['claims'] - stats['claims_released'] == len(active)
        assert stats['requests'] >= len(members) + len(fill)

        report('stress %s: servers requested=%d (in %d requests) '
               'ACTIVE=%d ERROR=%d vCPUs used=%d/%d schedulers=%d '
               'scheduler processes/workers=%d claims retried=%d '
               'group conflicts=%d overfilled nodes=0 seconds=%.1f '
               '(start-up %.1f, group wave %.1f, fill wave %.1f)'
               % (backend, len(uuids), len(members) + len(fill),
                  len(active), len(uuids) - len(active), used, capacity,
                  len(SCHEDULERS), workers, stats['claim_retries'],
                  stats['group_conflicts'], time.monotonic() - started,
                  up_seconds, group_seconds, fill_seconds))
