"""Host states with instances, and specs with server groups, for tests of
the affinity filters and weighers, and clouds for requests of several
instances."""

import random

from scheduler import exception
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


def weigh_every_resource(config):
    """Options under which RAM packs and CPU, disk and I/O spread, with
    soft affinity weighed: the weighers' bounds move as instances land."""
    config.config(ram_weight_multiplier=-1.0, cpu_weight_multiplier=1.0,
                  disk_weight_multiplier=1.0, io_ops_weight_multiplier=-1.0,
                  soft_affinity_weight_multiplier=2.0,
                  group='filter_scheduler')


def add_mixed_nodes(cloud, seed, singles, doubles):
    """``singles`` hosts of one node of random sizes (drawn from
    ``seed``), then ``doubles`` hosts of two nodes each."""
    sizes = random.Random(seed)
    for number in range(singles):
        cloud.add_node('h%02d' % number, vcpus=sizes.choice((4, 8, 16)),
                       memory_mb=sizes.choice((4096, 6144, 8192, 16384)),
                       local_gb=sizes.choice((40, 80, 200)),
                       ram_allocation_ratio=1.0, disk_allocation_ratio=1.0,
                       cpu_allocation_ratio=1.0)
    for number in range(doubles):
        for node in ('a', 'b'):
            cloud.add_node('m%d' % number, 'm%d-%s' % (number, node),
                           memory_mb=8192, local_gb=80,
                           ram_allocation_ratio=1.0,
                           disk_allocation_ratio=1.0)


def several_instances_options(config, filters):
    """``filters``, three attempts a build, free RAM alone weighed, and
    what the tests put in the host caches kept there (no refresh from
    the database meanwhile)."""
    config.config(enabled_filters=filters, group='filter_scheduler')
    config.config(max_attempts=3, group='scheduler')
    config.config(host_state_refresh_interval=3600, group='scheduler')
    for weigher in ('cpu', 'disk', 'io_ops'):
        config.config(group='filter_scheduler',
                      **{weigher + '_weight_multiplier': 0.0})


def nodes_answer(driver, spec, uuids=None):
    """Each instance's ``host/node`` and its alternates', or the
    NoValidHost reason."""
    try:
        selections = driver.select_destinations(None, spec, uuids, True)
    except exception.NoValidHost as error:
        return str(error)
    return [['%s/%s' % (s.service_host, s.nodename) for s in alternatives]
            for alternatives in selections]
