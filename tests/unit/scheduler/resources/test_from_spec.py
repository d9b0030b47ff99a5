"""Tests for a RequestSpec read as Nova's ResourceRequest: one rule each,
asserting the exact request made or the exact refusal."""

import pytest

from scheduler import exception
from scheduler.numa import errors as numa_errors
from scheduler.objects import request_spec
from scheduler.resources import from_spec
from scheduler.resources import request


def _spec(extra_specs=None, image=None, vcpus=4, memory_mb=2048,
          root_gb=10, ephemeral_gb=0, swap=0):
    flavor = request_spec.Flavor(
        vcpus=vcpus, memory_mb=memory_mb, root_gb=root_gb,
        ephemeral_gb=ephemeral_gb, swap=swap,
        extra_specs=dict(extra_specs or {}))
    spec = request_spec.RequestSpec(flavor=flavor)
    if image is not None:
        spec.image = request_spec.ImageMeta(properties=dict(image))
    return spec


def _read(extra_specs=None, image=None, **sizes):
    return from_spec.resource_request(_spec(extra_specs, image, **sizes))


def _one(resources, required=(), forbidden=(), policy=None):
    return request.ResourceRequest(
        groups=(request.RequestGroup(
            resources=resources, required_traits=frozenset(required),
            forbidden_traits=frozenset(forbidden)),),
        group_policy=policy)


FLAVOR = {'VCPU': 4, 'MEMORY_MB': 2048, 'DISK_GB': 10}


# -- the flavor's sizes ------------------------------------------------------

def test_flavor_sizes_make_the_unsuffixed_group():
    assert _read() == _one(FLAVOR)


def test_disk_is_root_plus_ephemeral_plus_swap_in_gib_rounded_up():
    assert _read(root_gb=10, ephemeral_gb=5, swap=1025) == _one(
        {'VCPU': 4, 'MEMORY_MB': 2048, 'DISK_GB': 17})
    assert _read(root_gb=10, swap=1024).unsuffixed.resources['DISK_GB'] == 11


def test_no_disk_asks_no_disk_gb():
    assert _read(root_gb=0) == _one({'VCPU': 4, 'MEMORY_MB': 2048})


def test_a_spec_without_image_reads_the_flavor_alone():
    assert from_spec.resource_request(_spec(image=None)) == _one(FLAVOR)


def test_member_of_root_traits_and_limit_are_left_empty():
    made = _read({'resources1:VGPU': '1'})
    assert all(group.member_of == () for group in made.groups)
    assert all(group.forbidden_aggregates == frozenset()
               for group in made.groups)
    assert (made.root_required, made.root_forbidden, made.limit) == (
        frozenset(), frozenset(), None)


# -- resources[S]:CLASS=N --------------------------------------------------

def test_resources_override_a_flavor_size():
    assert _read({'resources:VCPU': '8', 'resources:DISK_GB': '50'}) == _one(
        {'VCPU': 8, 'MEMORY_MB': 2048, 'DISK_GB': 50})


def test_resources_add_a_custom_class():
    assert _read({'resources:CUSTOM_FPGA_X': '2'}) == _one(
        dict(FLAVOR, CUSTOM_FPGA_X=2))


def test_resources_zero_removes_a_standard_class():
    assert _read({'resources:DISK_GB': '0'}) == _one(
        {'VCPU': 4, 'MEMORY_MB': 2048})


def test_ironic_flavor_asks_exactly_its_custom_class():
    made = _read({'resources:CUSTOM_BAREMETAL_GOLD': '1',
                  'resources:VCPU': '0', 'resources:MEMORY_MB': '0',
                  'resources:DISK_GB': '0'})
    assert made == _one({'CUSTOM_BAREMETAL_GOLD': 1})
    assert made.all_resources() == {'CUSTOM_BAREMETAL_GOLD': 1}


def test_vcpu_in_a_numbered_group_keeps_vcpu_out_of_the_unsuffixed_one():
    made = _read({'resources1:VCPU': '4'})
    assert made.groups == (
        request.RequestGroup(resources={'MEMORY_MB': 2048, 'DISK_GB': 10}),
        request.RequestGroup(suffix='1', resources={'VCPU': 4}))


# -- suffixed groups and group_policy ---------------------------------------

