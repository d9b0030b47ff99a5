"""Nova's request filters on Gantt's ResourceRequest: what each adds,
and when it adds nothing."""

import pytest

from scheduler import exception
from scheduler import placement_types
from scheduler.objects import request_spec
from scheduler.resources import request as request_mod
from scheduler.resources import request_filters
from tests.unit.scheduler import fakes

PLAIN = request_mod.ResourceRequest(groups=(request_mod.RequestGroup(
    resources={'VCPU': 1, 'MEMORY_MB': 512}),))


def aggregate(uuid, **metadata):
    return placement_types.Aggregate(id=hash(uuid) % 1000, uuid=uuid,
                                     name=uuid, hosts=frozenset(),
                                     metadata=metadata)


AGGREGATES = [
    aggregate('agg-p1', filter_tenant_id='p1'),
    aggregate('agg-p1-more', filter_tenant_id_2='p1'),
    aggregate('agg-p2', filter_tenant_id='p2'),
    aggregate('agg-list', filter_tenant_id='p1,p2'),
    aggregate('agg-az1', availability_zone='az1'),
    aggregate('agg-az1-b', availability_zone='az1'),
    aggregate('agg-az2', availability_zone='az2'),
    aggregate('agg-gpu', **{'trait:CUSTOM_GPU': 'required'}),
    aggregate('agg-ssd', **{'trait:STORAGE_DISK_SSD': 'required',
                            'trait:CUSTOM_X': 'optional'}),
]


def test_tenant_aggregates_are_required_of_a_project_they_name(config):
    config.config(limit_tenants_to_placement_aggregate=True,
                  group='scheduler')
    request, note = request_filters.require_tenant_aggregate(
        fakes.spec(project_id='p1'), PLAIN, AGGREGATES)
    # Nova matches the value whole: 'p1,p2' names no project p1.
    assert request.unsuffixed.member_of == (
        frozenset({'agg-p1', 'agg-p1-more'}),)
    assert 'p1' in note
    assert PLAIN.unsuffixed.member_of == ()     # the given one unchanged


def test_a_project_no_aggregate_names_is_free_unless_required(config):
    config.config(limit_tenants_to_placement_aggregate=True,
                  group='scheduler')
    spec = fakes.spec(project_id='p9')
    assert request_filters.require_tenant_aggregate(
        spec, PLAIN, AGGREGATES) == (PLAIN, None)
    config.config(placement_aggregate_required_for_tenants=True,
                  group='scheduler')
    with pytest.raises(exception.NoValidHost, match='tenant p9'):
        request_filters.require_tenant_aggregate(spec, PLAIN, AGGREGATES)


def test_tenant_filter_is_off_by_default(config):
    assert request_filters.require_tenant_aggregate(
        fakes.spec(project_id='p1'), PLAIN, AGGREGATES) == (PLAIN, None)


def test_an_az_requires_one_of_its_aggregates():
    request, _ = request_filters.map_az_to_placement_aggregate(
        fakes.spec(availability_zone='az1'), PLAIN, AGGREGATES)
    assert request.unsuffixed.member_of == (
        frozenset({'agg-az1', 'agg-az1-b'}),)
    # An AZ no aggregate names (the default zone) adds nothing.
    assert request_filters.map_az_to_placement_aggregate(
        fakes.spec(availability_zone='nova'), PLAIN, AGGREGATES) == (
            PLAIN, None)


def test_tenant_and_az_are_two_sets_all_of_which_hold(config):
    config.config(limit_tenants_to_placement_aggregate=True,
                  group='scheduler')
    request, ran = request_filters.apply(
        fakes.spec(project_id='p2', availability_zone='az2'), PLAIN,
        AGGREGATES)
    assert request.unsuffixed.member_of == (frozenset({'agg-p2'}),
                                            frozenset({'agg-az2'}))
    assert [name for name, _ in ran] == [
        'require_tenant_aggregate', 'map_az_to_placement_aggregate',
        'compute_status_filter', 'max_placement_results']


