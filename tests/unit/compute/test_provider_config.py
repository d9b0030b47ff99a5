"""Provider config files: what Nova's format adds, and each refusal."""

import textwrap

import pytest

from compute import provider_config
from scheduler import exception

NODE_UUID = '5c9a1f3e-8d2b-4c6a-9e7f-1a2b3c4d5e6f'
OTHER_UUID = '0d5e2c1b-7a4f-4e3d-8c2b-9f1e0a3b4c5d'

GOOD = textwrap.dedent('''\
    meta:
      schema_version: '1.0'
    providers:
      - identification:
          uuid: $COMPUTE_NODE
        inventories:
          additional:
            - CUSTOM_FPGA:
                total: 4
                reserved: 1
                min_unit: 1
                max_unit: 2
                step_size: 1
                allocation_ratio: 1.0
            - CUSTOM_LICENSE:
                total: 10
        traits:
          additional:
            - CUSTOM_GOLD
      - identification:
          name: c1-2
        traits:
          additional: [CUSTOM_SILVER]
    ''')


def write(directory, name, text):
    (directory / name).write_text(textwrap.dedent(text))
    return directory


def nodes():
    return [{'uuid': NODE_UUID, 'nodename': 'c1-1',
             'inventories': {'PCPU': {'total': 2}},
             'traits': ['COMPUTE_NODE']},
            {'uuid': OTHER_UUID, 'nodename': 'c1-2',
             'inventories': {}, 'traits': ['COMPUTE_NODE']}]


def test_a_good_file_adds_inventories_and_traits(tmp_path):
    configs = provider_config.ProviderConfigs.from_directory(
        write(tmp_path, 'a.yaml', GOOD))
    reported = nodes()

    configs.apply(reported)

    first, second = reported
    assert first['inventories'] == {
        'PCPU': {'total': 2},
        'CUSTOM_FPGA': {'total': 4, 'reserved': 1, 'min_unit': 1,
                        'max_unit': 2, 'step_size': 1,
                        'allocation_ratio': 1.0},
        'CUSTOM_LICENSE': {'total': 10}}
    assert first['traits'] == ['COMPUTE_NODE', 'CUSTOM_GOLD']
    # A node named by an entry of its own takes that one, not
    # $COMPUTE_NODE's.
    assert (second['inventories'], second['traits']) == (
        {}, ['COMPUTE_NODE', 'CUSTOM_SILVER'])


def test_no_directory_or_no_yaml_file_adds_nothing(tmp_path):
    (tmp_path / 'notes.txt').write_text('not yaml: [')
    for directory in (tmp_path, tmp_path / 'absent'):
        configs = provider_config.ProviderConfigs.from_directory(directory)
        reported = nodes()
        configs.apply(reported)
        assert reported == nodes()


def test_a_provider_adding_nothing_is_ignored(tmp_path):
    write(tmp_path, 'a.yaml', '''\
        meta: {schema_version: '1.0'}
        providers:
          - identification: {name: c1-1}
        ''')
    assert provider_config.load(tmp_path) == {}


def test_a_newer_minor_version_is_read(tmp_path):
    write(tmp_path, 'a.yaml', GOOD.replace("'1.0'", "'1.7'"))
    assert sorted(provider_config.load(tmp_path)) == ['$COMPUTE_NODE', 'c1-2']


def test_an_unknown_provider_is_ignored(tmp_path):
    write(tmp_path, 'a.yaml', '''\
        meta: {schema_version: '1.0'}
        providers:
          - identification: {name: elsewhere}
            traits: {additional: [CUSTOM_X]}
        ''')
    reported = nodes()
    provider_config.ProviderConfigs.from_directory(tmp_path).apply(reported)
    assert reported == nodes()


def _refusal(tmp_path, text):
    write(tmp_path, 'bad.yaml', text)
    with pytest.raises(exception.ConfigError) as error:
        provider_config.load(tmp_path)
    return str(error.value)


