"""Tests for scheduler.numa.request: flavor + image -> guest NUMA cells."""

import pytest

from scheduler import exception
from scheduler.numa import cpuspec
from scheduler.numa import errors
from scheduler.numa import request


def cells(req):
    return [(sorted(c.cpuset), sorted(c.pcpuset), c.memory_mb)
            for c in req.cells]


def test_no_numa_needs_gives_none():
    assert request.get_request(4, 4096, {}, {}) is None
    assert request.get_request(4, 4096, {'hw:cpu_policy': 'shared'},
                               {}) is None


def test_dedicated_without_nodes_is_one_implicit_cell():
    req = request.get_request(2, 1024, {'hw:cpu_policy': 'dedicated'})
    assert cells(req) == [([], [0, 1], 1024)]
    assert req.cpu_policy == 'dedicated' and req.pinned


def test_page_size_alone_implies_one_cell():
    req = request.get_request(2, 1024, {'hw:mem_page_size': '2MB'})
    assert cells(req) == [([0, 1], [], 1024)]
    assert req.pagesize == 2048 and not req.pinned


def test_two_nodes_split_evenly():
    req = request.get_request(4, 4096, {'hw:numa_nodes': '2',
                                        'hw:cpu_policy': 'dedicated'})
    assert cells(req) == [([], [0, 1], 2048), ([], [2, 3], 2048)]


def test_image_numa_nodes_when_flavor_has_none():
    req = request.get_request(4, 4096, {}, {'hw_numa_nodes': 2})
    assert cells(req) == [([0, 1], [], 2048), ([2, 3], [], 2048)]


def test_uneven_split_without_numa_cpus_is_an_error():
    with pytest.raises(errors.NUMARequestConflict, match='evenly'):
        request.get_request(3, 4096, {'hw:numa_nodes': '2'})


def test_asymmetric_numa_cpus_and_mem():
    specs = {'hw:numa_nodes': '2', 'hw:numa_cpus.0': '0',
             'hw:numa_cpus.1': '1-2', 'hw:numa_mem.0': '1024',
             'hw:numa_mem.1': '2048'}
    req = request.get_request(3, 3072, specs)
    assert cells(req) == [([0], [], 1024), ([1, 2], [], 2048)]


def test_image_numa_cpus_and_mem():
    props = {'hw_numa_nodes': '2', 'hw_numa_cpus.0': '0,2',
             'hw_numa_cpus.1': '1,3', 'hw_numa_mem.0': '512',
             'hw_numa_mem.1': '1536'}
    req = request.get_request(4, 2048, {}, props)
    assert cells(req) == [([0, 2], [], 512), ([1, 3], [], 1536)]


@pytest.mark.parametrize('cpus1, mems, match', [
    ('1-3', ('1024', '1024'), 'numa_cpus.1.*already given'),
    ('2', ('1024', '1024'), r'vCPUs \[3\] are in no numa_cpus'),
    ('2-4', ('1024', '1024'), r'numa_cpus.1.*\[4\] are out of range'),
    ('2-3', ('1024', '512'), 'add up to 1536 MiB, the flavor has 2048'),
])
def test_numa_cpus_and_mem_must_cover_everything_once(cpus1, mems, match):
    specs = {'hw:numa_nodes': '2', 'hw:numa_cpus.0': '0-1',
             'hw:numa_cpus.1': cpus1, 'hw:numa_mem.0': mems[0],
             'hw:numa_mem.1': mems[1]}
    with pytest.raises(exception.InvalidRequest, match=match):
        request.get_request(4, 2048, specs)


def test_numa_cpus_without_numa_mem_is_incomplete():
    specs = {'hw:numa_nodes': '2', 'hw:numa_cpus.0': '0-1',
             'hw:numa_cpus.1': '2-3'}
    with pytest.raises(errors.NUMARequestConflict, match='both be given'):
        request.get_request(4, 2048, specs)