def test_disabled_computes_are_always_forbidden():
    request, _ = request_filters.compute_status_filter(
        fakes.spec(), PLAIN, [])
    assert request.root_forbidden == {'COMPUTE_STATUS_DISABLED'}


def test_isolated_aggregates_are_forbidden_unless_their_trait_is_asked(
        config):
    config.config(enable_isolated_aggregate_filtering=True,
                  group='scheduler')
    request, _ = request_filters.isolate_aggregates(
        fakes.spec(), PLAIN, AGGREGATES)
    assert request.unsuffixed.forbidden_aggregates == {'agg-gpu', 'agg-ssd'}
    asking = request_mod.ResourceRequest(groups=(
        request_mod.RequestGroup(resources={'VCPU': 1},
                                 required_traits=frozenset({'CUSTOM_GPU'})),
    ))
    request, _ = request_filters.isolate_aggregates(
        fakes.spec(), asking, AGGREGATES)
    assert request.unsuffixed.forbidden_aggregates == {'agg-ssd'}
    # A trait asked in a numbered group counts too, as in Nova.
    both = request_mod.ResourceRequest(groups=(
        request_mod.RequestGroup(resources={'VCPU': 1}),
        request_mod.RequestGroup(
            suffix='1', resources={'CUSTOM_DISK': 1},
            required_traits=frozenset({'STORAGE_DISK_SSD', 'CUSTOM_GPU'}))))
    assert request_filters.isolate_aggregates(
        fakes.spec(), both, AGGREGATES) == (both, None)


def test_image_properties_become_root_traits(config):
    config.config(image_metadata_prefilter=True, group='scheduler')
    image = request_spec.ImageMeta(properties={
        'hw_disk_bus': 'scsi', 'hw_vif_model': 'virtio',
        'hw_architecture': 'x86_64', 'hw_video_model': 'virtio'})
    request, _ = request_filters.transform_image_metadata(
        fakes.spec(image=image), PLAIN, [])
    assert request.root_required == {
        'COMPUTE_STORAGE_BUS_SCSI', 'COMPUTE_NET_VIF_MODEL_VIRTIO',
        'HW_ARCH_X86_64', 'COMPUTE_GRAPHICS_MODEL_VIRTIO'}


def test_an_unknown_image_property_value_leaves_the_filter_out(config):
    config.config(image_metadata_prefilter=True, group='scheduler')
    image = request_spec.ImageMeta(properties={
        'hw_disk_bus': 'scsi', 'hw_vif_model': 'carrier-pigeon'})
    assert request_filters.transform_image_metadata(
        fakes.spec(image=image), PLAIN, []) == (PLAIN, None)


def test_image_properties_are_ignored_by_default():
    image = request_spec.ImageMeta(properties={'hw_disk_bus': 'scsi'})
    assert request_filters.transform_image_metadata(
        fakes.spec(image=image), PLAIN, []) == (PLAIN, None)


def test_max_placement_results_sets_the_limit(config):
    config.config(max_placement_results=7, group='scheduler')
    request, _ = request_filters.max_placement_results(
        fakes.spec(), PLAIN, [])
    assert request.limit == 7


def test_the_image_type_is_required_unless_booted_from_volume(config):
    image = request_spec.ImageMeta(disk_format='qcow2')
    assert request_filters.require_image_type_support(
        fakes.spec(image=image), PLAIN, []) == (PLAIN, None)   # off
    config.config(query_placement_for_image_type_support=True,
                  group='scheduler')
    request, _ = request_filters.require_image_type_support(
        fakes.spec(image=image), PLAIN, [])
    assert request.root_required == {'COMPUTE_IMAGE_TYPE_QCOW2'}
    assert request_filters.require_image_type_support(
        fakes.spec(image=image, is_bfv=True), PLAIN, []) == (PLAIN, None)
    # A format os-traits does not know asks nothing (and is logged).
    odd = request_spec.ImageMeta(disk_format='floppy')
    assert request_filters.require_image_type_support(
        fakes.spec(image=odd), PLAIN, []) == (PLAIN, None)
