"""The text tables gantt-manage prints."""

import datetime

from scheduler.cmd import manage_table


def test_columns_align_and_empty_values_show_a_dash():
    text = manage_table.format_table(
        ['Host', 'Up', 'Seen'],
        [['compute1', True, datetime.datetime(2025, 1, 2, 3, 4, 5, 678)],
         ['c2', False, None]])
    assert text.splitlines() == [
        'Host      Up   Seen',
        '--------  ---  -------------------',
        'compute1  yes  2025-01-02 03:04:05',
        'c2        no   -',
    ]


def test_multi_line_cells_continue_under_their_column():
    text = manage_table.format_table(['Field', 'Value'],
                                     [['fault', 'first\nsecond'],
                                      ['flavor', {'vcpus': 1}]])
    assert text.splitlines()[2:] == [
        'fault   first',
        '        second',
        'flavor  {"vcpus": 1}',
    ]


def test_no_rows_prints_the_header():
    assert manage_table.format_table(['A', 'Bee'], []) == 'A  Bee\n-  ---'


def test_number_text_drops_a_trailing_zero_only():
    assert manage_table.number_text(97792.0) == '97792'
    assert manage_table.number_text(10.5) == '10.5'
    assert manage_table.number_text(7) == '7'
