"""The placement stage in the filter scheduler: traits, custom classes,
request groups and Nova's request filters decide which hosts the filters
see, and a claim takes every class asked, over a real database."""

import pytest
import sqlalchemy as sa

from scheduler.db import api as db_api
from scheduler.db import claims
from scheduler.db import inventories
from scheduler.db import models
from scheduler.drivers import filter_scheduler
from scheduler import exception
from scheduler.objects import request_spec
from tests.unit.scheduler import fakes

GOLD = 'CUSTOM_BAREMETAL_GOLD'
IRONIC_SPECS = {'resources:%s' % GOLD: '1', 'resources:VCPU': '0',
                'resources:MEMORY_MB': '0', 'resources:DISK_GB': '0'}


@pytest.fixture
def driver(cloud, make_driver):
    return make_driver(filter_scheduler.FilterScheduler)


def _give(cloud, nodename, inventories_=None, traits=None):
    """The node's other classes and traits, as its compute reports them
    (the report also stamps the node, as a compute's report does)."""
    node_id = cloud.nodes[nodename]
    with db_api.writer() as session:
        inventories.report(session, node_id, inventories_, traits)
        table = models.ComputeNode.__table__
        session.execute(sa.update(table).where(table.c.id == node_id)
                        .values(generation=table.c.generation + 1))


def _spec(extra_specs, **flavor):
    sizes = dict(vcpus=1, memory_mb=512, root_gb=1)
    sizes.update(flavor)
    return request_spec.RequestSpec(flavor=request_spec.Flavor(
        extra_specs=extra_specs, **sizes), project_id='p1')


def _place(driver, spec, count=1):
    uuids = fakes.uuids(count)
    selections = driver.select_destinations(None, spec, uuids, False)
    return uuids, [alternatives[0].service_host
                   for alternatives in selections]


def _items(consumer_uuid):
    with db_api.reader() as session:
        return claims.get_allocation_items(session, consumer_uuid)


def test_a_required_trait_keeps_hosts_without_it_out(cloud, driver):
    # 'plain' has the most RAM: the weighers would take it.
    cloud.add_node('avx', memory_mb=8192)
    cloud.add_node('plain', memory_mb=65536)
    _give(cloud, 'avx', traits=['HW_CPU_X86_AVX2'])
    _, hosts = _place(driver, _spec({'trait:HW_CPU_X86_AVX2': 'required'}))
    assert hosts == ['avx']
    _, hosts = _place(driver, _spec({}))
    assert hosts == ['plain']


def test_a_forbidden_trait_keeps_hosts_with_it_out(cloud, driver):
    cloud.add_node('avx', memory_mb=65536)
    cloud.add_node('plain', memory_mb=8192)
    _give(cloud, 'avx', traits=['HW_CPU_X86_AVX2'])
    _, hosts = _place(driver, _spec({'trait:HW_CPU_X86_AVX2': 'forbidden'}))
    assert hosts == ['plain']


def test_no_host_with_the_trait_is_no_valid_host_naming_the_stage(
        cloud, driver):
    cloud.add_node('plain')
    with pytest.raises(exception.NoValidHost) as caught:
        _place(driver, _spec({'trait:CUSTOM_GOLD': 'required'}))
    assert 'resources 1 -> 0' in str(caught.value)


def test_an_ironic_flavor_takes_one_whole_node_of_its_class(cloud, driver):
    for name in ('bm1', 'bm2'):
        cloud.add_node(name, vcpus=0, memory_mb=0, local_gb=0)
        _give(cloud, name, inventories_={GOLD: {'total': 1}})
    cloud.add_node('vm')     # no custom class: never chosen
    spec = _spec(IRONIC_SPECS, vcpus=8, memory_mb=16384, root_gb=100)
    first, hosts = _place(driver, spec)
    second, more = _place(driver, spec)
    assert sorted(hosts + more) == ['bm1', 'bm2']
    # The classic classes are asked at 0: the allocation holds only GOLD.
    assert cloud.allocations(first[0]) == {hosts[0]: (0, 0, 0)}
    assert _items(first[0]) == {cloud.nodes[hosts[0]]: {GOLD: 1}}
    with pytest.raises(exception.NoValidHost):
        _place(driver, spec)
    assert driver.stats['claim_retries'] == 0


def test_instances_of_one_request_each_take_their_own_node(cloud, driver):
    for name in ('bm1', 'bm2', 'bm3'):
        cloud.add_node(name, vcpus=0, memory_mb=0, local_gb=0)
        _give(cloud, name, inventories_={GOLD: {'total': 1}})
    uuids, hosts = _place(driver, _spec(IRONIC_SPECS), count=3)
    assert sorted(hosts) == ['bm1', 'bm2', 'bm3']
    # Each later instance saw the earlier ones' units: no lost claim.
    assert driver.stats['claim_retries'] == 0


def test_granular_groups_with_isolate_need_two_providers_of_a_class(
        cloud, driver):
    # Without nested providers a node is one provider: two isolated
    # groups of one class cannot both be on it.
    cloud.add_node('gpu')
    _give(cloud, 'gpu', inventories_={'CUSTOM_GPU': {'total': 4}})
    specs = {'resources1:CUSTOM_GPU': '1', 'resources2:CUSTOM_GPU': '1'}
    with pytest.raises(exception.NoValidHost):
        _place(driver, _spec(dict(specs, group_policy='isolate')))
    [uuid], hosts = _place(driver, _spec(dict(specs, group_policy='none')))
    assert hosts == ['gpu']
    assert _items(uuid) == {cloud.nodes['gpu']: {'CUSTOM_GPU': 2}}