@pytest.mark.parametrize('text, message', [
    ('meta: [unclosed', 'is not valid YAML at line 1, column 16'),
    ('providers: []\n', 'has no schema version'),
    ("meta: {schema_version: 'one'}\n", 'has no schema version'),
    ("meta: {schema_version: '2.0'}\n", 'unsupported schema major version 2'),
    ("meta: {schema_version: '1.0'}\nproviders: {}\n",
     'providers must be a list'),
    ("meta: {schema_version: '1.0'}\nproviders:\n  - traits: {}\n",
     'providers[0] must be a mapping with an identification'),
    ("meta: {schema_version: '1.0'}\nproviders:\n"
     "  - identification: {uuid: not-a-uuid}\n",
     'providers[0].identification.uuid must be a UUID or $COMPUTE_NODE'),
    ("meta: {schema_version: '1.0'}\nproviders:\n"
     "  - identification: {name: a, uuid: $COMPUTE_NODE}\n",
     'must have exactly one of uuid and name'),
    ("meta: {schema_version: '1.0'}\nproviders:\n"
     "  - identification: {serial: x}\n", "unknown key 'serial'"),
    ("meta: {schema_version: '1.0'}\nproviders:\n"
     "  - identification: {name: a}\n"
     "    inventories: {additional: [{CUSTOM_A: {reserved: 1}}]}\n",
     'CUSTOM_A has no total'),
    ("meta: {schema_version: '1.0'}\nproviders:\n"
     "  - identification: {name: a}\n"
     "    inventories: {additional: [{CUSTOM_A: {total: 1, color: 2}}]}\n",
     "has unknown fields ['color']"),
    ("meta: {schema_version: '1.0'}\nproviders:\n"
     "  - identification: {name: a}\n"
     "    inventories: {additional: [{CUSTOM_A: {total: '1'}}]}\n",
     'total must be an integer'),
    ("meta: {schema_version: '1.0'}\nproviders:\n"
     "  - identification: {name: a}\n"
     "    inventories: {additional: [{custom_a: {total: 1}}]}\n",
     "'custom_a' is not a resource class name"),
    ("meta: {schema_version: '1.0'}\nproviders:\n"
     "  - identification: {name: a}\n"
     "    traits: {additional: [lower]}\n", "'lower' is not a trait name"),
    ("meta: {schema_version: '1.0'}\nproviders:\n"
     "  - identification: {name: a}\n"
     "    traits: {additional: [HW_CPU_X86_AVX2, CUSTOM_OK]}\n",
     'only custom traits are allowed: HW_CPU_X86_AVX2'),
    ("meta: {schema_version: '1.0'}\nproviders:\n"
     "  - identification: {name: a}\n"
     "    inventories: {additional: [{VGPU: {total: 1}}]}\n",
     'only custom resource classes are allowed: VGPU'),
    ("meta: {schema_version: '1.0'}\n__source_file: x\n",
     '__source_file is reserved'),
])
def test_what_nova_refuses_is_refused(tmp_path, text, message):
    found = _refusal(tmp_path, text)
    assert message in found
    assert 'bad.yaml' in found


def test_an_unreadable_file_is_refused(tmp_path):
    (tmp_path / 'dir.yaml').mkdir()
    with pytest.raises(exception.ConfigError, match='cannot be read'):
        provider_config.load(tmp_path)


def test_a_provider_defined_twice_is_refused(tmp_path):
    write(tmp_path, 'a.yaml', GOOD)
    write(tmp_path, 'b.yaml', '''\
        meta: {schema_version: '1.0'}
        providers:
          - identification: {name: c1-2}
            traits: {additional: [CUSTOM_X]}
        ''')
    with pytest.raises(exception.ConfigError,
                       match='provider c1-2 has multiple definitions in '
                             'provider config files .*a.yaml, .*b.yaml'):
        provider_config.load(tmp_path)


def test_one_node_named_by_uuid_and_by_name_is_refused(tmp_path):
    write(tmp_path, 'a.yaml', '''\
        meta: {schema_version: '1.0'}
        providers:
          - identification: {name: c1-1}
            traits: {additional: [CUSTOM_X]}
          - identification: {uuid: %s}
            traits: {additional: [CUSTOM_Y]}
        ''' % NODE_UUID)
    configs = provider_config.ProviderConfigs.from_directory(tmp_path)
    with pytest.raises(exception.ConfigError,
                       match='names node c1-1 .* by both its uuid and its '
                             'name'):
        configs.apply(nodes())


def test_a_class_the_node_reports_itself_is_refused(tmp_path):
    write(tmp_path, 'a.yaml', '''\
        meta: {schema_version: '1.0'}
        providers:
          - identification: {uuid: $COMPUTE_NODE}
            inventories: {additional: [{CUSTOM_GOLD: {total: 1}}]}
        ''')
    reported = nodes()
    reported[0]['inventories']['CUSTOM_GOLD'] = {'total': 1}
    configs = provider_config.ProviderConfigs.from_directory(tmp_path)
    with pytest.raises(exception.ConfigError,
                       match='inventories that node c1-1 reports itself: '
                             'CUSTOM_GOLD'):
        configs.apply(reported)


def test_files_named_one_by_one_are_checked_as_a_directory_s(tmp_path):
    write(tmp_path, 'a.yaml', GOOD)
    write(tmp_path, 'b.yaml', '''\
        meta: {schema_version: '1.0'}
        providers:
          - identification: {name: c1-2}
            traits: {additional: [CUSTOM_X]}
        ''')
    # One file: only its providers (the other one is not read).
    configs = provider_config.load_files([str(tmp_path / 'b.yaml')])
    assert configs == {'c1-2': ({}, {'CUSTOM_X'}, str(tmp_path / 'b.yaml'))}
    with pytest.raises(exception.ConfigError,
                       match='provider c1-2 has multiple definitions in '):
        provider_config.load_files([str(tmp_path / 'a.yaml'),
                                    str(tmp_path / 'b.yaml')])
