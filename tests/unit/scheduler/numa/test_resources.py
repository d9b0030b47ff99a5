"""Tests for pinning asked for via resources:PCPU/VCPU and the SMT trait."""

import pytest

from scheduler.numa import errors
from scheduler.numa import request


def test_resources_pcpu_means_dedicated():
    req = request.get_request(2, 1024, {'resources:PCPU': '2'})
    assert req.cpu_policy == 'dedicated'
    assert [sorted(c.pcpuset) for c in req.cells] == [[0, 1]]


def test_resources_vcpu_means_shared_and_no_numa_needs():
    assert request.get_request(2, 1024, {'resources:VCPU': '2'}) is None


def test_granular_groups_are_summed():
    req = request.get_request(3, 1024, {'resources1:PCPU': '1',
                                        'resources2:PCPU': '2'})
    assert req.cpu_policy == 'dedicated'


@pytest.mark.parametrize('specs, match', [
    ({'resources:PCPU': '3'}, r"resources:PCPU=3.*must equal.*\(2\)"),
    ({'resources:PCPU': '2', 'hw:cpu_policy': 'dedicated'},
     'use one or the other'),
    ({'resources:PCPU': '1', 'resources:VCPU': '1'}, 'cannot both'),
    ({'resources:PCPU': 'two'}, "resources:PCPU='two'"),
    ({'resources:PCPU': '2', 'hw:cpu_thread_policy': 'require',
      'trait:HW_CPU_HYPERTHREADING': 'required'}, 'use one or the other'),
    ({'resources:PCPU': '2', 'trait:HW_CPU_HYPERTHREADING': 'maybe'},
     "trait:HW_CPU_HYPERTHREADING='maybe'"),
    ({'trait:HW_CPU_HYPERTHREADING': 'forbidden'}, 'thread_policy=isolate'),
])
def test_errors_name_the_keys(specs, match):
    with pytest.raises((errors.InvalidNUMARequest,
                        errors.NUMARequestConflict), match=match):
        request.get_request(2, 1024, specs)


@pytest.mark.parametrize('specs, props, expected', [
    ({'trait:HW_CPU_HYPERTHREADING': 'forbidden'}, {}, 'isolate'),
    ({'trait1:HW_CPU_HYPERTHREADING': 'required'}, {}, 'require'),
    ({}, {'trait:HW_CPU_HYPERTHREADING': 'required'}, 'require'),
    ({}, {'traits_required': ['HW_CPU_HYPERTHREADING']}, 'require'),
])
def test_hyperthreading_trait_sets_the_thread_policy(specs, props,
                                                     expected):
    specs = dict(specs, **{'hw:cpu_policy': 'dedicated'})
    assert request.get_request(2, 1024, specs, props).cpu_thread_policy == \
        expected
