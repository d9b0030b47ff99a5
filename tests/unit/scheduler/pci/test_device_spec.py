"""[pci] device_spec: selecting devices by IDs, address globs and regular
expressions, interface names; tags; pools of the selected devices."""

import json

import pytest

from scheduler import exception
from scheduler.pci import device_spec
from scheduler.pci import errors
from scheduler.pci import pools


def _device(address, product_id='154c', dev_type='type-VF', numa_node=0,
            **extra):
    return dict({'address': address, 'vendor_id': '8086',
                 'product_id': product_id, 'dev_type': dev_type,
                 'numa_node': numa_node}, **extra)


def _spec(**value):
    return device_spec.parse_device_specs([json.dumps(value)])[0]


def _refused(text):
    with pytest.raises(errors.PciConfigInvalidSpec) as error:
        device_spec.parse_device_specs([text])
    assert isinstance(error.value, exception.ConfigError)
    assert text in str(error.value)
    return str(error.value)


def test_ids_match_without_case_and_left_out_fields_match_anything():
    spec = _spec(vendor_id='8086', product_id='154C')
    assert spec.matches(_device('0000:81:10.1'))
    assert not spec.matches(_device('0000:81:10.1', product_id='1520'))
    assert _spec().matches(_device('0001:02:03.4'))


@pytest.mark.parametrize('address, selected', [
    ('*:81:10.*', ['0000:81:10.1', '0000:81:10.2']),
    (':81:10.', ['0000:81:10.1', '0000:81:10.2']),
    ('81:10.2', ['0000:81:10.2']),
    ('.1', ['0000:81:10.1', '0000:82:00.1']),
    ('0000:82:00.1', ['0000:82:00.1']),
])
def test_address_globs(address, selected):
    spec = _spec(address=address)
    devices = ['0000:81:10.1', '0000:81:10.2', '0000:82:00.1']
    assert [addr for addr in devices
            if spec.matches(_device(addr))] == selected


def test_address_regular_expressions():
    spec = _spec(address={'bus': '8[12]', 'function': '[2-7]'})
    assert [addr for addr in ('0000:81:10.1', '0000:81:10.2',
                              '0000:82:00.7', '0000:83:00.2')
            if spec.matches(_device(addr))] == [
        '0000:81:10.2', '0000:82:00.7']


def test_an_exact_pf_address_selects_its_vfs():
    spec = _spec(address='0000:81:00.0')
    assert spec.matches(_device('0000:81:10.1', parent_addr='0000:81:00.0'))
    assert not spec.matches(_device('0000:81:10.1',
                                    parent_addr='0000:82:00.0'))
    assert not _spec(address='*:81:00.0').matches(
        _device('0000:81:10.1', parent_addr='0000:81:00.0'))


def test_devname_matches_the_device_s_interface():
    spec = _spec(devname='eth3')
    assert spec.matches(_device('0000:81:10.1', devname='eth3'))
    assert not spec.matches(_device('0000:81:10.1', devname='eth4'))
    assert not spec.matches(_device('0000:81:10.1'))


@pytest.mark.parametrize('text, expected', [
    ('{"vendor_id": "8086"', 'not valid JSON'),
    ('"8086"', 'must be a JSON object or a list of objects'),
    ('[{"vendor_id": "8086"}, 3]', 'must be a JSON object or a list'),
    ('{"vendor_id": "xyz"}', "'vendor_id' is 'xyz', not a hexadecimal"),
    ('{"product_id": "10000"}', "'product_id' is '10000', above the "
                                "largest FFFF"),
    ('{"address": "0000:81:20.0"}', "'address slot' is '20', above the "
                                    "largest 1F"),
    ('{"address": "1:2:3:4.0"}', 'has more than domain:bus:slot'),
    ('{"address": "81:00.8"}', "'address function' is '8'"),
    ('{"address": {"bus": "("}}', "'address' bus '(' is not a regular"),
    ('{"address": {"device": "1"}}', "unknown key(s) device"),
    ('{"address": 5}', "'address' must be a string or an object"),
    ('{"address": "81:00.0", "devname": "eth0"}', 'exclude each other'),
    ('{"managed": "perhaps"}', "tag 'managed' is 'perhaps'"),
])
def test_bad_values_are_named(text, expected):
    assert expected in _refused(text)


def test_tags_and_pools_of_the_selected_devices():
    specs = device_spec.parse_device_specs([
        json.dumps({'address': '0000:81:00.0',
                    'physical_network': 'physnet1', 'managed': 'no',
                    'resource_class': 'CUSTOM_NIC'}),
        json.dumps([{'product_id': '0443'}])])
    devices = [
        _device('0000:81:10.1', parent_addr='0000:81:00.0'),
        _device('0000:81:10.2', parent_addr='0000:81:00.0'),
        _device('0000:81:10.3', parent_addr='0000:81:00.0', numa_node=None),
        _device('0000:05:00.0', product_id='0443', dev_type='type-PCI',
                numa_node=1),
        _device('0000:06:00.0', product_id='1520', dev_type='type-PCI'),
    ]
    vf_tags = {'dev_type': 'type-VF', 'physical_network': 'physnet1',
               'managed': 'false', 'remote_managed': 'false'}
    found = device_spec.pools_from_devices(devices, specs)
    assert sorted(found, key=lambda pool: (pool['product_id'],
                                           str(pool['numa_node']))) == [
        {'vendor_id': '8086', 'product_id': '0443', 'numa_node': 1,
         'count': 1, 'tags': {'dev_type': 'type-PCI'}},
        {'vendor_id': '8086', 'product_id': '154c', 'numa_node': 0,
         'count': 2, 'tags': vf_tags},
        {'vendor_id': '8086', 'product_id': '154c', 'numa_node': None,
         'count': 1, 'tags': vf_tags},
    ]
    # The scheduler reads them as they are.
    assert pools.free_devices_total(found, {}) == 4


def test_the_first_spec_that_selects_a_device_tags_it():
    specs = device_spec.parse_device_specs([
        '{"address": "*:81:*.*", "physical_network": "a"}',
        '{"vendor_id": "8086", "physical_network": "b"}'])
    found = device_spec.pools_from_devices(
        [_device('0000:81:10.1'), _device('0000:82:10.1')], specs)
    assert [pool['tags']['physical_network'] for pool in found] == [
        'a', 'b']


def test_nothing_configured_selects_nothing():
    assert device_spec.pools_from_devices([_device('0000:81:10.1')],
                                          []) == []


def test_device_addresses_must_be_full():
    with pytest.raises(ValueError) as error:
        device_spec.device_address('81:10.1')
    assert "'81:10.1' is not a PCI address" in str(error.value)