def test_numbered_and_named_groups_with_their_traits():
    made = _read({'resources1:SRIOV_NET_VF': '1',
                  'trait1:CUSTOM_PHYSNET_A': 'required',
                  'resources_GPU:VGPU': '1',
                  'trait_GPU:HW_GPU_API_VULKAN': 'forbidden',
                  'group_policy': 'isolate'})
    assert made == request.ResourceRequest(
        groups=(
            request.RequestGroup(resources=FLAVOR),
            request.RequestGroup(
                suffix='1', resources={'SRIOV_NET_VF': 1},
                required_traits=frozenset({'CUSTOM_PHYSNET_A'})),
            request.RequestGroup(
                suffix='_GPU', resources={'VGPU': 1},
                forbidden_traits=frozenset({'HW_GPU_API_VULKAN'}))),
        group_policy='isolate')
    assert [group.use_same_provider for group in made.groups] == [
        False, True, True]


def test_suffix_of_64_characters_with_dash_is_a_group():
    suffix = '-' + 'a' * 63
    made = _read({'resources%s:VGPU' % suffix: '1'})
    assert made.group(suffix) == request.RequestGroup(
        suffix=suffix, resources={'VGPU': 1})


@pytest.mark.parametrize('key', ['resources%s:VGPU' % ('a' * 65),
                                 'resources.1:VGPU', 'resource:VGPU',
                                 'hw:resources', 'traits_x'])
def test_keys_outside_nova_pattern_are_left_alone(key):
    assert _read({key: '1'}) == _one(FLAVOR)


def test_one_suffixed_group_needs_no_group_policy():
    made = _read({'resources1:VGPU': '1'})
    assert made.group_policy is None
    assert made.group('1').resources == {'VGPU': 1}


def test_group_policy_none_is_kept():
    made = _read({'resources1:VGPU': '1', 'resources2:VGPU': '1',
                  'group_policy': 'none'})
    assert made.group_policy == 'none'
    assert [group.suffix for group in made.groups] == ['', '1', '2']


def test_two_suffixed_groups_without_group_policy_are_refused():
    with pytest.raises(exception.ResourceRequestRefused) as caught:
        _read({'resources1:VGPU': '1', 'resources2:VGPU': '1'})
    assert str(caught.value) == (
        "No valid host was found. Placement refuses this resource request: "
        "the flavor asks for 2 suffixed groups (1, 2) but sets no "
        "group_policy ('none' or 'isolate')")
    assert isinstance(caught.value, exception.NoValidHost)


def test_bad_group_policy_is_refused():
    with pytest.raises(exception.InvalidResourceRequest) as caught:
        _read({'resources1:VGPU': '1', 'group_policy': 'separate'})
    assert str(caught.value) == (
        "Invalid resource request: flavor extra spec group_policy="
        "'separate': must be one of none, isolate")


def test_suffixed_group_with_traits_but_no_resources_is_refused():
    with pytest.raises(exception.ResourceRequestRefused) as caught:
        _read({'trait1:HW_CPU_X86_AVX2': 'required'})
    assert str(caught.value) == (
        "No valid host was found. Placement refuses this resource request: "
        "group '1' has traits (HW_CPU_X86_AVX2) but no resources; a flavor "
        "cannot put a resourceless group in a same_subtree")


def test_group_whose_only_amount_is_zero_is_resourceless():
    with pytest.raises(exception.ResourceRequestRefused,
                       match="group '1' has traits"):
        _read({'resources1:VGPU': '0',
               'trait1:CUSTOM_X': 'forbidden'})


def test_group_whose_only_amount_is_zero_disappears():
    assert _read({'resources1:VGPU': '0'}) == _one(FLAVOR)


def test_no_resources_at_all_is_refused():
    with pytest.raises(exception.ResourceRequestRefused,
                       match='it asks for no resources at all'):
        _read({'resources:VCPU': '0', 'resources:MEMORY_MB': '0',
               'resources:DISK_GB': '0',
               'trait:CUSTOM_GOLD': 'required'})


# -- trait[S]:NAME=required|forbidden, and the image ------------------------

def test_flavor_traits_required_and_forbidden():
    assert _read({'trait:HW_CPU_X86_AVX2': 'required',
                  'trait:CUSTOM_SLOW': 'forbidden'}) == _one(
        FLAVOR, required={'HW_CPU_X86_AVX2'}, forbidden={'CUSTOM_SLOW'})


