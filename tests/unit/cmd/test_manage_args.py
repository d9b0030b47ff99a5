"""The argument types of gantt-manage: ``parse_date`` (``--before``)."""

import datetime

import pytest

from scheduler.cmd import manage_args

MARCH_5 = datetime.datetime(2026, 3, 5)
AT_1403 = datetime.datetime(2026, 3, 5, 14, 3)


@pytest.mark.parametrize('text, expected', [
    ('2026-03-05', MARCH_5),
    ('2026-03-05 14:03', AT_1403),
    ('2026-03-05 14:03:00', AT_1403),
    ('2026-03-05T14:03:00.250000', AT_1403.replace(microsecond=250000)),
    ('2026/03/05', MARCH_5),
    ('5 Mar 2026', MARCH_5),
    ('March 5 2026', MARCH_5),
    # What date(1) prints, in the C locale and in English ones.
    ('Thu Mar  5 14:03:00 UTC 2026', AT_1403),
    ('Thu 05 Mar 2026 02:03:00 PM UTC', AT_1403),
    # A zone is converted to UTC; date -R's RFC 2822.
    ('2026-03-05T15:03:00+01:00', AT_1403),
    ('2026-03-05T14:03:00Z', AT_1403),
    ('Thu, 05 Mar 2026 15:03:00 +0100', AT_1403),
    ('  2026-03-05  ', MARCH_5),
])
def test_parse_date(text, expected):
    value = manage_args.parse_date(text)
    assert value == expected
    assert value.tzinfo is None


@pytest.mark.parametrize('text', ['soon', '2026-13-01', '', '05/03/26x'])
def test_parse_date_refuses_what_is_not_a_date(text):
    with pytest.raises(ValueError, match='is not a date; expected e.g. '
                                         '2026-03-05'):
        manage_args.parse_date(text)