def test_tenant_aggregates_send_a_project_to_its_hosts(cloud, driver,
                                                       config):
    config.config(limit_tenants_to_placement_aggregate=True,
                  group='scheduler')
    cloud.add_node('mine', memory_mb=4096)
    cloud.add_node('big', memory_mb=65536)
    cloud.aggregate('p1-hosts', ['mine'], filter_tenant_id='p1')
    _, hosts = _place(driver, _spec({}))
    assert hosts == ['mine']


def test_explain_shows_each_request_filter_cut(cloud, driver, config):
    config.config(limit_tenants_to_placement_aggregate=True,
                  group='scheduler')
    for name in ('a', 'b', 'c'):
        cloud.add_node(name)
    _give(cloud, 'a', traits=['CUSTOM_FAST'])
    _give(cloud, 'b', traits=['CUSTOM_FAST'])
    cloud.aggregate('p1-hosts', ['b', 'c'], filter_tenant_id='p1')
    explanation = driver.explain(None, _spec({'trait:CUSTOM_FAST':
                                              'required'}))
    steps = [(step.name, step.before, step.after)
             for step in explanation.instances[0].steps]
    assert steps[:2] == [('resources', 3, 2),
                         ('require_tenant_aggregate', 2, 1)]
    assert explanation.instances[0].chosen == ('b', 'b')


def test_a_malformed_resource_request_is_refused_and_claims_nothing(
        cloud, driver):
    cloud.add_node('a')
    with pytest.raises(exception.InvalidRequest, match='CUSTOM_lower'):
        _place(driver, _spec({'resources:CUSTOM_lower': '1'}))
    with db_api.reader() as session:
        assert session.execute(sa.select(sa.func.count()).select_from(
            models.Allocation.__table__)).scalar() == 0


def test_alternates_carry_the_classes_and_a_reschedule_claims_them(
        cloud, driver, config):
    from conductor.tasks import build
    config.config(max_attempts=2, group='scheduler')
    for name in ('bm1', 'bm2'):
        cloud.add_node(name, vcpus=0, memory_mb=0, local_gb=0)
        _give(cloud, name, inventories_={GOLD: {'total': 1}})
    [uuid] = fakes.uuids(1)
    [[chosen, alternate]] = driver.select_destinations(
        None, _spec(IRONIC_SPECS), [uuid], True)
    wanted = {'vcpus': 0, 'memory_mb': 0, 'disk_gb': 0,
              'resource_classes': {GOLD: 1}}
    assert chosen.requested_resources() == wanted
    assert alternate.requested_resources() == wanted
    alternate.validate()
    # The compute failed: the conductor gives the claim back and takes
    # the alternate, with its class.
    with db_api.writer() as session:
        claims.release_resources(session, uuid,
                                 cloud.nodes[chosen.service_host])
    assert build.BuildTask._claim_alternate(uuid, alternate)
    assert _items(uuid) == {cloud.nodes[alternate.service_host]: {GOLD: 1}}
    # Its node is full now: the other instance cannot take it too.
    assert not build.BuildTask._claim_alternate(fakes.uuids(1)[0],
                                                alternate)


def test_a_selection_naming_a_malformed_class_is_refused():
    from scheduler.objects import selection
    bad = selection.Selection(
        compute_node_uuid='00000000-0000-0000-0000-000000000001',
        service_host='h', nodename='h', claimed=False,
        allocation_request='{"vcpus": 0, "memory_mb": 0, "disk_gb": 0, '
                           '"resource_classes": {"CUSTOM_lower": 1}}')
    with pytest.raises(exception.InvalidRequest, match='CUSTOM_lower'):
        bad.validate()


def test_rankings_made_ahead_read_a_rich_request_once_per_shape(
        cloud, make_driver, make_host_manager, monkeypatch):
    from scheduler.resources import from_spec
    for name in ('a', 'b', 'c', 'd'):
        cloud.add_node(name, memory_mb=8192 * (1 + ord(name) - ord('a')))
        _give(cloud, name, traits=['CUSTOM_FAST'] if name != 'd' else [])
    driver = make_driver(filter_scheduler.FilterScheduler,
                         host_manager=make_host_manager(auto_refresh=False))
    reads = []
    real = from_spec.resource_request

    def counted(spec, translate_pinning=True):
        reads.append(spec)
        return real(spec, translate_pinning)
    monkeypatch.setattr(from_spec, 'resource_request', counted)
    spec = _spec({'trait:CUSTOM_FAST': 'required'}, memory_mb=4096)
    hosts = []
    for _ in range(4):
        _uuids, placed = _place(driver, spec)
        hosts += placed
        driver.idle()
    assert driver.stats['ranked_ahead_used'] >= 2
    # Never the host without the trait, however much room it has.
    assert 'd' not in hosts
    # One read per request: the rankings made ahead and their patches
    # use a copy of the request's plan.
    assert len(reads) == 4
