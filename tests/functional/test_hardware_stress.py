"""Pinned CPUs, huge pages and PCI devices under concurrency: four
schedulers and two conductors boot 200 instances in parallel onto a few
NUMA hosts, on PostgreSQL and on MariaDB.

Each compute reports two NUMA cells (2 shared CPUs and 8 dedicated ones
each, 2 MiB pages; the dedicated ones in 4 cores of two threads on half
of the computes, whose cells take no ``isolate`` guest, as in Nova) and
four PCI devices on cell 0; the flavors ask for pinned vCPUs (some with
``isolate``), 2 MiB pages, or a
pinned vCPU with a device (``required`` NUMA policy), more than the hosts
hold. Afterwards: no host CPU is pinned by two instances, no device is
given twice, every ACTIVE server's claim holds its pinning and pages and
the ERROR ones hold nothing, each node's NUMA and PCI usage is what its
claims add up to (``gantt-manage db check``), and the hosts are nearly
full of what could fit.
"""

import collections
import json
import random

import pytest

from scheduler.cmd import manage_server
from tests.functional import cluster as cluster_mod
from tests.functional import test_stress

pytestmark = pytest.mark.functional

SCHEDULERS = ('sched-1', 'sched-2', 'sched-3', 'sched-4')
CONDUCTORS = ('cond-1', 'cond-2')
COMPUTES = ['cmp-%d' % index for index in range(1, 7)]
INSTANCES = 200
QAT = {'name': 'qat', 'vendor_id': '8086', 'product_id': '0443',
       'device_type': 'type-PCI', 'numa_policy': 'required'}
POOL = {'vendor_id': '8086', 'product_id': '0443', 'numa_node': 0,
        'count': 4, 'tags': {'dev_type': 'type-PCI'}}


def topology(smt=True):
    cells = []
    for cell in (0, 1):
        base = cell * 10
        pcpus = list(range(base + 2, base + 10))
        cells.append({
            'id': cell, 'cpuset': [base, base + 1], 'pcpuset': pcpus,
            'memory_mb': 8192,
            'siblings': ([pcpus[index:index + 2] for index in (0, 2, 4, 6)]
                         if smt else []),
            'mempages': [{'size_kb': 4, 'total': 1048576},
                         {'size_kb': 2048, 'total': 2048}]})
    return {'cells': cells}


EXTRA_CONF = '''\
[DEFAULT]
cpu_allocation_ratio = 1.0
ram_allocation_ratio = 1.0
disk_allocation_ratio = 1.0

[filter_scheduler]
enabled_filters = ComputeFilter,RamFilter,CoreFilter,DiskFilter,
                  NUMATopologyFilter,PciPassthroughFilter

[pci]
alias = %s

[scheduler]
periodic_task_interval = 2
''' % json.dumps(QAT)

# (weight, vCPUs, memory MiB, extra specs)
FLAVORS = (
    (4, 1, 512, {'hw:cpu_policy': 'dedicated'}),
    (3, 2, 1024, {'hw:cpu_policy': 'dedicated'}),
    (2, 2, 1024, {'hw:cpu_policy': 'dedicated',
                  'hw:cpu_thread_policy': 'isolate'}),
    (3, 1, 1024, {'hw:mem_page_size': '2MB'}),
    (2, 1, 512, {'hw:cpu_policy': 'dedicated',
                 'pci_passthrough:alias': 'qat:1'}),
)


def start_cloud(cluster):
    for name in CONDUCTORS:
        cluster.start('gantt-conductor', name, '[DEFAULT]\nhost = %s\n'
                      % name)
    schedulers = [cluster.start('gantt-scheduler', name,
                                '[DEFAULT]\nhost = %s\n' % name)
                  for name in SCHEDULERS]
    for index, host in enumerate(COMPUTES):
        hardware = ('[fake_virt]\nnuma_topology = %s\n'
                    'pci_device_pools = %s\n' % (
                        json.dumps(topology(smt=index % 2 == 0)),
                        json.dumps([POOL])))
        cluster.start_compute(host, vcpus=20, memory_mb=16384, local_gb=400,
                              extra_conf=hardware)
    for process in cluster.processes:
        if process.name in CONDUCTORS + SCHEDULERS:
            binary = ('gantt-conductor' if process.name in CONDUCTORS
                      else 'gantt-scheduler')
            cluster.wait_for_service(process.name, binary, process)
    cluster.wait_for_computes(COMPUTES)
    cluster.discover_hosts()
    return schedulers


def requests(rng):
    mix = [flavor for flavor in FLAVORS for _ in range(flavor[0])]
    built = []
    for _ in range(INSTANCES):
        _weight, vcpus, memory_mb, extra_specs = rng.choice(mix)
        uuids, spec = test_stress.request(1, 1)
        spec = manage_server.build_request_spec(
            vcpus, memory_mb, 1, 1, None, [], None, uuids,
            extra_specs=list(extra_specs.items()))
        built.append((uuids, spec))
    return built