def test_bad_trait_value_is_refused():
    with pytest.raises(exception.InvalidResourceRequest) as caught:
        _read({'trait:HW_CPU_X86_AVX2': 'preferred'})
    assert str(caught.value) == (
        "Invalid resource request: flavor extra spec trait:HW_CPU_X86_AVX2="
        "'preferred': must be 'required' or 'forbidden'")


def test_image_traits_are_required_in_the_unsuffixed_group():
    made = _read({'resources1:VGPU': '1'},
                 image={'trait:HW_CPU_X86_AVX2': 'required',
                        'trait:CUSTOM_LICENSED': 'required'})
    assert made.unsuffixed.required_traits == {'HW_CPU_X86_AVX2',
                                               'CUSTOM_LICENSED'}
    assert made.group('1').required_traits == frozenset()


def test_an_image_cannot_forbid_a_trait():
    assert _read(image={'trait:HW_CPU_X86_AVX2': 'forbidden'}) == _one(
        FLAVOR)


def test_malformed_image_trait_is_refused_naming_the_property():
    with pytest.raises(exception.InvalidResourceRequest,
                       match="unknown trait 'avx2' in image property "
                             "'trait:avx2'"):
        _read(image={'trait:avx2': 'required'})


def test_trait_required_by_image_and_forbidden_by_flavor_is_refused():
    with pytest.raises(exception.ResourceRequestRefused) as caught:
        _read({'trait:CUSTOM_X': 'forbidden'},
              image={'trait:CUSTOM_X': 'required'})
    assert str(caught.value).endswith(
        'the unsuffixed group both requires and forbids CUSTOM_X')


# -- malformed names and amounts ---------------------------------------------

def test_unknown_standard_class_is_refused():
    with pytest.raises(exception.InvalidResourceRequest,
                       match="unknown resource class 'GPU' in flavor extra "
                             "spec 'resources1:GPU'"):
        _read({'resources1:GPU': '1'})


def test_malformed_custom_class_is_refused():
    with pytest.raises(exception.InvalidResourceRequest,
                       match="unknown resource class 'CUSTOM_gold'.*a custom "
                             "resource class name must be"):
        _read({'resources:CUSTOM_gold': '1'})


def test_malformed_trait_name_is_refused():
    with pytest.raises(exception.InvalidResourceRequest,
                       match="unknown trait 'HW_CPU_X86_AVX9' in flavor "
                             "extra spec 'trait2:HW_CPU_X86_AVX9'"):
        _read({'trait2:HW_CPU_X86_AVX9': 'required'})


@pytest.mark.parametrize('value, problem', [
    ('two', 'the amount must be an integer'),
    ('1.5', 'the amount must be an integer'),
    ('', 'the amount must be an integer'),
    ('-1', 'the amount must be from 0 to 2147483647'),
    ('2147483648', 'the amount must be from 0 to 2147483647'),
])
def test_malformed_amount_is_refused(value, problem):
    with pytest.raises(exception.InvalidResourceRequest) as caught:
        _read({'resources:CUSTOM_X': value})
    assert str(caught.value) == (
        'Invalid resource request: flavor extra spec resources:CUSTOM_X=%r: '
        '%s' % (value, problem))


# -- CPU policies -----------------------------------------------------------

def test_dedicated_policy_asks_pcpu_instead_of_vcpu():
    assert _read({'hw:cpu_policy': 'dedicated'}) == _one(
        {'PCPU': 4, 'MEMORY_MB': 2048, 'DISK_GB': 10})


def test_image_dedicated_policy_asks_pcpu():
    assert _read(image={'hw_cpu_policy': 'dedicated'}) == _one(
        {'PCPU': 4, 'MEMORY_MB': 2048, 'DISK_GB': 10})


def test_shared_policy_asks_vcpu():
    assert _read({'hw:cpu_policy': 'shared'}) == _one(FLAVOR)


def test_emulator_threads_isolate_adds_one_pcpu():
    assert _read({'hw:cpu_policy': 'dedicated',
                  'hw:emulator_threads_policy': 'isolate'}) == _one(
        {'PCPU': 5, 'MEMORY_MB': 2048, 'DISK_GB': 10})


