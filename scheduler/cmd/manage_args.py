"""How gantt-manage commands declare their arguments, and argument types.

A command is a function plus the arguments it takes; each argument's
``name`` is the keyword the function receives. Modules that implement a
category of commands (``manage_server``, ``manage_aggregate``...) declare
their tables with these, and ``manage`` puts them together::

    CATEGORY = manage_args.Category('Host aggregates.', {
        'show': manage_args.Command(show, 'Show one aggregate.', [
            manage_args.arg('ident', metavar='AGGREGATE')]),
    })

:func:`parse_date` reads the dates that ``--before`` takes (ISO 8601,
``YYYY-MM-DD [HH:MM[:SS]]``, the output of ``date``) as nova-manage's
do, without dateutil.
"""

import argparse
import collections
import datetime
import email.utils

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


# Besides ISO 8601 (datetime.fromisoformat) and RFC 2822 (``date -R``):
# what date(1) prints in the C and English locales, and dates in words.
_DATE_FORMATS = (
    '%a %b %d %H:%M:%S %Z %Y',      # Thu Mar  5 14:03:00 UTC 2026
    '%a %b %d %H:%M:%S %Y',
    '%a %d %b %Y %I:%M:%S %p %Z',   # Thu 05 Mar 2026 02:03:00 PM UTC
    '%a %d %b %Y %H:%M:%S %Z',      # Thu 05 Mar 2026 14:03:00 UTC
    '%Y/%m/%d %H:%M:%S',
    '%Y/%m/%d %H:%M',
    '%Y/%m/%d',
    '%d %b %Y',
    '%b %d %Y',
    '%d %B %Y',
    '%B %d %Y',
)


def _parse_any(text):
    try:
        return datetime.datetime.fromisoformat(text)
    except ValueError:
        pass
    for date_format in _DATE_FORMATS:
        try:
            return datetime.datetime.strptime(text, date_format)
        except ValueError:
            continue
    try:
        return email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None


def parse_date(text):
    """A date as ``--before`` takes it -> a naive UTC datetime (a date
    with no zone is taken as UTC, one with a zone converted).

    :raises ValueError: not a date, saying which forms are.
    """
    value = _parse_any(' '.join(text.split()))
    if value is None:
        raise ValueError(
            '%r is not a date; expected e.g. 2026-03-05, 2026-03-05 '
            '14:03:00, 2026-03-05T14:03:00+01:00 or what the date command '
            'prints' % text)
    if value.tzinfo is not None:
        value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return value
