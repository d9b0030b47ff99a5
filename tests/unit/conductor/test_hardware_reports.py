"""A real compute agent reports its configured hardware through the real
conductor (ConductorAPI 1.3) and the scheduler's host cache carries it;
a conductor capped below 1.3 gets the report without it. In-process
(fake:// transport, SQLite)."""

import json

from oslo_utils import uuidutils
import pytest

from conductor import payloads
from conductor import rpcapi as conductor_rpcapi
from scheduler import context as gantt_context
from scheduler.db import api as db_api
from scheduler.db import compute_nodes as db_compute_nodes
from scheduler import exception
from tests.unit import inprocess

TOPOLOGY = {'cells': [
    {'id': 0, 'cpuset': [0, 1], 'pcpuset': [2, 3], 'memory_mb': 2048,
     'siblings': [[0, 1], [2, 3]],
     'mempages': [{'size_kb': 4, 'total': 524288},
                  {'size_kb': 2048, 'total': 0}]},
    {'id': 1, 'cpuset': [4, 5], 'pcpuset': [6, 7], 'memory_mb': 2048}]}
POOLS = [{'vendor_id': '8086', 'product_id': '154d', 'numa_node': 1,
          'count': 2, 'tags': {'dev_type': 'type-VF',
                               'physical_network': 'physnet1'}}]
CPU_INFO = {'arch': 'x86_64', 'model': 'Haswell', 'vendor': 'Intel',
            'features': ['avx2'], 'maxphysaddr': {'mode': 'emulate',
                                                   'bits': 46}}
HOSTS = {
    'h1': {'vcpus': 8, 'memory_mb': 4096, 'local_gb': 100,
           'numa_topology': json.dumps(TOPOLOGY),
           'pci_device_pools': json.dumps(POOLS),
           'cpu_info': json.dumps(CPU_INFO), 'disk_available_least': 60},
    'h2': {'vcpus': 8, 'memory_mb': 4096, 'local_gb': 100},
}


def _row(host):
    with db_api.reader() as session:
        [row] = [row for row in db_compute_nodes.get_nodes(session)
                 if row.host == host]
    return row


def _scheduler_state(cluster, host):
    manager = cluster.services[-1].manager.driver.host_manager
    table = manager.refresh(full=True)
    return table.states[table.rows_by_host[host][0]]


def test_the_scheduler_carries_what_the_agent_reports(database, config):
    inprocess.configure(config)
    with inprocess.Cluster(HOSTS) as cluster:
        h1 = _scheduler_state(cluster, 'h1')
        h2 = _scheduler_state(cluster, 'h2')
    assert (h1.numa_topology, h1.pci_device_pools, h1.cpu_info) == (
        TOPOLOGY, POOLS, CPU_INFO)
    assert (h1.disk_available_least, h1.free_disk_mb) == (60, 60 * 1024)
    assert (h1.numa_usage, h1.pci_usage, h1.free_pci_devices) == (
        None, {}, 2)
    assert (h2.numa_topology, h2.pci_device_pools, h2.cpu_info,
            h2.disk_available_least) == (None, [], {}, None)


def test_a_pci_request_lands_on_the_host_that_reports_the_devices(
        database, config):
    inprocess.configure(config)
    config.config(alias=[json.dumps({
        'name': 'nic', 'vendor_id': '8086', 'product_id': '154d',
        'device_type': 'type-VF'})], group='pci')
    config.config(enabled_filters=['ComputeFilter', 'DiskFilter',
                                   'PciPassthroughFilter'],
                  group='filter_scheduler')
    with inprocess.Cluster(HOSTS) as cluster:
        spec = cluster.spec(1, 512, 1, count=2)
        spec.flavor.extra_specs = {'pci_passthrough:alias': 'nic:1'}
        wants_nic = [uuidutils.generate_uuid() for _ in range(2)]
        conductor_rpcapi.ComputeTaskAPI().schedule_and_build_instances(
            gantt_context.get_admin_context(), wants_nic, spec)
        rows = cluster.wait_built(wants_nic)
    assert [(row.vm_state, row.host) for row in rows.values()] == [
        ('active', 'h1')] * 2


def test_a_conductor_capped_at_1_2_gets_the_report_without_hardware(
        database, config):
    inprocess.configure(config)
    config.config(conductor='1.2', group='upgrade_levels')
    with inprocess.Cluster({'h1': HOSTS['h1']}):
        row = _row('h1')
    assert (row.vcpus, row.local_gb) == (8, 100)
    assert (row.numa_topology, row.pci_device_pools, row.cpu_info,
            row.disk_available_least) == (None, None, None, None)
    # Nor the initial ratios, which a conductor of the release before
    # refuses: the node records none, and is counted with the defaults.
    assert (row.cpu_allocation_ratio, row.ram_allocation_ratio,
            row.disk_allocation_ratio) == (None, None, None)


def test_the_conductor_refuses_a_topology_out_of_shape():
    inventory = {'vcpus': 4, 'numa_topology': {'cells': [
        {'id': 0, 'cpuset': [0], 'memory_mb': -1}]}}
    node = {'uuid': '2f1e7b7c-3a41-4c55-9b7e-0d2f9d5c1a10',
            'nodename': 'h1', 'inventory': inventory}
    with pytest.raises(exception.InvalidRequest) as error:
        payloads.checked_nodes('h1', [node])
    assert str(error.value) == (
        'Invalid request: nodes[0].inventory.numa_topology.cells[0]'
        '.memory_mb must be at least 0, not -1')
