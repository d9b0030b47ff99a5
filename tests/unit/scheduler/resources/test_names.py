"""Tests for the resource class and trait name rules."""

import os_resource_classes
import os_traits
import pytest

from scheduler import exception
from scheduler.resources import names


def test_every_standard_class_of_the_library_is_accepted():
    for name in os_resource_classes.STANDARDS:
        assert names.check_resource_class(name) == name


def test_every_standard_trait_of_the_library_is_accepted():
    for name in os_traits.get_traits():
        assert names.check_trait(name) == name


@pytest.mark.parametrize('name', ['CUSTOM_BAREMETAL_GOLD', 'CUSTOM_A',
                                  'CUSTOM_0_9', 'CUSTOM_' + 'X' * 248])
def test_custom_names_follow_placement_rule(name):
    assert names.check_resource_class(name) == name
    assert names.check_trait(name) == name


@pytest.mark.parametrize('name', ['CUSTOM_', 'CUSTOM_gold', 'CUSTOM_A-B',
                                  'CUSTOM_A B', 'CUSTOM_A\n',
                                  'CUSTOM_' + 'X' * 249])
def test_malformed_custom_names_are_refused_with_the_rule(name):
    with pytest.raises(exception.InvalidResourceRequest,
                       match='a custom resource class name must be '
                             'CUSTOM_ followed by') as caught:
        names.check_resource_class(name)
    assert repr(name) in str(caught.value)
    with pytest.raises(exception.InvalidResourceRequest,
                       match='a custom trait name must be'):
        names.check_trait(name)


def test_unknown_standard_class_is_refused_naming_it_and_where():
    with pytest.raises(exception.InvalidResourceRequest) as caught:
        names.check_resource_class('GOLD', "flavor extra spec 'x'")
    assert str(caught.value) == (
        "Invalid resource request: unknown resource class 'GOLD' in flavor "
        "extra spec 'x': it is neither a standard resource class (of "
        "os-resource-classes) nor a custom one (CUSTOM_ followed by one or "
        "more of A-Z, 0-9 and _, at most 255 characters)")


@pytest.mark.parametrize('name', ['hw_cpu_x86_avx2', 'HW_CPU_X86_NOPE', '',
                                  'VCPU'])
def test_unknown_or_malformed_trait_is_refused(name):
    with pytest.raises(exception.InvalidResourceRequest,
                       match="unknown trait %r: it is neither a standard "
                             "trait" % name):
        names.check_trait(name)


def test_a_trait_is_not_a_resource_class():
    with pytest.raises(exception.InvalidResourceRequest):
        names.check_resource_class(os_traits.HW_CPU_X86_AVX2)


def test_refusals_are_invalid_requests():
    assert issubclass(exception.InvalidResourceRequest,
                      exception.InvalidRequest)