def hardware_of(cluster):
    """``{node: (numa_usage, pci_usage)}`` and ``{consumer: record}``."""
    nodes = {row.hypervisor_hostname: (json.loads(row.numa_usage or 'null'),
                                       json.loads(row.pci_usage or '{}'))
             for row in cluster.query(
                 'SELECT hypervisor_hostname, numa_usage, pci_usage '
                 'FROM compute_nodes')}
    records = {row.consumer_uuid: (row.node, json.loads(row.hardware))
               for row in cluster.query(
                   'SELECT a.consumer_uuid, n.hypervisor_hostname AS node, '
                   'a.hardware FROM allocations a JOIN compute_nodes n '
                   'ON n.id = a.compute_node_id')}
    return nodes, records


def pinned_cpus(record):
    return [cpu for cell in (record['numa'] or {}).get('cells', [])
            for _vcpu, cpu in cell['cpu_pinning'].items()] + [
        cpu for cell in (record['numa'] or {}).get('cells', [])
        for cpu in cell['reserved_cpus']]


# One backend here: the hardware claims (NUMA cells, pinned CPUs, pages,
# devices) race on all three in tests/unit/db/test_hardware_claims.py;
# this test is the daemons' side, and the suite's time is bounded.
@pytest.mark.parametrize('backend', ['postgresql'])
def test_parallel_pinned_hugepage_and_pci_boots(tmp_path, rpc_transport,
                                                backend):
    rng = random.Random('hardware-' + backend)
    with cluster_mod.Cluster(tmp_path, backend,
                             extra_conf=EXTRA_CONF) as cluster:
        start_cloud(cluster)
        rpc_transport(cluster, rpc_response_timeout=30)
        wanted = requests(rng)
        test_stress.Clients(wanted).run()
        uuids = [uuid for ids, _spec in wanted for uuid in ids]
        rows = test_stress.wait_settled(cluster, uuids, timeout=180)
        nodes, records = hardware_of(cluster)

        active = {uuid for uuid, row in rows.items()
                  if row.vm_state == 'active'}
        failed = {uuid: row.fault for uuid, row in rows.items()
                  if row.vm_state == 'error'}
        assert active | set(failed) == set(uuids)
        assert all('No valid host' in fault for fault in failed.values()), \
            set(failed.values())
        # Only ACTIVE servers hold claims, each with its hardware.
        assert set(records) == active
        specs = {ids[0]: spec for ids, spec in wanted}
        pinned_by_node = collections.defaultdict(list)
        devices_by_node = collections.Counter()
        isolated = 0
        for uuid, (node, record) in records.items():
            extra = specs[uuid].flavor.extra_specs
            assert rows[uuid].node == node
            if extra.get('hw:cpu_policy') == 'dedicated':
                assert len(record['numa']['cells'][0]['cpu_pinning']) == \
                    specs[uuid].flavor.vcpus
            if extra.get('hw:cpu_thread_policy') == 'isolate':
                # Nova (bug 1889633): never on a cell with SMT siblings.
                assert COMPUTES.index(node) % 2 == 1, node
                isolated += 1
            if 'hw:mem_page_size' in extra:
                assert record['numa']['cells'][0]['page_size_kb'] == 2048
            if 'pci_passthrough:alias' in extra:
                assert sum(record['pci'].values()) == 1
                # Required policy: the device's cell is the instance's.
                assert record['numa']['cells'][0]['host_cell'] == 0
                devices_by_node[node] += 1
            pinned_by_node[node].extend(pinned_cpus(record))
        assert isolated, 'no isolate guest placed'
        for node, cpus in pinned_by_node.items():
            assert len(cpus) == len(set(cpus)), ('pinned twice', node)
            used = sorted(cpu for cell in nodes[node][0]['cells']
                          for cpu in cell['pinned_cpus'])
            assert used == sorted(cpus), node
        for node, (_numa, pci) in nodes.items():
            assert sum(pci.values()) == devices_by_node[node] <= 4, node
        check = cluster.manage('db', 'check', check=False)
        assert check.returncode == 0, check.stdout + check.stderr
        # Nearly full: at least 85% of the dedicated CPUs are pinned.
        pinned = sum(len(cpus) for cpus in pinned_by_node.values())
        print('%s: %d active, %d NoValidHost, %d of %d dedicated CPUs '
              'pinned, %d devices given' % (
                  backend, len(active), len(failed), pinned,
                  16 * len(COMPUTES), sum(devices_by_node.values())))
        assert pinned >= 0.85 * 16 * len(COMPUTES), (pinned, len(failed))
