"""Nova 34's conductor and computes scheduling through Nova's own
scheduler and through Gantt's in Nova mode: the same scenarios, the same
expectations (see conftest.py and environment.py)."""

import pytest

from tests.nova_interop import conftest
from tests.nova_interop import environment

pytestmark = [
    pytest.mark.functional,
    pytest.mark.filterwarnings("ignore:'cgi' is deprecated"),
]


def _expect_active(env, states, flavor):
    providers = env.providers()
    hosts = set()
    for state in states:
        assert (state['cell'], state['vm_state'], state['task_state']) == (
            'cell1', 'active', None), state
        hosts.add(state['host'])
        # The instance's allocation in Placement is its flavor's, on its
        # compute's provider.
        allocations = env.allocations(state['uuid'])
        assert {uuid: held['resources']
                for uuid, held in allocations.items()} == {
            providers[state['node']]: {'VCPU': flavor[0],
                                       'MEMORY_MB': flavor[1],
                                       'DISK_GB': flavor[2]}}, state
    return hosts


def test_boots_end_active_with_their_allocations(scheduler):
    kind, env = scheduler
    tiny = (1, 512, 1)
    one = env.nova_side('boot', 'm1.tiny', 1)['uuids']
    states = env.nova_side('wait', *one, timeout=180)['states']
    _expect_active(env, states, tiny)
    ten = env.nova_side('boot', 'm1.tiny', 1, 10)['uuids']
    states = env.nova_side('wait', *ten, timeout=180)['states']
    _expect_active(env, states, tiny)
    twenty = env.nova_side('boot', 'm1.tiny', 20)['uuids']
    states = env.nova_side('wait', *twenty, timeout=240)['states']
    hosts = _expect_active(env, states, tiny)
    # The weighers spread a multi-create over both computes.
    assert hosts == {'cmp1', 'cmp2'}, (kind, hosts)
    everyone = one + ten + twenty
    env.nova_side('delete', *everyone)
    states = env.nova_side('wait', *everyone, timeout=180)['states']
    assert all(state.get('deleted') for state in states), states
    for instance_uuid in everyone:
        env.wait_until(lambda uuid=instance_uuid: not env.allocations(uuid),
                       'the allocation of %s is gone' % instance_uuid,
                       timeout=60)
    audit = env.manage('placement', 'audit', '--verbose', check=False)
    assert audit.returncode == 0, audit.stdout + audit.stderr


def test_no_valid_host_buries_the_instance_in_cell0(scheduler):
    kind, env = scheduler
    (uuid,) = env.nova_side('boot', 'm1.huge', 1)['uuids']
    (state,) = env.nova_side('wait', uuid, timeout=120)['states']
    assert (state['cell'], state['vm_state']) == ('cell0', 'error'), state
    assert 'No valid host was found' in (state['fault'] or ''), state
    assert env.allocations(uuid) == {}
    assert env.scheduler.alive()


def test_decision_latency(scheduler):
    kind, env = scheduler
    answer = env.nova_side('select', 'm1.tiny', 30)
    assert set(answer['hosts']) <= {'cmp1', 'cmp2'}
    # The first calls warm up both sides; the rest are measured.
    conftest.LATENCIES.setdefault(kind, {})[
        'one instance, claimed, with alternates'] = answer['seconds'][5:]


def _resources(env, consumer):
    return {uuid: held['resources']
            for uuid, held in env.allocations(consumer).items()}


@pytest.mark.parametrize('flavor', [None, 'm1.small'],
                         ids=['cold migration', 'resize'])
def test_moves_hold_the_source_as_the_migration(scheduler, flavor):
    kind, env = scheduler
    (uuid,) = env.nova_side('boot', 'm1.tiny', 1)['uuids']
    (state,) = env.nova_side('wait', uuid, timeout=120)['states']
    assert state['vm_state'] == 'active', state
    providers = env.providers()
    source = providers[state['node']]
    moving = env.nova_side('resize', uuid, *([flavor] if flavor else []))
    (state,) = env.nova_side('wait', uuid, timeout=180)['states']
    assert state['vm_state'] == 'resized', state
    target = providers[state['node']]
    assert target != source
    new = (2, 1024, 1) if flavor else (1, 512, 1)
    # As Nova's conductor and scheduler make them: the migration holds
    # the source (the old flavor), the instance the destination.
    assert _resources(env, moving['migration']) == {source: {
        'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}}
    assert _resources(env, uuid) == {target: {
        'VCPU': new[0], 'MEMORY_MB': new[1], 'DISK_GB': new[2]}}
    env.nova_side('confirm', uuid)
    env.wait_until(lambda: not env.allocations(moving['migration']),
                   'the migration\'s allocation is gone', timeout=120)
    assert _resources(env, uuid) == {target: {
        'VCPU': new[0], 'MEMORY_MB': new[1], 'DISK_GB': new[2]}}
    env.nova_side('delete', uuid)
    env.wait_until(lambda: not env.allocations(uuid),
                   'the allocation of %s is gone' % uuid, timeout=120)


def test_two_schedulers_racing_never_overfill(scheduler):
    """Two schedulers of the kind on one queue and twelve requests at
    once for a flavor of which four fit a compute: no provider ends
    with more than it holds, every instance with an allocation is
    ACTIVE where it is, and the rest are in cell0."""
    kind, env = scheduler
    env.stop_scheduler()
    env.start_scheduler(kind, count=2)
    try:
        uuids = env.nova_side('boot', 'm1.quarter', 1, 12)['uuids']
        states = env.nova_side('wait', *uuids, timeout=240)['states']
    finally:
        env.stop_scheduler()
        env.start_scheduler(kind)
    providers = env.providers()
    placed = {name: 0 for name in providers}
    for state in states:
        if state['cell'] == 'cell1':
            assert state['vm_state'] == 'active', state
            assert _resources(env, state['uuid']) == {
                providers[state['node']]: {
                    'VCPU': 1, 'MEMORY_MB': environment.QUARTER_MB,
                    'DISK_GB': 1}}, state
            placed[state['host']] += 1
        else:
            assert (state['cell'], state['vm_state']) == ('cell0',
                                                          'error'), state
            assert env.allocations(state['uuid']) == {}
    for name, provider in providers.items():
        usages = env.placement.client.get(
            '/resource_providers/%s/usages' % provider)['usages']
        assert usages['MEMORY_MB'] == placed[name] * environment.QUARTER_MB
        assert placed[name] <= 4, (kind, placed)
    # Contended, but not refused wholesale.
    assert sum(placed.values()) >= 6, (kind, placed)
    env.nova_side('delete', *uuids)
    for instance_uuid in uuids:
        env.wait_until(lambda uuid=instance_uuid: not env.allocations(uuid),
                       'the allocation of %s is gone' % instance_uuid,
                       timeout=120)
