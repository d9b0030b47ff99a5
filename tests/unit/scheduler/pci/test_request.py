"""Flavor extra spec pci_passthrough:alias -> PciRequests, and the PCI NUMA
policy a flavor or an image sets."""

import json

import pytest

from scheduler import exception
from scheduler.objects import request_spec
from scheduler.pci import alias
from scheduler.pci import errors
from scheduler.pci import request
from tests.unit.scheduler import fakes

QAT = {'name': 'qat', 'vendor_id': '8086', 'product_id': '0443'}
GPU = {'name': 'gpu', 'vendor_id': '10de', 'product_id': '1db4',
       'device_type': 'type-PCI', 'numa_policy': 'required'}
ALIASES = alias.parse_aliases([json.dumps(QAT), json.dumps(GPU)])
QAT_SPECS = ({'vendor_id': '8086', 'product_id': '0443'},)
GPU_SPECS = ({'vendor_id': '10de', 'product_id': '1db4',
              'dev_type': 'type-PCI'},)


def _requests(value, image=None, **extra_specs):
    extra_specs[request.ALIAS_EXTRA_SPEC] = value
    return request.requests_from_extra_specs(extra_specs, image, ALIASES)


def test_counts_default_to_one():
    assert _requests('qat:2, gpu') == (
        request.PciRequest('qat', 2, QAT_SPECS, 'legacy'),
        request.PciRequest('gpu', 1, GPU_SPECS, 'required'))
    assert request.devices_needed(_requests('qat:2,gpu')) == 3


def test_spaces_around_names_and_counts():
    assert _requests(' gpu : 3 ') == (
        request.PciRequest('gpu', 3, GPU_SPECS, 'required'),)


def test_no_extra_spec_no_request():
    assert request.requests_from_extra_specs({}, None, ALIASES) == ()
    assert request.requests_from_extra_specs(None, None, ALIASES) == ()
    assert request.devices_needed(()) == 0


def test_unknown_alias_is_invalid_input():
    with pytest.raises(errors.PciRequestAliasNotDefined) as error:
        _requests('qat:1,nic:2')
    assert isinstance(error.value, exception.InvalidRequest)
    assert "PCI alias 'nic'" in str(error.value)


@pytest.mark.parametrize('value, expected', [
    ('qat:x', "count 'x' of alias 'qat' is not a whole number"),
    ('qat:-1', "count '-1' of alias 'qat'"),
    ('qat:', "count '' of alias 'qat'"),
    ('qat:0', "count 0 of alias 'qat' is not between 1 and"),
    ('qat:1:2', "count '1:2' of alias 'qat'"),
    (':2', "item ':2' names no alias"),
    ('qat,,gpu', "item '' names no alias"),
    ('qat:%d' % (request.MAX_COUNT + 1), 'is not between 1 and'),
])
def test_bad_values_name_the_item(value, expected):
    with pytest.raises(errors.PciInvalidRequest) as error:
        _requests(value)
    assert isinstance(error.value, exception.InvalidRequest)
    assert expected in str(error.value)
    assert repr(value) in str(error.value)


def test_flavor_policy_overrides_the_aliases():
    found = _requests('qat,gpu', **{request.POLICY_EXTRA_SPEC: 'preferred'})
    assert [req.numa_policy for req in found] == ['preferred', 'preferred']


def test_image_policy_applies_when_the_flavor_sets_none():
    image = {request.POLICY_IMAGE_PROPERTY: 'socket'}
    assert _requests('gpu', image)[0].numa_policy == 'socket'


def test_image_may_repeat_but_not_change_the_flavor_policy():
    image = {request.POLICY_IMAGE_PROPERTY: 'required'}
    flavor_policy = {request.POLICY_EXTRA_SPEC: 'required'}
    assert _requests('qat', image, **flavor_policy)[0].numa_policy == (
        'required')
    image = {request.POLICY_IMAGE_PROPERTY: 'legacy'}
    with pytest.raises(errors.ImagePCINUMAPolicyForbidden) as error:
        _requests('qat', image, **flavor_policy)
    assert isinstance(error.value, exception.InvalidRequest)
    assert "'legacy'" in str(error.value) and "'required'" in str(error.value)


@pytest.mark.parametrize('flavor, image, where', [
    ('close', None, 'flavor extra spec hw:pci_numa_affinity_policy'),
    (None, 'REQUIRED', 'image property hw_pci_numa_affinity_policy'),
])
def test_bad_policies_are_named(flavor, image, where):
    extra_specs = {} if flavor is None else {
        request.POLICY_EXTRA_SPEC: flavor}
    props = {} if image is None else {request.POLICY_IMAGE_PROPERTY: image}
    with pytest.raises(errors.InvalidPCINUMAAffinity) as error:
        _requests('qat', props, **extra_specs)
    assert where in str(error.value)
    assert repr(flavor or image) in str(error.value)


def test_requests_of_a_request_spec_use_the_configured_aliases(config):
    config.config(alias=[json.dumps(QAT)], group='pci')
    spec = fakes.spec(image=request_spec.ImageMeta(
        properties={request.POLICY_IMAGE_PROPERTY: 'preferred'}))
    spec.flavor.extra_specs = {request.ALIAS_EXTRA_SPEC: 'qat:2'}
    assert request.requests_from_spec(spec) == (
        request.PciRequest('qat', 2, QAT_SPECS, 'preferred'),)
    config.config(alias=[], group='pci')
    with pytest.raises(errors.PciRequestAliasNotDefined):
        request.requests_from_spec(spec)


def test_a_spec_without_the_extra_spec_reads_no_alias(config):
    config.config(alias=['not JSON'], group='pci')
    assert request.requests_from_spec(fakes.spec()) == ()
    spec = fakes.spec()
    spec.flavor.extra_specs = {request.ALIAS_EXTRA_SPEC: 'qat'}
    with pytest.raises(errors.PciInvalidAlias):
        request.requests_from_spec(spec)