def test_numa_mem_not_a_number_names_the_key():
    specs = {'hw:numa_nodes': '1', 'hw:numa_cpus.0': '0-1',
             'hw:numa_mem.0': 'lots'}
    with pytest.raises(errors.InvalidNUMARequest,
                       match="hw:numa_mem.0='lots'"):
        request.get_request(2, 2048, specs)


def test_flavor_and_image_numa_cpus_conflict():
    specs = {'hw:numa_cpus.0': '0-1', 'hw:numa_mem.0': '2048',
             'hw:numa_nodes': '1'}
    props = {'hw_numa_cpus.0': '0-1', 'hw_numa_mem.0': '2048'}
    with pytest.raises(errors.NUMARequestConflict, match='hw_numa_cpus'):
        request.get_request(2, 2048, specs, props)


@pytest.mark.parametrize('value', ['two', '0', '-1'])
def test_bad_numa_nodes_names_key_and_value(value):
    with pytest.raises(errors.InvalidNUMARequest,
                       match="hw:numa_nodes=%r" % value):
        request.get_request(4, 4096, {'hw:numa_nodes': value})


def test_numa_nodes_on_flavor_and_image_conflict():
    with pytest.raises(errors.NUMARequestConflict, match='hw_numa_nodes'):
        request.get_request(4, 4096, {'hw:numa_nodes': '2'},
                            {'hw_numa_nodes': '2'})


def test_bad_cpu_policy_names_key_and_value():
    with pytest.raises(errors.InvalidNUMARequest,
                       match="hw:cpu_policy='pinned'"):
        request.get_request(2, 1024, {'hw:cpu_policy': 'pinned'})


@pytest.mark.parametrize('flavor, image, expected', [
    (None, 'dedicated', 'dedicated'),
    ('dedicated', 'shared', 'dedicated'),
    ('mixed', 'shared', 'mixed'),
])
def test_cpu_policy_flavor_and_image(flavor, image, expected):
    specs = {'hw:cpu_dedicated_mask': '^0'} if 'mixed' in (
        flavor, image) else {}
    if flavor:
        specs['hw:cpu_policy'] = flavor
    req = request.get_request(2, 1024, specs, {'hw_cpu_policy': image})
    assert req.cpu_policy == expected


@pytest.mark.parametrize('flavor, image', [
    ('shared', 'dedicated'), ('shared', 'mixed'), ('mixed', 'dedicated')])
def test_image_may_not_override_flavor_cpu_policy(flavor, image):
    specs = {'hw:cpu_policy': flavor, 'hw:cpu_dedicated_mask': '^0'}
    with pytest.raises(errors.NUMARequestConflict, match='hw_cpu_policy'):
        request.get_request(2, 1024, specs, {'hw_cpu_policy': image})


@pytest.mark.parametrize('flavor, expected', [
    (None, 'require'), ('prefer', 'prefer')])
def test_thread_policy_image_used_when_flavor_unset_or_prefer(flavor,
                                                              expected):
    # Nova: a flavor 'prefer' is no conflict, but the flavor's value wins.
    specs = {'hw:cpu_policy': 'dedicated'}
    if flavor:
        specs['hw:cpu_thread_policy'] = flavor
    req = request.get_request(2, 1024, specs,
                              {'hw_cpu_thread_policy': 'require'})
    assert req.cpu_thread_policy == expected


def test_thread_policy_image_may_not_override_flavor():
    with pytest.raises(errors.NUMARequestConflict,
                       match='hw_cpu_thread_policy=require'):
        request.get_request(
            2, 1024, {'hw:cpu_policy': 'dedicated',
                      'hw:cpu_thread_policy': 'isolate'},
            {'hw_cpu_thread_policy': 'require'})


def test_thread_policy_needs_a_pinned_policy():
    with pytest.raises(errors.NUMARequestConflict, match='thread_policy'):
        request.get_request(2, 1024, {'hw:cpu_thread_policy': 'isolate'})


