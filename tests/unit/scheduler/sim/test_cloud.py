"""Cloud files: what they describe, and the key an error names."""

import pytest

from scheduler.sim import cloud as sim_cloud

CLOUD = '''
[[hosts]]
name = "big"
count = 3
vcpus = 64
memory_mb = 262144
disk_gb = 4000
zone = "az1"
aggregates = ["ssd"]

[[hosts]]
name = "small"
count = 1
vcpus = 8
memory_mb = 16384
disk_gb = 100

[aggregates.ssd]
ssd = "true"
'''


def _load(tmp_path, text):
    path = tmp_path / 'cloud.toml'
    path.write_text(text)
    return sim_cloud.load_cloud(str(path))


def test_a_cloud_file_and_its_scaling(tmp_path):
    cloud = _load(tmp_path, CLOUD)
    assert cloud.host_count == 4
    assert cloud.host_names() == ['big-000001', 'big-000002', 'big-000003',
                                  'small-000001']
    assert cloud.aggregates == {'ssd': {'ssd': 'true'}}
    # No [[flavors]]: the default ones; the most common is m1.small.
    assert cloud.most_common_flavor().name == 'm1.small'
    scaled = cloud.scaled(40)
    assert [g.count for g in scaled.groups] == [30, 10]


@pytest.mark.parametrize('change, message', [
    (('count = 3', 'count = 0'), 'hosts[0].count: must be an integer >= 1'),
    (('vcpus = 8', 'vcpus = "8"'), "hosts[1].vcpus: must be an integer"),
    (('aggregates = ["ssd"]', 'aggregates = ["nvme"]'),
     "hosts[0].aggregates: 'nvme' is not in [aggregates]"),
    (('zone = "az1"', 'zone = "az1"\ncolour = "red"'),
     'hosts[0].colour: unknown key'),
    (('ssd = "true"', 'ssd = true'), 'aggregates.ssd.ssd: metadata values'),
    (('name = "small"', 'name = "big"'), 'hosts: two [[hosts]] tables'),
])
def test_each_error_names_the_key(tmp_path, change, message):
    with pytest.raises(sim_cloud.CloudError) as caught:
        _load(tmp_path, CLOUD.replace(*change))
    assert message in str(caught.value), str(caught.value)
    assert str(caught.value).startswith(str(tmp_path / 'cloud.toml'))


def test_a_file_that_is_not_toml(tmp_path):
    with pytest.raises(sim_cloud.CloudError, match='cloud.toml: '):
        _load(tmp_path, '[[hosts]\n')
