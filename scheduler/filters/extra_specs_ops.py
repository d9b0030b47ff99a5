"""Matching a host value against a flavor extra spec requirement.

The ComputeCapabilitiesFilter and the AggregateInstanceExtraSpecsFilter
compare a value the host has (a string) with what a flavor extra spec asks
for. A requirement is either a plain string, which must equal the value
exactly, or an operator followed by its operand(s), separated by spaces:

==============  ===========================================================
``= N``         the value, as a number, is at least N (yes: *at least*)
``== N``        the value, as a number, equals N
``!= N``        the value, as a number, differs from N
``>= N``        the value, as a number, is at least N
``<= N``        the value, as a number, is at most N
``s== S``       the value equals the string S (also ``s!=``, ``s<``,
                ``s<=``, ``s>``, ``s>=``, comparing strings)
``<in> S``      S is a substring of the value
``<all-in> A B  every one of A, B, ... is a substring of the value
...``
``<or> A <or>   the value equals one of A, B, ...
B ...``
==============  ===========================================================

Only the first operand counts, except for ``<all-in>`` and ``<or>``; an
operator without an operand matches nothing. A value that is not a number
never matches a numeric operator (Nova raised an error instead). Examples::

    match('4096', '>= 2048')            # True
    match('x86_64', '<or> i686 <or> x86_64')   # True
    match('sse avx2', '<all-in> avx2 sse')     # True
    match('kvm', 'kvm')                  # True: plain equality
"""

import operator


def _number(text):
    """``float(text)``, or None when it is not a number."""
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def _numeric(compare):
    def check(value, operand):
        left, right = _number(value), _number(operand)
        if left is None or right is None:
            return False
        return compare(left, right)
    return check


# Operators that take one operand.
_SINGLE = {
    '=': _numeric(operator.ge),
    '==': _numeric(operator.eq),
    '!=': _numeric(operator.ne),
    '>=': _numeric(operator.ge),
    '<=': _numeric(operator.le),
    's==': operator.eq,
    's!=': operator.ne,
    's<': operator.lt,
    's<=': operator.le,
    's>': operator.gt,
    's>=': operator.ge,
    '<in>': lambda value, operand: operand in value,
}

OPERATORS = frozenset(_SINGLE) | {'<all-in>', '<or>'}


def _any_of(value, words):
    """``<or>``: operands at even positions, ``<or>`` between them."""
    return any(word == value for word in words[::2])


def match(value, requirement):
    """True if the host ``value`` (a string, or None) meets
    ``requirement`` (see the module docstring)."""
    words = requirement.split()
    operator_name = words[0] if words else None
    if operator_name not in OPERATORS:
        return value == requirement
    if value is None:
        return False
    operands = words[1:]
    if not operands:
        return False
    if operator_name == '<or>':
        return _any_of(value, operands)
    if operator_name == '<all-in>':
        return all(operand in value for operand in operands)
    return _SINGLE[operator_name](value, operands[0])


def is_numeric(requirement):
    """True if ``requirement`` compares numbers (``= == != >= <=``) with
    an operand that is a number: then :func:`match_numbers` gives the
    same answers on a column of numbers."""
    words = requirement.split()
    return (len(words) >= 2 and words[0] in ('=', '==', '!=', '>=', '<=')
            and _number(words[1]) is not None)


def match_numbers(values, requirement):
    """:func:`match` over a NumPy array of numbers, for a requirement
    :func:`is_numeric` accepts; a boolean array."""
    words = requirement.split()
    operand = float(words[1])
    compare = {'=': operator.ge, '==': operator.eq, '!=': operator.ne,
               '>=': operator.ge, '<=': operator.le}[words[0]]
    return compare(values.astype('float64'), operand)