@pytest.mark.parametrize('mask', ['^0-1', '2-3', '2,3'])
def test_mixed_policy_dedicated_mask(mask):
    req = request.get_request(4, 4096, {'hw:cpu_policy': 'mixed',
                                        'hw:cpu_dedicated_mask': mask})
    assert cells(req) == [([0, 1], [2, 3], 4096)]


@pytest.mark.parametrize('specs, match', [
    ({'hw:cpu_policy': 'mixed'}, 'needs hw:cpu_dedicated_mask'),
    ({'hw:cpu_policy': 'mixed', 'hw:cpu_dedicated_mask': '0-3'},
     'at least one dedicated and one shared'),
    ({'hw:cpu_policy': 'mixed', 'hw:cpu_dedicated_mask': '3-5'},
     r'\[4, 5\] are not in the flavor'),
    ({'hw:cpu_policy': 'dedicated', 'hw:cpu_dedicated_mask': '0'},
     'needs hw:cpu_policy=mixed'),
    ({'hw:cpu_dedicated_mask': '0'}, 'needs hw:cpu_policy=mixed'),
    ({'hw:cpu_policy': 'mixed', 'hw:cpu_dedicated_mask': '0-x'},
     "hw:cpu_dedicated_mask='0-x'"),
])
def test_mixed_policy_errors(specs, match):
    with pytest.raises(exception.InvalidRequest, match=match):
        request.get_request(4, 4096, specs)


def test_realtime_mask_with_dedicated():
    req = request.get_request(4, 4096, {
        'hw:cpu_policy': 'dedicated', 'hw:cpu_realtime': 'yes',
        'hw:cpu_realtime_mask': '^0'})
    assert sorted(req.realtime_cpus) == [1, 2, 3]


def test_image_realtime_mask_is_used_before_flavor_mask():
    req = request.get_request(
        4, 4096, {'hw:cpu_policy': 'dedicated', 'hw:cpu_realtime': 'true',
                  'hw:cpu_realtime_mask': '^0'},
        {'hw_cpu_realtime_mask': '^0-1'})
    assert sorted(req.realtime_cpus) == [2, 3]


@pytest.mark.parametrize('mask, match', [
    (None, 'at least one vCPU must be left non-realtime'),
    ('0-3', 'at least one vCPU must be left non-realtime'),
    ('^0-3', 'names no realtime vCPU'),
    ('2-7', r'\[4, 5, 6, 7\] are not in the flavor'),
])
def test_realtime_mask_errors(mask, match):
    specs = {'hw:cpu_policy': 'dedicated', 'hw:cpu_realtime': 'yes'}
    if mask:
        specs['hw:cpu_realtime_mask'] = mask
    with pytest.raises(errors.InvalidNUMARequest, match=match):
        request.get_request(4, 4096, specs)


def test_realtime_needs_a_pinned_policy():
    with pytest.raises(errors.NUMARequestConflict, match='cpu_realtime'):
        request.get_request(4, 4096, {'hw:cpu_realtime': 'yes',
                                      'hw:cpu_realtime_mask': '^0'})


def test_mixed_with_realtime_mask_pins_the_realtime_vcpus():
    req = request.get_request(4, 4096, {
        'hw:cpu_policy': 'mixed', 'hw:cpu_realtime': 'yes',
        'hw:cpu_realtime_mask': '^0-1'})
    assert cells(req) == [([0, 1], [2, 3], 4096)]


@pytest.mark.parametrize('value, kb', [
    ('2048', 2048), ('2MB', 2048), ('2M', 2048), ('2MiB', 2048),
    ('1GB', 1024 * 1024), ('1g', 1024 * 1024), ('4KB', 4),
    ('small', 'small'), ('LARGE', 'large'), ('any', 'any')])
def test_parse_page_size(value, kb):
    assert request.parse_page_size(value) == kb


