"""gantt-compute with a ``[fake_virt]`` hardware document it cannot use
stops at once, in one line naming the option and the problem."""

import pytest

from tests.functional import cluster as cluster_mod
from tests.functional import test_startup_errors as startup

pytestmark = pytest.mark.functional


@pytest.fixture(scope='module')
def cluster(tmp_path_factory):
    """A broker vhost and a migrated database; no daemon runs."""
    with cluster_mod.Cluster(tmp_path_factory.mktemp('hardware'),
                             'sqlite') as running:
        yield running


def test_bad_json(cluster):
    exited = startup.run(cluster, 'gantt-compute', 'bad-json',
                         '[fake_virt]\ncpu_info = {"model": \n')
    line = startup.error_line('gantt-compute', exited)
    assert '[fake_virt] cpu_info is not valid JSON' in line, line


def test_topology_out_of_shape(cluster):
    exited = startup.run(
        cluster, 'gantt-compute', 'bad-topology',
        '[fake_virt]\nnuma_topology = {"cells": [{"id": 0, "cpuset": [0, 1],'
        ' "pcpuset": [1], "memory_mb": 1024}]}\n')
    line = startup.error_line('gantt-compute', exited)
    assert line.endswith(
        '[fake_virt] numa_topology: numa_topology.cells[0].pcpuset lists '
        'CPU(s) [1] that another set or cell lists too'), line
