"""Assertions the functional tests share: SQL usage against the servers.

The truth is checked three ways that must agree: the usage columns of
``compute_nodes``, the ``allocations`` rows, and the flavors of the
servers the instances table says run on each node::

    checks.assert_usage_matches_servers(c)
    checks.assert_db_check_passes(c)
    checks.assert_host_list_shows_usage(c)
"""

import collections
import json

RESOURCES = (('vcpus', 'vcpus_used', 'vcpus'),
             ('memory_mb', 'memory_mb_used', 'memory_mb'),
             ('disk_gb', 'local_gb_used', 'local_gb'))


def flavor_needs(flavor):
    """``(vcpus, memory_mb, disk_gb)`` one server of ``flavor`` claims."""
    if isinstance(flavor, str):
        flavor = json.loads(flavor)
    swap_gb = -(-int(flavor.get('swap') or 0) // 1024)
    return (flavor['vcpus'], flavor['memory_mb'],
            flavor.get('root_gb', 0) + flavor.get('ephemeral_gb', 0)
            + swap_gb)


def active_servers(cluster):
    return [row for row in cluster.instances() if row.vm_state == 'active']


def assert_usage_matches_servers(cluster, ratio=1.0):
    """Every node's usage is the sum of its active servers' flavors, the
    allocations say the same server by server, and no node is over its
    capacity (``total * ratio - reserved``)."""
    wanted = collections.defaultdict(lambda: [0, 0, 0])
    expected_allocations = {}
    for row in active_servers(cluster):
        assert row.host and row.node, row
        needs = flavor_needs(row.flavor)
        for index, amount in enumerate(needs):
            wanted[(row.host, row.node)][index] += amount
        expected_allocations[row.uuid] = (row.host, row.node) + needs
    # Server by server first: a mismatch names the instances.
    rows = cluster.allocations()
    allocations = {row.consumer_uuid: (row.host, row.node, row.vcpus,
                                       row.memory_mb, row.disk_gb)
                   for row in rows}
    held = collections.Counter(row.consumer_uuid for row in rows)
    assert len(allocations) == len(rows), (
        'servers holding allocations on several nodes: %s'
        % [(row.consumer_uuid, row.host) for row in rows
           if held[row.consumer_uuid] > 1])
    assert allocations == expected_allocations, {
        uuid: (allocations.get(uuid), expected_allocations.get(uuid))
        for uuid in set(allocations) ^ set(expected_allocations)
        | {uuid for uuid in allocations
           if allocations[uuid] != expected_allocations.get(uuid)}}
    nodes = cluster.query(
        'SELECT host, hypervisor_hostname AS node, vcpus, memory_mb, '
        'local_gb, vcpus_used, memory_mb_used, local_gb_used, '
        'reserved_vcpus, reserved_memory_mb, reserved_disk_gb '
        'FROM compute_nodes')
    for node in nodes:
        used = [getattr(node, column) for _name, column, _total in RESOURCES]
        need = wanted.pop((node.host, node.node), [0, 0, 0])
        assert used == need, (
            'usage of %s/%s is %s, its active servers need %s'
            % (node.host, node.node, used, need))
        for name, used_column, total_column in RESOURCES:
            reserved = getattr(node, 'reserved_' + name)
            capacity = getattr(node, total_column) * ratio - reserved
            assert getattr(node, used_column) <= capacity, (
                '%s of %s over capacity' % (name, node.host))
    assert not wanted, 'servers on unknown nodes: %s' % dict(wanted)


def assert_db_check_passes(cluster):
    result = cluster.manage('db', 'check', check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith('ok:'), result.stdout


def host_list(cluster):
    """``gantt-manage host list`` as ``{host: {column: text}}``."""
    result = cluster.manage('host', 'list')
    lines = result.stdout.splitlines()
    headers = ['Host', 'Node', 'Mapped', 'vCPUs', 'RAM MB', 'Disk GB',
               'Instances']
    assert lines[0].split() == ['Host', 'Node', 'Mapped', 'vCPUs', 'RAM',
                                'MB', 'Disk', 'GB', 'Instances'], lines[0]
    rows = {}
    for line in lines[2:]:
        cells = line.split()
        assert len(cells) == len(headers), line
        rows[cells[0]] = dict(zip(headers, cells))
    return rows


def assert_host_list_shows_usage(cluster, ratio=1.0):
    """``host list`` shows each node's used/capacity and consumer count
    as SQL has them."""
    listed = host_list(cluster)
    consumers = collections.Counter(row.host
                                    for row in cluster.allocations())
    nodes = cluster.query(
        'SELECT host, vcpus, memory_mb, local_gb, vcpus_used, '
        'memory_mb_used, local_gb_used, reserved_vcpus, reserved_memory_mb, '
        'reserved_disk_gb FROM compute_nodes')
    for node in nodes:
        row = listed[node.host]
        assert row['vCPUs'] == '%d/%d' % (
            node.vcpus_used, node.vcpus * ratio - node.reserved_vcpus), row
        assert row['RAM MB'] == '%d/%d' % (
            node.memory_mb_used,
            node.memory_mb * ratio - node.reserved_memory_mb), row
        assert row['Disk GB'] == '%d/%d' % (
            node.local_gb_used, node.local_gb - node.reserved_disk_gb), row
        assert row['Instances'] == str(consumers[node.host]), row
    assert set(listed) == {node.host for node in nodes}


def assert_consistent(cluster, ratio=1.0):
    assert_usage_matches_servers(cluster, ratio)
    assert_db_check_passes(cluster)
    assert_host_list_shows_usage(cluster, ratio)
