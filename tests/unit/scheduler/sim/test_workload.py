"""The trace reader and the workload generator."""

import pytest

from scheduler.sim import cloud as sim_cloud
from scheduler.sim import workload

HEADER = 'id,tenant,flavor,vcpus,memory_mb,disk_gb,start,end\n'


def _read(tmp_path, rows, header=HEADER):
    path = tmp_path / 'trace.csv'
    path.write_text(header + ''.join(row + '\n' for row in rows))
    return workload.read_csv(str(path), sim_cloud.default_cloud(4))


def test_rows_by_flavor_or_by_size_sorted_by_start(tmp_path):
    requests = _read(tmp_path, ['b,acme,,2,4096,40,12.5,',
                                'a,acme,m1.large,,,,0,3600'])
    assert [r.id for r in requests] == ['a', 'b']
    assert (requests[0].vcpus, requests[0].memory_mb,
            requests[0].disk_gb, requests[0].end) == (4, 8192, 80, 3600.0)
    assert (requests[1].vcpus, requests[1].memory_mb, requests[1].end) == (
        2, 4096, None)


@pytest.mark.parametrize('rows, message', [
    (['a,t,m1.huge,,,,0,1'], "row 2, field flavor: 'm1.huge' is not"),
    (['a,t,,2,lots,40,0,1'], "row 2, field memory_mb: 'lots' is not an "
                             "integer"),
    (['a,t,,2,,40,0,1'], 'row 2, field memory_mb: missing'),
    (['a,t,,0,1024,40,0,1'], 'row 2, field vcpus: must be > 0'),
    (['a,t,m1.small,,,,-5,1'], "row 2, field start: '-5' must be >= 0"),
    (['a,t,m1.small,,,,10,5'], 'row 2, field end: 5 is before start 10'),
    (['a,t,m1.small,,,,0,1', 'a,t,m1.small,,,,0,1'],
     "row 3, field id: 'a' was already on row 2"),
    (['a,t,m1.small,,,,0,1', ',t,m1.small,,,,0,1'],
     'row 3, field id: missing'),
    (['a,t,m1.small,,,,0,1,extra'], 'row 2, field end: more values'),
    (['a,t,m1.small,,,,soon,1'], "row 2, field start: 'soon' is not a "
                                 "number"),
])
def test_each_error_names_its_row_and_field(tmp_path, rows, message):
    with pytest.raises(workload.WorkloadError) as caught:
        _read(tmp_path, rows)
    assert str(caught.value).startswith(message), str(caught.value)


def test_a_header_without_start_or_with_an_unknown_column(tmp_path):
    with pytest.raises(workload.WorkloadError, match='row 1, field start'):
        _read(tmp_path, ['a,t,m1.small'], header='id,tenant,flavor\n')
    with pytest.raises(workload.WorkloadError, match='row 1, field colour'):
        _read(tmp_path, ['a,0,red'], header='id,start,colour\n')


def test_the_generator_repeats_under_a_seed_and_follows_its_options():
    cloud = sim_cloud.default_cloud(24)
    options = workload.Generator(hours=24, multi_share=0.5,
                                 group_share=0.2)
    first = workload.generate(cloud, options, seed=7)
    assert first == workload.generate(cloud, options, seed=7)
    assert first != workload.generate(cloud, options, seed=8)
    starts = [r.start for r in first]
    assert starts == sorted(starts) and starts[-1] < 24 * 3600
    assert all(r.end > r.start for r in first)
    assert {r.policy for r in first} == {None, 'affinity', 'anti-affinity'}
    assert all(r.count >= 2 for r in first if r.policy)
    # Instances in all: about fill x what the RAM holds of the average
    # flavor (24 hosts of 32, 64 and 128 GB hold about 76 of 7.2 GB).
    instances = sum(r.count for r in first)
    expected = options.fill * workload.instance_capacity(cloud)
    assert 0.7 * expected < instances < 1.3 * expected
