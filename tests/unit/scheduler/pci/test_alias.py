"""[pci] alias parsing: valid aliases, entries sharing a name, and errors
that name the alias and the problem."""

import json

from oslo_config import cfg
import pytest

from scheduler.conf import pci as pci_conf
from scheduler import exception
from scheduler.pci import alias
from scheduler.pci import errors


def _entry(**fields):
    value = {'name': 'qat', 'vendor_id': '8086', 'product_id': '0443'}
    value.update(fields)
    return json.dumps({k: v for k, v in value.items() if v is not None})


def _refused(*entries):
    with pytest.raises(errors.PciInvalidAlias) as error:
        alias.parse_aliases(list(entries))
    assert isinstance(error.value, exception.ConfigError)
    return str(error.value)


def test_defaults_legacy_and_no_device_type():
    found = alias.parse_aliases([_entry()])
    assert found == {'qat': alias.Alias(
        'qat', 'legacy', None, ({'vendor_id': '8086',
                                 'product_id': '0443'},),
        ((None, None),))}


def test_placement_keys_are_kept_per_entry():
    found = alias.parse_aliases([
        _entry(resource_class='CUSTOM_QAT', traits='fast,HW_CPU_X86_AVX'),
        _entry(product_id='0442')])
    assert found['qat'].placement == (('CUSTOM_QAT', 'fast,HW_CPU_X86_AVX'),
                                      (None, None))


def test_device_type_becomes_dev_type_and_policy_is_kept():
    found = alias.parse_aliases([_entry(name=' vf ', device_type='type-VF',
                                        numa_policy='socket')])
    assert found['vf'].numa_policy == 'socket'
    assert found['vf'].device_type == 'type-VF'
    assert found['vf'].specs == ({'vendor_id': '8086', 'product_id': '0443',
                                  'dev_type': 'type-VF'},)


def test_entries_of_one_name_are_alternatives():
    found = alias.parse_aliases([
        _entry(device_type='type-PCI', numa_policy='required'),
        _entry(product_id='0442', device_type='type-PCI',
               numa_policy='required'),
        _entry(name='other')])
    assert [spec['product_id'] for spec in found['qat'].specs] == [
        '0443', '0442']
    assert found['qat'].numa_policy == 'required'
    assert len(found['other'].specs) == 1


def test_entries_of_one_name_must_agree_on_the_policy():
    message = _refused(_entry(numa_policy='required'),
                       _entry(product_id='0442'))
    assert "'qat'" in message and 'numa_policy' in message
    assert "'required' and 'legacy'" in message


def test_entries_of_one_name_must_agree_on_the_device_type():
    message = _refused(_entry(device_type='type-PF'),
                       _entry(product_id='0442'))
    assert "'qat'" in message and 'device_type' in message
    assert "'type-PF' and None" in message


@pytest.mark.parametrize('text, expected', [
    ('{"name": "qat", ', 'not valid JSON'),
    ('["qat"]', 'must be a JSON object, not list'),
    ('{"vendor_id": "8086", "product_id": "0443"}', "'name' is missing"),
    ('{"name": "  ", "vendor_id": "8086", "product_id": "0443"}',
     "'name' is missing"),
])
def test_unreadable_values_are_named(text, expected):
    message = _refused(text)
    assert expected in message
    assert repr(text) in message


@pytest.mark.parametrize('fields, expected', [
    ({'colour': 'red'}, 'unknown key(s) colour'),
    ({'vendor_id': '80866'}, "'vendor_id' is '80866'; expected four"),
    ({'product_id': None}, "'product_id' is missing"),
    ({'vendor_id': 8086}, "'vendor_id' must be a string, not 8086"),
    ({'device_type': 'vdpa'}, "'vdpa' cannot be requested by alias"),
    ({'device_type': 'type-XX'}, "'device_type' is 'type-XX'; valid"),
    ({'numa_policy': 'nearby'}, "'numa_policy' is 'nearby'; valid values: "
                                "required, legacy, preferred, socket"),
    ({'live_migratable': 'maybe'}, "'live_migratable' is 'maybe'"),
    ({'capability_type': 'usb'}, "'capability_type' is 'usb'"),
])
def test_bad_entries_name_the_alias_and_the_key(fields, expected):
    message = _refused(_entry(**fields))
    assert message.startswith("Invalid PCI alias definition 'qat': ")
    assert expected in message


def test_live_migratable_and_placement_keys():
    found = alias.parse_aliases([_entry(live_migratable='Yes',
                                        resource_class='CUSTOM_QAT',
                                        traits='fast',
                                        capability_type='pci')])
    assert found['qat'].specs == ({'vendor_id': '8086', 'product_id': '0443',
                                   'live_migratable': 'true'},)


def test_get_aliases_reads_the_configured_values(config):
    config.config(alias=[_entry(), _entry(name='gpu', vendor_id='10de')],
                  group='pci')
    assert sorted(alias.get_aliases()) == ['gpu', 'qat']
    config.config(alias=[], group='pci')
    assert alias.get_aliases() == {}


def test_deprecated_option_name_is_read(tmp_path):
    path = tmp_path / 'gantt.conf'
    path.write_text('[DEFAULT]\npci_alias = %s\n' % _entry())
    conf = cfg.ConfigOpts()
    pci_conf.register_opts(conf)
    conf(['--config-file', str(path)])
    assert list(alias.get_aliases(conf)) == ['qat']
