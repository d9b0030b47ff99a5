"""The fake compute agent: the host facts it reports, its build counts."""

import pytest

from compute import manager
from scheduler.objects import request_spec

UUIDS = ['9a8b7c6d-5e4f-4a3b-8c2d-1e0f%08d' % i for i in range(4)]


class Recorder:
    """Stands in for an RPC client: records the calls made on it."""

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        def record(*args, **kwargs):
            self.calls.append((name, args, kwargs))
        return record


def _agent(**overrides):
    agent = manager.ComputeManager(host='c1', capacity=overrides)
    agent.conductor_api = Recorder()
    agent.compute_task_api = Recorder()
    agent.scheduler_api = Recorder()
    return agent


def _spec(project='p1'):
    return request_spec.RequestSpec(
        project_id=project, flavor=request_spec.Flavor(vcpus=1,
                                                       memory_mb=512))


def test_reports_the_configured_facts(config):
    config.config(hypervisor_type='qemu', hypervisor_version=6002000,
                  host_ip='10.1.2.3',
                  supported_instances=['x86_64:qemu:hvm', 'aarch64:qemu:hvm'],
                  stats={'gpu': 'a100'}, metrics={'cpu.percent': '12.5',
                                                  'bad': 'x'},
                  io_workload=2, group='fake_virt')
    inventory = _agent()._inventory('c1')
    assert inventory['hypervisor_type'] == 'qemu'
    assert inventory['hypervisor_version'] == 6002000
    assert inventory['host_ip'] == '10.1.2.3'
    assert inventory['supported_instances'] == [['x86_64', 'qemu', 'hvm'],
                                                ['aarch64', 'qemu', 'hvm']]
    assert inventory['stats'] == {'gpu': 'a100', 'num_instances': '0',
                                  'num_vm_active': '0', 'io_workload': '2',
                                  'failed_builds': '0'}
    [metric] = inventory['metrics']
    assert (metric['name'], metric['value']) == ('cpu.percent', 12.5)
    assert inventory['io_workload'] == 2


def test_defaults_and_per_agent_overrides(config):
    inventory = _agent()._inventory('c1')
    assert inventory['supported_instances'] == [['x86_64', 'fake', 'hvm']]
    assert inventory['metrics'] == []
    other = _agent(hypervisor_version=2000, stats={'rack': 'r2'},
                   memory_mb=4096)._inventory('c1')
    assert other['hypervisor_version'] == 2000
    assert other['stats']['rack'] == 'r2'
    assert other['memory_mb'] == 4096


def test_counts_instances_per_project_and_failed_builds(config):
    agent = _agent(stats={'failed_builds': '1'})
    ctxt = None
    agent.build_failure_rate = 1.0
    agent.build_and_run_instance(ctxt, UUIDS[0], 'c1', _spec(), [])
    agent.build_and_run_instance(ctxt, UUIDS[1], 'c1', _spec(), [])
    assert agent._inventory('c1')['stats']['failed_builds'] == '3'
    assert [name for name, _a, _k in agent.scheduler_api.calls] == [
        'delete_instance_info'] * 2
    agent.build_failure_rate = 0.0
    agent.build_and_run_instance(ctxt, UUIDS[2], 'c1', _spec('p1'), [])
    agent.build_and_run_instance(ctxt, UUIDS[3], 'c1', _spec('p2'), [])
    stats = agent._inventory('c1')['stats']
    # A success resets the count, as in Nova.
    assert stats['failed_builds'] == '0'
    assert (stats['num_instances'], stats['num_proj_p1'],
            stats['num_proj_p2']) == ('2', '1', '1')
    name, args, _kwargs = agent.scheduler_api.calls[-1]
    assert name == 'update_instance_info'
    assert args[1] == 'c1' and args[2][0].uuid == UUIDS[3]


def test_sends_nothing_to_schedulers_without_tracking(config):
    config.config(track_instance_changes=False, group='filter_scheduler')
    agent = _agent()
    agent.build_and_run_instance(None, UUIDS[0], 'c1', _spec(), [])
    agent.sync_scheduler_instance_info(None)
    assert agent.scheduler_api.calls == []
    config.config(track_instance_changes=True, group='filter_scheduler')
    agent.sync_scheduler_instance_info(None)
    assert agent.scheduler_api.calls == [
        ('sync_instance_info', (None, 'c1', [UUIDS[0]]), {})]


def test_sync_interval_zero_means_the_default_and_negative_never(config):
    def spacing():
        return {task.name: task.spacing for task
                in _agent().periodic_tasks()}['sync_scheduler_instance_info']
    assert spacing() == 120
    config.config(scheduler_instance_sync_interval=0)
    assert spacing() == manager.DEFAULT_SYNC_INTERVAL
    config.config(scheduler_instance_sync_interval=-1)
    assert spacing() < 0


def test_a_build_delivered_twice_spawns_once(config):
    agent = _agent()
    agent.build_failure_rate = 0.0
    for _ in range(2):
        agent.build_and_run_instance(None, UUIDS[0], 'c1', _spec(), [])
    reports = [call for call in agent.conductor_api.calls
               if call[0] == 'instance_update']
    assert len(reports) == 1
    assert agent._instances == {UUIDS[0]: 'c1'}


@pytest.mark.parametrize('size, words', [
    ({'vcpus': 0}, 'flavor.vcpus must be at least 1, not 0'),
    ({'memory_mb': 0}, 'flavor.memory_mb must be at least 1, not 0'),
])
def test_a_build_of_a_flavor_nova_refuses_is_dropped(config, caplog, size,
                                                    words):
    agent = _agent()
    agent.build_failure_rate = 0.0
    spec = _spec()
    for name, value in size.items():
        setattr(spec.flavor, name, value)
    agent.build_and_run_instance(None, UUIDS[0], 'c1', spec, [])
    assert agent._instances == {}
    assert agent.conductor_api.calls == []
    assert [r.getMessage() for r in caplog.records
            if r.levelname == 'ERROR'] == [
        'Dropped build_and_run_instance: Invalid request: ' + words]
