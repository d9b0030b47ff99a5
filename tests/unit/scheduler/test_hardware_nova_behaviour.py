"""Nova's behaviour on small examples, through scheduler.hardware (the fit
the NUMA filter and the claims share), as nova/virt/hardware.py has it.

* ``hw:cpu_thread_policy=isolate`` on a host that reports dedicated CPUs
  (``cpu_dedicated_set``; Gantt's ``pcpuset``) with hyperthread siblings
  does not fit (bug 1889633: Nova's scheduler leaves such hosts out with
  the forbidden trait ``HW_CPU_HYPERTHREADING``, and the fit refuses
  them); on a host without siblings it pins one vCPU per core.
* On a host with PCI devices, the host cells are ordered by their free
  devices last: an instance without PCI devices takes the cells with
  fewer devices first (the cells with devices stay free for instances
  that need them), one with devices the cells with more first.
"""

from scheduler import hardware
from scheduler.objects import request_spec
from scheduler.pci import pools as pci_pools
from tests.unit.scheduler.numa import hosts

QAT = ('{"name": "qat", "vendor_id": "8086", "product_id": "0443", '
       '"device_type": "type-PCI", "numa_policy": "preferred"}')


def _request(vcpus, **extra_specs):
    spec = request_spec.RequestSpec(flavor=request_spec.Flavor(
        vcpus=vcpus, memory_mb=1024, root_gb=1, extra_specs=extra_specs))
    return hardware.Request.from_spec(spec)


def _host(topology, pools=(), usage=None):
    return hardware.Host(topology, usage, list(pools), {}, 1.0, 1.0)


def _cells(record):
    return [cell['host_cell'] for cell in record['numa']['cells']]


def _two_cells(siblings):
    return hosts.host(*[
        hosts.cell(cell, cpuset=[cell * 8], pcpuset=range(cell * 8 + 4,
                                                          cell * 8 + 8),
                   memory_mb=4096,
                   siblings=([[cell * 8 + 4, cell * 8 + 5],
                              [cell * 8 + 6, cell * 8 + 7]]
                             if siblings else []))
        for cell in (0, 1)])


def test_isolate_does_not_fit_a_host_with_hyperthreads():
    isolate = _request(2, **{'hw:cpu_policy': 'dedicated',
                             'hw:cpu_thread_policy': 'isolate'})
    # Every core of both cells is free, yet nothing fits.
    assert isolate.fit(_host(_two_cells(siblings=True))) is None
    # Without siblings each vCPU gets a CPU of its own, nothing set aside.
    record = isolate.fit(_host(_two_cells(siblings=False)))
    cell = record['numa']['cells'][0]
    assert cell['cpu_pinning'] == {'0': 4, '1': 5}
    assert cell['reserved_cpus'] == []
    # The trait spelling asks the same.
    forbidden = _request(2, **{'resources:PCPU': '2',
                               'trait:HW_CPU_HYPERTHREADING': 'forbidden'})
    assert forbidden.fit(_host(_two_cells(siblings=True))) is None
    # 'prefer' and 'require' do use the siblings.
    for policy in ('prefer', 'require'):
        assert _request(2, **{'hw:cpu_policy': 'dedicated',
                              'hw:cpu_thread_policy': policy}).fit(
            _host(_two_cells(siblings=True)))


def test_instances_without_devices_prefer_cells_without_devices(config):
    config.config(alias=[QAT], group='pci')
    pools = [{'vendor_id': '8086', 'product_id': '0443', 'numa_node': 0,
              'count': 2, 'tags': {'dev_type': 'type-PCI'}}]
    topology = _two_cells(siblings=False)
    # Equal cells: without devices on the host, cell 0 comes first.
    pinned = _request(1, **{'hw:cpu_policy': 'dedicated'})
    shared = _request(1, **{'hw:numa_nodes': '1'})
    for wanted in (pinned, shared):
        assert _cells(wanted.fit(_host(topology))) == [0]
        # Cell 0 has the devices: an instance without any takes cell 1.
        assert _cells(wanted.fit(_host(topology, pools))) == [1]
    # With a device, the cell that has them comes first, even when the
    # other cell has more free memory and CPUs.
    with_device = _request(1, **{'hw:cpu_policy': 'dedicated',
                                 'pci_passthrough:alias': 'qat:1'})
    pools_on_1 = [dict(pools[0], numa_node=1)]
    used = hosts.usage({'id': 1, 'pinned_cpus': [12],
                        'memory_usage_mb': 1024})
    assert _cells(with_device.fit(_host(topology, pools_on_1, used))) == [1]
    assert _cells(pinned.fit(_host(topology, pools_on_1, used))) == [0]


def test_the_order_counts_free_devices_not_reported_ones(config):
    config.config(alias=[QAT], group='pci')
    pools = [{'vendor_id': '8086', 'product_id': '0443', 'numa_node': 0,
              'count': 1, 'tags': {'dev_type': 'type-PCI'}},
             {'vendor_id': '8086', 'product_id': '0443', 'numa_node': 1,
              'count': 2, 'tags': {'dev_type': 'type-PCI'}}]
    topology = _two_cells(siblings=False)
    host = _host(topology, pools)
    pinned = _request(1, **{'hw:cpu_policy': 'dedicated'})
    assert _cells(pinned.fit(host)) == [0]
    # Both devices of cell 1 are taken: it has fewer free devices now.
    host = host._replace(pci_usage={pci_pools.pool_key(pools[1]): 2})
    assert _cells(pinned.fit(host)) == [1]
