"""Host states with instances, and specs with server groups, for tests of
the affinity filters and weighers."""

from scheduler import host_cache
from scheduler.objects import request_spec
from tests.unit.scheduler import fakes

INFO = host_cache.InstanceInfo('m1.small', {})
UUIDS = ['0e0c5a7b-3d6f-4a2e-9b1c-%012d' % i for i in range(20)]


def host(name, instances=(), **kwargs):
    """A HostState of host ``name`` running ``instances`` (uuids)."""
    state = fakes.host_state(name, **kwargs)
    state.instances = {uuid: INFO for uuid in instances}
    return state


def group(policy, members=(), hosts=(), rules=None):
    return request_spec.InstanceGroup(
        uuid='6f1e2d3c-4b5a-4697-8877-665544332211', name='g',
        policy=policy, rules=dict(rules or {}), members=list(members),
        hosts=list(hosts))


def spec(instance_group=None, **kwargs):
    return fakes.spec(instance_group=instance_group, **kwargs)