@pytest.mark.parametrize('value', ['huge', '0', '2XB', '-2MB'])
def test_bad_page_size_names_the_value(value):
    with pytest.raises(errors.InvalidNUMARequest,
                       match='hw:mem_page_size=%r' % value):
        request.get_request(2, 1024, {'hw:mem_page_size': value})


@pytest.mark.parametrize('flavor, image, expected', [
    ('large', '2MB', 2048), ('any', '1GB', 1024 * 1024),
    ('any', None, 'any')])
def test_image_page_size_only_under_large_or_any(flavor, image, expected):
    props = {'hw_mem_page_size': image} if image else {}
    req = request.get_request(2, 2048, {'hw:mem_page_size': flavor}, props)
    assert req.pagesize == expected


@pytest.mark.parametrize('flavor', [None, '2MB', 'small'])
def test_image_page_size_forbidden_otherwise(flavor):
    specs = {'hw:mem_page_size': flavor} if flavor else {}
    with pytest.raises(errors.NUMARequestConflict,
                       match='hw_mem_page_size=1GB'):
        request.get_request(2, 2048, specs, {'hw_mem_page_size': '1GB'})


def test_cpu_spec_round_trip():
    assert cpuspec.parse_cpu_spec('0-3,^2,6, 8-9') == {0, 1, 3, 6, 8, 9}
    assert cpuspec.format_cpu_spec({0, 1, 3, 6, 8, 9}) == '0-1,3,6,8-9'
    with pytest.raises(errors.InvalidCPUSpec, match="'3-1'"):
        cpuspec.parse_cpu_spec('3-1', 'hw:numa_cpus.0')


def test_emulator_threads_policy():
    req = request.get_request(2, 1024, {
        'hw:cpu_policy': 'dedicated', 'hw:emulator_threads_policy': 'isolate',
        'hw:cpu_realtime': 'yes'})
    # With the emulator threads elsewhere every vCPU may be realtime.
    assert req.emulator_cpus == 1 and sorted(req.realtime_cpus) == [0, 1]
    with pytest.raises(errors.InvalidNUMARequest,
                       match="hw:emulator_threads_policy='own'"):
        request.get_request(2, 1024, {'hw:cpu_policy': 'dedicated',
                                      'hw:emulator_threads_policy': 'own'})
    with pytest.raises(errors.NUMARequestConflict,
                       match='emulator_threads_policy=isolate needs'):
        request.get_request(2, 1024, {'hw:numa_nodes': '1',
                                      'hw:emulator_threads_policy': 'isolate'})
    with pytest.raises(errors.InvalidNUMARequest,
                       match=r'resources:PCPU=2.*\+ 1.*\(3\)'):
        request.get_request(2, 1024, {'resources:PCPU': '2',
                                      'hw:emulator_threads_policy': 'isolate'})
    assert request.get_request(2, 1024, {
        'resources:PCPU': '3',
        'hw:emulator_threads_policy': 'isolate'}).emulator_cpus == 1


def test_image_numa_cpus_as_parsed_lists():
    props = {'hw_numa_nodes': 2, 'hw_numa_cpus.0': [0], 'hw_numa_cpus.1': [1],
             'hw_numa_mem.0': 256, 'hw_numa_mem.1': 768}
    req = request.get_request(2, 1024, {}, props)
    assert cells(req) == [([0], [], 256), ([1], [], 768)]


def test_numa_cpus_suffix_must_be_a_node_number():
    specs = {'hw:numa_nodes': '1', 'hw:numa_cpus.0': '0-1',
             'hw:numa_mem.0': '1024', 'hw:numa_cpus.x': '0'}
    with pytest.raises(errors.InvalidNUMARequest, match='hw:numa_cpus.x'):
        request.get_request(2, 1024, specs)


def test_numa_cpus_are_ignored_without_numa_needs():
    # As Nova: numa_cpus.N alone does not ask for a NUMA topology.
    assert request.get_request(2, 1024, {'hw:numa_cpus.0': '0-1'}) is None