@pytest.mark.parametrize('source', ['flavor', 'image'])
@pytest.mark.parametrize('policy, required, forbidden', [
    ('isolate', (), ('HW_CPU_HYPERTHREADING',)),
    ('require', ('HW_CPU_HYPERTHREADING',), ()),
    ('prefer', (), ()),
])
def test_thread_policy_becomes_the_hyperthreading_trait(
        source, policy, required, forbidden):
    if source == 'flavor':
        made = _read({'hw:cpu_policy': 'dedicated',
                      'hw:cpu_thread_policy': policy})
    else:
        made = _read({'hw:cpu_policy': 'dedicated'},
                     image={'hw_cpu_thread_policy': policy})
    assert made == _one({'PCPU': 4, 'MEMORY_MB': 2048, 'DISK_GB': 10},
                        required=required, forbidden=forbidden)


def test_mixed_policy_splits_by_the_dedicated_mask():
    assert _read({'hw:cpu_policy': 'mixed',
                  'hw:cpu_dedicated_mask': '^0'}) == _one(
        {'VCPU': 1, 'PCPU': 3, 'MEMORY_MB': 2048, 'DISK_GB': 10})


def test_mixed_policy_splits_by_the_realtime_mask():
    assert _read({'hw:cpu_policy': 'mixed', 'hw:cpu_realtime': 'yes',
                  'hw:cpu_realtime_mask': '2-3'}) == _one(
        {'VCPU': 2, 'PCPU': 2, 'MEMORY_MB': 2048, 'DISK_GB': 10})


def test_mixed_policy_with_emulator_isolate_adds_one_pcpu():
    assert _read({'hw:cpu_policy': 'mixed', 'hw:cpu_dedicated_mask': '3',
                  'hw:emulator_threads_policy': 'isolate'}) == _one(
        {'VCPU': 3, 'PCPU': 2, 'MEMORY_MB': 2048, 'DISK_GB': 10})


def test_without_translation_dedicated_asks_vcpu_and_no_trait():
    made = from_spec.resource_request(
        _spec({'hw:cpu_policy': 'dedicated',
               'hw:cpu_thread_policy': 'isolate'}),
        translate_pinning=False)
    assert made == _one(FLAVOR)


def test_explicit_pcpu_is_not_translated_again():
    made = _read({'resources1:PCPU': '4', 'hw:cpu_thread_policy': 'require'})
    assert made == request.ResourceRequest(
        groups=(request.RequestGroup(
                    resources={'MEMORY_MB': 2048, 'DISK_GB': 10},
                    required_traits=frozenset({'HW_CPU_HYPERTHREADING'})),
                request.RequestGroup(suffix='1', resources={'PCPU': 4})))


@pytest.mark.parametrize('extra_specs, message', [
    ({'resources:VCPU': '4', 'hw:cpu_policy': 'dedicated'},
     'resources:VCPU / resources:PCPU cannot be combined with '
     'hw:cpu_policy or hw_cpu_policy; use one or the other'),
    ({'resources:PCPU': '4', 'resources:VCPU': '4'},
     'resources:VCPU and resources:PCPU cannot both be given'),
    ({'trait:HW_CPU_HYPERTHREADING': 'forbidden',
      'hw:cpu_policy': 'dedicated', 'hw:cpu_thread_policy': 'isolate'},
     'trait:HW_CPU_HYPERTHREADING cannot be combined with '
     'hw:cpu_thread_policy'),
    ({'hw:cpu_thread_policy': 'isolate'},
     'cpu_thread_policy=isolate needs hw:cpu_policy dedicated or mixed'),
])
def test_cpu_conflicts_nova_refuses(extra_specs, message):
    with pytest.raises(numa_errors.NUMARequestConflict) as caught:
        _read(extra_specs)
    assert message in str(caught.value)
    assert isinstance(caught.value, exception.InvalidRequest)


def test_bad_cpu_policy_is_refused():
    with pytest.raises(numa_errors.InvalidNUMARequest,
                       match="hw:cpu_policy='pinned'"):
        _read({'hw:cpu_policy': 'pinned'})


def test_image_may_not_pin_what_the_flavor_shares():
    with pytest.raises(numa_errors.NUMARequestConflict,
                       match='image hw_cpu_policy=dedicated may not override '
                             'flavor hw:cpu_policy=shared'):
        _read({'hw:cpu_policy': 'shared'},
              image={'hw_cpu_policy': 'dedicated'})

