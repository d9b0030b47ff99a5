"""How gantt-manage commands declare their arguments, and argument types.

A command is a function plus the arguments it takes; each argument's
``name`` is the keyword the function receives. Modules that implement a
category of commands (``manage_server``, ``manage_aggregate``...) declare
their tables with these, and ``manage`` puts them together::

    CATEGORY = manage_args.Category('Host aggregates.', {
        'show': manage_args.Command(show, 'Show one aggregate.', [
            manage_args.arg('ident', metavar='AGGREGATE')]),
    })
"""

import argparse
import collections

Arg = collections.namedtuple('Arg', 'name flags kwargs')
Command = collections.namedtuple('Command', 'func help args')
Category = collections.namedtuple('Category', 'help actions')


def arg(name, *flags, **kwargs):
    """An argument; positional unless ``flags`` (``--x``) are given."""
    return Arg(name, flags or (name,), kwargs)


def at_least(minimum):
    """Type: an integer of at least ``minimum``."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError('%r is not an integer' % text)
        if value < minimum:
            raise argparse.ArgumentTypeError(
                'must be at least %d, got %d' % (minimum, value))
        return value
    return parse


def positive_seconds(text):
    """Type: a number of seconds above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError('%r is not a number' % text)
    if not value > 0:
        raise argparse.ArgumentTypeError('must be more than 0, got %s' % text)
    return value


def key_value(text):
    """Type: ``KEY=VALUE`` (the value may be empty) -> ``(key, value)``."""
    key, sep, value = text.partition('=')
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(
            'expected KEY=VALUE, got %r' % text)
    return key.strip(), value


def key_value_or_key(text):
    """Type: ``KEY=VALUE`` -> ``(key, value)``, or ``KEY`` -> ``(key,
    None)`` (what ``aggregate set-metadata`` takes to unset a key)."""
    if '=' not in text:
        if not text.strip():
            raise argparse.ArgumentTypeError('expected KEY or KEY=VALUE')
        return text.strip(), None
    return key_value(text)
