"""Operations whose scheduler claimed but whose answer never came back.

The scheduler API used here is the real one, over the in-process cluster;
it only drops the answer after the real scheduler claimed and raises the
MessagingTimeout the conductor would see when a reply is lost. Afterwards
the instance must hold exactly what it held before the operation.
"""

import json

import oslo_messaging as messaging
import pytest

from compute import rpcapi as compute_rpcapi
from conductor.tasks import rebuild
from conductor.tasks import shelve
from scheduler import rpcapi as scheduler_rpcapi
from tests.unit.conductor import sql_state
from tests.unit import inprocess

BIG = {'vcpus': 16, 'memory_mb': 65536, 'local_gb': 1000}
SMALL = {'vcpus': 4, 'memory_mb': 8192, 'local_gb': 100}


class LostReplyScheduler(scheduler_rpcapi.SchedulerAPI):
    """The real client; the answer is lost after the scheduler claimed."""

    def select_destinations(self, *args, **kwargs):
        super().select_destinations(*args, **kwargs)
        raise messaging.MessagingTimeout('the reply was lost')


@pytest.fixture
def cluster_config(database, config):
    return inprocess.configure(config, exact_ratios=True)


def _boot(cluster):
    [uuid] = cluster.boot(vcpus=2, memory_mb=2048, root_gb=10)
    row = cluster.wait_built([uuid])[uuid]
    assert row.vm_state == 'active'
    return row


def test_evacuation_whose_answer_is_lost_keeps_the_source_claim(
        cluster_config):
    with inprocess.Cluster({'h1': BIG, 'h2': SMALL}) as cluster:
        row = _boot(cluster)
        assert row.host == 'h1'
        sql_state.set_service('h1', forced_down=True)
        task = rebuild.RebuildTask(LostReplyScheduler(),
                                   compute_rpcapi.ComputeAPI())
        with pytest.raises(messaging.MessagingTimeout):
            task.evacuate(sql_state.ctxt(), row.uuid)
    # The scheduler's claim on h2 was undone, the dead host's put back.
    assert sql_state.allocations() == {row.uuid: 'h1'}
    assert sql_state.usage() == {'h1': (2, 2048, 10), 'h2': (0, 0, 0)}
    instance = sql_state.instance(row.uuid)
    assert (instance.vm_state, instance.task_state, instance.host) == (
        'active', None, 'h1')
    sql_state.assert_consistent()


def test_unshelve_whose_answer_is_lost_holds_no_claim(cluster_config):
    cluster_config.config(shelved_offload_time=0)
    with inprocess.Cluster({'h1': BIG}) as cluster:
        row = _boot(cluster)
        task = shelve.ShelveTask(scheduler_rpcapi.SchedulerAPI(),
                                 compute_rpcapi.ComputeAPI())
        task.shelve(sql_state.ctxt(), row.uuid)
        task.scheduler_api = LostReplyScheduler()
        with pytest.raises(messaging.MessagingTimeout):
            task.unshelve(sql_state.ctxt(), row.uuid)
    assert sql_state.allocations() == {}
    instance = sql_state.instance(row.uuid)
    assert (instance.vm_state, instance.task_state, instance.host) == (
        'shelved_offloaded', None, None)
    sql_state.assert_consistent()


def test_lost_evacuation_puts_back_the_other_classes_too(cluster_config,
                                                          config):
    # Every compute reports PCPU (in a NUMA cell, as Nova pins
    # resources:PCPU); the flavor asks it (and no VCPU).
    config.config(cpu_dedicated_set='8-15', group='compute')
    config.config(numa_topology=json.dumps({'cells': [{
        'id': 0, 'cpuset': [], 'pcpuset': list(range(8, 16)),
        'memory_mb': 65536}]}), group='fake_virt')
    with inprocess.Cluster({'h1': BIG, 'h2': BIG}) as cluster:
        [uuid] = cluster.boot(vcpus=2, memory_mb=2048, root_gb=10,
                              flavor_extra_specs={'resources:PCPU': '2'})
        row = cluster.wait_built([uuid])[uuid]
        assert row.vm_state == 'active'
        source = sql_state.node_id(row.host)
        assert sql_state.allocation_items(uuid) == {source: {'PCPU': 2}}
        sql_state.set_service(row.host, forced_down=True)
        task = rebuild.RebuildTask(LostReplyScheduler(),
                                   compute_rpcapi.ComputeAPI())
        with pytest.raises(messaging.MessagingTimeout):
            task.evacuate(sql_state.ctxt(), uuid)
    # The other host's PCPU claim was undone, the source's put back.
    assert sql_state.allocation_items(uuid) == {source: {'PCPU': 2}}
    assert sql_state.allocations() == {uuid: row.host}
    sql_state.assert_consistent()
