import numpy as np
import pytest

from scheduler.filters import extra_specs_ops


@pytest.mark.parametrize('value, requirement, expected', [
    ('1', '1', True), ('1', '2', False), ('kvm', 'kvm', True),
    ('kvm', 'KVM', False), ('a b', 'a b', True),
    # '=' means "at least", as in Nova.
    ('123', '= 123', True), ('124', '= 123', True), ('122', '= 123', False),
    ('12.0', '== 12', True), ('12.1', '== 12', False),
    ('12', '!= 13', True), ('12', '!= 12', False),
    ('5', '>= 5', True), ('4', '>= 5', False), ('5', '<= 5', True),
    ('6', '<= 5', False),
    ('abc', 's== abc', True), ('abc', 's!= abc', False),
    ('abc', 's< abd', True), ('abc', 's<= abc', True),
    ('abd', 's> abc', True), ('abc', 's>= abd', False),
    ('sse4.2 avx2', '<in> avx2', True), ('sse4.2', '<in> avx', False),
    ('sse avx aes', '<all-in> aes sse', True),
    ('sse avx', '<all-in> aes sse', False),
    ('x86_64', '<or> i686 <or> x86_64', True),
    ('armv7l', '<or> i686 <or> x86_64', False),
    # Words between the alternatives are separators, whatever they say.
    ('c', '<or> a b c', True), ('b', '<or> a b c', False),
])
def test_operators(value, requirement, expected):
    assert extra_specs_ops.match(value, requirement) is expected


@pytest.mark.parametrize('requirement', ['>=', '<or>', '<in>', '<all-in>',
                                         's=='])
def test_operator_without_operand_matches_nothing(requirement):
    assert extra_specs_ops.match('anything', requirement) is False


def test_value_that_is_no_number_fails_numeric_operators():
    # Nova raised ValueError here; no host matches instead.
    assert extra_specs_ops.match('fast', '>= 2') is False
    assert extra_specs_ops.match('2', '>= fast') is False


def test_missing_value():
    assert extra_specs_ops.match(None, '>= 1') is False
    assert extra_specs_ops.match(None, 'x') is False


def test_only_the_first_operand_counts():
    assert extra_specs_ops.match('5', '>= 1 100') is True


def test_numbers_column_agrees_with_match():
    values = np.array([0, 4, 5, 6, 100])
    for requirement in ('= 5', '== 5', '!= 5', '>= 5', '<= 5', '>= 4.5'):
        assert extra_specs_ops.is_numeric(requirement)
        assert list(extra_specs_ops.match_numbers(values, requirement)) == [
            extra_specs_ops.match(str(v), requirement) for v in values]
    for requirement in ('s== 5', '5', '>= x', '<in> 5', '>='):
        assert not extra_specs_ops.is_numeric(requirement)
