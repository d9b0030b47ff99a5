"""hardware.Request.from_spec: which requests are hardware requests."""

import pytest

from scheduler import exception
from scheduler import hardware
from scheduler import objects
from scheduler.objects import request_spec

objects.register_all()


def _spec(extra_specs=None, image_props=None):
    spec = request_spec.RequestSpec(flavor=request_spec.Flavor(
        vcpus=4, memory_mb=4096, root_gb=10,
        extra_specs=extra_specs or {}))
    if image_props is not None:
        spec.image = request_spec.ImageMeta(properties=image_props)
    return spec


@pytest.mark.parametrize('extra_specs, image_props', [
    ({}, None),
    ({'capabilities:hypervisor_type': 'QEMU', 'quota:cpu_shares': '10'},
     {'os_distro': 'ubuntu', 'hypervisor_type': 'kvm'}),
    ({'hw:cpu_policy': 'shared'}, None),
    (None, {'hw_architecture': 'x86_64'}),
])
def test_plain_requests_are_none(extra_specs, image_props):
    assert hardware.Request.from_spec(_spec(extra_specs, image_props)) \
        is None


@pytest.mark.parametrize('extra_specs, image_props', [
    ({'hw:cpu_policy': 'dedicated'}, None),
    ({'resources:PCPU': '4'}, None),
    (None, {'hw_numa_nodes': '2'}),
    ({'hw:mem_page_size': 'large'}, None),
])
def test_numa_requests_from_flavor_or_image(extra_specs, image_props):
    request = hardware.Request.from_spec(_spec(extra_specs, image_props))
    assert request is not None and request.numa is not None


def test_a_malformed_hw_key_is_still_refused():
    with pytest.raises(exception.InvalidRequest) as error:
        hardware.Request.from_spec(_spec({'hw:numa_nodes': 'two'}))
    assert 'numa_nodes' in str(error.value)


def test_an_image_key_alone_is_still_checked():
    # As in Nova: an image may not ask for pages the flavor does not allow.
    with pytest.raises(exception.InvalidRequest) as error:
        hardware.Request.from_spec(_spec(None, {'hw_mem_page_size': 'large'}))
    assert 'hw_mem_page_size' in str(error.value)
