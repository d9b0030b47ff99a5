"""Plain text tables for gantt-manage output.

Columns are left-aligned and separated by two spaces, under a header and a
line of dashes; a cell holding several lines spreads over several output
lines. No colours, no box drawing: the output is meant to be read, grepped
and pasted into bug reports::

    print(manage_table.format_table(['Host', 'State'],
                                    [['c1', 'up'], ['c2', 'down']]))

    Host  State
    ----  -----
    c1    up
    c2    down
"""

import datetime
import json

COLUMN_GAP = '  '


def cell_text(value):
    """How one value is shown: '-' for nothing, yes/no, seconds, JSON."""
    if value is None:
        return '-'
    if isinstance(value, bool):
        return 'yes' if value else 'no'
    if isinstance(value, datetime.datetime):
        return value.isoformat(sep=' ', timespec='seconds')
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def _unwrapped(value):
    """A versioned object's primitive as its fields (``..._object.data``)."""
    if isinstance(value, dict):
        for key, inner in value.items():
            if key.endswith('_object.data') and isinstance(inner, dict):
                return inner
    return value


def document_lines(value, prefix=''):
    """A JSON document (a dict of dicts...) as ``a.b: value`` lines, one
    per leaf, keys sorted; a versioned object shows its fields; lists of
    plain values stay JSON::

        document_lines({'flavor': {'vcpus': 1}, 'hints': {}})
        -> ['flavor.vcpus: 1', 'hints: {}']
    """
    value = _unwrapped(value)
    if isinstance(value, list) and any(isinstance(_unwrapped(item), dict)
                                       for item in value):
        value = {str(index): item for index, item in enumerate(value)}
    if not isinstance(value, dict) or not value:
        text = json.dumps(value, sort_keys=True) if isinstance(
            value, (dict, list)) or value is None else cell_text(value)
        return ['%s: %s' % (prefix, text)] if prefix else [text]
    lines = []
    for key in sorted(value):
        lines.extend(document_lines(value[key], '%s.%s' % (prefix, key)
                                    if prefix else str(key)))
    return lines


def number_text(value):
    """A number without a trailing '.0' (capacities are floats in SQL)."""
    number = float(value)
    if number.is_integer():
        return str(int(number))
    return ('%.2f' % number).rstrip('0').rstrip('.')


def _cell_lines(value):
    return cell_text(value).splitlines() or ['']


def _line(texts, widths):
    return COLUMN_GAP.join(text.ljust(width)
                           for text, width in zip(texts, widths)).rstrip()


def format_table(headers, rows):
    """Render ``rows`` (sequences of values) under ``headers``."""
    cells = [[_cell_lines(value) for value in row] for row in rows]
    widths = [len(header) for header in headers]
    for row in cells:
        for column, lines in enumerate(row):
            widths[column] = max(widths[column],
                                 max(len(line) for line in lines))
    output = [_line(headers, widths),
              _line(['-' * width for width in widths], widths)]
    for row in cells:
        for index in range(max(len(lines) for lines in row)):
            output.append(_line([lines[index] if index < len(lines) else ''
                                 for lines in row], widths))
    return '\n'.join(output)
