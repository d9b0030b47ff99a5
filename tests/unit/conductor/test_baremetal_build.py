"""Builds onto baremetal nodes through the real conductor, scheduler and
compute services in-process, with the ironic host manager: an instance
takes its node whole, a delete gives it back, and the baremetal filters
want flavors that match a node exactly."""

import pytest
import sqlalchemy as sa

from conductor import rpcapi as conductor_rpcapi
from scheduler.db import api as db_api
from scheduler.db import models
from tests.unit.conductor import sql_state
from tests.unit import inprocess

# An agent standing for a nova-compute of Ironic, with two machines of
# 4 cores, 4 GiB and 50 GB.
HOSTS = {'bm': {'baremetal_nodes': 2, 'vcpus': 4, 'memory_mb': 4096,
                'local_gb': 50}}
WHOLE = (4, 4096, 50)
SMALL = {'vcpus': 1, 'memory_mb': 512, 'root_gb': 1}


@pytest.fixture
def cluster_config(database, config):
    inprocess.configure(config)
    config.config(host_manager='ironic_host_manager', group='scheduler')
    return config


def _node_usage():
    """``{nodename: (vcpus_used, memory_mb_used, local_gb_used)}``."""
    with db_api.reader() as session:
        rows = session.execute(sa.select(models.ComputeNode)).scalars().all()
    return {row.hypervisor_hostname: (row.vcpus_used, row.memory_mb_used,
                                      row.local_gb_used) for row in rows}


def _boot_one(cluster, **flavor):
    [uuid] = cluster.boot(**flavor)
    return cluster.wait_built([uuid])[uuid]


def test_an_instance_takes_its_node_whole_until_deleted(cluster_config):
    with inprocess.Cluster(HOSTS) as cluster:
        first = _boot_one(cluster, **SMALL)
        assert first.vm_state == 'active', first.fault
        second = _boot_one(cluster, **SMALL)
        assert second.vm_state == 'active', second.fault
        assert sorted([first.node, second.node]) == ['bm-bm-1', 'bm-bm-2']
        assert _node_usage() == {'bm-bm-1': WHOLE, 'bm-bm-2': WHOLE}

        # Both machines are taken: a third small instance has no node.
        third = _boot_one(cluster, **SMALL)
        assert third.vm_state == 'error'
        assert 'No valid host' in third.fault

        conductor_rpcapi.ComputeTaskAPI().delete_instance(
            sql_state.ctxt(), first.uuid)
        assert _node_usage()[first.node] == (0, 0, 0)
        sql_state.assert_consistent()
        # The compute reports the node empty at its next report.
        cluster.wait_scheduler_sees(first.node,
                                    lambda state: not state.in_use(), 'free')
        fourth = _boot_one(cluster, vcpus=2, memory_mb=1024, root_gb=10)
        assert (fourth.vm_state, fourth.node) == ('active', first.node)
        assert _node_usage()[first.node] == WHOLE
        sql_state.assert_consistent()


def test_the_baremetal_filters_want_exact_flavors(cluster_config):
    cluster_config.config(use_baremetal_filters=True,
                          group='filter_scheduler')
    with inprocess.Cluster(HOSTS) as cluster:
        # RAM and disk match, vCPUs do not.
        wrong = _boot_one(cluster, vcpus=2, memory_mb=4096, root_gb=50)
        assert wrong.vm_state == 'error'
        assert 'ExactCoreFilter 2 -> 0' in wrong.fault
        exact = _boot_one(cluster, vcpus=4, memory_mb=4096, root_gb=50)
        assert exact.vm_state == 'active', exact.fault
        assert _node_usage()[exact.node] == WHOLE
